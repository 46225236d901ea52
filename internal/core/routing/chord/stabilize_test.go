package chord

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
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

// TestNotify: a node keeps the nearest predecessor it hears of and passes the other one
// (the notifier, or the predecessor it displaced) on to its predecessor, which is nearer.
func TestNotify(t *testing.T) {
	p := func(id ID, dc string) Peer { return Peer{ID: id, Name: fmt.Sprintf("n%d", id), DC: dc} }
	tests := []struct {
		name       string
		pred       Peer
		layer      Layer
		from       Peer
		named      Peer // Pred of a passed-on Notify
		wantPred   Peer
		wantPassOn string // the Notify passed on, "" for none
	}{
		{"no predecessor yet", Peer{}, LayerGlobal, p(50, "B"), Peer{}, p(50, "B"), ""},
		{"the predecessor itself", p(50, "B"), LayerGlobal, p(50, "B"), Peer{}, p(50, "B"), ""},
		{"closer predecessor", p(40, "B"), LayerGlobal, p(50, "B"), Peer{}, p(50, "B"), "n50: Notify global pred=40@B"},
		{"farther one is passed on", p(60, "B"), LayerGlobal, p(50, "B"), Peer{}, p(60, "B"), "n60: Notify global pred=50@B"},
		{"passed-on notify names the node", p(40, "B"), LayerGlobal, p(200, "A"), p(50, "B"), p(50, "B"), "n50: Notify global pred=40@B"},
		{"another DC on the local ring is ignored", p(40, "A"), LayerLocal, p(50, "B"), Peer{}, p(40, "A"), ""},
	}
	for _, tt := range tests {
		n, err := New(Config{Self: p(100, "A"), Protocol: ProtocolMLChord, Rand: rand.New(rand.NewPCG(1, 1))})
		if err != nil {
			t.Fatal(err)
		}
		n.rings[tt.layer].pred = tt.pred
		n.rings[tt.layer].succs = []Peer{p(200, "A")}
		out := n.Step(0, Message{Type: MsgNotify, Layer: tt.layer, From: tt.from, Pred: tt.named})
		if got := n.Predecessor(tt.layer); got != tt.wantPred {
			t.Errorf("%s: pred %v, want %v", tt.name, got, tt.wantPred)
		}
		var passOn []string
		for _, env := range out.Messages {
			passOn = append(passOn, env.To.Name+": "+env.Msg.String())
		}
		if got := strings.Join(passOn, "; "); got != tt.wantPassOn {
			t.Errorf("%s: sent %q, want %q", tt.name, got, tt.wantPassOn)
		}
	}
}

// TestSimultaneousJoins: a cluster started together joins through the node that founds the
// ring, all at once. Plain Chord places one joiner per round of stabilize (the founder
// keeps only the nearest notifier), so the ring takes as many seconds as it has nodes;
// kura passes notices on and walks to the successor at once, and every predecessor and
// successor list is right within a few rounds, whatever the number of nodes.
func TestSimultaneousJoins(t *testing.T) {
	for _, protocol := range []Protocol{ProtocolChord, ProtocolMLChord} {
		for _, size := range []int{9, 30, 100} {
			t.Run(fmt.Sprintf("%s/%d", protocol, size), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(5, uint64(size)))
				peers := randomPeers(rng, []int{size / 3, size / 3, size - 2*(size/3)})
				cfg := Config{Protocol: protocol, SuccessorListLen: 4}
				tn := newTestNet(t)
				for i, p := range peers {
					c := cfg
					c.Self, c.Rand = p, rand.New(rand.NewPCG(uint64(i), 2))
					n, err := New(c)
					if err != nil {
						t.Fatal(err)
					}
					tn.nodes[p.Name] = n
				}
				// Everyone asks the founder before it founds: it holds the requests.
				for _, p := range peers[1:] {
					tn.take(tn.nodes[p.Name].Join(0, peers...))
				}
				tn.deliverAll()
				tn.take(tn.nodes[peers[0].Name].Join(0))
				tn.deliverAll()
				for _, p := range peers {
					if !tn.nodes[p.Name].Joined() {
						t.Fatalf("%s has not joined when the ring was founded", p)
					}
				}
				const limit = 8 * time.Second
				for tn.now < limit && !tablesConverged(t, tn, cfg, false) {
					tn.tickAll(100 * time.Millisecond)
				}
				if !tablesConverged(t, tn, cfg, false) {
					checkConverged(t, tn, cfg)
					t.Fatalf("predecessors and successor lists not right after %v", limit)
				}
			})
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
	tablesConverged(t, tn, cfg, true)
}

// tablesConverged reports whether every live node's predecessors and successor lists are
// those of a stabilised ring, and with fingers also its finger tables; it fails the test
// for every difference when report is set.
func tablesConverged(t *testing.T, tn *testNet, cfg Config, report bool) bool {
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
	converged := true
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
			if g.pred == w.pred && slices.Equal(g.succs, w.succs) && (!report || slices.Equal(g.fingers, w.fingers)) {
				continue
			}
			converged = false
			if report {
				t.Errorf("%s %s: pred %s succs %s, want pred %s succs %s (fingers equal: %v)",
					p, l, g.pred, peerList(g.succs), w.pred, peerList(w.succs), slices.Equal(g.fingers, w.fingers))
			}
		}
	}
	return converged
}

// TestSuspicionEndsWhenPeerSpeaks: a peer taken for failed because an answer came late is
// trusted again as soon as it sends anything; a peer that left is not trusted again for a
// message it sent before leaving, only when it joins anew.
func TestSuspicionEndsWhenPeerSpeaks(t *testing.T) {
	p := func(id ID) Peer { return Peer{ID: id, Name: fmt.Sprintf("n%d", id), DC: "A"} }
	ping := Message{Type: MsgPing, From: p(50), Seq: 1}
	rejoin := Message{Type: MsgFindSuccessor, From: p(50), Origin: p(50), Seq: 1, Key: 50, Purpose: PurposeJoin}
	tests := []struct {
		name        string
		left        bool
		then        Message
		wantSuspect bool
	}{
		{"failed peer speaks", false, ping, false},
		{"departed peer's late message", true, ping, true},
		{"departed peer joins again", true, rejoin, false},
	}
	for _, tt := range tests {
		n, err := New(Config{Self: p(100), Protocol: ProtocolChord, Rand: rand.New(rand.NewPCG(1, 1))})
		if err != nil {
			t.Fatal(err)
		}
		n.Join(0)
		if tt.left {
			n.Step(0, Message{Type: MsgLeave, From: p(50)})
		} else {
			n.markFailed(0, p(50))
		}
		if !n.isSuspect(p(50)) {
			t.Fatalf("%s: n50 not suspected to begin with", tt.name)
		}
		n.Step(time.Second, tt.then)
		if got := n.isSuspect(p(50)); got != tt.wantSuspect {
			t.Errorf("%s: suspected %v, want %v", tt.name, got, tt.wantSuspect)
		}
	}
}
