// Package replica owns what a coordinator asks of one node that holds data: apply a
// mutation, read a key, read an erasure-coded chunk, scan token ranges, list live keys in
// hash order, digest a token range as a Merkle tree for anti-entropy repair, and take
// part in a lightweight transaction's Paxos round as its acceptor, and take a scan's
// priority updates. Replica is that seam, with its requests, answers, refusals and the
// protobuf forms that the implementations share. It links neither the storage engine
// nor the transport, so that the coordinator does not: package internal/data/replica/local serves a
// Replica from this node's storage engine, and package internal/data/replica/remote reaches another
// node's over the internode transport and answers other coordinators' requests.
package replica

import (
	"context"
	"encoding/binary"
	"errors"
	"iter"

	"github.com/cespare/xxhash/v2"

	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/paxos"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/data/sched"
)

// ErrScanTooLarge is a scan refused because its answer would pass the request's
// BytesMax.
var ErrScanTooLarge = errors.New("scan answer too large")

// ErrNotMember is a node's refusal of a request that only members of its cluster may
// make, from a node it does not know or knows as left or removed. The node's admission
// check returns it wrapped, as "not a member: <reason>", so the text that crosses the
// wire starts with this error's: remote.Remote gives the refusal its identity back by that
// prefix, and the coordinator answers a level lost to refusals as unavailable, not as a
// timeout. Defined here, by the replica protocol, so that the node and the coordinator
// share the one value.
var ErrNotMember = errors.New("not a member")

// Replica is one node's data as a coordinator sees it. Every method honours ctx's
// deadline; an error means the replica did not answer (or refused), never "not found".
type Replica interface {
	// Apply stores records of keyspace, last writer wins, and returns once they are
	// durable.
	Apply(ctx context.Context, keyspace string, records []lww.Record) error
	// Get returns the newest record of key; found is false when the replica has none.
	// A tombstone is returned as found.
	Get(ctx context.Context, keyspace string, key []byte) (rec lww.Record, found bool, err error)
	// ReadChunk is Get for the chunk key of an erasure-coded keyspace. Over the wire its
	// answer is the chunk alone, with no record around it.
	ReadChunk(ctx context.Context, keyspace string, chunkKey []byte) (rec lww.Record, found bool, err error)
	// Scan returns the records, tombstones included, with Start <= key < End whose
	// token lies in one of Ranges, in key order, at most Limit.
	Scan(ctx context.Context, req ScanRequest) ([]lww.Record, error)
	// TreeDigest returns the Merkle tree of the replica's records, tombstones included,
	// in one token range, with its tombstone watermark (anti-entropy repair).
	TreeDigest(ctx context.Context, req TreeRequest) (Tree, error)
	// ScanKeys returns a page of the replica's live keys in position order (SCAN): a
	// walk of its live-key index, which tombstones do not slow down.
	ScanKeys(ctx context.Context, req KeysRequest) (KeysPage, error)

	// Prepare, Propose and Commit are the replica's side of a lightweight transaction's
	// Paxos round on one instance, a key's or a partition's (package paxos), its acceptor
	// state stored durably before it answers. Prepare promises ballot unless a higher one
	// was promised, and answers with the acceptor state and the replica's record of the
	// key, or of each key a partition's prepare reads; a refusal is an answer (Promised
	// false, with the higher ballot), not an error.
	Prepare(ctx context.Context, keyspace string, in paxos.Instance, ballot paxos.Ballot) (paxos.Promise, error)
	// Propose accepts p unless a higher ballot was promised since; a refusal answers
	// false with the promised ballot.
	Propose(ctx context.Context, keyspace string, p paxos.Proposal) (accepted bool, promised paxos.Ballot, err error)
	// Commit applies p's records (a batch's together), last writer wins, and records the
	// commit.
	Commit(ctx context.Context, keyspace string, p paxos.Proposal) error

	// Offload keeps records of keyspace, durably, for the sleeping replica named by
	// target, and returns once they are durable: this node is one of target's offload
	// holders, and delivers them when target wakes (paper 003's write offloading).
	Offload(ctx context.Context, target, keyspace string, records []lww.Record) error

	// ScanProgress tells the replica that scan now waits for nodes nodes, so that its
	// read stage can raise the priority of the scan's pages still queued (paper 004's
	// RaS priority update). It is advice: an error only means it did not arrive.
	ScanProgress(ctx context.Context, scan sched.ScanID, nodes int) error
}

// ScanRequest asks one replica for a slice of its data.
type ScanRequest struct {
	Keyspace   string
	Start, End []byte // nil bounds are open
	Limit      int
	// Ranges are the token ranges the replica is asked for; a key whose token lies in
	// none of them is skipped. The range {0, 0} covers the whole ring.
	Ranges []ring.Range
	// Stream marks a page of a range being streamed to another node (a join, a
	// decommission, a removal): the same scan, sent as its own message kind so that the
	// transport counts streaming bytes apart from clients' scans.
	Stream bool
	// KeysOnly asks for the records without their values: a listing of the keys and
	// versions held, far smaller than the data (a repair finding the keys of lost chunks).
	KeysOnly bool
	// Digest asks for each live record's value as its digest (see DigestMatches),
	// timestamps, tombstones and expiries as they are: the second replica of a client
	// scan tells its versions without moving their values. KeysOnly overrides it.
	Digest bool
	// Scan names the client scan this request serves and Nodes how many nodes that scan
	// waits for: the read stage orders the scan's pages by them (paper 004's RaS). Zero
	// for scans that are not a client's (streaming, repair).
	Scan  sched.ScanID
	Nodes int
	// ScanLimit is the client scan's limit when the request was sent, the same for every
	// node of a parallel round, which RaS orders scans by after Nodes; Limit may be less,
	// the rows this node is asked for. 0: Limit is also the scan's.
	ScanLimit int
	// BytesMax bounds the answer's key and value bytes: a scan whose records pass it
	// fails with ErrScanTooLarge rather than hold them (0: no bound).
	BytesMax int
	// PageBytes, when above zero, ends the answer early, and with no error, at the
	// record whose key and value bytes (keys alone with KeysOnly) bring the answer's to
	// PageBytes: a caller paging through a range reads on from the last key, as
	// CutShort tells it to. Streaming and repair set it, so that a page of large values
	// still fits one internode frame.
	PageBytes int
}

// ValueDigestBytes is the length of a value's digest in a Digest scan's answer.
const ValueDigestBytes = 8

// DigestMatches reports whether digest, a record's value in a Digest scan's answer, is
// value's: the xxhash64 of value, big-endian. Two values with the same digest are taken
// for the same value, as Cassandra's digest reads take them.
func DigestMatches(digest, value []byte) bool {
	return len(digest) == ValueDigestBytes && binary.BigEndian.Uint64(digest) == xxhash.Sum64(value)
}

// AppendDigest appends value's digest (see DigestMatches) to dst.
func AppendDigest(dst, value []byte) []byte {
	return binary.BigEndian.AppendUint64(dst, xxhash.Sum64(value))
}

// DefaultPageBytes is the PageBytes streaming and repair ask for: an eighth of an
// internode frame, so that a page ending in a value at the size limit still fits one.
const DefaultPageBytes = 4 << 20

// CutShort reports whether page, the answer to req, may have ended before req's ranges
// did, so that the range goes on after its last key: it holds req.Limit records, or
// req.PageBytes bytes as the replica counted them.
func (req ScanRequest) CutShort(page []lww.Record) bool {
	if len(page) == 0 {
		return false
	}
	return (req.Limit > 0 && len(page) >= req.Limit) || (req.PageBytes > 0 && RecordBytes(page) >= req.PageBytes)
}

// Batches splits records, in order, into runs of at most bytesMax key and value bytes
// (a record larger than that alone), for an Apply each: a repair's writes to one replica
// stay within one internode frame.
func Batches(records []lww.Record, bytesMax int) iter.Seq[[]lww.Record] {
	return func(yield func([]lww.Record) bool) {
		for len(records) > 0 {
			n, size := 1, len(records[0].Key)+len(records[0].Value)
			for ; n < len(records); n++ {
				if size += len(records[n].Key) + len(records[n].Value); size > bytesMax {
					break
				}
			}
			if !yield(records[:n]) {
				return
			}
			records = records[n:]
		}
	}
}

// ClientBatchApplier is a replica that writes a batch of a client's own writes as it
// writes single ones, keeping them in its row cache: the local one.
type ClientBatchApplier interface {
	// ApplyClientBatch is Apply of a batch of one client's writes.
	ApplyClientBatch(ctx context.Context, keyspace string, records []lww.Record) error
}

// ManyGetter is a replica that reads several keys in one call: the local one, whose
// reads of a batch share one task of the read stage.
type ManyGetter interface {
	// GetMany is Get of each key, in order: records[i] and found[i] answer keys[i]. It
	// stops once the values read reach valueBytesMax: records and found then answer
	// only the keys before the next one. The records' values may be the engine's own
	// bytes (storage.Engine.GetEach): read them, never write to them.
	GetMany(ctx context.Context, keyspace string, keys [][]byte, valueBytesMax int) (records []lww.Record, found []bool, err error)
}

// RecordBytes is the key and value bytes of records: what a read of them cost the
// device.
func RecordBytes(records []lww.Record) int {
	n := 0
	for _, r := range records {
		n += len(r.Key) + len(r.Value)
	}
	return n
}

// remoteKey marks the context of a request served for another coordinator.
type remoteKey struct{}

// ServeRemotely returns ctx marked as a request served for another coordinator: the
// replica server marks each request it hands to the local replica.
func ServeRemotely(ctx context.Context) context.Context {
	return context.WithValue(ctx, remoteKey{}, true)
}

// ServedRemotely reports whether ctx is a request served for another coordinator: its
// point reads queue as remote gets (paper 004's ReS puts them after this node's own).
func ServedRemotely(ctx context.Context) bool {
	return ctx.Value(remoteKey{}) != nil
}
