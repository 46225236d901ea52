package node

import (
	"context"
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/cluster"
	"github.com/kuradb/kura/coord"
)

// redirectLeft answers a request this node refuses because it has left the ring or was
// removed (coord.LeftRingError) with a Redirect detail naming the members that serve
// instead, its own DC's first, as a sleeping node's stand-in does: the Go client then
// sends the request there at once, so that a client of a node in the last moments of
// its decommission sees no error. The refusal comes before any replica was asked, so the
// request is safe to send again.
func (n *Node) redirectLeft(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	reply, err := handler(ctx, req)
	var left *coord.LeftRingError
	if err == nil || !errors.As(err, &left) {
		return reply, err
	}
	var targets []*kurav1.RedirectTarget
	for _, t := range n.power.RedirectTargets(n.cfg.ID) {
		if other, ok := n.directory.Node(t.GetId()); ok && t.GetId() != n.cfg.ID && other.Status.OnRing() && other.Status != cluster.StatusLeaving {
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 {
		return reply, err
	}
	detailed, derr := status.New(codes.Unavailable, status.Convert(err).Message()).WithDetails(&kurav1.Redirect{NodeId: n.cfg.ID, Reason: left.Status.String(), Targets: targets})
	if derr != nil {
		return reply, err // a Redirect always marshals
	}
	return reply, &statusError{status: detailed, cause: err}
}
