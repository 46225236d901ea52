package remote

import (
	"context"
	"fmt"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/io/transport"
)

// ScanProgress sends a scan_progress message.
func (r *Remote) ScanProgress(ctx context.Context, scan sched.ScanID, nodes int) error {
	_, err := r.call(ctx, transport.KindScanProgress, &kurav1.ScanProgressRequest{ScanId: uint64(scan), Nodes: int32(nodes)})
	return err
}

// scanProgress serves a scan_progress message from the local replica.
func (s *Server) scanProgress(ctx context.Context, from transport.Peer, payload []byte) ([]byte, error) {
	var req kurav1.ScanProgressRequest
	if err := decodeRequest(payload, &req, transport.KindScanProgress, from); err != nil {
		return nil, err
	}
	if req.GetNodes() < 0 {
		return nil, fmt.Errorf("scan_progress from %s: %d nodes", from.ID, req.GetNodes())
	}
	return nil, s.local.ScanProgress(ctx, sched.ScanID(req.GetScanId()), int(req.GetNodes()))
}
