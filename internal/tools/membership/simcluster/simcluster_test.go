package simcluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/core/membership/ferry"
	"github.com/kuradb/kura/internal/tools/sim"
)

func newCluster(t *testing.T, events *[]membership.Event) *Cluster {
	t.Helper()
	c, err := New(Config{
		Protocol: ferry.Protocol, Seed: 1, DCs: []string{"a", "b"}, Seeds: []string{"a1", "b1"},
		Links: sim.UniformLinks{Local: sim.LinkSpec{Latency: time.Millisecond}, Remote: sim.LinkSpec{Latency: 30 * time.Millisecond}},
		Wire:  sim.TCPIPv4, CheckEncoding: true,
		OnEvent: func(_ time.Duration, _ string, e membership.Event) { *events = append(*events, e) },
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a1", "a2", "a3", "b1", "b2", "b3"} {
		if err := c.Start(id, id[:1]); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func TestClusterLifecycle(t *testing.T) {
	var events []membership.Event
	c := newCluster(t, &events)
	if d := c.Disagreement(); !strings.Contains(d, "does not know") {
		t.Fatalf("before any round, disagreement = %q", d)
	}
	if _, ok := c.RunUntilConverged(30 * time.Second); !ok {
		t.Fatalf("no convergence: %s", c.Disagreement())
	}
	if len(events) == 0 {
		t.Fatal("no events reached the hook")
	}
	gen := c.Generation("a2")
	if err := c.Crash("a2"); err != nil {
		t.Fatal(err)
	}
	if err := c.Crash("a2"); !errors.Is(err, ErrNodeDown) {
		t.Fatalf("second crash: err = %v", err)
	}
	if d := c.Disagreement(); !strings.Contains(d, "a2 as alive") {
		t.Fatalf("right after a crash, disagreement = %q", d)
	}
	if _, ok := c.RunUntilConverged(60 * time.Second); !ok {
		t.Fatalf("crash not detected: %s", c.Disagreement())
	}
	c.Sim().RunFor(3 * time.Second)
	if err := c.Start("a2", "a"); err != nil {
		t.Fatal(err)
	}
	if err := c.Start("a2", "a"); !errors.Is(err, ErrNodeUp) {
		t.Fatalf("start of a running node: err = %v", err)
	}
	if c.Generation("a2") <= gen {
		t.Fatalf("restart kept generation %d", gen)
	}
	if _, ok := c.RunUntilConverged(30 * time.Second); !ok {
		t.Fatalf("restart not converged: %s", c.Disagreement())
	}
	if err := c.Leave("b3"); err != nil {
		t.Fatal(err)
	}
	if c.IsLive("b3") || len(c.Live()) != 5 || len(c.IDs()) != 6 {
		t.Fatalf("after leave: live %v, ids %v", c.Live(), c.IDs())
	}
	if _, ok := c.RunUntilConverged(30 * time.Second); !ok {
		t.Fatalf("leave not converged: %s", c.Disagreement())
	}
	if err := c.SetAppState("a1", membership.KeyLoadRows, "5"); err != nil {
		t.Fatal(err)
	}
	c.Sim().RunFor(10 * time.Second)
	core, err := c.Core("b2")
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := core.Member("a1"); m.AppState[membership.KeyLoadRows] != "5" {
		t.Fatalf("b2 sees a1 as %+v", m)
	}
	if c.Err() != nil {
		t.Fatal(c.Err())
	}
}

func TestEncodingMismatchIsReported(t *testing.T) {
	var events []membership.Event
	c := newCluster(t, &events)
	c.roundTrip(badSize{})
	if !errors.Is(c.Err(), ErrEncoding) {
		t.Fatalf("err = %v, want ErrEncoding", c.Err())
	}
}

// badSize claims a size its encoding does not have.
type badSize struct{}

func (badSize) Kind() string             { return "bad" }
func (badSize) WireSize() int            { return 3 }
func (badSize) AppendTo(b []byte) []byte { return append(b, 1) }

func TestCutDropsOneLinkOnly(t *testing.T) {
	var events []membership.Event
	c := newCluster(t, &events)
	if err := c.Cut("a1", "zz"); !errors.Is(err, sim.ErrUnknownNode) {
		t.Fatalf("cut to an unknown node: err = %v", err)
	}
	if _, ok := c.RunUntilConverged(30 * time.Second); !ok {
		t.Fatalf("no convergence: %s", c.Disagreement())
	}
	// Every link of a2 broken: the others convict it, though it runs.
	for _, id := range []string{"a1", "a3", "b1", "b2", "b3"} {
		if err := c.Cut(id, "a2"); err != nil {
			t.Fatal(err)
		}
	}
	c.Sim().RunFor(20 * time.Second)
	if d := c.Disagreement(); !strings.Contains(d, "sees live a2 as down") {
		t.Fatalf("a2 cut off from all: disagreement = %q", d)
	}
	for _, id := range []string{"a1", "a3", "b1", "b2", "b3"} {
		if err := c.Mend("a2", id); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := c.RunUntilConverged(30 * time.Second); !ok {
		t.Fatalf("no convergence after mending: %s", c.Disagreement())
	}
}

// TestStartConvergedChecksItsNodes: the converged start agrees at once; it
// refuses IDs and DCs that do not pair up and nodes started before, and a
// protocol whose cores cannot start from a view says so.
func TestStartConvergedChecksItsNodes(t *testing.T) {
	var events []membership.Event
	c, err := New(Config{Protocol: ferry.Protocol, Seed: 2, DCs: []string{"a", "b"}, Seeds: []string{"a1", "b1"},
		Links: sim.UniformLinks{}, Wire: sim.TCPIPv4,
		OnEvent: func(_ time.Duration, _ string, e membership.Event) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StartConverged([]string{"a1", "b1"}, []string{"a"}); err == nil {
		t.Fatal("two IDs and one DC accepted")
	}
	if err := c.StartConverged([]string{"a1", "a2", "b1"}, []string{"a", "a", "b"}); err != nil {
		t.Fatal(err)
	}
	if d := c.Disagreement(); d != "" || len(events) != 0 {
		t.Fatalf("converged start: disagreement %q, %d events", d, len(events))
	}
	if err := c.StartConverged([]string{"a2"}, []string{"a"}); err == nil || !strings.Contains(err.Error(), "started before") {
		t.Fatalf("a2 again: err = %v", err)
	}
	viewless, err := New(Config{Protocol: membership.Protocol{Name: "viewless", New: func(cfg membership.Config) (membership.Core, error) {
		if cfg.View != nil {
			return nil, membership.ErrBadConfig
		}
		return ferry.Protocol.New(cfg)
	}}, Seed: 2, DCs: []string{"a"}, Links: sim.UniformLinks{}, Wire: sim.TCPIPv4})
	if err != nil {
		t.Fatal(err)
	}
	if err := viewless.StartConverged([]string{"a1"}, []string{"a"}); !errors.Is(err, membership.ErrBadConfig) {
		t.Fatalf("a protocol without views: err = %v", err)
	}
}
