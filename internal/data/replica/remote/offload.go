package remote

import (
	"context"
	"fmt"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/io/transport"
)

// Offload sends an offload request.
func (r *Remote) Offload(ctx context.Context, target, keyspace string, records []lww.Record) error {
	req := mutateRequest(keyspace, records)
	req.OffloadFor = target
	_, err := r.call(ctx, transport.KindOffload, req)
	return err
}

// offload serves an offload request: the records are observed on the clock, as a
// mutation's are, since they will be applied with their timestamps.
func (s *Server) offload(ctx context.Context, from transport.Peer, payload []byte) ([]byte, error) {
	var req kurav1.MutateRequest
	if err := decodeRequest(payload, &req, transport.KindOffload, from); err != nil {
		return nil, err
	}
	if req.GetOffloadFor() == "" {
		return nil, fmt.Errorf("offload from %s names no sleeping replica", from.ID)
	}
	records, err := s.observe(req.GetRecords())
	if err != nil {
		return nil, fmt.Errorf("offload from %s: %w", from.ID, err)
	}
	return nil, s.local.Offload(ctx, req.GetOffloadFor(), req.GetKeyspace(), records)
}
