package ferry

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/tools/membership/simcluster"
	"github.com/kuradb/kura/internal/tools/sim"
)

// savedState is the state node id in dc starts with at generation gen, as
// the view of its cluster saves it.
func savedState(id, dc string, gen uint64) membership.EndpointState {
	return membership.NewLocalState(membership.Config{ID: id, DC: dc, Addr: id + ":7000", Generation: gen}).EndpointState
}

func TestViewRejectsBadInput(t *testing.T) {
	good := func() []membership.EndpointState {
		return []membership.EndpointState{savedState("a1", "a", 5), savedState("b1", "b", 5)}
	}
	for _, tc := range []struct {
		name  string
		edit  func(v []membership.EndpointState) []membership.EndpointState
		dc    string
		wants string
	}{
		{"no ID", func(v []membership.EndpointState) []membership.EndpointState { v[1].ID = ""; return v }, "a", "member 1 has no ID"},
		{"generation 0", func(v []membership.EndpointState) []membership.EndpointState { v[1].Generation = 0; return v }, "a", "b1 has generation 0"},
		{"no DC", func(v []membership.EndpointState) []membership.EndpointState {
			v[1] = membership.EndpointState{ID: "b1", Generation: 5, Heartbeat: 3}
			return v
		}, "a", "b1 has no DC"},
		{"no version", func(v []membership.EndpointState) []membership.EndpointState {
			v[1] = membership.EndpointState{ID: "b1", Generation: 5, App: []membership.AppValue{{Key: membership.KeyDC, Value: "b"}}}
			return v
		}, "a", "b1 has no version"},
		{"listed twice", func(v []membership.EndpointState) []membership.EndpointState { return append(v, v[0]) }, "a", "a1 is listed twice"},
		{"own entry in another DC", func(v []membership.EndpointState) []membership.EndpointState { return v }, "c", "a1 is in DC a, not c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := membership.Config{ID: "a1", DC: tc.dc, Generation: 9, Rand: rand.New(rand.NewPCG(1, 2)), View: tc.edit(good())}
			_, err := New(cfg, DefaultOptions)
			if !errors.Is(err, membership.ErrBadConfig) || !strings.Contains(err.Error(), tc.wants) {
				t.Fatalf("err = %v, want ErrBadConfig saying %q", err, tc.wants)
			}
			// The same view through a shared table fails the same way.
			cfg.Shared = NewTable()
			if _, err := New(cfg, DefaultOptions); !errors.Is(err, membership.ErrBadConfig) {
				t.Fatalf("shared table: err = %v", err)
			}
		})
	}
}

// TestRestartFromASavedView: a node that restarts from the view it saved
// knows every member at once, as alive, itself at its new generation, and
// asks no seed to admit it.
func TestRestartFromASavedView(t *testing.T) {
	view := []membership.EndpointState{savedState("a1", "a", 5), savedState("a2", "a", 5), savedState("b1", "b", 5)}
	c, err := New(membership.Config{ID: "a2", DC: "a", Generation: 9, Seeds: []string{"a1", "b1"},
		Rand: rand.New(rand.NewPCG(1, 2)), View: view}, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range c.Members() {
		got = append(got, fmt.Sprintf("%s@%d/%v", m.ID, m.Generation, m.Alive))
	}
	if want := "a1@5/true a2@9/true b1@5/true"; strings.Join(got, " ") != want {
		t.Fatalf("members %q, want %q", strings.Join(got, " "), want)
	}
	r := c.Tick(0)
	for _, m := range r.Messages {
		if _, join := m.Msg.(*Join); join {
			t.Fatalf("a node started from a view asked %s to admit it", m.To)
		}
	}
	// Its summary is the view with its own new state: not the one the
	// others hold (their a2 is generation 5), so anti-entropy spreads it.
	other, err := New(membership.Config{ID: "a1", DC: "a", Generation: 5, Rand: rand.New(rand.NewPCG(3, 4)), View: view}, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	if c.total()[0].Count != other.total()[0].Count || c.total()[0].Hash == other.total()[0].Hash {
		t.Fatalf("totals %+v and %+v: want the same count, different hashes", c.total(), other.total())
	}
}

// warmCluster starts 30 nodes in 3 DCs converged; every message a node
// sends is counted by kind in *sent.
func warmCluster(t *testing.T, seed uint64, sent *map[string]int) *simcluster.Cluster {
	t.Helper()
	c, err := simcluster.New(simcluster.Config{
		Protocol: Protocol, Seed: seed, DCs: []string{"a", "b", "c"}, Seeds: []string{"a1", "b1", "c1"},
		Links: sim.UniformLinks{Local: sim.LinkSpec{Latency: 100 * time.Microsecond, Loss: 0.01},
			Remote: sim.LinkSpec{Latency: 50 * time.Millisecond, Loss: 0.01}},
		Wire: sim.TCPIPv4, CheckEncoding: true,
		Trace: func(tr sim.Trace) {
			if tr.Kind == sim.TraceSent {
				(*sent)[tr.Env.Kind]++
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids, dcs []string
	for i := range 30 {
		dc := []string{"a", "b", "c"}[i%3]
		ids, dcs = append(ids, fmt.Sprintf("%s%d", dc, i/3+1)), append(dcs, dc)
	}
	if err := c.StartConverged(ids, dcs); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestConvergedStartAgreesAndJoinsNobody: a cluster started converged
// agrees at once, and its rounds carry summaries and heartbeats (across
// DCs, the gateways' empty answers to each other's summaries too) and the
// probes of heartbeats lost at 1 % loss: no join, no anti-entropy, no
// rumour, no suspicion. Nodes
// that then join it converge as they join any running cluster, and the
// whole run is the same again from the same seed.
func TestConvergedStartAgreesAndJoinsNobody(t *testing.T) {
	run := func() string {
		steady, joining := map[string]int{}, map[string]int{}
		counting := steady
		c := warmCluster(t, 7, &counting)
		if d := c.Disagreement(); d != "" {
			t.Fatalf("at the start: %s", d)
		}
		c.Sim().RunFor(20 * time.Second)
		if d := c.Disagreement(); d != "" {
			t.Fatalf("after 20 s: %s", d)
		}
		for kind, n := range steady {
			switch kind {
			case "summary", "heartbeat", "buckets":
			case "probe", "probe-ack", "probe-req", "indirect-ack":
				// The failure detectors at work: a lost heartbeat costs a probe.
			default:
				t.Errorf("a converged cluster sent %d %s messages", n, kind)
			}
		}
		if steady["summary"] == 0 || steady["heartbeat"] == 0 {
			t.Errorf("20 s of a converged cluster: %v", steady)
		}
		counting = joining
		for _, id := range []string{"a11", "a12", "b11", "c11"} {
			if err := c.Start(id, id[:1]); err != nil {
				t.Fatal(err)
			}
		}
		took, ok := c.RunUntilConverged(30 * time.Second)
		if !ok {
			t.Fatalf("joiners did not converge: %s", c.Disagreement())
		}
		if joining["join"] == 0 || joining["welcome"] == 0 {
			t.Fatalf("joiners sent %d joins and got %d welcomes", joining["join"], joining["welcome"])
		}
		return fmt.Sprint(steady, joining, took)
	}
	if first, again := run(), run(); first != again {
		t.Fatalf("same seed, different runs:\n%s\n%s", first, again)
	}
}
