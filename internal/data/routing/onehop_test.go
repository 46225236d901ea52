package routing

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/core/ring"
)

func TestOneHop(t *testing.T) {
	members := []ring.Member{
		{ID: "a", DC: "A", Tokens: []ring.Token{100}},
		{ID: "b", DC: "B", Tokens: []ring.Token{200, 250}},
		{ID: "c", DC: "A", Tokens: []ring.Token{300}},
	}
	r, err := ring.New(members)
	if err != nil {
		t.Fatal(err)
	}
	view := func() (*ring.Ring, error) { return r, nil }
	tests := []struct {
		token          ring.Token
		successors     int
		wantOwner      string
		wantSuccessors []string
	}{
		{100, 2, "a", []string{"b", "c"}},
		{201, 2, "b", []string{"c", "a"}},
		{225, 1, "b", []string{"c"}},                 // b's second token
		{^ring.Token(0), 5, "a", []string{"b", "c"}}, // past the top: wraps; only 3 nodes
		{301, 0, "a", nil},                           // wraps to a
	}
	for _, tt := range tests {
		o := NewOneHop(view, tt.successors)
		route, err := o.Lookup(context.Background(), tt.token)
		if err != nil {
			t.Fatal(err)
		}
		if route.Owner != tt.wantOwner || !slices.Equal(route.Successors, tt.wantSuccessors) || route.Hops != 0 || route.InterDCHops != 0 {
			t.Errorf("Lookup(%d) = %+v, want owner %s successors %v and no hops", tt.token, route, tt.wantOwner, tt.wantSuccessors)
		}
	}
	if got := NewOneHop(view, 0).Name(); got != "onehop" {
		t.Errorf("Name() = %q", got)
	}
}

func TestOneHopErrors(t *testing.T) {
	noView := NewOneHop(func() (*ring.Ring, error) { return nil, errors.New("no members yet") }, 1)
	if _, err := noView.Lookup(context.Background(), 1); !errors.Is(err, ErrNoRing) {
		t.Errorf("without a view: error %v, want ErrNoRing", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := noView.Lookup(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: error %v, want context.Canceled", err)
	}
}
