package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/power"
	"github.com/kuradb/kura/internal/core/schema"
)

// startPowerNode starts a node of the power tests: tier 1 may sleep. Every keyspace is
// declared read at ONE, so the sleep rule asks one awake replica per range.
func startPowerNode(t *testing.T, id string, tier int, suppress bool, seeds ...string) *Node {
	t.Helper()
	n, err := Start(Config{
		ID: id, DC: "dc1", Listen: "127.0.0.1:0", ClientAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		Seeds: seeds, InMemory: true, GossipInterval: 50 * time.Millisecond, RingDelay: 300 * time.Millisecond,
		ReplicaTimeout: 2 * time.Second, PowerTier: tier, NoTimeoutSuppression: !suppress, Logger: slog.New(slog.DiscardHandler),
		PowerLevels: power.Levels{power.AllKeyspaces: {consistency.One}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// startPowerCluster starts n1 and n2 of tier 0 and n3 and n4 of tier 1, with keyspace
// app at simple=3, and returns once they see each other.
func startPowerCluster(t *testing.T, suppress bool) []*Node {
	t.Helper()
	nodes := []*Node{startPowerNode(t, "n1", 0, suppress)}
	for i, tier := range []int{0, 1, 1} {
		nodes = append(nodes, startPowerNode(t, fmt.Sprintf("n%d", i+2), tier, suppress, nodes[0].Addr()))
	}
	waitAllNormal(t, len(nodes), nodes...)
	ks, err := schema.Keyspace{Name: "app", Replication: "simple=3"}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if err := nodes[0].CreateKeyspace(context.Background(), ks); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "every node knows keyspace app", func() bool {
		for _, n := range nodes {
			if _, err := n.Keyspace("app"); err != nil {
				return false
			}
		}
		return true
	})
	return nodes
}

// TestSleepAndWakeLoseNothing puts a node to sleep and wakes it while a writer keeps
// writing at QUORUM through another: every acknowledged write reads back at ONE through
// the woken node itself (its own copy first: the writes offloaded while it slept were
// delivered), and a tier-0 node, or a second sleeper holding the first one's writes, is
// refused.
func TestSleepAndWakeLoseNothing(t *testing.T) {
	t.Parallel()
	nodes := startPowerCluster(t, true)
	n1, n4 := nodes[0], nodes[3]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if _, err := n1.SetPower(ctx, "n2", "sleep"); err == nil || !strings.Contains(err.Error(), "tier 0") {
		t.Fatalf("tier-0 n2 put to sleep: %v", err)
	}
	w := startWriter(n1, "k")
	waitUntil(t, "a first write", func() bool { w.mu.Lock(); defer w.mu.Unlock(); return len(w.acked) > 0 })
	// A reader at QUORUM through n2 all along: n4's transitions never fail a read.
	readsFailed := make(chan int)
	stopReads := make(chan struct{})
	go func() {
		failed := 0
		for {
			select {
			case <-stopReads:
				readsFailed <- failed
				return
			default:
			}
			if _, found, err := nodes[1].Coordinator().Get(ctx, "app", []byte("k-00000"), consistency.Quorum); err != nil || !found {
				failed++
			}
		}
	}()
	if state, err := n1.SetPower(ctx, "n4", "sleep"); err != nil || state != power.Asleep {
		t.Fatalf("sleep n4: %v, %v", state, err)
	}
	waitUntil(t, "n1 sees n4 asleep", func() bool { return n1.View().State("n4").String() == "asleep" })
	if err := nodes[2].power.MaySleep("n3"); err == nil {
		holders := n1.View().Power("n4").Holders
		if strings.Contains(strings.Join(holders, ","), "n3") {
			t.Fatalf("n3 holds n4's writes (%v) and may still sleep", holders)
		}
	}
	if _, found, err := n1.Coordinator().Get(ctx, "app", []byte("k-00000"), consistency.Quorum); err != nil || !found {
		t.Fatalf("QUORUM read while n4 sleeps: found %v, %v", found, err)
	}
	// A client that knows only n4 is redirected by its stand-in, and never refreshes its
	// view (the paper's stale clients): every request costs a redirect, no timeout.
	waitUntil(t, "a stand-in answers on n4's client address", func() bool {
		_, err := kvClient(t, n4).Get(ctx, &kurav1.GetRequest{Keyspace: "app", Key: []byte("k-00000")})
		return status.Code(err) == codes.Unavailable && strings.Contains(err.Error(), "asleep")
	})
	stale, err := client.Dial(ctx, []string{n4.ClientAddr()}, client.Options{StaticNodes: true, AttemptTimeout: time.Hour})
	if err != nil {
		t.Fatalf("dial n4's stand-in: %v", err)
	}
	defer stale.Close()
	if _, found, err := stale.Get(ctx, "app", []byte("k-00000"), consistency.Quorum); err != nil || !found {
		t.Fatalf("read through n4's stand-in: found %v, %v", found, err)
	}
	watts, _ := n4.Energy(time.Now().Add(time.Minute))
	if watts != power.S4.SleepWatts {
		t.Errorf("n4 draws %.2f W a minute into its sleep, want %.2f", watts, power.S4.SleepWatts)
	}
	if _, err := n1.SetPower(ctx, "n4", "wake"); err != nil {
		t.Fatalf("wake n4: %v", err)
	}
	if n4.Power() != power.Active {
		t.Fatalf("n4 is %v after waking", n4.Power())
	}
	keys := w.finish()
	close(stopReads)
	if failed := <-readsFailed; failed > 0 {
		t.Errorf("%d QUORUM reads failed while n4 slept and woke", failed)
	}
	checkEveryKey(t, "after n4 woke", keys, n4)
}

// TestSleepRefusedWhenARangeWouldLoseItsLastAwakeReplica: with no tier-0 node (plain
// consistent hashing), three of four nodes at simple=3 asleep would leave ranges with no
// awake replica, so the third sleep is refused, whoever asks.
func TestSleepRefusedWhenARangeWouldLoseItsLastAwakeReplica(t *testing.T) {
	t.Parallel()
	nodes := []*Node{startPowerNode(t, "n1", 1, true)}
	for i := 2; i <= 4; i++ {
		nodes = append(nodes, startPowerNode(t, fmt.Sprintf("n%d", i), 1, true, nodes[0].Addr()))
	}
	waitAllNormal(t, len(nodes), nodes...)
	ks, err := schema.Keyspace{Name: "app", Replication: "simple=3"}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if err := nodes[0].CreateKeyspace(context.Background(), ks); err != nil {
		t.Fatal(err)
	}
	n1 := nodes[0]
	waitUntil(t, "n1 knows keyspace app", func() bool { _, err := n1.Keyspace("app"); return err == nil })
	if err := n1.power.MaySleep("n4"); err != nil {
		t.Fatalf("n4 alone may not sleep: %v", err)
	}
	// As gossip would tell it: n3 and n4 asleep. The real gossip of n3 and n4 (their
	// load, every few seconds) sets their power back to active in n1's directory, so
	// each check sets the states it needs again, until one runs before gossip undoes them.
	asleep := func() {
		for _, id := range []string{"n3", "n4"} {
			n1.directory.SetPower(id, cluster.Power{State: power.Asleep, Holders: []string{"n1"}})
		}
	}
	var errN2, errN1 error
	waitUntil(t, "n1 refuses n2 and itself with n3 and n4 asleep", func() bool {
		asleep()
		errN2, errN1 = n1.power.MaySleep("n2"), n1.power.MaySleep("n1")
		return errN2 != nil && errN1 != nil
	})
	var refused *power.SleepRefused
	if !errors.As(errN2, &refused) || refused.Shortfall.Awake != 0 || refused.Shortfall.Level != consistency.One {
		t.Fatalf("n2 may not sleep with n3 and n4 asleep, but for another reason: %v", errN2)
	}
	if !strings.Contains(errN1.Error(), "keeps the writes") {
		t.Fatalf("n1, holding n3's writes, may not sleep, but for another reason: %v", errN1)
	}
	// Of two nodes draining at once, the higher id gives way.
	waitUntil(t, "n3 may sleep beside a draining n4", func() bool {
		n1.directory.SetPower("n4", cluster.Power{State: power.Draining, Holders: []string{"n1"}})
		n1.directory.SetPower("n3", cluster.Power{})
		return n1.power.MaySleep("n3") == nil
	})
}

// TestWakeRepairsWhenAHolderIsGone: the holder of a sleeping node's writes dies with
// them (its store was in memory); the node wakes, cannot reach it, and repairs its
// ranges from the other replicas before it serves reads, so every acknowledged write
// reads back through it.
func TestWakeRepairsWhenAHolderIsGone(t *testing.T) {
	t.Parallel()
	nodes := startPowerCluster(t, true)
	n1, n2, n4 := nodes[0], nodes[1], nodes[3]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n4.Sleep(ctx); err != nil {
		t.Fatal(err)
	}
	holders := n2.View().Power("n4").Holders
	if len(holders) == 0 || holders[0] != "n1" {
		t.Fatalf("n4's holders %v, want n1 first", holders)
	}
	w := startWriter(n2, "k")
	waitUntil(t, "n1 keeps writes for n4", func() bool { p, _ := n1.hints.Pending(); return p > 0 })
	keys := w.finish()
	n1.Close()
	waitUntil(t, "n2 sees n1 down", func() bool { return !n2.View().State("n1").Reachable() })
	if _, err := n2.SetPower(ctx, "n4", "wake"); err != nil {
		t.Fatalf("wake n4: %v", err)
	}
	checkEveryKey(t, "after n4 woke without its holder", keys, n4)
}
