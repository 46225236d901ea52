package chord

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// testNet delivers messages between nodes instantly, in send order, with an optional
// log of every message: enough for scripted scenarios and routing checks, where the
// simulator's latencies are not the point.
type testNet struct {
	t       testing.TB
	nodes   map[string]*Node
	down    map[string]bool
	now     time.Duration
	queue   []Envelope
	log     []loggedMsg
	verbose bool
	results []LookupResult
	// drop, when set, loses the messages it returns true for.
	drop func(Envelope) bool
}

func newTestNet(t testing.TB) *testNet {
	return &testNet{t: t, nodes: make(map[string]*Node), down: make(map[string]bool)}
}

// take queues an Output's messages and keeps its finished lookups.
func (tn *testNet) take(out Output) {
	tn.queue = append(tn.queue, out.Messages...)
	tn.results = append(tn.results, out.Lookups...)
}

// deliverAll runs messages until none is left; messages to a down or unknown node vanish.
func (tn *testNet) deliverAll() {
	for steps := 0; len(tn.queue) > 0; steps++ {
		if steps > 1_000_000 {
			tn.t.Fatalf("message storm: %d steps", steps)
		}
		env := tn.queue[0]
		tn.queue = tn.queue[1:]
		n, ok := tn.nodes[env.To.Name]
		lost := !ok || tn.down[env.To.Name] || (tn.drop != nil && tn.drop(env))
		if tn.verbose {
			tn.log = append(tn.log, loggedMsg{env: env, lost: lost})
		}
		if lost {
			continue
		}
		tn.take(n.Step(tn.now, env.Msg))
	}
}

// tickAll advances the clock by d and ticks every live node, in name order.
func (tn *testNet) tickAll(d time.Duration) {
	tn.now += d
	names := make([]string, 0, len(tn.nodes))
	for name := range tn.nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !tn.down[name] {
			tn.take(tn.nodes[name].Tick(tn.now))
		}
	}
	tn.deliverAll()
}

// lookup runs one lookup of key from the named node to completion, ticking the network
// while it waits for timeouts, and returns its result.
func (tn *testNet) lookup(from string, key ID) LookupResult {
	tn.results = nil
	_, out := tn.nodes[from].Lookup(tn.now, key)
	tn.take(out)
	tn.deliverAll()
	for waited := time.Duration(0); len(tn.results) == 0 && waited < time.Minute; waited += 100 * time.Millisecond {
		tn.tickAll(100 * time.Millisecond)
	}
	if len(tn.results) != 1 {
		tn.t.Fatalf("lookup of %s from %s: %d results", key, from, len(tn.results))
	}
	return tn.results[0]
}

// loggedMsg is a message the network delivered or lost.
type loggedMsg struct {
	env  Envelope
	lost bool
}

func (l loggedMsg) String() string {
	suffix := ""
	if l.lost {
		suffix = " (lost)"
	}
	return fmt.Sprintf("%s → %s %s%s", l.env.Msg.From, l.env.To, l.env.Msg, suffix)
}

// stableNet builds a network of stabilised nodes for a layout.
func stableNet(t testing.TB, layout *Layout, cfg Config) *testNet {
	tn := newTestNet(t)
	for i, p := range layout.Peers() {
		c := cfg
		c.Self = p
		c.Rand = rand.New(rand.NewPCG(uint64(i), 7))
		n, err := layout.StableNode(c)
		if err != nil {
			t.Fatal(err)
		}
		tn.nodes[p.Name] = n
	}
	return tn
}

// randomPeers places nodes with random identifiers in DCs of the given sizes, named
// "dc<i>-<j>".
func randomPeers(rng *rand.Rand, sizes []int) []Peer {
	var peers []Peer
	for d, size := range sizes {
		for j := range size {
			name := fmt.Sprintf("dc%d-%d", d, j)
			peers = append(peers, Peer{ID: ID(rng.Uint64()), Name: name, DC: fmt.Sprintf("dc%d", d)})
		}
	}
	return peers
}
