package routing

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/kuradb/kura/ring"
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
		key            string
		successors     int
		wantOwner      string
		wantSuccessors []string
	}{
		{"\x00\x00\x00\x00\x00\x00\x00\x64", 2, "a", []string{"b", "c"}}, // token 100
		{"\x00\x00\x00\x00\x00\x00\x00\xc9", 2, "b", []string{"c", "a"}}, // token 201
		{"\x00\x00\x00\x00\x00\x00\x00\xe1", 1, "b", []string{"c"}},      // 225: b's second token
		{"\xff", 5, "a", []string{"b", "c"}},                             // past the top: wraps; only 3 nodes
		{"\x00\x00\x00\x00\x00\x00\x01\x2d", 0, "a", nil},                // 301 wraps to a
	}
	for _, tt := range tests {
		o := NewOneHop(view, ring.OrderedPartitioner(), tt.successors)
		route, err := o.Lookup(context.Background(), []byte(tt.key))
		if err != nil {
			t.Fatal(err)
		}
		if route.Owner != tt.wantOwner || !slices.Equal(route.Successors, tt.wantSuccessors) || route.Hops != 0 || route.InterDCHops != 0 {
			t.Errorf("Lookup(%q) = %+v, want owner %s successors %v and no hops", tt.key, route, tt.wantOwner, tt.wantSuccessors)
		}
	}
	if got := NewOneHop(view, ring.HashPartitioner(), 0).Name(); got != "onehop" {
		t.Errorf("Name() = %q", got)
	}
}

func TestOneHopErrors(t *testing.T) {
	noView := NewOneHop(func() (*ring.Ring, error) { return nil, errors.New("no members yet") }, ring.HashPartitioner(), 1)
	if _, err := noView.Lookup(context.Background(), []byte("k")); !errors.Is(err, ErrNoRing) {
		t.Errorf("without a view: error %v, want ErrNoRing", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := noView.Lookup(ctx, []byte("k")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: error %v, want context.Canceled", err)
	}
}
