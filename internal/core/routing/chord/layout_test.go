package chord

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestNewLayoutRejects(t *testing.T) {
	tests := map[string][]Peer{
		"empty":          nil,
		"no name":        {{ID: 1, DC: "A"}},
		"same name":      {{ID: 1, Name: "a"}, {ID: 2, Name: "a"}},
		"same identifer": {{ID: 1, Name: "a"}, {ID: 1, Name: "b"}},
	}
	for name, peers := range tests {
		if _, err := NewLayout(peers); !errors.Is(err, ErrBadLayout) {
			t.Errorf("%s: error %v, want ErrBadLayout", name, err)
		}
	}
}

func TestLayoutOwner(t *testing.T) {
	layout := smallLayout(t, map[string][]ID{"A": {10, 200}, "B": {50}})
	tests := []struct{ key, want ID }{{10, 10}, {11, 50}, {50, 50}, {199, 200}, {201, 10}, {0, 10}}
	for _, tt := range tests {
		if got := layout.Owner(tt.key); got.ID != tt.want {
			t.Errorf("Owner(%d) = %v, want %d", tt.key, got, tt.want)
		}
	}
}

func TestFollowingRunsOnPastTheRingsEnd(t *testing.T) {
	sorted := []Peer{{ID: 1}, {ID: 2}, {ID: 3}, {ID: 4}}
	tests := []struct {
		at, k int
		want  []ID
	}{
		{at: 0, k: 3, want: []ID{2, 3, 4}},
		{at: 1, k: 2, want: []ID{3, 4}},
		{at: 2, k: 3, want: []ID{4, 1, 2}},
		{at: 3, k: 1, want: []ID{1}},
	}
	for _, tt := range tests {
		var got []ID
		for _, p := range following(sorted, tt.at, tt.k) {
			got = append(got, p.ID)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("following(at %d, k %d) = %v, want %v", tt.at, tt.k, got, tt.want)
		}
	}
}

func TestStableNode(t *testing.T) {
	layout := smallLayout(t, map[string][]ID{"A": {1, 5, 10, 12}, "B": {3, 7, 9, 15}})
	rng := rand.New(rand.NewPCG(1, 1))
	ids := func(peers []Peer) []ID {
		out := make([]ID, len(peers))
		for i, p := range peers {
			out[i] = p.ID
		}
		return out
	}
	tests := []struct {
		protocol               Protocol
		self                   ID
		layer                  Layer
		wantPred               ID
		wantSuccs, wantFingers []ID
	}{
		// Fingers at 1+1, 1+2, 1+4, 1+8 on the 4-bit circle.
		{ProtocolChord, 1, LayerGlobal, 15, []ID{3, 5}, []ID{3, 3, 5, 9}},
		{ProtocolMLChord, 1, LayerLocal, 12, []ID{5, 10}, []ID{5, 5, 5, 10}},
		// mlchord's global list runs past r = 2 to the next A node.
		{ProtocolMLChord, 12, LayerGlobal, 10, []ID{15, 1}, []ID{15, 15, 1, 5}},
		{ProtocolMLChord, 15, LayerGlobal, 12, []ID{1, 3}, []ID{1, 1, 3, 7}},
		{ProtocolMLChord, 5, LayerGlobal, 3, []ID{7, 9, 10}, []ID{7, 7, 9, 15}},
	}
	for _, tt := range tests {
		n, err := layout.StableNode(Config{Self: Peer{ID: tt.self, Name: "n" + tt.self.String(), DC: map[bool]string{true: "A", false: "B"}[slices.Contains([]ID{1, 5, 10, 12}, tt.self)]},
			Protocol: tt.protocol, IDBits: 4, SuccessorListLen: 2, Rand: rng})
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Predecessor(tt.layer).ID; got != tt.wantPred {
			t.Errorf("%v node %d %v pred %d, want %d", tt.protocol, tt.self, tt.layer, got, tt.wantPred)
		}
		if got := ids(n.Successors(tt.layer)); !slices.Equal(got, tt.wantSuccs) {
			t.Errorf("%v node %d %v successors %v, want %v", tt.protocol, tt.self, tt.layer, got, tt.wantSuccs)
		}
		if got := ids(n.Fingers(tt.layer)); !slices.Equal(got, tt.wantFingers) {
			t.Errorf("%v node %d %v fingers %v, want %v", tt.protocol, tt.self, tt.layer, got, tt.wantFingers)
		}
	}
	if _, err := layout.StableNode(Config{Self: Peer{ID: 4, Name: "stranger"}, Protocol: ProtocolChord, IDBits: 4, Rand: rng}); !errors.Is(err, ErrBadLayout) {
		t.Errorf("node outside the layout: error %v, want ErrBadLayout", err)
	}
}

// TestRoutingEntries counts distinct peers, not slots: node 1's chord tables name 15
// (pred), 3, 5 (successors) and 9 (finger).
func TestRoutingEntries(t *testing.T) {
	layout := smallLayout(t, map[string][]ID{"A": {1, 5, 10, 12}, "B": {3, 7, 9, 15}})
	n, err := layout.StableNode(Config{Self: Peer{ID: 1, Name: "n1", DC: "A"}, Protocol: ProtocolChord, IDBits: 4, SuccessorListLen: 2, Rand: rand.New(rand.NewPCG(1, 1))})
	if err != nil {
		t.Fatal(err)
	}
	if got := n.RoutingEntries(); got != 4 {
		t.Errorf("RoutingEntries = %d, want 4", got)
	}
}
