package replica

import (
	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/merkle"
	"github.com/kuradb/kura/internal/core/ring"
)

// TreeRequest asks a replica for the Merkle tree of its records of Keyspace, tombstones
// included, whose tokens lie in Range, with 2^Depth leaves.
type TreeRequest struct {
	Keyspace string
	Range    ring.Range
	Depth    int
}

// Tree is a replica's digest of one token range.
type Tree struct {
	Merkle *merkle.Tree
	// Watermark is the replica's tombstone watermark for the keyspace
	// (storage.Engine.TombstoneWatermark): a repair must not give it a value at or below
	// the watermark that it lacks, since the value's delete may be one it collected.
	Watermark hlc.Timestamp
}

// WireBytes returns the size of the tree's answer on the wire.
func (t Tree) WireBytes() int { return proto.Size(TreeResponse(t)) }

// RecordsWireBytes returns the size of records on the wire, as a scan's answer or a
// mutation carries them: what a repair counts for the records it moves.
func RecordsWireBytes(records []lww.Record) int {
	return proto.Size(ScanResponse(records))
}

// TreeResponse is the wire form of a tree_digest answer.
func TreeResponse(t Tree) *kurav1.TreeDigestResponse {
	return &kurav1.TreeDigestResponse{Leaves: t.Merkle.Leaves(), Records: uint64(t.Merkle.Records()), Watermark: uint64(t.Watermark)}
}
