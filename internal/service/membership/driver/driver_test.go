package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/core/membership/ferry"
	"github.com/kuradb/kura/internal/core/membership/scuttlebutt"
	"github.com/kuradb/kura/internal/io/transport"
)

// testInterval is the real round length of the tests: every protocol timeout
// runs 1/testInterval times faster than in production.
const testInterval = 30 * time.Millisecond

var quiet = slog.New(slog.DiscardHandler)

// changed wakes waitFor whenever any test node's driver reports a change; extra
// wake-ups (from other tests' nodes) only cost a re-check.
var changed = make(chan struct{}, 1)

// testNode is one node: a loopback transport and its driver.
type testNode struct {
	id, dc string
	tr     *transport.Transport
	drv    atomic.Pointer[Driver]

	mu      sync.Mutex
	changes []Change
}

// listen opens a node's transport; start runs its driver.
func listen(t *testing.T, id, dc string) *testNode {
	t.Helper()
	n := &testNode{id: id, dc: dc}
	tr, err := transport.Listen(transport.Config{
		Self: transport.Peer{ID: id, DC: dc, Addr: "127.0.0.1:0"}, Logger: quiet,
		Handler: transport.HandlerFunc(func(ctx context.Context, from transport.Peer, kind transport.Kind, payload []byte) ([]byte, error) {
			if d := n.drv.Load(); d != nil && Handles(kind) {
				return d.Handle(ctx, from, kind, payload)
			}
			return nil, fmt.Errorf("%s: kind %v not served", id, kind)
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	n.tr = tr
	t.Cleanup(n.stop)
	return n
}

// start runs the node's driver, joining through seeds.
func (n *testNode) start(t *testing.T, p membership.Protocol, seeds []string, generation uint64) {
	t.Helper()
	d, err := New(Config{
		Protocol: p, Transport: n.tr, Seeds: seeds, Generation: generation,
		AppState: map[string]string{"client_addr": "client-" + n.id},
		Interval: testInterval, SeedWait: 10 * testInterval, Logger: quiet,
		OnChange: func(c Change) {
			n.mu.Lock()
			n.changes = append(n.changes, c)
			n.mu.Unlock()
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	n.drv.Store(d)
	d.Start()
}

// stop crashes the node: no leave, its sockets closed.
func (n *testNode) stop() {
	if d := n.drv.Load(); d != nil {
		d.Close()
	}
	n.tr.Close()
}

// told is a waitFor condition: the node's driver has reported that event. Reports come
// from the driver's own goroutine, a little after the core's state changed.
func (n *testNode) told(kind membership.EventKind, id string, check func(membership.Member) bool) func() string {
	return func() string {
		if n.saw(kind, id, check) {
			return ""
		}
		return fmt.Sprintf("%s not told of %v about %s", n.id, kind, id)
	}
}

// saw reports whether the node was told of an event of that kind about id
// with the member's state passing check.
func (n *testNode) saw(kind membership.EventKind, id string, check func(membership.Member) bool) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.changes {
		if c.Event.Kind == kind && c.Event.ID == id && check(c.Member) {
			return true
		}
	}
	return false
}

// waitFor re-checks cond each time a driver reports a change, until it returns "" or
// the timeout passes. The driver is the I/O runtime, tested over real loopback sockets,
// so the timeout is wall-clock time; the protocol cores' scenarios run on the simulator
// (internal/core/membership/testdata).
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() string) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		problem := cond()
		if problem == "" {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			if problem = cond(); problem != "" {
				t.Fatalf("%s: not after %v: %s", what, timeout, problem)
			}
			return
		}
	}
}

// everyone checks every observer's view of member id.
func everyone(observers []*testNode, id string, want func(m membership.Member, known bool) string) func() string {
	return func() string {
		for _, o := range observers {
			m, ok := o.drv.Load().Member(id)
			if problem := want(m, ok); problem != "" {
				return fmt.Sprintf("%s about %s: %s", o.id, id, problem)
			}
		}
		return ""
	}
}

// closedAddr is a loopback address nobody listens on: an unreachable seed.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// aliveAt wants a live member at a generation, placed where its node listens.
func aliveAt(n *testNode, generation uint64) func(membership.Member, bool) string {
	return func(m membership.Member, known bool) string {
		switch {
		case !known:
			return "unknown"
		case !m.Alive:
			return "down"
		case m.Generation != generation:
			return fmt.Sprintf("generation %d, want %d", m.Generation, generation)
		case m.DC != n.dc || m.Addr != n.tr.Addr() || m.AppState["client_addr"] != "client-"+n.id:
			return fmt.Sprintf("state %+v", m)
		}
		return ""
	}
}

func TestClusterLifecycle(t *testing.T) {
	for _, p := range []membership.Protocol{scuttlebutt.Protocol, ferry.Protocol} {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			const generation = 1_700_000_000
			const timeout = 5 * time.Second
			nodes := make([]*testNode, 5)
			for i := range nodes {
				nodes[i] = listen(t, fmt.Sprintf("n%d", i), []string{"a", "b"}[i%2])
			}
			// Two real seeds, and one that never answers: it only delays the
			// start by SeedWait.
			seeds := []string{nodes[0].tr.Addr(), nodes[1].tr.Addr(), closedAddr(t)}
			began := time.Now()
			for _, n := range nodes {
				n.start(t, p, seeds, generation)
			}
			for _, n := range nodes {
				waitFor(t, timeout, "join", everyone(nodes, n.id, aliveAt(n, generation)))
			}
			waitFor(t, timeout, "n0 was not told that n3 joined, with its state", nodes[0].told(membership.EventJoined, "n3", func(m membership.Member) bool {
				return m.AppState["client_addr"] == "client-n3" && m.Addr == nodes[3].tr.Addr()
			}))

			nodes[2].drv.Load().SetAppState(membership.KeyTokens, "1,2,3")
			waitFor(t, timeout, "state change", everyone(nodes, "n2", func(m membership.Member, _ bool) string {
				if m.AppState[membership.KeyTokens] != "1,2,3" {
					return "old tokens"
				}
				return ""
			}))

			nodes[4].stop()
			live := nodes[:4]
			waitFor(t, timeout, "failure detection", everyone(live, "n4", func(m membership.Member, known bool) string {
				if known && m.Alive {
					return "still alive"
				}
				return ""
			}))
			waitFor(t, timeout, "n1 was not told that n4 died", nodes[1].told(membership.EventDead, "n4", func(membership.Member) bool { return true }))

			// n3 comes back on another port with a newer generation.
			nodes[3].stop()
			nodes[3] = listen(t, "n3", "b")
			nodes[3].start(t, p, seeds[:2], generation+1)
			waitFor(t, timeout, "restart", everyone(live, "n3", aliveAt(nodes[3], generation+1)))
			waitFor(t, timeout, "n0 was not told that n3 restarted", nodes[0].told(membership.EventRestarted, "n3", func(m membership.Member) bool { return m.Generation == generation+1 }))

			// The test has run for a few rounds by now (a failure detection
			// alone takes two), and Rounds counts rounds, not the ticks of a
			// core that is ticked more often (Ferry: four a round).
			if r, most := nodes[0].drv.Load().Rounds(), uint64(time.Since(began)/testInterval)+1; r < 3 || r > most {
				t.Errorf("n0 ran %d rounds, want 3 to %d", r, most)
			}

			nodes[2].drv.Load().Leave()
			waitFor(t, timeout, "leave", everyone([]*testNode{nodes[0], nodes[1], nodes[3]}, "n2", func(m membership.Member, known bool) string {
				if known && (m.Alive || m.Status != membership.StatusLeft) {
					return fmt.Sprintf("alive %v, status %s", m.Alive, m.Status)
				}
				return ""
			}))
		})
	}
}

func TestHandle(t *testing.T) {
	n := listen(t, "x", "a")
	d, err := New(Config{Protocol: ferry.Protocol, Transport: n.tr, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	from := transport.Peer{ID: "y", DC: "a", Addr: "127.0.0.1:1"}
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		kind    transport.Kind
		payload []byte
		wantErr error
	}{
		{"whois before start", transport.KindGossipWhois, nil, nil},
		{"gossip before start is dropped", transport.KindGossip, membership.Marshal(&ferry.Probe{Seq: 1}), nil},
		{"malformed gossip", transport.KindGossip, []byte{0xff, 1, 2}, membership.ErrMalformed},
		{"foreign kind", transport.RegisterKind(200, "driver_test_other"), nil, ErrUnknownKind},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := d.Handle(ctx, from, tc.kind, tc.payload)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
		})
	}
	answer, err := d.Handle(ctx, from, transport.KindGossipWhois, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodePeer(answer)
	if want := n.tr.Self(); err != nil || got != want {
		t.Fatalf("whois answer %+v (err %v), want %+v", got, err, want)
	}
	if d.Members() != nil {
		t.Fatal("members known before the core started")
	}
}

func TestNewValidates(t *testing.T) {
	n := listen(t, "x", "a")
	noDC := listen(t, "y", "")
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no protocol", Config{Transport: n.tr}},
		{"no transport", Config{Protocol: ferry.Protocol}},
		{"transport without DC", Config{Protocol: ferry.Protocol, Transport: noDC.tr}},
		{"negative interval", Config{Protocol: ferry.Protocol, Transport: n.tr, Interval: -time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg); !errors.Is(err, ErrBadConfig) {
				t.Fatalf("err = %v, want ErrBadConfig", err)
			}
		})
	}
	before := uint64(time.Now().Unix())
	d, err := New(Config{Protocol: ferry.Protocol, Transport: n.tr})
	if err != nil {
		t.Fatal(err)
	}
	if g := d.Generation(); g < before || g > uint64(time.Now().Unix()) {
		t.Fatalf("default generation %d is not the boot time in seconds (%d)", g, before)
	}
}

func TestCoreTime(t *testing.T) {
	for _, tc := range []struct {
		elapsed, interval, want time.Duration
	}{
		{3 * time.Second, time.Second, 3 * time.Second},
		{300 * time.Millisecond, 100 * time.Millisecond, 3 * time.Second},
		{25 * time.Millisecond, 50 * time.Millisecond, 500 * time.Millisecond},
		{72 * time.Hour, 10 * time.Millisecond, 7200 * time.Hour},
	} {
		if got := coreTime(tc.elapsed, float64(Round)/float64(tc.interval)); got != tc.want {
			t.Errorf("coreTime(%v) at interval %v = %v, want %v", tc.elapsed, tc.interval, got, tc.want)
		}
	}
}

func TestDecodePeerRejects(t *testing.T) {
	good := encodePeer(transport.Peer{ID: "a", DC: "b", Addr: "c"})
	for _, tc := range []struct {
		name string
		raw  []byte
	}{
		{"empty", nil},
		{"truncated", good[:len(good)-1]},
		{"trailing bytes", append(append([]byte(nil), good...), 0)},
		{"no DC", encodePeer(transport.Peer{ID: "a", Addr: "c"})},
	} {
		if _, err := decodePeer(tc.raw); !errors.Is(err, membership.ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", tc.name, err)
		}
	}
}

func TestShutdownIsTakenAtOnce(t *testing.T) {
	for _, p := range []membership.Protocol{scuttlebutt.Protocol, ferry.Protocol} {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			const generation = 1_700_000_000
			const timeout = 5 * time.Second
			nodes := make([]*testNode, 4)
			for i := range nodes {
				nodes[i] = listen(t, fmt.Sprintf("n%d", i), []string{"a", "b"}[i%2])
			}
			seeds := []string{nodes[0].tr.Addr(), nodes[1].tr.Addr()}
			for _, n := range nodes {
				n.start(t, p, seeds, generation)
			}
			for _, n := range nodes {
				waitFor(t, timeout, "join", everyone(nodes, n.id, aliveAt(n, generation)))
			}

			// n2 (DC a) stops on purpose. Shutdown returns once the members it
			// told directly have stepped the news: n0, its DC's other member,
			// for both protocols (Scuttlebutt tells every live member).
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			if err := nodes[2].drv.Load().Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			nodes[2].stop()
			if m, ok := nodes[0].drv.Load().Member("n2"); !ok || m.Alive || m.Status != membership.StatusShutdown {
				t.Fatalf("right after Shutdown returned, n0 sees n2 as %+v", m)
			}
			// The other DC hears of it through the gateways. The down verdict
			// carries status shutdown: it is the announcement, not a failure
			// detector's conviction (which would leave status normal).
			live := []*testNode{nodes[0], nodes[1], nodes[3]}
			for _, o := range live {
				waitFor(t, timeout, "shutdown announced", o.told(membership.EventDead, "n2", func(m membership.Member) bool {
					return !m.Alive && m.Status == membership.StatusShutdown
				}))
			}
			// That no member suspects n2 first is asserted in virtual time
			// (internal/core/membership/testdata/*/shutdown.txt): here, on real sockets and a real
			// clock, a loaded machine delays heartbeats enough to raise a suspicion
			// before the news arrives.

			// A restart with a newer generation brings it back.
			nodes[2] = listen(t, "n2", "a")
			nodes[2].start(t, p, seeds, generation+1)
			waitFor(t, timeout, "restart after shutdown", everyone(live, "n2", aliveAt(nodes[2], generation+1)))
			if err := nodes[2].drv.Load().Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			// A second call has nothing more to say.
			if err := nodes[2].drv.Load().Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// closedWithin reports whether ch is closed within timeout (wall clock: the
// driver runs in real time; the cores' own tests run in virtual time).
func closedWithin(ch <-chan struct{}, timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-ch:
		return true
	case <-timer.C:
		return false
	}
}

func TestSynced(t *testing.T) {
	for _, p := range []membership.Protocol{scuttlebutt.Protocol, ferry.Protocol} {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			const generation = 1_700_000_000
			const timeout = 5 * time.Second
			seed, joiner, orphan := listen(t, "s", "a"), listen(t, "j", "b"), listen(t, "o", "a")

			// A node whose only seed never answers has learned nothing, and
			// cannot have by now: its core has not even started.
			orphan.start(t, p, []string{closedAddr(t)}, generation)
			select {
			case <-orphan.drv.Load().Synced():
				t.Fatal("synced without a seed that answers")
			default:
			}
			if err := orphan.drv.Load().Shutdown(context.Background()); err != nil {
				t.Fatalf("shutdown before the core started: %v", err)
			}

			// A seed that is its own only seed has nobody to learn from.
			seed.start(t, p, []string{seed.tr.Addr()}, generation)
			if !closedWithin(seed.drv.Load().Synced(), timeout) {
				t.Fatal("the only seed is not synced")
			}

			// A joiner is synced once it has the seed's view, the seed in it.
			seed.drv.Load().SetAppState(membership.KeyTokens, "7")
			waitFor(t, timeout, "seed's own state", func() string {
				if m, _ := seed.drv.Load().Member("s"); m.AppState[membership.KeyTokens] != "7" {
					return "tokens not set"
				}
				return ""
			})
			joiner.start(t, p, []string{seed.tr.Addr()}, generation)
			if !closedWithin(joiner.drv.Load().Synced(), timeout) {
				t.Fatal("the joiner never synced")
			}
			if m, ok := joiner.drv.Load().Member("s"); !ok || !m.Alive || m.AppState[membership.KeyTokens] != "7" {
				t.Fatalf("synced joiner sees the seed as %+v (known %v)", m, ok)
			}
			// OnChange hears of it too (reports trail the channel): from the
			// seed, whose Welcome (Ferry) or digest (Scuttlebutt) it took.
			waitFor(t, timeout, "joiner told it synced", joiner.told(membership.EventSynced, "s", func(membership.Member) bool { return true }))
		})
	}
}

// recordLog is a slog handler that keeps each record's level and message and signals
// every one on logged.
type recordLog struct {
	mu      sync.Mutex
	records []slog.Record
	logged  chan struct{}
}

func (h *recordLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordLog) WithGroup(string) slog.Handler            { return h }
func (h *recordLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r)
	h.mu.Unlock()
	select {
	case h.logged <- struct{}{}:
	default:
	}
	return nil
}

// count returns how many records have a message starting with prefix.
func (h *recordLog) count(prefix string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.records {
		if strings.HasPrefix(r.Message, prefix) {
			n++
		}
	}
	return n
}

// TestWrongSeedWarnsOncePerMinute: issue 45, item 5. A node whose only seed never
// answers warned at every SeedWait for ever; it warns once, then once a minute while
// the seed's answer stays the same.
func TestWrongSeedWarnsOncePerMinute(t *testing.T) {
	n := listen(t, "n0", "a")
	log := &recordLog{logged: make(chan struct{}, 1)}
	d, err := New(Config{Protocol: ferry.Protocol, Transport: n.tr, Seeds: []string{closedAddr(t)},
		Interval: testInterval, SeedWait: 2 * testInterval, Logger: slog.New(log)})
	if err != nil {
		t.Fatal(err)
	}
	n.drv.Store(d)
	began := time.Now()
	d.Start()
	// Each attempt on the seed logs one "seed did not answer" at debug level, and the
	// attempts are an Interval apart: after 10 of them, SeedWait has passed 4 times.
	const attempts = 10
	for log.count("seed did not answer") < attempts {
		select {
		case <-log.logged:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d attempts on the seed in 10 s, want %d", log.count("seed did not answer"), attempts)
		}
	}
	d.Close()
	// A reminder a minute on: a machine so loaded that the attempts took that long.
	warnings, most := log.count("no seed answers yet"), 1+int(time.Since(began)/time.Minute)
	if warnings < 1 || warnings > most {
		t.Errorf("%d warnings of the seed over %d attempts and %v, want 1 to %d", warnings, attempts, time.Since(began).Round(time.Millisecond), most)
	}
}
