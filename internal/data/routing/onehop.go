package routing

import (
	"context"
	"fmt"

	"github.com/kuradb/kura/internal/core/ring"
)

// OneHop routes with the full ring view that membership keeps on every node: the owner is
// found locally, with no message and so zero forwarding hops.
type OneHop struct {
	view       func() (*ring.Ring, error)
	successors int
}

// NewOneHop returns a router over the current ring view (view is called on each lookup,
// so a membership change is seen at once), reporting up to successors further nodes
// after the owner.
func NewOneHop(view func() (*ring.Ring, error), successors int) *OneHop {
	return &OneHop{view: view, successors: successors}
}

// Name returns "onehop".
func (o *OneHop) Name() string { return "onehop" }

// Lookup returns the first node at or after token and the distinct nodes after it.
func (o *OneHop) Lookup(ctx context.Context, token ring.Token) (Route, error) {
	if err := ctx.Err(); err != nil {
		return Route{}, err
	}
	r, err := o.view()
	if err != nil {
		return Route{}, fmt.Errorf("%w: %w", ErrNoRing, err)
	}
	if r == nil {
		return Route{}, ErrNoRing
	}
	var route Route
	r.Walk(token, func(m ring.Member) bool {
		if route.Owner == "" {
			route.Owner = m.ID
		} else {
			route.Successors = append(route.Successors, m.ID)
		}
		return len(route.Successors) < o.successors
	})
	return route, nil
}
