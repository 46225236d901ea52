// Package remote is the replica protocol over the internode transport: Remote is
// another node's Replica (package replica), reached through any Caller (the real
// transport, or the simulator's network); Server answers other coordinators' requests
// with the local replica; Set hands out every node's replica. Both ends of the wire live
// here, so that the message kinds and the codec of their answers stay private to it.
package remote

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/io/transport"
)

// Caller sends a request to a peer and waits for its answer, counting the bytes per DC
// pair and kind: *transport.Transport over TCP, or the simulator's network.
type Caller interface {
	Call(ctx context.Context, to transport.Peer, kind transport.Kind, payload []byte) ([]byte, error)
}

// Remote is another node's replica, reached through a Caller.
type Remote struct {
	net  Caller
	peer transport.Peer
}

// call sends one request, naming the replica in the error and saying when the deadline,
// not the replica, ended it.
func (r *Remote) call(ctx context.Context, kind transport.Kind, req proto.Message) ([]byte, error) {
	payload, err := proto.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode %v for replica %s: %w", kind, r.peer.ID, err)
	}
	answer, err := r.net.Call(ctx, r.peer, kind, payload)
	if err != nil {
		var remote *transport.RemoteError
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("replica %s: no answer in time: %w", r.peer.ID, err)
		}
		if errors.As(err, &remote) {
			// Errors cross the wire as a code and text: give the coordinator's refusals
			// (wireErrors) their identity back. An answer too large keeps its own, which
			// only Scan tells apart.
			if sentinel := identify(remote); sentinel != nil && sentinel != transport.ErrFrameTooLarge {
				return nil, fmt.Errorf("replica %s: %w", r.peer.ID, &refusal{sentinel: sentinel, msg: remote.Msg})
			}
		}
		return nil, fmt.Errorf("replica %s: %w", r.peer.ID, err)
	}
	return answer, nil
}

// refusal is a refusal that crossed the wire, with its identity given back: its
// message is the remote one as it was (the reason included), and errors.Is matches the
// sentinel it starts with.
type refusal struct {
	sentinel error
	msg      string
}

func (e *refusal) Error() string        { return e.msg }
func (e *refusal) Is(target error) bool { return target == e.sentinel }

// Apply sends a mutate request.
func (r *Remote) Apply(ctx context.Context, keyspace string, records []lww.Record) error {
	_, err := r.call(ctx, transport.KindMutate, mutateRequest(keyspace, records))
	return err
}

func mutateRequest(keyspace string, records []lww.Record) *kurav1.MutateRequest {
	req := &kurav1.MutateRequest{Keyspace: keyspace, Records: make([]*kurav1.Record, len(records))}
	for i, rec := range records {
		req.Records[i] = replica.ToProto(rec)
	}
	return req
}

// Get sends a read request.
func (r *Remote) Get(ctx context.Context, keyspace string, key []byte) (lww.Record, bool, error) {
	raw, err := r.call(ctx, transport.KindRead, &kurav1.ReadRequest{Keyspace: keyspace, Key: key})
	if err != nil {
		return lww.Record{}, false, err
	}
	rec, found, err := decodeReadResponse(raw)
	if err != nil {
		return lww.Record{}, false, fmt.Errorf("replica %s: decode read: %w", r.peer.ID, err)
	}
	if !found {
		return lww.Record{}, false, nil
	}
	return rec, true, nil
}

// GetMany sends a read_many request: Get of each key, in one message (ManyGetter). The
// answer's keys and values are slices of the frame it came in.
func (r *Remote) GetMany(ctx context.Context, keyspace string, keys [][]byte, valueBytesMax int) ([]lww.Record, []bool, error) {
	raw, err := r.call(ctx, transport.KindReadMany, &kurav1.ReadManyRequest{Keyspace: keyspace, Keys: keys, ValueBytesMax: int64(valueBytesMax)})
	if err != nil {
		return nil, nil, err
	}
	records, found, err := decodeReadManyResponse(raw)
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("replica %s: decode read_many: %w", r.peer.ID, err)
	case len(records) > len(keys):
		return nil, nil, fmt.Errorf("replica %s: read_many answered %d keys of %d", r.peer.ID, len(records), len(keys))
	}
	return records, found, nil
}

// ReadChunk sends a chunk_read request.
func (r *Remote) ReadChunk(ctx context.Context, keyspace string, chunkKey []byte) (lww.Record, bool, error) {
	raw, err := r.call(ctx, transport.KindChunkRead, &kurav1.ReadRequest{Keyspace: keyspace, Key: chunkKey})
	if err != nil {
		return lww.Record{}, false, err
	}
	rec, found, err := decodeChunkAnswer(chunkKey, raw)
	if err != nil {
		return lww.Record{}, false, fmt.Errorf("replica %s: %w", r.peer.ID, err)
	}
	return rec, found, nil
}

// Scan sends a scan request.
func (r *Remote) Scan(ctx context.Context, req replica.ScanRequest) ([]lww.Record, error) {
	wire := &kurav1.ReplicaScanRequest{Keyspace: req.Keyspace, Start: req.Start, End: req.End, Limit: int32(req.Limit), KeysOnly: req.KeysOnly, Digest: req.Digest,
		ScanId: uint64(req.Scan), Nodes: int32(req.Nodes), ScanLimit: int32(req.ScanLimit), MaxBytes: int64(req.BytesMax), PageBytes: int64(req.PageBytes)}
	for _, rg := range req.Ranges {
		wire.Ranges = append(wire.Ranges, &kurav1.TokenRange{Start: uint64(rg.Start), End: uint64(rg.End)})
	}
	kind := transport.KindScan
	if req.Stream {
		kind = transport.KindStreamRange
	}
	raw, err := r.call(ctx, kind, wire)
	var remote *transport.RemoteError
	if req.BytesMax > 0 && errors.As(err, &remote) && identify(remote) == transport.ErrFrameTooLarge {
		// The answer fits no internode frame, though under the bound asked: to the
		// coordinator's caller that is the same refusal of a scan too large.
		return nil, fmt.Errorf("replica %s: %w (%s)", r.peer.ID, replica.ErrScanTooLarge, remote.Msg)
	}
	if err != nil {
		return nil, err
	}
	out, err := decodeScanResponse(raw)
	if err != nil {
		return nil, fmt.Errorf("replica %s: decode scan: %w", r.peer.ID, err)
	}
	return out, nil
}
