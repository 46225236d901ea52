package node

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/faults"
	"github.com/kuradb/kura/replica"
	"github.com/kuradb/kura/ring"
)

// localScanPageMax bounds one LocalScan answer.
const localScanPageMax = 1000

// errFaultsDisabled refuses fault injection on a node not started for it.
var errFaultsDisabled = status.Error(codes.FailedPrecondition,
	"fault injection is disabled on this node; start it with --enable-faults (test clusters only)")

func (s *apiServer) SetFaults(_ context.Context, req *kurav1.Faults) (*kurav1.Faults, error) {
	if s.node.faults == nil {
		return nil, errFaultsDisabled
	}
	if err := s.node.SetFaults(faults.FromProto(req)); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return s.node.faults.Spec().Proto(), nil
}

// SetFaults replaces the faults injected into this node (Config.EnableFaults), as kura
// faults does through the admin API: for in-process callers, the simulator's clock skew.
func (n *Node) SetFaults(spec faults.Spec) error {
	if n.faults == nil {
		return errFaultsDisabled
	}
	if err := n.faults.Set(spec); err != nil {
		return err
	}
	n.log.Warn("injected faults", "faults", spec.String())
	return nil
}

func (s *apiServer) GetFaults(context.Context, *kurav1.GetFaultsRequest) (*kurav1.Faults, error) {
	if s.node.faults == nil {
		return nil, errFaultsDisabled
	}
	return s.node.faults.Spec().Proto(), nil
}

// LocalScan answers from this node's own storage: a checker compares the replicas of
// every key with it, which a coordinated read, merging the replicas, would hide.
func (s *apiServer) LocalScan(ctx context.Context, req *kurav1.LocalScanRequest) (*kurav1.LocalScanResponse, error) {
	ks, err := s.node.Keyspace(req.GetKeyspace())
	if err != nil {
		return nil, statusOf(err)
	}
	limit := int(req.GetLimit())
	if limit <= 0 || limit > localScanPageMax {
		limit = localScanPageMax
	}
	recs, err := s.node.local.Scan(ctx, replica.ScanRequest{
		Keyspace: ks.Name, Start: nonEmpty(req.GetStart()), End: nonEmpty(req.GetEnd()), Limit: limit,
		Ranges: []ring.Range{{}},
	})
	if err != nil {
		return nil, statusOf(err)
	}
	resp := &kurav1.LocalScanResponse{Node: s.node.ID()}
	for _, r := range recs {
		members, err := s.node.ring.Replicas(ctx, ks, r.Key, nil)
		if err != nil {
			return nil, statusOf(err)
		}
		v := &kurav1.LocalVersion{Key: r.Key, Value: r.Value, Timestamp: uint64(r.Timestamp), Deleted: r.Tombstone, ExpiresAt: uint64(r.ExpiresAt)}
		for _, m := range members {
			if !m.Pending {
				v.Replicas = append(v.Replicas, m.ID)
			}
		}
		resp.Versions = append(resp.Versions, v)
	}
	if len(recs) == limit {
		resp.Next = append(append([]byte(nil), recs[len(recs)-1].Key...), 0)
	}
	return resp, nil
}
