package chord

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestTrimSuccessors(t *testing.T) {
	p := func(id ID, dc string) Peer { return Peer{ID: id, Name: fmt.Sprintf("n%d", id), DC: dc} }
	self := p(100, "A")
	tests := []struct {
		name       string
		protocol   Protocol
		layer      Layer
		gapListMax int
		candidates []Peer
		want       []Peer
	}{
		{"keeps r in order", ProtocolChord, LayerGlobal, 8,
			[]Peer{p(110, "B"), p(120, "A"), p(130, "B")}, []Peer{p(110, "B"), p(120, "A")}},
		{"drops duplicates, self and out-of-order entries", ProtocolChord, LayerGlobal, 8,
			[]Peer{p(110, "B"), p(110, "B"), self, p(105, "B"), p(5, "A")}, []Peer{p(110, "B"), p(5, "A")}},
		{"local ring keeps its own DC", ProtocolMLChord, LayerLocal, 8,
			[]Peer{p(110, "B"), p(120, "A"), p(130, "B"), p(140, "A")}, []Peer{p(120, "A"), p(140, "A")}},
		{"gap list runs on to the own DC", ProtocolMLChord, LayerGlobal, 8,
			[]Peer{p(110, "B"), p(120, "C"), p(130, "B"), p(140, "A"), p(150, "B")},
			[]Peer{p(110, "B"), p(120, "C"), p(130, "B"), p(140, "A")}},
		{"gap list is at least r long", ProtocolMLChord, LayerGlobal, 8,
			[]Peer{p(110, "A"), p(120, "B"), p(130, "B")}, []Peer{p(110, "A"), p(120, "B")}},
		{"gap list stops at GapListMax", ProtocolMLChord, LayerGlobal, 3,
			[]Peer{p(110, "B"), p(120, "B"), p(130, "B"), p(140, "B"), p(150, "A")},
			[]Peer{p(110, "B"), p(120, "B"), p(130, "B")}},
	}
	for _, tt := range tests {
		n, err := New(Config{Self: self, Protocol: tt.protocol, SuccessorListLen: 2, GapListMax: tt.gapListMax, Rand: rand.New(rand.NewPCG(1, 1))})
		if err != nil {
			t.Fatal(err)
		}
		if got := n.trimSuccessors(tt.layer, tt.candidates); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %s, want %s", tt.name, peerList(got), peerList(tt.want))
		}
	}
}

func TestNotify(t *testing.T) {
	p := func(id ID, dc string) Peer { return Peer{ID: id, Name: fmt.Sprintf("n%d", id), DC: dc} }
	tests := []struct {
		name     string
		pred     Peer
		layer    Layer
		from     Peer
		wantPred Peer
	}{
		{"no predecessor yet", Peer{}, LayerGlobal, p(50, "B"), p(50, "B")},
		{"closer predecessor", p(40, "B"), LayerGlobal, p(50, "B"), p(50, "B")},
		{"farther one is ignored", p(60, "B"), LayerGlobal, p(50, "B"), p(60, "B")},
		{"another DC on the local ring is ignored", p(40, "A"), LayerLocal, p(50, "B"), p(40, "A")},
	}
	for _, tt := range tests {
		n, err := New(Config{Self: p(100, "A"), Protocol: ProtocolMLChord, Rand: rand.New(rand.NewPCG(1, 1))})
		if err != nil {
			t.Fatal(err)
		}
		n.rings[tt.layer].pred = tt.pred
		n.rings[tt.layer].succs = []Peer{p(200, "A")}
		n.Step(0, Message{Type: MsgNotify, Layer: tt.layer, From: tt.from})
		if got := n.Predecessor(tt.layer); got != tt.wantPred {
			t.Errorf("%s: pred %v, want %v", tt.name, got, tt.wantPred)
		}
	}
}

// TestGapListWalk: node 0, alone in DC A with node 200, has a gap of 19 B nodes while
// each B node's own list holds 2; stabilize pages along the ring until the list reaches
// 200.
func TestGapListWalk(t *testing.T) {
	dcs := map[string][]ID{"A": {0, 200}}
	for id := ID(10); id < 200; id += 10 {
		dcs["B"] = append(dcs["B"], id)
	}
	layout := smallLayout(t, dcs)
	tn := stableNet(t, layout, Config{Protocol: ProtocolMLChord, IDBits: 8, SuccessorListLen: 2})
	n0 := tn.nodes["n0"]
	n0.rings[LayerGlobal].succs = n0.rings[LayerGlobal].succs[:1]
	for range 20 {
		tn.tickAll(100 * time.Millisecond)
	}
	got := n0.Successors(LayerGlobal)
	if len(got) != 20 || got[19].ID != 200 {
		t.Fatalf("node 0's gap list %s, want the 19 B nodes then 200", peerList(got))
	}
}

// TestConvergence grows rings by joins through random bootstraps, with crashes and
// leaves on the way, and checks every protocol converges to the stabilised tables. The
// ML protocols are given a bootstrap of the joining node's own DC when one exists, as
// the paper assumes; kura's mlchord also converges without (its gap list finds the own
// DC's nodes on the global ring), while the paper's local rings would stay split.
func TestConvergence(t *testing.T) {
	tests := []struct {
		protocol       Protocol
		ownDCBootstrap bool
	}{
		{ProtocolChord, false},
		{ProtocolMLChordPaper, true},
		{ProtocolMLChord, true},
		{ProtocolMLChord, false},
	}
	for _, tt := range tests {
		protocol := tt.protocol
		t.Run(fmt.Sprintf("%s/own-DC-bootstrap=%v", protocol, tt.ownDCBootstrap), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, uint64(protocol)))
			peers := randomPeers(rng, []int{12, 7, 3})
			rng.Shuffle(len(peers), func(i, j int) { peers[i], peers[j] = peers[j], peers[i] })
			tn := newTestNet(t)
			var joined []Peer
			for i, p := range peers {
				n, err := New(Config{Self: p, Protocol: protocol, SuccessorListLen: 3, Rand: rand.New(rand.NewPCG(uint64(i), 2))})
				if err != nil {
					t.Fatal(err)
				}
				tn.nodes[p.Name] = n
				var known []Peer
				for range min(2, len(joined)) {
					known = append(known, joined[rng.IntN(len(joined))])
				}
				if i := slices.IndexFunc(joined, func(j Peer) bool { return j.DC == p.DC }); tt.ownDCBootstrap && i >= 0 {
					known = append(known, joined[i])
				}
				tn.take(n.Join(tn.now, known...))
				tn.deliverAll()
				joined = append(joined, p)
				for range 5 {
					tn.tickAll(100 * time.Millisecond)
				}
			}
			tn.down[joined[3].Name] = true
			tn.down[joined[4].Name] = true
			tn.take(tn.nodes[joined[5].Name].Leave(tn.now))
			tn.down[joined[5].Name] = true
			for range 1200 {
				tn.tickAll(100 * time.Millisecond)
			}
			checkConverged(t, tn, Config{Protocol: protocol, SuccessorListLen: 3})
		})
	}
}

// checkConverged fails for every live node whose tables differ from a stabilised ring.
func checkConverged(t *testing.T, tn *testNet, cfg Config) {
	t.Helper()
	var live []Peer
	for name, n := range tn.nodes {
		if !tn.down[name] {
			live = append(live, n.Self())
		}
	}
	layout, err := NewLayout(live)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range layout.Peers() {
		c := cfg
		c.Self = p
		c.Rand = rand.New(rand.NewPCG(1, 1))
		want, err := layout.StableNode(c)
		if err != nil {
			t.Fatal(err)
		}
		got := tn.nodes[p.Name]
		for _, l := range got.layers() {
			g, w := got.rings[l], want.rings[l]
			if g.pred != w.pred || !slices.Equal(g.succs, w.succs) || !slices.Equal(g.fingers, w.fingers) {
				t.Errorf("%s %s: pred %s succs %s, want pred %s succs %s (fingers equal: %v)",
					p, l, g.pred, peerList(g.succs), w.pred, peerList(w.succs), slices.Equal(g.fingers, w.fingers))
			}
		}
	}
}
