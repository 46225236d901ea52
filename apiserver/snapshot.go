package apiserver

import (
	"context"

	"google.golang.org/grpc"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/coord"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/lww"
)

// CreateSnapshot serves kura snapshot create on this node.
func (s *service) CreateSnapshot(ctx context.Context, req *kurav1.CreateSnapshotRequest) (*kurav1.Snapshot, error) {
	snap, err := s.cfg.Backend.CreateSnapshot(ctx, req.GetName(), req.GetKeyspaces())
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
