package apiserver

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/coord"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/lww"
)

// CreateSnapshot serves kura snapshot create on this node.
func (s *service) CreateSnapshot(ctx context.Context, req *kurav1.CreateSnapshotRequest) (*kurav1.Snapshot, error) {
	snap, err := s.cfg.Backend.CreateSnapshot(ctx, req.GetName(), req.GetKeyspaces(), hlc.Timestamp(req.GetCut()), req.GetHold())
	if err != nil {
		return nil, statusOf(err)
	}
	return snap, nil
}

// ListSnapshots serves kura snapshot list on this node.
func (s *service) ListSnapshots(context.Context, *kurav1.ListSnapshotsRequest) (*kurav1.ListSnapshotsResponse, error) {
	resp, err := s.cfg.Backend.Snapshots()
	if err != nil {
		return nil, statusOf(err)
	}
	return resp, nil
}

// DeleteSnapshot serves kura snapshot delete on this node.
func (s *service) DeleteSnapshot(_ context.Context, req *kurav1.DeleteSnapshotRequest) (*kurav1.DeleteSnapshotResponse, error) {
	if err := s.cfg.Backend.DeleteSnapshot(req.GetName()); err != nil {
		return nil, statusOf(err)
	}
	return &kurav1.DeleteSnapshotResponse{Node: s.cfg.NodeID}, nil
}

// ReadSnapshot streams a snapshot's records of a keyspace, a page per message; the
// stream's flow control paces the reading to the client's merge.
func (s *service) ReadSnapshot(req *kurav1.ReadSnapshotRequest, stream grpc.ServerStreamingServer[kurav1.SnapshotPage]) error {
	err := s.cfg.Backend.ReadSnapshot(stream.Context(), req.GetName(), req.GetKeyspace(), func(page []*kurav1.LocalVersion) error {
		return stream.Send(&kurav1.SnapshotPage{Node: s.cfg.NodeID, Versions: page})
	})
	return statusOf(err)
}

// restoreLevelDefault is the level of a restore's writes when the request names none: a
// restore is worth waiting for a majority of each key's replicas.
const restoreLevelDefault = consistency.Quorum

// RestoreRecords writes each record back through the coordinator (coord.Restore), in
// order, and counts what became of them; it stops at the first failure.
func (s *service) RestoreRecords(ctx context.Context, req *kurav1.RestoreRecordsRequest) (*kurav1.RestoreRecordsResponse, error) {
	cl := restoreLevelDefault
	if req.GetConsistency() != kurav1.Consistency_CONSISTENCY_UNSPECIFIED {
		var err error
		if cl, err = levelFromProto(req.GetConsistency()); err != nil {
			return nil, statusOf(err)
		}
	}
	resp := &kurav1.RestoreRecordsResponse{}
	for _, v := range req.GetRecords() {
		rec := lww.Record{Key: v.GetKey(), Value: v.GetValue(), Timestamp: hlc.Timestamp(v.GetTimestamp()),
			Tombstone: v.GetDeleted(), ExpiresAt: hlc.Timestamp(v.GetExpiresAt())}
		outcome, err := s.cfg.Coordinator.Restore(ctx, req.GetKeyspace(), rec, cl)
		if err != nil {
			return nil, statusOf(err)
		}
		switch outcome {
		case coord.RestoredAsIs:
			resp.AsIs++
		case coord.RestoredRestamped:
			resp.Restamped++
		case coord.RestoreKeptNewer:
			resp.KeptNewer++
		}
	}
	return resp, nil
}

// holdDefault is how long a hold of writes lasts unless the request says: long enough
// for every node's checkpoint, short enough that writes do not wait long for a snapshot
// whose command died.
const holdDefault = 30 * time.Second

// HoldWrites serves a cluster snapshot's first step on this node.
func (s *service) HoldWrites(ctx context.Context, req *kurav1.HoldWritesRequest) (*kurav1.HoldWritesResponse, error) {
	if req.GetHold() == "" || req.GetHoldMs() < 0 {
		return nil, statusOf(fmt.Errorf("%w: a hold needs an id and a duration of 0 (the default) or more", coord.ErrInvalidArgument))
	}
	d := time.Duration(req.GetHoldMs()) * time.Millisecond
	if d == 0 {
		d = holdDefault
	}
	clock, err := s.cfg.Backend.HoldWrites(ctx, req.GetHold(), d)
	if err != nil {
		return nil, statusOf(err)
	}
	return &kurav1.HoldWritesResponse{Node: s.cfg.NodeID, Clock: uint64(clock)}, nil
}

// ReleaseWrites serves a cluster snapshot's last step on this node.
func (s *service) ReleaseWrites(_ context.Context, req *kurav1.ReleaseWritesRequest) (*kurav1.ReleaseWritesResponse, error) {
	return &kurav1.ReleaseWritesResponse{Node: s.cfg.NodeID, Held: s.cfg.Backend.ReleaseWrites(req.GetHold())}, nil
}
