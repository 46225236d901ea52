package remote

import (
	"context"
	"fmt"
	"math"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/io/transport"
)

// Clock is what the server needs of the node's hybrid logical clock: every timestamp a
// remote coordinator stamped is observed, and refused when too far ahead.
type Clock interface {
	Observe(remote hlc.Timestamp) error
}

// Server answers other coordinators' replica requests from the local replica.
type Server struct {
	local replica.Replica
	clock Clock
}

// NewServer returns a server over the node's local replica and clock.
func NewServer(local replica.Replica, clock Clock) *Server {
	return &Server{local: local, clock: clock}
}

// Handle serves one request of a kind Handles accepts.
func (s *Server) Handle(ctx context.Context, from transport.Peer, kind transport.Kind, payload []byte) ([]byte, error) {
	ctx = replica.ServeRemotely(ctx)
	switch kind {
	case transport.KindScanProgress:
		return s.scanProgress(ctx, from, payload)
	case transport.KindPaxosPrepare, transport.KindPaxosPropose, transport.KindPaxosCommit:
		return s.handlePaxos(ctx, from, kind, payload)
	case transport.KindTreeDigest:
		return s.treeDigest(ctx, from, payload)
	case transport.KindScanKeys:
		return s.scanKeys(ctx, from, payload)
	case transport.KindOffload:
		return s.offload(ctx, from, payload)
	case transport.KindMutate:
		var req kurav1.MutateRequest
		if err := decodeRequest(payload, &req, transport.KindMutate, from); err != nil {
			return nil, err
		}
		records, err := s.observe(req.GetRecords())
		if err != nil {
			return nil, fmt.Errorf("mutate from %s: %w", from.ID, err)
		}
		return nil, s.local.Apply(ctx, req.GetKeyspace(), records)
	case transport.KindRead, transport.KindChunkRead:
		var req kurav1.ReadRequest
		if err := decodeRequest(payload, &req, kind, from); err != nil {
			return nil, err
		}
		if kind == transport.KindChunkRead {
			rec, found, err := s.local.ReadChunk(ctx, req.GetKeyspace(), req.GetKey())
			if err != nil {
				return nil, err
			}
			return encodeChunkAnswer(rec, found), nil
		}
		rec, found, err := s.local.Get(ctx, req.GetKeyspace(), req.GetKey())
		if err != nil {
			return nil, err
		}
		resp := &kurav1.ReadResponse{Found: found}
		if found {
			resp.Record = replica.ToProto(rec)
		}
		return proto.Marshal(resp)
	case transport.KindReadMany:
		return s.readMany(ctx, from, payload)
	case transport.KindScan, transport.KindStreamRange:
		var req kurav1.ReplicaScanRequest
		if err := decodeRequest(payload, &req, kind, from); err != nil {
			return nil, err
		}
		scan := replica.ScanRequest{Keyspace: req.GetKeyspace(), Start: req.GetStart(), End: req.GetEnd(), Limit: int(req.GetLimit()), KeysOnly: req.GetKeysOnly(), Digest: req.GetDigest(),
			Scan: sched.ScanID(req.GetScanId()), Nodes: int(req.GetNodes()), ScanLimit: int(req.GetScanLimit()), BytesMax: int(req.GetMaxBytes()), PageBytes: int(req.GetPageBytes())}
		for _, rg := range req.GetRanges() {
			scan.Ranges = append(scan.Ranges, ring.Range{Start: ring.Token(rg.GetStart()), End: ring.Token(rg.GetEnd())})
		}
		recs, err := s.local.Scan(ctx, scan)
		if err != nil {
			return nil, err
		}
		return proto.Marshal(replica.ScanResponse(recs))
	}
	return nil, fmt.Errorf("replica: unexpected message kind %v from %s", kind, from.ID)
}

// observe converts a mutation's records, observing each timestamp on the node's clock so
// that this node never stamps a later write below one it stored, and refusing a
// timestamp too far ahead of it.
func (s *Server) observe(wire []*kurav1.Record) ([]lww.Record, error) {
	records := make([]lww.Record, len(wire))
	for i, r := range wire {
		records[i] = replica.FromProto(r)
		if err := s.clock.Observe(records[i].Timestamp); err != nil {
			return nil, err
		}
	}
	return records, nil
}

// decodeRequest unmarshals a request's payload into req, naming its kind and sender when
// it cannot.
func decodeRequest(payload []byte, req proto.Message, kind transport.Kind, from transport.Peer) error {
	if err := proto.Unmarshal(payload, req); err != nil {
		return fmt.Errorf("decode %v from %s: %w", kind, from.ID, err)
	}
	return nil
}

// readMany answers a read_many request from the local replica's GetMany.
func (s *Server) readMany(ctx context.Context, from transport.Peer, payload []byte) ([]byte, error) {
	var req kurav1.ReadManyRequest
	if err := decodeRequest(payload, &req, transport.KindReadMany, from); err != nil {
		return nil, err
	}
	keys := req.GetKeys()
	switch {
	case len(keys) > readManyKeysMax:
		return nil, fmt.Errorf("read_many from %s: %d keys, at most %d at once", from.ID, len(keys), readManyKeysMax)
	case req.GetValueBytesMax() <= 0:
		return nil, fmt.Errorf("read_many from %s: value_bytes_max is %d, must be positive", from.ID, req.GetValueBytesMax())
	}
	many, ok := s.local.(replica.ManyGetter)
	if !ok {
		return nil, fmt.Errorf("read_many from %s: this replica reads keys one at a time", from.ID)
	}
	records, found, err := many.GetMany(ctx, req.GetKeyspace(), keys, int(min(req.GetValueBytesMax(), int64(math.MaxInt32))))
	if err != nil {
		return nil, err
	}
	resp := &kurav1.ReadManyResponse{Answers: make([]*kurav1.ReadResponse, len(records))}
	for i, rec := range records {
		resp.Answers[i] = &kurav1.ReadResponse{Found: found[i]}
		if found[i] {
			resp.Answers[i].Record = replica.ToProto(rec)
		}
	}
	return proto.Marshal(resp)
}
