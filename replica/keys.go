package replica

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/ring"
	"github.com/kuradb/kura/sched"
	"github.com/kuradb/kura/storage"
	"github.com/kuradb/kura/transport"
)

// kindScanKeys asks a replica for a page of its live keys (a walk of its live-key index,
// SCAN's substrate); its request is a ScanKeysRequest, its answer a ScanKeysResponse.
var kindScanKeys = transport.RegisterKind(20, "scan_keys")

// KeysRequest asks one replica for its live keys of Keyspace at the positions of Spans,
// in position order. A key's position is the hash partitioner's token of the key
// (storage.KeyPosition), whatever the keyspace's partitioner.
type KeysRequest struct {
	Keyspace string
	// Spans are ascending and disjoint.
	Spans []Span
	// Ranges, when set, keeps only the keys whose token under the keyspace's partitioner
	// lies in one of them: with the ordered partitioner, positions and tokens differ.
	Ranges []ring.Range
	// Limit bounds the live keys answered, VisitMax the index entries visited, live or
	// not (storage.LiveScan).
	Limit, VisitMax int
	// CountOnly counts the live keys instead of answering them.
	CountOnly bool
	// Now is the time the keys must be live at, the coordinator's, so that every replica
	// asked judges expiry at the same time.
	Now hlc.Timestamp
}

// Span is the positions From..To, both included.
type Span struct {
	From, To uint64
}

// KeysPage is a replica's answer to a KeysRequest.
type KeysPage struct {
	// Records are the live records met, in position order, without their values.
	Records []lww.Record
	// Live and Expiring count the live keys met and those of them with an expiry;
	// Visited counts the index entries visited.
	Live, Expiring, Visited int
	// Done reports that the walk reached the end of its spans; otherwise it visited
	// every entry of its spans before position Next, and none at or after it.
	Done bool
	Next uint64
}

// ScanKeys walks the engine's live-key index.
func (l *Local) ScanKeys(ctx context.Context, req KeysRequest) (KeysPage, error) {
	ks, err := l.keyspaces.Get(req.Keyspace)
	if err != nil {
		return KeysPage{}, err
	}
	scan := storage.LiveScan{Limit: req.Limit, VisitMax: req.VisitMax, CountOnly: req.CountOnly, Now: req.Now, TruncatedAt: ks.TruncatedAt}
	for _, sp := range req.Spans {
		scan.Spans = append(scan.Spans, storage.Span{From: sp.From, To: sp.To})
	}
	if len(req.Ranges) > 0 {
		scan.Filter = inRanges(ks.Partition(), req.Ranges)
	}
	page, err := staged(ctx, l, sched.Task{Class: sched.ScanPage}, func() (storage.LivePage, int, error) {
		page, err := l.engine.ScanLive(ks.Name, scan)
		return page, recordBytes(page.Records), err
	})
	if err != nil {
		return KeysPage{}, err
	}
	return KeysPage{Records: page.Records, Live: page.Live, Expiring: page.Expiring, Visited: page.Visited, Done: page.Done, Next: page.Next}, nil
}

// ScanKeys sends a scan_keys request.
func (r *Remote) ScanKeys(ctx context.Context, req KeysRequest) (KeysPage, error) {
	raw, err := r.call(ctx, kindScanKeys, keysRequestToProto(req))
	if err != nil {
		return KeysPage{}, err
	}
	var resp kurav1.ScanKeysResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		return KeysPage{}, fmt.Errorf("replica %s: decode scan_keys: %w", r.peer.ID, err)
	}
	page := KeysPage{
		Records: make([]lww.Record, len(resp.GetRecords())),
		Live:    int(resp.GetLive()), Expiring: int(resp.GetExpiring()), Visited: int(resp.GetVisited()),
		Done: resp.GetDone(), Next: resp.GetNext(),
	}
	for i, rec := range resp.GetRecords() {
		page.Records[i] = FromProto(rec)
	}
	return page, nil
}

// scanKeys serves a scan_keys request from the local replica.
func (s *Server) scanKeys(ctx context.Context, from transport.Peer, payload []byte) ([]byte, error) {
	var wire kurav1.ScanKeysRequest
	if err := decodeRequest(payload, &wire, kindScanKeys, from); err != nil {
		return nil, err
	}
	page, err := s.local.ScanKeys(ctx, keysRequestFromProto(&wire))
	if err != nil {
		return nil, err
	}
	resp := &kurav1.ScanKeysResponse{
		Records: make([]*kurav1.Record, len(page.Records)),
		Live:    int64(page.Live), Expiring: int64(page.Expiring), Visited: int64(page.Visited),
		Done: page.Done, Next: page.Next,
	}
	for i, rec := range page.Records {
		resp.Records[i] = ToProto(rec)
	}
	return proto.Marshal(resp)
}

func keysRequestToProto(req KeysRequest) *kurav1.ScanKeysRequest {
	wire := &kurav1.ScanKeysRequest{
		Keyspace: req.Keyspace,
		Limit:    int32(req.Limit), VisitMax: int32(req.VisitMax), CountOnly: req.CountOnly, Now: uint64(req.Now),
	}
	for _, sp := range req.Spans {
		wire.Spans = append(wire.Spans, &kurav1.PositionSpan{From: sp.From, To: sp.To})
	}
	for _, rg := range req.Ranges {
		wire.Ranges = append(wire.Ranges, &kurav1.TokenRange{Start: uint64(rg.Start), End: uint64(rg.End)})
	}
	return wire
}

func keysRequestFromProto(wire *kurav1.ScanKeysRequest) KeysRequest {
	req := KeysRequest{
		Keyspace: wire.GetKeyspace(),
		Limit:    int(wire.GetLimit()), VisitMax: int(wire.GetVisitMax()), CountOnly: wire.GetCountOnly(), Now: hlc.Timestamp(wire.GetNow()),
	}
	for _, sp := range wire.GetSpans() {
		req.Spans = append(req.Spans, Span{From: sp.GetFrom(), To: sp.GetTo()})
	}
	for _, rg := range wire.GetRanges() {
		req.Ranges = append(req.Ranges, ring.Range{Start: ring.Token(rg.GetStart()), End: ring.Token(rg.GetEnd())})
	}
	return req
}
