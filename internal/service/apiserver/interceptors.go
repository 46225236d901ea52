package apiserver

import (
	"context"
	"errors"
	"runtime/trace"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/data/coord"
)

// grpcOps names the metered gRPC methods by the operation they perform. GetMany and
// PutMany are metered by their handlers, as one get per key and one put per item.
var grpcOps = map[string]string{
	kurav1.KV_Put_FullMethodName:    "put",
	kurav1.KV_Get_FullMethodName:    "get",
	kurav1.KV_Delete_FullMethodName: "delete",
	kurav1.KV_Scan_FullMethodName:   "scan",
	// A lightweight transaction, labelled with its serial level.
	kurav1.KV_CompareAndSet_FullMethodName: "cas",
}

// observeUnary is the gRPC interceptor that reports each data request to the metrics, as
// the Redis front end does.
func (s *service) observeUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	op, metered := grpcOps[info.FullMethod]
	if !metered {
		return handler(ctx, req)
	}
	if trace.IsEnabled() {
		// Each request is a task of the execution trace when one is recorded, named by
		// the node that serves it, so that where a slow request waited can be read there.
		var task *trace.Task
		ctx, task = trace.NewTask(ctx, "kura."+op)
		trace.Log(ctx, "node", s.cfg.NodeID)
		defer task.End()
	}
	start := time.Now()
	reply, err := handler(ctx, req)
	level := consistency.One // what the API serves when the request names no valid level
	switch r := req.(type) {
	case interface{ GetConsistency() kurav1.Consistency }:
		if l, lerr := levelFromProto(r.GetConsistency()); lerr == nil {
			level = l
		}
	case *kurav1.CompareAndSetRequest:
		if l, lerr := serialFromProto(r.GetSerialConsistency()); lerr == nil {
			level = l
		}
	}
	s.cfg.Observe(op, level, time.Since(start), err)
	return reply, err
}

// redirectLeft answers a request this node refuses because it has left the ring or was
// removed (coord.LeftRingError) with a Redirect detail naming the members that serve
// instead, its own DC's first, as a sleeping node's stand-in does: the Go client then
// sends the request there at once, so that a client of a node in the last moments of
// its decommission sees no error. The refusal comes before any replica was asked, so the
// request is safe to send again.
func (s *service) redirectLeft(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	reply, err := handler(ctx, req)
	var left *coord.LeftRingError
	if err == nil || !errors.As(err, &left) {
		return reply, err
	}
	targets := s.cfg.Backend.RedirectTargets()
	if len(targets) == 0 {
		return reply, err
	}
	detailed, derr := status.New(codes.Unavailable, status.Convert(err).Message()).WithDetails(&kurav1.Redirect{NodeId: s.cfg.NodeID, Reason: left.Status.String(), Targets: targets})
	if derr != nil {
		return reply, err // a Redirect always marshals
	}
	return reply, &statusError{status: detailed, cause: err}
}
