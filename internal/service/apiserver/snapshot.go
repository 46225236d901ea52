package apiserver

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/data/replica"
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

// restoreFanout bounds the records of one RestoreRecords call written at once: each is a
// read at ALL (for a record a truncation hid) and a write, a round trip or two apiece, so
// one after the other a restore wrote about 850 keys a second on a 3-node loopback
// cluster, 32 at once about 3,800 (docs/backup.md).
const restoreFanout = 32

// RestoreRecords writes the records back through the coordinator (coord.Restore), up to
// restoreFanout at once (they are of distinct keys: the merge keeps one version per
// key), and counts what became of them. It fails with the first error, once every write
// started has returned.
func (s *service) RestoreRecords(ctx context.Context, req *kurav1.RestoreRecordsRequest) (*kurav1.RestoreRecordsResponse, error) {
	cl := restoreLevelDefault
	if req.GetConsistency() != kurav1.Consistency_CONSISTENCY_UNSPECIFIED {
		var err error
		if cl, err = levelFromProto(req.GetConsistency()); err != nil {
			return nil, statusOf(err)
		}
	}
	var counts [3]atomic.Int64 // by coord.RestoreOutcome
	var firstErr atomic.Pointer[error]
	slots := make(chan struct{}, restoreFanout)
	var wg sync.WaitGroup
	for _, v := range req.GetRecords() {
		if firstErr.Load() != nil {
			break
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			rec := lww.Record{Key: v.GetKey(), Value: v.GetValue(), Timestamp: hlc.Timestamp(v.GetTimestamp()),
				Tombstone: v.GetDeleted(), ExpiresAt: hlc.Timestamp(v.GetExpiresAt()), Type: replica.TypeFromWire(v.GetType())}
			outcome, err := s.cfg.Coordinator.Restore(ctx, req.GetKeyspace(), rec, cl)
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
				return
			}
			counts[outcome].Add(1)
		})
	}
	wg.Wait()
	if err := firstErr.Load(); err != nil {
		return nil, statusOf(*err)
	}
	return &kurav1.RestoreRecordsResponse{AsIs: counts[coord.RestoredAsIs].Load(), Restamped: counts[coord.RestoredRestamped].Load(),
		KeptNewer: counts[coord.RestoreKeptNewer].Load()}, nil
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
