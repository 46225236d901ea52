package replica

import (
	"context"
	"errors"
	"fmt"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/transport"
)

// kindOffload carries writes for a sleeping replica to one of its offload holders.
var kindOffload = transport.RegisterKind(21, "offload")

// OffloadLog keeps the writes held for other nodes until they can take them: the node's
// hint store (*hints.Store), so that offloaded writes and hints are one log, replayed
// the same way.
type OffloadLog interface {
	Add(target, keyspace string, rec lww.Record) error
}

// errNoOffloadLog answers an offload sent to a node that keeps no log.
var errNoOffloadLog = errors.New("replica: this node keeps no offload log")

// Offload adds each record to the node's offload log for target. Each record is one
// entry of its own key, appended with no lock shared between writers: the paper saw
// latency spikes from one lock per offload log.
func (l *Local) Offload(_ context.Context, target, keyspace string, records []lww.Record) error {
	if l.offloads == nil {
		return errNoOffloadLog
	}
	if _, err := l.keyspaces.Get(keyspace); err != nil {
		return err
	}
	for _, rec := range records {
		if err := l.offloads.Add(target, keyspace, rec); err != nil {
			return fmt.Errorf("offload for %s: %w", target, err)
		}
	}
	return nil
}

// Offload sends an offload request.
func (r *Remote) Offload(ctx context.Context, target, keyspace string, records []lww.Record) error {
	req := mutateRequest(keyspace, records)
	req.OffloadFor = target
	_, err := r.call(ctx, kindOffload, req)
	return err
}

// offload serves an offload request: the records are observed on the clock, as a
// mutation's are, since they will be applied with their timestamps.
func (s *Server) offload(ctx context.Context, from transport.Peer, payload []byte) ([]byte, error) {
	var req kurav1.MutateRequest
	if err := decodeRequest(payload, &req, kindOffload, from); err != nil {
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
