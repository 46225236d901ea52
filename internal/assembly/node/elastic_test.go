package node

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
)

// startJoiner starts a node that joins through seed, optionally replacing a dead node.
// Its ring delay is a second, twenty of its gossip rounds, not the default five: the delay
// is the time every coordinator has to learn of a ring change before streaming starts,
// and on a loaded machine (CI's) five 50 ms rounds were once too few.
func startJoiner(t *testing.T, id, replace string, seed string) *Node {
	t.Helper()
	n, err := Start(Config{
		ID: id, DC: "dc1", Listen: "127.0.0.1:0", Seeds: []string{seed}, InMemory: true, Replace: replace,
		GossipInterval: 50 * time.Millisecond, RingDelay: time.Second, ReplicaTimeout: 2 * time.Second, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// writer writes keys at QUORUM through n until stopped and remembers those acknowledged.
type writer struct {
	mu    sync.Mutex
	acked []string
	stop  chan struct{}
	done  chan struct{}
}

// writerPace spaces a writer's writes: a write a millisecond at most still leaves
// thousands of keys written through every join and decommission, where a writer running
// flat out wrote 50,000 during the elastic test's three joins alone, on a core the joins
// needed, and reading them all back through every node after each step took most of
// the test's time.
const writerPace = time.Millisecond

func startWriter(n *Node, prefix string) *writer {
	w := &writer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		pace := time.NewTicker(writerPace)
		defer pace.Stop()
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			case <-pace.C:
			}
			key := fmt.Sprintf("%s-%05d", prefix, i)
			if _, err := n.Coordinator().Put(context.Background(), "app", []byte(key), []byte("v"), 0, consistency.Quorum); err == nil {
				w.mu.Lock()
				w.acked = append(w.acked, key)
				w.mu.Unlock()
			}
		}
	}()
	return w
}

func (w *writer) finish() []string {
	close(w.stop)
	<-w.done
	return w.acked
}

// checkEveryKey reads every key at ONE through every node and fails on any not found.
func checkEveryKey(t *testing.T, step string, keys []string, nodes ...*Node) {
	t.Helper()
	checkEveryKeyAt(t, step, consistency.One, keys, nodes...)
}

// checkEveryKeyAt reads every key at level through every node and fails on any not found.
// The nodes read at once, each its keys in turn: a writer leaves thousands of keys, and
// one node after another took most of the elastic test's time.
func checkEveryKeyAt(t *testing.T, step string, level consistency.Level, keys []string, nodes ...*Node) {
	t.Helper()
	missing := make([]int, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			for _, k := range keys {
				_, found, err := n.Coordinator().Get(context.Background(), "app", []byte(k), level)
				if err != nil || !found {
					missing[i]++
				}
			}
		})
	}
	wg.Wait()
	for i, n := range nodes {
		if missing[i] > 0 {
			t.Errorf("%s: %d of %d keys missing at %s through %s", step, missing[i], len(keys), level, n.ID())
		}
	}
}

// putBefore writes 300 keys, before-000 to before-299, at ALL through n, and returns them.
func putBefore(t *testing.T, n *Node) []string {
	t.Helper()
	var keys []string
	for i := range 300 {
		key := fmt.Sprintf("before-%03d", i)
		if _, err := n.Coordinator().Put(context.Background(), "app", []byte(key), []byte("v"), 0, consistency.All); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	return keys
}

// threeNodesWithKeys starts nodes a, b and c in dc1, creates keyspace app with the
// given replication, and writes putBefore's keys through a.
func threeNodesWithKeys(t *testing.T, replication string) (a, b, c *Node, keys []string) {
	t.Helper()
	a = startNode(t, "a", "dc1")
	b = startJoiner(t, "b", "", a.Addr())
	c = startJoiner(t, "c", "", a.Addr())
	waitAllNormal(t, 3, a, b, c)
	createKeyspace(t, schema.Keyspace{Name: "app", Replication: replication}, a, b, c)
	return a, b, c, putBefore(t, a)
}

func waitAllNormal(t *testing.T, want int, nodes ...*Node) {
	t.Helper()
	for _, n := range nodes {
		waitUntil(t, fmt.Sprintf("%s sees %d nodes normal", n.ID(), want), func() bool { return normalNodes(n) == want })
	}
}

// TestRingGrowsAndShrinksWithoutLosingAWrite runs the elastic life of a cluster on real
// nodes: three nodes, three join under write load, one is decommissioned, a dead one is
// removed, a dead one is replaced; after every step each acknowledged key is read at ONE
// through every node.
func TestRingGrowsAndShrinksWithoutLosingAWrite(t *testing.T) {
	t.Parallel()
	a, b, c, keys := threeNodesWithKeys(t, "dc1=2")
	ctx := context.Background()

	w := startWriter(a, "join")
	d := startJoiner(t, "d", "", a.Addr())
	e := startJoiner(t, "e", "", a.Addr())
	f := startJoiner(t, "f", "", a.Addr())
	all := []*Node{a, b, c, d, e, f}
	waitAllNormal(t, 6, all...)
	keys = append(keys, w.finish()...)
	t.Logf("%d keys acknowledged before and during the joins", len(keys))
	checkEveryKey(t, "after three joins", keys, all...)

	w = startWriter(a, "decommission")
	if _, err := d.Decommission(ctx, false); err != nil {
		t.Fatal(err)
	}
	keys = append(keys, w.finish()...)
	t.Logf("%d keys acknowledged by the end of the decommission", len(keys))
	d.Close()
	checkEveryKey(t, "after a decommission", keys, a, b, c, e, f)

	e.Close()
	waitUntil(t, "a sees e down", func() bool { return !a.View().State("e").Reachable() })
	if _, err := a.RemoveNode(ctx, "e", false); err != nil {
		t.Fatal(err)
	}
	checkEveryKey(t, "after a removal", keys, a, b, c, f)

	f.Close()
	waitUntil(t, "a sees f down", func() bool { return !a.View().State("f").Reachable() })
	g := startJoiner(t, "g", "f", a.Addr())
	waitAllNormal(t, 4, a, b, c, g)
	checkEveryKey(t, "after a replacement", keys, a, b, c, g)

	removed, _, err := a.Cleanup(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cleanup on a removed %d records", removed)
	checkEveryKey(t, "after cleanup", keys, a, b, c, g)
}

// TestNodeRefusesBeforeItHasARing: a new node whose seeds do not answer has no ring it
// can trust, so it refuses requests (unavailable) instead of acknowledging them on itself.
func TestNodeRefusesBeforeItHasARing(t *testing.T) {
	n := startJoiner(t, "lonely", "", "127.0.0.1:1")
	if err := n.CreateKeyspace(context.Background(), schema.Keyspace{Name: "app", Replication: "simple=1"}); err != nil {
		t.Fatal(err)
	}
	_, err := n.Coordinator().Put(context.Background(), "app", []byte("k"), []byte("v"), 0, consistency.One)
	if coord.Classify(err) != coord.ClassUnavailable {
		t.Fatalf("put before the ring is known: err = %v, want unavailable", err)
	}
}

// TestRestartedNodeCoordinatesOnItsPersistedRing: a node restarted from its data dir
// starts from the ring it persisted, dead peers included, so it neither coordinates on a
// partial ring nor acknowledges a write its down replicas cannot take.
func TestRestartedNodeCoordinatesOnItsPersistedRing(t *testing.T) {
	dir := t.TempDir()
	start := func(id string, seeds ...string) *Node {
		n, err := Start(Config{ID: id, DC: "dc1", Listen: "127.0.0.1:0", Seeds: seeds, DataDir: dir + "/" + id,
			GossipInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		return n
	}
	a := start("a")
	b := start("b", a.Addr())
	waitAllNormal(t, 2, a, b)
	createKeyspace(t, schema.Keyspace{Name: "app", Replication: "simple=2"}, a, b)
	a.Close()
	b.Close()
	a = start("a") // b stays dead
	if got := len(a.View().Nodes()); got != 2 {
		t.Fatalf("restarted a knows %d nodes, want 2 from its persisted ring", got)
	}
	_, err := a.Coordinator().Put(context.Background(), "app", []byte("k"), []byte("v"), 0, consistency.All)
	if coord.Classify(err) != coord.ClassUnavailable {
		t.Fatalf("ALL with the other replica dead after a restart: err = %v, want unavailable", err)
	}
	if _, err := a.Coordinator().Put(context.Background(), "app", []byte("k"), []byte("v"), 0, consistency.One); err != nil {
		t.Fatalf("ONE on the restarted node's own replica: %v", err)
	}
}

// TestWipedNodeRebuildsBeforeItServesReads restarts a member with an empty data dir, as
// after a disk loss, both ways a node can start: joining through a seed, and founding
// with its peers given. It must come back rebuilding (its reads served by the others),
// pull its ranges, and only then serve reads of its own. Each way has a cluster of its
// own: the two run in parallel.
func TestWipedNodeRebuildsBeforeItServesReads(t *testing.T) {
	t.Parallel()
	for _, founding := range []bool{false, true} {
		t.Run(fmt.Sprintf("founding=%v", founding), func(t *testing.T) {
			t.Parallel()
			a := startNode(t, "a", "dc1")
			b := startJoiner(t, "b", "", a.Addr())
			c := startJoiner(t, "c", "", a.Addr())
			waitAllNormal(t, 3, a, b, c)
			ctx := context.Background()
			if err := a.CreateKeyspace(ctx, schema.Keyspace{Name: "app", Replication: "simple=3"}); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, "c knows keyspace app", func() bool { _, err := c.Keyspace("app"); return err == nil })
			var keys []string
			for i := range 100 {
				key := fmt.Sprintf("k%03d", i)
				if _, err := a.coord.Put(ctx, "app", []byte(key), []byte("v"), 0, consistency.All); err != nil {
					t.Fatal(err)
				}
				keys = append(keys, key)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, "a sees c down", func() bool { return !a.View().State("c").Reachable() })

			cfg := Config{ID: "c", DC: "dc1", Listen: "127.0.0.1:0", InMemory: true,
				GossipInterval: 50 * time.Millisecond, ReplicaTimeout: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)}
			if founding {
				cfg.Founding, cfg.Peers = true, []cluster.Node{a.Self(), b.Self()}
			} else {
				cfg.Seeds = []string{a.Addr()}
			}
			wiped, err := Start(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { wiped.Close() })
			// Until it is normal again, every read through it finds every key: it never
			// answers from its empty storage.
			sawRebuilding := false
			for normalNodes(wiped) != 3 || wiped.directory.Self().Status != cluster.StatusNormal {
				sawRebuilding = sawRebuilding || wiped.directory.Self().Status == cluster.StatusRebuilding
				for _, key := range keys[:10] {
					rec, found, err := wiped.coord.Get(ctx, "app", []byte(key), consistency.One)
					if err == nil && (!found || string(rec.Value) != "v") {
						t.Fatalf("%s read through the rebuilding node at ONE: found %v", key, found)
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
			if !sawRebuilding {
				t.Error("the wiped node never went through rebuilding: it joined as a new node")
			}
			for _, key := range keys {
				if _, found, err := wiped.local.Get(ctx, "app", []byte(key)); err != nil || !found {
					t.Fatalf("%s not rebuilt on c (%v)", key, err)
				}
			}
			waitUntil(t, "a sees c normal", func() bool { return a.View().State("c") == cluster.StateUp })
		})
	}
}

// TestTwoWipedNodesRebuildAtOnce: two of a range's three replicas come back with empty
// data dirs at the same time. Neither can wait for the other to become readable (each
// would wait for ever): each pulls from the intact replica and from the other rebuilding
// one, and both come back normal with every key.
func TestTwoWipedNodesRebuildAtOnce(t *testing.T) {
	t.Parallel()
	a, b, c, keys := threeNodesWithKeys(t, "simple=3")
	for _, n := range []*Node{b, c} {
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "a sees b and c down", func() bool {
		return !a.View().State("b").Reachable() && !a.View().State("c").Reachable()
	})
	wiped := []*Node{startJoiner(t, "b", "", a.Addr()), startJoiner(t, "c", "", a.Addr())}
	waitAllNormal(t, 3, append(wiped, a)...)
	for _, n := range wiped {
		for _, key := range keys {
			if _, found, err := n.local.Get(context.Background(), "app", []byte(key)); err != nil || !found {
				t.Fatalf("%s not rebuilt on %s (%v)", key, n.ID(), err)
			}
		}
	}
}

// TestJoinAndDecommissionInADCThatHoldsEveryKeyCrossNoWAN: with dc1=2,dc2=2 every key has
// a replica in each DC, so a node joining dc1 and then decommissioned streams every range
// from, and to, dc1 alone (the copy it takes over, the one it hands over), and every
// acknowledged key stays readable at ONE through every node.
func TestJoinAndDecommissionInADCThatHoldsEveryKeyCrossNoWAN(t *testing.T) {
	t.Parallel()
	a := startNode(t, "a", "dc1")
	b := startNode(t, "b", "dc1", a.Addr())
	c := startNode(t, "c", "dc2", a.Addr())
	d := startNode(t, "d", "dc2", a.Addr())
	// f makes dc1 three nodes, so that e's decommission leaves the default keyspace
	// (each=3) its three there: one fewer is refused.
	f := startNode(t, "f", "dc1", a.Addr())
	waitAllNormal(t, 5, a, b, c, d, f)
	createKeyspace(t, schema.Keyspace{Name: "app", Replication: "dc1=2,dc2=2"}, a, b, c, d, f)
	before := putBefore(t, a)
	ctx := context.Background()
	// The writer's QUORUM is 3 of the 4 copies (5 while e is pending): a read at ONE may
	// be answered by the copy a write has not reached yet (under load, hundreds of the
	// last keys were), so its keys are read at QUORUM, which every acknowledged write
	// meets; putBefore's, written at ALL, at ONE.
	w := startWriter(a, "join")
	e := startNode(t, "e", "dc1", a.Addr())
	all := []*Node{a, b, c, d, f, e}
	waitAllNormal(t, 6, all...)
	written := w.finish()
	checkEveryKey(t, "after e joined dc1", before, all...)
	checkEveryKeyAt(t, "after e joined dc1", consistency.Quorum, written, all...)
	p := e.streamer.Progress()
	if p.Records.Load() == 0 || p.CrossDCBytes.Load() != 0 {
		t.Errorf("e's join streamed %d records, %d bytes of them across DCs; want some, and 0 across DCs", p.Records.Load(), p.CrossDCBytes.Load())
	}

	w = startWriter(a, "decommission")
	st, err := e.Decommission(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	written = append(written, w.finish()...)
	e.Close()
	checkEveryKey(t, "after e was decommissioned", before, a, b, c, d, f)
	checkEveryKeyAt(t, "after e was decommissioned", consistency.Quorum, written, a, b, c, d, f)
	if st.Records == 0 || st.CrossDCBytes != 0 {
		t.Errorf("e's decommission streamed %d records, %d bytes of them across DCs; want some, and 0 across DCs", st.Records, st.CrossDCBytes)
	}
}
