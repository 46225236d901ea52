package chord

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
)

// smallLayout builds a layout on a small circle from (id, dc) pairs, naming node i "n<i>".
func smallLayout(t *testing.T, dcs map[string][]ID) *Layout {
	t.Helper()
	var peers []Peer
	for dc, ids := range dcs {
		for _, id := range ids {
			peers = append(peers, Peer{ID: id, Name: "n" + strconv.FormatUint(uint64(id), 10), DC: dc})
		}
	}
	layout, err := NewLayout(peers)
	if err != nil {
		t.Fatal(err)
	}
	return layout
}

// TestFig5 replays the paper's Fig. 5 on its 4-bit circle: nodes 1, 5, 10 and 12 in DC A,
// the rest in DC B; node 1 looks up key 14, held by node 15. The paper names B's nodes 9
// and 15 and rules out 11, 13 and 14; B = {3, 7, 9, 15} fits every step of its prose
// (node 1's global candidate is 9, node 10's local candidate 1, ...).
func TestFig5(t *testing.T) {
	layout := smallLayout(t, map[string][]ID{"A": {1, 5, 10, 12}, "B": {3, 7, 9, 15}})
	tests := []struct {
		protocol       Protocol
		successors     int
		wantPath       string
		wantInterDC    int
		wantOwner      ID
		wantHopsString string
	}{
		// Fig. 5(a): every one of Chord's three hops crosses between DCs.
		{ProtocolChord, 1, "1 → 9 → 12 → 15", 3, 15, "3 hops"},
		// Fig. 5(b): ML-Chord stays in A until the last hop.
		{ProtocolMLChordPaper, 1, "1 → 10 → 12 → 15", 1, 15, "3 hops"},
		// kura's rule with the shortest list (to the next A node) takes the paper's path...
		{ProtocolMLChord, 1, "1 → 10 → 12 → 15", 1, 15, "3 hops"},
		// ...and with the default list of 8, key 14 is already in node 1's list.
		{ProtocolMLChord, 8, "1 → 15", 1, 15, "1 hops"},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s/r=%d", tt.protocol, tt.successors)
		t.Run(name, func(t *testing.T) {
			tn := stableNet(t, layout, Config{Protocol: tt.protocol, IDBits: 4, SuccessorListLen: tt.successors, TraceLookups: true})
			res := tn.lookup("n1", 14)
			path := pathString(res.Path)
			t.Logf("%s: %s (%d hops, %d inter-DC)", name, path, res.Hops, res.InterDCHops)
			if path != tt.wantPath || res.InterDCHops != tt.wantInterDC || res.Owner.ID != tt.wantOwner ||
				fmt.Sprintf("%d hops", res.Hops) != tt.wantHopsString {
				t.Errorf("got %s, %d hops, %d inter-DC, owner %s; want %s, %s, %d inter-DC, owner %d",
					path, res.Hops, res.InterDCHops, res.Owner, tt.wantPath, tt.wantHopsString, tt.wantInterDC, tt.wantOwner)
			}
		})
	}
}

// TestPaperRuleCrossesTwice shows the layout where Fig. 4's rule alone breaks its bound:
// node 0 is the last A node before key 7, whose owner is A's node 8, with only B nodes in
// between. No local finger of 0 precedes 7, so the rule jumps to B's node 4; B routes to
// 6, which hands the request back to 8 in A: two crossings for a key whose owner was in
// the coordinator's own DC. kura's gap list knows 8 owns (6, 8] and goes there directly.
func TestPaperRuleCrossesTwice(t *testing.T) {
	layout := smallLayout(t, map[string][]ID{"A": {0, 8, 12}, "B": {1, 2, 3, 4, 5, 6}})
	tests := []struct {
		protocol    Protocol
		wantPath    string
		wantInterDC int
	}{
		{ProtocolChord, "0 → 4 → 6 → 8", 2},
		{ProtocolMLChordPaper, "0 → 4 → 6 → 8", 2},
		{ProtocolMLChord, "0 → 8", 0},
	}
	for _, tt := range tests {
		t.Run(tt.protocol.String(), func(t *testing.T) {
			tn := stableNet(t, layout, Config{Protocol: tt.protocol, IDBits: 4, SuccessorListLen: 1, TraceLookups: true})
			res := tn.lookup("n0", 7)
			path := pathString(res.Path)
			t.Logf("%s: %s (%d inter-DC)", tt.protocol, path, res.InterDCHops)
			if path != tt.wantPath || res.InterDCHops != tt.wantInterDC || res.Owner.ID != 8 {
				t.Errorf("got %s with %d inter-DC hops to %s; want %s with %d to 8", path, res.InterDCHops, res.Owner, tt.wantPath, tt.wantInterDC)
			}
		})
	}
}

// routeStats sums lookups over a layout.
type routeStats struct {
	lookups, correct, hops, interDC, interDCMax, lowerBound int
}

func (s routeStats) String() string {
	f := float64(s.lookups)
	return fmt.Sprintf("correct %d/%d, hops %.2f, inter-DC %.2f (max %d), lower bound %.2f",
		s.correct, s.lookups, float64(s.hops)/f, float64(s.interDC)/f, s.interDCMax, float64(s.lowerBound)/f)
}

// measure runs lookups of random keys from random nodes over stabilised tables.
func measure(t *testing.T, layout *Layout, cfg Config, lookups int, seed uint64) routeStats {
	tn := stableNet(t, layout, cfg)
	peers := layout.Peers()
	rng := rand.New(rand.NewPCG(seed, 1))
	var s routeStats
	for range lookups {
		from := peers[rng.IntN(len(peers))]
		key := ID(rng.Uint64())
		res := tn.lookup(from.Name, key)
		owner := layout.Owner(key)
		s.lookups++
		if res.Err == nil && res.Owner.Name == owner.Name {
			s.correct++
		}
		if owner.DC != from.DC {
			s.lowerBound++
		}
		s.hops += res.Hops
		s.interDC += res.InterDCHops
		s.interDCMax = max(s.interDCMax, res.InterDCHops)
	}
	return s
}

// TestRoutingProperties checks, over random layouts of 2 and 3 DCs of unequal sizes with
// stabilised tables, that every protocol finds the true owner and that kura's mlchord
// never crosses between DCs more than once, reaching the lower bound exactly (one
// crossing exactly when the owner is in another DC).
func TestRoutingProperties(t *testing.T) {
	layouts := [][]int{{40, 25}, {120, 80}, {30, 50, 7}, {60, 20, 90}, {3, 100}}
	for li, sizes := range layouts {
		for seed := uint64(1); seed <= 3; seed++ {
			layout, err := NewLayout(randomPeers(rand.New(rand.NewPCG(seed, uint64(li))), sizes))
			if err != nil {
				t.Fatal(err)
			}
			for _, protocol := range []Protocol{ProtocolChord, ProtocolMLChordPaper, ProtocolMLChord} {
				s := measure(t, layout, Config{Protocol: protocol}, 300, seed)
				if s.correct != s.lookups {
					t.Errorf("%v %v seed %d: %v", sizes, protocol, seed, s)
				}
				if protocol == ProtocolMLChord && (s.interDCMax > 1 || s.interDC != s.lowerBound) {
					t.Errorf("%v mlchord seed %d: %v; want at most 1 inter-DC hop, at the bound", sizes, seed, s)
				}
			}
		}
	}
}

// TestClosestPreceding checks the choice among candidate lists on a 4-bit circle, seen
// from node 10.
func TestClosestPreceding(t *testing.T) {
	p := func(id ID) Peer { return Peer{ID: id, Name: "n" + id.String(), DC: "A"} }
	n, err := New(Config{Self: p(10), Protocol: ProtocolChord, IDBits: 4, Rand: rand.New(rand.NewPCG(1, 1))})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key   ID
		lists [][]Peer
		want  Peer
	}{
		{14, [][]Peer{{p(12), p(1)}, {p(15)}}, p(12)},          // 1 and 15 overshoot 14
		{3, [][]Peer{{p(12), p(1)}, {p(15)}}, p(1)},            // wraps past 0
		{11, [][]Peer{{p(12), p(1)}}, Peer{}},                  // nothing in (10, 11)
		{14, [][]Peer{{Peer{}, p(13)}, {p(11), p(10)}}, p(13)}, // skips empty slots and self
	}
	for _, tt := range tests {
		if got := n.closestPreceding(tt.key, tt.lists...); got != tt.want {
			t.Errorf("closestPreceding(%s, %v) = %v, want %v", tt.key, tt.lists, got, tt.want)
		}
	}
	n.suspects["n13"] = suspicion{until: 1}
	if got := n.closestPreceding(14, []Peer{p(12), p(13)}); got != p(12) {
		t.Errorf("with 13 suspected: got %v, want 12", got)
	}
}

// TestHopsFromSuccessorList pins down where mlchord's cut in total hops comes from: the
// successor list. On a single DC mlchord is Chord routing through its successor list, and
// it takes about as many hops as mlchord on two DCs; the local-first rule itself (the
// paper's rule) saves none.
func TestHopsFromSuccessorList(t *testing.T) {
	peers := randomPeers(rand.New(rand.NewPCG(5, 5)), []int{200, 200})
	twoDCs, err := NewLayout(peers)
	if err != nil {
		t.Fatal(err)
	}
	for i := range peers {
		peers[i].DC = "one"
	}
	oneDC, err := NewLayout(peers)
	if err != nil {
		t.Fatal(err)
	}
	chord := measure(t, twoDCs, Config{Protocol: ProtocolChord}, 2000, 3)
	paper := measure(t, twoDCs, Config{Protocol: ProtocolMLChordPaper}, 2000, 3)
	kura := measure(t, twoDCs, Config{Protocol: ProtocolMLChord}, 2000, 3)
	chordWithList := measure(t, oneDC, Config{Protocol: ProtocolMLChord}, 2000, 3)
	t.Logf("chord %v\nmlchord-paper %v\nmlchord %v\nchord routing through its successor list %v", chord, paper, kura, chordWithList)
	hops := func(s routeStats) float64 { return float64(s.hops) / float64(s.lookups) }
	if hops(paper) < 0.95*hops(chord) {
		t.Errorf("the paper's rule saved hops: %.2f against chord's %.2f", hops(paper), hops(chord))
	}
	if hops(kura) > 0.75*hops(chord) {
		t.Errorf("mlchord %.2f hops, not 25%% under chord's %.2f", hops(kura), hops(chord))
	}
	if d := hops(kura) - hops(chordWithList); d < -0.3 || d > 0.3 {
		t.Errorf("mlchord %.2f hops, chord with its successor list %.2f: want within 0.3", hops(kura), hops(chordWithList))
	}
}
