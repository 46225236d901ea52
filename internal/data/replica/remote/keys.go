package remote

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/io/transport"
)

// ScanKeys sends a scan_keys request.
func (r *Remote) ScanKeys(ctx context.Context, req replica.KeysRequest) (replica.KeysPage, error) {
	raw, err := r.call(ctx, transport.KindScanKeys, keysRequestToProto(req))
	if err != nil {
		return replica.KeysPage{}, err
	}
	var resp kurav1.ScanKeysResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		return replica.KeysPage{}, fmt.Errorf("replica %s: decode scan_keys: %w", r.peer.ID, err)
	}
	page := replica.KeysPage{
		Records: make([]lww.Record, len(resp.GetRecords())),
		Live:    int(resp.GetLive()), Expiring: int(resp.GetExpiring()), Visited: int(resp.GetVisited()),
		Done: resp.GetDone(), Next: resp.GetNext(),
	}
	for i, rec := range resp.GetRecords() {
		page.Records[i] = replica.FromProto(rec)
	}
	return page, nil
}

// scanKeys serves a scan_keys request from the local replica.
func (s *Server) scanKeys(ctx context.Context, from transport.Peer, payload []byte) ([]byte, error) {
	var wire kurav1.ScanKeysRequest
	if err := decodeRequest(payload, &wire, transport.KindScanKeys, from); err != nil {
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
		resp.Records[i] = replica.ToProto(rec)
	}
	return proto.Marshal(resp)
}

func keysRequestToProto(req replica.KeysRequest) *kurav1.ScanKeysRequest {
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

func keysRequestFromProto(wire *kurav1.ScanKeysRequest) replica.KeysRequest {
	req := replica.KeysRequest{
		Keyspace: wire.GetKeyspace(),
		Limit:    int(wire.GetLimit()), VisitMax: int(wire.GetVisitMax()), CountOnly: wire.GetCountOnly(), Now: hlc.Timestamp(wire.GetNow()),
	}
	for _, sp := range wire.GetSpans() {
		req.Spans = append(req.Spans, replica.Span{From: sp.GetFrom(), To: sp.GetTo()})
	}
	for _, rg := range wire.GetRanges() {
		req.Ranges = append(req.Ranges, ring.Range{Start: ring.Token(rg.GetStart()), End: ring.Token(rg.GetEnd())})
	}
	return req
}
