package apiserver

import (
	"context"
	"maps"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
)

func (s *service) CreateKeyspace(ctx context.Context, req *kurav1.CreateKeyspaceRequest) (*kurav1.CreateKeyspaceResponse, error) {
	err := s.cfg.Backend.CreateKeyspace(ctx, req.GetKeyspace())
	if err != nil {
		return nil, statusOf(err)
	}
	return &kurav1.CreateKeyspaceResponse{}, nil
}

func (s *service) TruncateKeyspace(ctx context.Context, req *kurav1.TruncateKeyspaceRequest) (*kurav1.TruncateKeyspaceResponse, error) {
	ts, err := s.cfg.Backend.TruncateKeyspace(ctx, req.GetName())
	if err != nil {
		return nil, statusOf(err)
	}
	return &kurav1.TruncateKeyspaceResponse{TruncatedAt: uint64(ts)}, nil
}

func (s *service) DropKeyspace(ctx context.Context, req *kurav1.DropKeyspaceRequest) (*kurav1.DropKeyspaceResponse, error) {
	ts, err := s.cfg.Backend.DropKeyspace(ctx, req.GetName())
	if err != nil {
		return nil, statusOf(err)
	}
	return &kurav1.DropKeyspaceResponse{DroppedAt: uint64(ts)}, nil
}

func (s *service) ListKeyspaces(context.Context, *kurav1.ListKeyspacesRequest) (*kurav1.ListKeyspacesResponse, error) {
	return &kurav1.ListKeyspacesResponse{Keyspaces: s.cfg.Backend.Keyspaces()}, nil
}

func (s *service) DescribeKeyspace(_ context.Context, req *kurav1.DescribeKeyspaceRequest) (*kurav1.Keyspace, error) {
	ks, err := s.cfg.Backend.Keyspace(req.GetName())
	if err != nil {
		return nil, statusOf(err)
	}
	return ks, nil
}

// Info describes this node alone: what kura info prints.
func (s *service) Info(context.Context, *kurav1.InfoRequest) (*kurav1.NodeInfo, error) {
	info, err := s.cfg.Backend.Info()
	if err != nil {
		return nil, statusOf(err)
	}
	return info, nil
}

func (s *service) ClusterStatus(context.Context, *kurav1.ClusterStatusRequest) (*kurav1.ClusterStatusResponse, error) {
	return s.cfg.Backend.ClusterStatus(), nil
}

// Ring lists every node's tokens and ownership on this node's ring, and with a keyspace,
// the share of its token space each node holds replicas of.
func (s *service) Ring(_ context.Context, req *kurav1.RingRequest) (*kurav1.RingResponse, error) {
	resp, err := s.cfg.Backend.Ring(req.GetKeyspace())
	if err != nil {
		if _, isStatus := status.FromError(err); isStatus {
			return nil, err
		}
		return nil, statusOf(err)
	}
	return resp, nil
}

// SetPower puts a node to sleep or wakes it.
func (s *service) SetPower(ctx context.Context, req *kurav1.SetPowerRequest) (*kurav1.SetPowerResponse, error) {
	state, err := s.cfg.Backend.SetPower(ctx, req.GetNodeId(), req.GetAction())
	if err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	return &kurav1.SetPowerResponse{Power: state}, nil
}

func (s *service) Decommission(ctx context.Context, req *kurav1.DecommissionRequest) (*kurav1.MoveResponse, error) {
	st, err := s.cfg.Backend.Decommission(ctx, req.GetForce())
	if err != nil {
		return nil, moveStatus(err)
	}
	return moveResponse(st), nil
}

func (s *service) RemoveNode(ctx context.Context, req *kurav1.RemoveNodeRequest) (*kurav1.MoveResponse, error) {
	st, err := s.cfg.Backend.RemoveNode(ctx, req.GetId(), req.GetForce())
	if err != nil {
		return nil, moveStatus(err)
	}
	return moveResponse(st), nil
}

func (s *service) Cleanup(ctx context.Context, req *kurav1.CleanupRequest) (*kurav1.CleanupResponse, error) {
	records, bytes, err := s.cfg.Backend.Cleanup(ctx, req.GetKeyspace())
	if err != nil {
		return nil, moveStatus(err)
	}
	return &kurav1.CleanupResponse{RecordsRemoved: records, RemovedBytes: bytes}, nil
}

func moveResponse(st MoveStats) *kurav1.MoveResponse {
	return &kurav1.MoveResponse{Gainers: st.Gainers, Ranges: int64(st.Ranges), Records: st.Records, Bytes: st.Bytes,
		CrossDcBytes: st.CrossDCBytes, Seconds: st.Took.Seconds()}
}

func (s *service) Repair(ctx context.Context, req *kurav1.RepairRequest) (*kurav1.RepairResponse, error) {
	start := time.Now()
	resp, err := s.cfg.Backend.Repair(ctx, req.GetKeyspace(), req.GetDc())
	if err != nil {
		return nil, statusOf(err)
	}
	resp.Seconds = time.Since(start).Seconds()
	return resp, nil
}

// Rebalance serves the Admin API's Rebalance, streaming each step.
func (s *service) Rebalance(req *kurav1.RebalanceRequest, stream grpc.ServerStreamingServer[kurav1.RebalanceProgress]) error {
	err := s.cfg.Backend.Rebalance(stream.Context(), req.GetKeyspace(), int(req.GetSplits()), func(p RebalanceStep) {
		// A client gone away ends the stream's context, which stops the rebalance.
		_ = stream.Send(&kurav1.RebalanceProgress{Step: p.Step, Before: nodeRows(p.Before), After: nodeRows(p.After)})
	})
	if err != nil {
		return moveStatus(err)
	}
	return nil
}

// AlterKeyspace serves the Admin API's AlterKeyspace, streaming each step.
func (s *service) AlterKeyspace(req *kurav1.AlterKeyspaceRequest, stream grpc.ServerStreamingServer[kurav1.RebalanceProgress]) error {
	if req.GetSettle() == (req.GetReplication() != "") {
		return status.Error(codes.InvalidArgument, "alter keyspace: give a replication, or settle, not both")
	}
	err := s.cfg.Backend.AlterKeyspace(stream.Context(), req.GetKeyspace(), req.GetReplication(), req.GetSettle(), func(p RebalanceStep) {
		// A client gone away ends the stream's context, which stops the move.
		_ = stream.Send(&kurav1.RebalanceProgress{Step: p.Step, Before: nodeRows(p.Before), After: nodeRows(p.After)})
	})
	if err != nil {
		return moveStatus(err)
	}
	return nil
}

func nodeRows(rows map[string]int64) []*kurav1.NodeRows {
	out := make([]*kurav1.NodeRows, 0, len(rows))
	for _, id := range slices.Sorted(maps.Keys(rows)) {
		out = append(out, &kurav1.NodeRows{Node: id, Rows: rows[id]})
	}
	return out
}

// ErrFaultsDisabled refuses fault injection on a node not started for it.
var ErrFaultsDisabled = status.Error(codes.FailedPrecondition,
	"fault injection is disabled on this node; start it with --enable-faults (test clusters only)")

func (s *service) SetFaults(_ context.Context, req *kurav1.Faults) (*kurav1.Faults, error) {
	if _, enabled := s.cfg.Backend.Faults(); !enabled {
		return nil, ErrFaultsDisabled
	}
	if err := s.cfg.Backend.SetFaults(req); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	spec, _ := s.cfg.Backend.Faults()
	return spec, nil
}

func (s *service) GetFaults(context.Context, *kurav1.GetFaultsRequest) (*kurav1.Faults, error) {
	spec, enabled := s.cfg.Backend.Faults()
	if !enabled {
		return nil, ErrFaultsDisabled
	}
	return spec, nil
}

// localScanPageMax bounds one LocalScan answer.
const localScanPageMax = 1000

// LocalScan answers from this node's own storage: a checker compares the replicas of
// every key with it, which a coordinated read, merging the replicas, would hide.
func (s *service) LocalScan(ctx context.Context, req *kurav1.LocalScanRequest) (*kurav1.LocalScanResponse, error) {
	limit := int(req.GetLimit())
	if limit <= 0 || limit > localScanPageMax {
		limit = localScanPageMax
	}
	versions, err := s.cfg.Backend.LocalScan(ctx, req.GetKeyspace(), nonEmpty(req.GetStart()), nonEmpty(req.GetEnd()), limit)
	if err != nil {
		return nil, statusOf(err)
	}
	resp := &kurav1.LocalScanResponse{Node: s.cfg.NodeID, Versions: versions}
	if len(versions) == limit {
		resp.Next = append(append([]byte(nil), versions[len(versions)-1].GetKey()...), 0)
	}
	return resp, nil
}
