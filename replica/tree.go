package replica

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/merkle"
	"github.com/kuradb/kura/ring"
	"github.com/kuradb/kura/sched"
	"github.com/kuradb/kura/transport"
)

// kindTreeDigest asks a replica for the Merkle tree of one token range (anti-entropy
// repair); its request is a TreeDigestRequest, its answer a TreeDigestResponse.
var kindTreeDigest = transport.RegisterKind(13, "tree_digest")

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
func (t Tree) WireBytes() int { return proto.Size(treeResponse(t)) }

// RecordsWireBytes returns the size of records on the wire, as a scan's answer or a
// mutation carries them: what a repair counts for the records it moves.
func RecordsWireBytes(records []lww.Record) int {
	return proto.Size(scanResponse(records))
}

// treePage bounds the records a tree is built from at a time, as sched.PageBytes bounds
// their bytes, so that building the tree of a large range does not hold the range in
// memory, nor a read-stage worker for long.
const treePage = 1024

// TreeDigest builds the tree of the engine's records in the requested range, reading
// them page by page.
func (l *Local) TreeDigest(ctx context.Context, req TreeRequest) (Tree, error) {
	ks, err := l.keyspaces.Get(req.Keyspace)
	if err != nil {
		return Tree{}, err
	}
	b, err := merkle.NewBuilder(req.Range, req.Depth)
	if err != nil {
		return Tree{}, err
	}
	p := ks.Partition()
	inRange := inRanges(p, []ring.Range{req.Range})
	var start []byte
	for {
		var size int
		recs, err := staged(ctx, l, sched.Task{Class: sched.ScanPage}, func() ([]lww.Record, int, error) {
			recs, err := l.engine.ScanPage(ks.Name, start, nil, treePage, sched.PageBytes, true, inRange)
			size = recordBytes(recs)
			return recs, size, err
		})
		if err != nil {
			return Tree{}, fmt.Errorf("tree of keyspace %s: %w", ks.Name, err)
		}
		for _, r := range recs {
			b.Add(p.Token(r.Key), r)
		}
		if len(recs) == 0 || len(recs) < treePage && size < sched.PageBytes {
			break
		}
		start = append(recs[len(recs)-1].Key, 0)
	}
	watermark, err := l.engine.TombstoneWatermark(ks.Name)
	if err != nil {
		return Tree{}, err
	}
	return Tree{Merkle: b.Tree(), Watermark: watermark}, nil
}

// TreeDigest sends a tree_digest request.
func (r *Remote) TreeDigest(ctx context.Context, req TreeRequest) (Tree, error) {
	raw, err := r.call(ctx, kindTreeDigest, &kurav1.TreeDigestRequest{
		Keyspace: req.Keyspace,
		Range:    &kurav1.TokenRange{Start: uint64(req.Range.Start), End: uint64(req.Range.End)},
		Depth:    uint32(req.Depth),
	})
	if err != nil {
		return Tree{}, err
	}
	var resp kurav1.TreeDigestResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		return Tree{}, fmt.Errorf("replica %s: decode tree: %w", r.peer.ID, err)
	}
	tree, err := merkle.FromLeaves(req.Range, req.Depth, int(resp.GetRecords()), resp.GetLeaves())
	if err != nil {
		return Tree{}, fmt.Errorf("replica %s: %w", r.peer.ID, err)
	}
	return Tree{Merkle: tree, Watermark: hlc.Timestamp(resp.GetWatermark())}, nil
}

// treeDigest serves a tree_digest request.
func (s *Server) treeDigest(ctx context.Context, from transport.Peer, payload []byte) ([]byte, error) {
	var req kurav1.TreeDigestRequest
	if err := decodeRequest(payload, &req, kindTreeDigest, from); err != nil {
		return nil, err
	}
	tree, err := s.local.TreeDigest(ctx, TreeRequest{
		Keyspace: req.GetKeyspace(),
		Range:    ring.Range{Start: ring.Token(req.GetRange().GetStart()), End: ring.Token(req.GetRange().GetEnd())},
		Depth:    int(req.GetDepth()),
	})
	if err != nil {
		return nil, err
	}
	return proto.Marshal(treeResponse(tree))
}

func treeResponse(t Tree) *kurav1.TreeDigestResponse {
	return &kurav1.TreeDigestResponse{Leaves: t.Merkle.Leaves(), Records: uint64(t.Merkle.Records()), Watermark: uint64(t.Watermark)}
}
