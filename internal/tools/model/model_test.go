package model

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/io/topology"
)

// singleNodeDCs is paper 002's first setup: each node behind its own delayed link, so
// "another node" and "another DC" coincide.
func singleNodeDCs(latencyMs map[[2]string]float64, dcs ...string) *topology.Topology {
	topo := &topology.Topology{Name: "single-node-dcs"}
	for i, dc := range dcs {
		topo.Datacenters = append(topo.Datacenters, topology.Datacenter{Name: dc, Nodes: []topology.Node{{ID: dc + "-1"}}})
		for _, other := range dcs[i+1:] {
			topo.Links = append(topo.Links, topology.Link{Between: [2]string{dc, other}, LatencyMs: latencyMs[[2]string{dc, other}]})
		}
	}
	return topo
}

func paperThreeNodes() *topology.Topology {
	return singleNodeDCs(map[[2]string]float64{{"n1", "n2"}: 4, {"n1", "n3"}: 4, {"n2", "n3"}: 4}, "n1", "n2", "n3")
}

func paperTwoDCs(t *testing.T) *topology.Topology {
	t.Helper()
	topo, err := topology.Example("two-dc-6")
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func newModel(t *testing.T, topo *topology.Topology, layout Layout, params Params) *Model {
	t.Helper()
	r, err := Ring(topo, layout)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(r, topo, params)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func predict(t *testing.T, m *Model, coordinator string, s ring.Strategy, cl consistency.Level, op Op) Prediction {
	t.Helper()
	pred, err := m.Predict(coordinator, s, cl, op)
	if err != nil {
		t.Fatalf("Predict(%s, %s, %v, %v): %v", coordinator, s, cl, op, err)
	}
	return pred
}

func near(got, want time.Duration) bool {
	return (got - want).Abs() <= time.Microsecond
}

// TestPaperP checks the model against p derived by hand from paper 002's placements
// (one evenly spaced token per node, SimpleStrategy, all inserts at node 1), and the
// latency against the paper's formula t_proc + p × RTT with t_proc = 1 ms, RTT = 8 ms.
//
// Three nodes: node 1 owns a third; with RF 2 it also holds node 3's range, with RF 3
// everything. ONE needs any replica: p = 2/3, 1/3, 0. QUORUM and ALL need every replica
// at RF 1 and 2, and at RF 3 two or three of them, so always another node: p = 2/3, 1, 1.
//
// Six nodes, nodes 1-3 in dc1: the range ending at node k's token lives on nodes k, k+1,
// k+2 (mod 6). ONE waits across only when every replica is in dc2 (k = 4..6 at RF 1,
// k = 4, 5 at RF 2, k = 4 at RF 3). QUORUM at RF 2 needs both replicas in dc1 (k = 1, 2
// stay local); at RF 3 two of three in dc1 (k = 1, 2, 6). ALL at RF 3 stays local only
// for k = 1.
func TestPaperP(t *testing.T) {
	setups := []struct {
		name string
		topo *topology.Topology
		// p[level][rf-1] for writes; reads wait the same way on these layouts.
		p map[consistency.Level][3]float64
	}{
		{"3 nodes", paperThreeNodes(), map[consistency.Level][3]float64{
			consistency.Any:    {2. / 3, 1. / 3, 0},
			consistency.One:    {2. / 3, 1. / 3, 0},
			consistency.Quorum: {2. / 3, 1, 1},
			consistency.All:    {2. / 3, 1, 1},
		}},
		{"6 nodes in 2 DCs", paperTwoDCs(t), map[consistency.Level][3]float64{
			consistency.Any:    {3. / 6, 2. / 6, 1. / 6},
			consistency.One:    {3. / 6, 2. / 6, 1. / 6},
			consistency.Quorum: {3. / 6, 4. / 6, 3. / 6},
			consistency.All:    {3. / 6, 4. / 6, 5. / 6},
		}},
	}
	const tolerance = 1e-9
	for _, setup := range setups {
		m := newModel(t, setup.topo, EvenLayout(len(setup.topo.Nodes())), Params{Processing: time.Millisecond})
		coordinator := setup.topo.Nodes()[0].ID
		for level, ps := range setup.p {
			for rf := 1; rf <= 3; rf++ {
				for _, op := range []Op{Write, Read} {
					if op == Read && level == consistency.Any {
						continue
					}
					t.Run(fmt.Sprintf("%s/RF%d/%v/%v", setup.name, rf, level, op), func(t *testing.T) {
						pred := predict(t, m, coordinator, ring.Simple(rf), level, op)
						want := ps[rf-1]
						if d := pred.P - want; d > tolerance || d < -tolerance {
							t.Errorf("p = %.4f, want %.4f", pred.P, want)
						}
						wantLatency := time.Millisecond + time.Duration(want*float64(8*time.Millisecond))
						if !near(pred.Latency, wantLatency) {
							t.Errorf("latency = %v, want %v", pred.Latency, wantLatency)
						}
						if pred.UnavailableShare != 0 || !pred.Available() {
							t.Errorf("unavailable share %v, want 0", pred.UnavailableShare)
						}
					})
				}
			}
		}
	}
}

// TestRangeDetail checks the per-range answer on the three-node layout at RF 2, ONE:
// node 1 answers for its own range and node 3's, node 2's range waits on node 2.
func TestRangeDetail(t *testing.T) {
	m := newModel(t, paperThreeNodes(), EvenLayout(3), Params{})
	pred := predict(t, m, "n1-1", ring.Simple(2), consistency.One, Write)
	want := []struct {
		replicas, awaited []string
		latency           time.Duration
		remote            bool
	}{
		{[]string{"n1-1", "n2-1"}, []string{"n1-1"}, 0, false},
		{[]string{"n2-1", "n3-1"}, []string{"n2-1"}, 8 * time.Millisecond, true},
		{[]string{"n3-1", "n1-1"}, []string{"n1-1"}, 0, false},
	}
	if len(pred.Ranges) != len(want) {
		t.Fatalf("%d ranges, want %d", len(pred.Ranges), len(want))
	}
	for i, w := range want {
		got := pred.Ranges[i]
		if !slices.Equal(got.Replicas, w.replicas) || !slices.Equal(got.Awaited, w.awaited) || got.Latency != w.latency || got.Remote != w.remote {
			t.Errorf("range %d = replicas %v awaited %v latency %v remote %v; want %v %v %v %v",
				i, got.Replicas, got.Awaited, got.Latency, got.Remote, w.replicas, w.awaited, w.latency, w.remote)
		}
	}
	if pred.LatencyMax != 8*time.Millisecond {
		t.Errorf("latency max = %v, want 8ms", pred.LatencyMax)
	}
}

// TestUnequalLatencies: three single-node DCs a, b, c with one-way 10 ms a-b, 20 ms b-c,
// 30 ms a-c and every node a replica. A quorum of two waits for the nearest other node;
// ALL for the farthest.
func TestUnequalLatencies(t *testing.T) {
	topo := singleNodeDCs(map[[2]string]float64{{"a", "b"}: 10, {"b", "c"}: 20, {"a", "c"}: 30}, "a", "b", "c")
	m := newModel(t, topo, VnodeLayout(16), Params{})
	tests := []struct {
		coordinator string
		level       consistency.Level
		op          Op
		want        time.Duration
		p           float64
	}{
		{"a-1", consistency.One, Write, 0, 0},
		{"a-1", consistency.Quorum, Write, 20 * time.Millisecond, 1},
		{"a-1", consistency.All, Write, 60 * time.Millisecond, 1},
		{"c-1", consistency.Quorum, Write, 40 * time.Millisecond, 1},
		{"b-1", consistency.Quorum, Read, 20 * time.Millisecond, 1},
		{"b-1", consistency.All, Read, 40 * time.Millisecond, 1},
		{"c-1", consistency.Two, Read, 40 * time.Millisecond, 1},
		{"c-1", consistency.LocalOne, Read, 0, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%v/%v", tt.coordinator, tt.level, tt.op), func(t *testing.T) {
			pred := predict(t, m, tt.coordinator, ring.Simple(3), tt.level, tt.op)
			if !near(pred.Latency, tt.want) || pred.P != tt.p {
				t.Errorf("latency %v p %v, want %v p %v", pred.Latency, pred.P, tt.want, tt.p)
			}
		})
	}
}

// TestSerialLevels: on the unequal latencies (a-b 10 ms, b-c 20 ms, a-c 30 ms one way),
// a compare-and-set waits twice for the nearest other replica (prepare, propose; the
// commit is not waited for), a serial read once, each adding t_proc; LOCAL_SERIAL, with the coordinator a
// replica alone in its DC, needs no one else.
func TestSerialLevels(t *testing.T) {
	topo := singleNodeDCs(map[[2]string]float64{{"a", "b"}: 10, {"b", "c"}: 20, {"a", "c"}: 30}, "a", "b", "c")
	m := newModel(t, topo, VnodeLayout(16), Params{Processing: time.Millisecond})
	tests := []struct {
		coordinator string
		level       consistency.Level
		op          Op
		want        time.Duration
		roundTrips  int
		p           float64
	}{
		{"a-1", consistency.Serial, Write, 2 * (20 + 1) * time.Millisecond, 2, 1},
		{"a-1", consistency.Serial, Read, (20 + 1) * time.Millisecond, 1, 1},
		{"c-1", consistency.Serial, Write, 2 * (40 + 1) * time.Millisecond, 2, 1},
		{"c-1", consistency.LocalSerial, Write, 2 * time.Millisecond, 2, 0},
		{"b-1", consistency.LocalSerial, Read, time.Millisecond, 1, 0},
		{"a-1", consistency.Quorum, Write, (20 + 1) * time.Millisecond, 1, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%v/%v", tt.coordinator, tt.level, tt.op), func(t *testing.T) {
			pred := predict(t, m, tt.coordinator, ring.Simple(3), tt.level, tt.op)
			if !near(pred.Latency, tt.want) || pred.RoundTrips != tt.roundTrips || pred.P != tt.p {
				t.Errorf("latency %v, %d round trips, p %v; want %v, %d, p %v", pred.Latency, pred.RoundTrips, pred.P, tt.want, tt.roundTrips, tt.p)
			}
		})
	}
}

// TestReadPrefersOwnDC: coord asks its own DC first even when another DC answers
// sooner, so a read at ONE can take longer than a write at ONE. Neither must cross: the
// local replica could meet the level, so the range does not count towards p.
func TestReadPrefersOwnDC(t *testing.T) {
	topo := &topology.Topology{
		Name: "slow-local",
		Datacenters: []topology.Datacenter{
			{Name: "x", LatencyMs: 5, Nodes: []topology.Node{{ID: "x1"}, {ID: "x2"}}},
			{Name: "y", Nodes: []topology.Node{{ID: "y1"}}},
		},
		Links: []topology.Link{{Between: [2]string{"x", "y"}, LatencyMs: 1}},
	}
	m := newModel(t, topo, EvenLayout(3), Params{})
	for _, tt := range []struct {
		op      Op
		awaited string
		latency time.Duration
		remote  bool
	}{
		{Write, "y1", 2 * time.Millisecond, false},
		{Read, "x2", 10 * time.Millisecond, false},
	} {
		pred := predict(t, m, "x1", ring.Simple(2), consistency.One, tt.op)
		// The range ending at x2's token lives on x2 and y1.
		got := pred.Ranges[1]
		if !slices.Equal(got.Replicas, []string{"x2", "y1"}) {
			t.Fatalf("range 1 replicas %v, want [x2 y1]", got.Replicas)
		}
		if !slices.Equal(got.Awaited, []string{tt.awaited}) || got.Latency != tt.latency || got.Remote != tt.remote {
			t.Errorf("%v: awaited %v latency %v remote %v; want [%s] %v %v", tt.op, got.Awaited, got.Latency, got.Remote, tt.awaited, tt.latency, tt.remote)
		}
	}
}

// TestBandwidthAndJitter: over a 1 Mbps link a 256-byte write's request frame is 313
// bytes (14 header + 299 protobuf: keyspace "default" 9, record 2 + 287 of which key
// 18, value 259, timestamp 10), 2504 µs on the wire; the 14-byte acknowledgement takes
// 112 µs. The two requests to b's nodes queue behind each other. Jitter adds its mean.
func TestBandwidthAndJitter(t *testing.T) {
	topo := &topology.Topology{
		Name: "narrow",
		Datacenters: []topology.Datacenter{
			{Name: "a", Nodes: []topology.Node{{ID: "a1"}}},
			{Name: "b", Nodes: []topology.Node{{ID: "b1"}, {ID: "b2"}}},
			{Name: "c", Nodes: []topology.Node{{ID: "c1"}}},
		},
		Links: []topology.Link{
			{Between: [2]string{"a", "b"}, BandwidthMbps: 1},
			{Between: [2]string{"a", "c"}, LatencyMs: 4, JitterMs: 2},
			{Between: [2]string{"b", "c"}, LatencyMs: 100},
		},
	}
	m := newModel(t, topo, EvenLayout(4), Params{KeyBytes: 16, ValueBytes: 256})
	request, ack := 2504*time.Microsecond, 112*time.Microsecond
	network := ring.Network(map[string]int{"a": 1, "b": 2})
	tests := []struct {
		name     string
		strategy ring.Strategy
		level    consistency.Level
		want     time.Duration
	}{
		{"self first", network, consistency.One, 0},
		{"one request on the wire", network, consistency.Quorum, request + ack},
		{"second request queues", network, consistency.All, 2*request + ack},
		{"jitter adds its mean", ring.Network(map[string]int{"c": 1}), consistency.One, 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pred := predict(t, m, "a1", tt.strategy, tt.level, Write)
			if !near(pred.Latency, tt.want) {
				t.Errorf("latency %v, want %v", pred.Latency, tt.want)
			}
		})
	}
	bigger := newModel(t, topo, EvenLayout(4), Params{KeyBytes: 16, ValueBytes: 1256})
	pred := predict(t, bigger, "a1", network, consistency.All, Write)
	// 1000 more bytes per request (the length prefixes stay two bytes) at 1 Mbps: 8 ms each.
	if want := 2*(request+8*time.Millisecond) + ack; !near(pred.Latency, want) {
		t.Errorf("1256-byte value: latency %v, want %v", pred.Latency, want)
	}
}

func TestUnavailable(t *testing.T) {
	m := newModel(t, paperTwoDCs(t), EvenLayout(6), Params{})
	tests := []struct {
		name     string
		strategy ring.Strategy
		level    consistency.Level
	}{
		{"no local replica for LOCAL_ONE", ring.Network(map[string]int{"dc2": 2}), consistency.LocalOne},
		{"TWO with one replica", ring.Simple(1), consistency.Two},
		{"no local replica for LOCAL_SERIAL", ring.Network(map[string]int{"dc2": 2}), consistency.LocalSerial},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pred := predict(t, m, "node-1", tt.strategy, tt.level, Write)
			if pred.Available() || pred.UnavailableShare < 0.999999 || pred.Latency != 0 {
				t.Errorf("available %v, unavailable share %v, latency %v; want nothing available", pred.Available(), pred.UnavailableShare, pred.Latency)
			}
		})
	}
}

type brokenLinks struct{}

func (brokenLinks) Link(fromDC, toDC string) (topology.LinkSpec, error) {
	return topology.LinkSpec{}, topology.ErrUnknownDC
}

func TestErrors(t *testing.T) {
	topo := paperTwoDCs(t)
	r, err := Ring(topo, EvenLayout(6))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(r, brokenLinks{}, Params{}); !errors.Is(err, topology.ErrUnknownDC) {
		t.Errorf("New over missing links: %v, want ErrUnknownDC", err)
	}
	if _, err := New(r, topo, Params{ValueBytes: -1}); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("New with a negative value size: %v, want ErrInvalidParams", err)
	}
	m, err := New(r, topo, Params{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		coordinator string
		strategy    ring.Strategy
		level       consistency.Level
		op          Op
		want        error
	}{
		{"unknown coordinator", "node-9", ring.Simple(1), consistency.One, Write, ErrUnknownCoordinator},
		{"read at ANY", "node-1", ring.Simple(1), consistency.Any, Read, ErrReadAtAny},
		{"too few nodes", "node-1", ring.Simple(7), consistency.One, Write, ring.ErrTooFewNodes},
		{"unknown op", "node-1", ring.Simple(1), consistency.One, Op(9), ErrUnknownOp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := m.Predict(tt.coordinator, tt.strategy, tt.level, tt.op); !errors.Is(err, tt.want) {
				t.Errorf("error %v, want %v", err, tt.want)
			}
		})
	}
}

func TestParseOp(t *testing.T) {
	tests := []struct {
		in   string
		want Op
		err  error
	}{
		{"write", Write, nil},
		{" READ ", Read, nil},
		{"scan", 0, ErrUnknownOp},
	}
	for _, tt := range tests {
		got, err := ParseOp(tt.in)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("ParseOp(%q) = %v, %v; want %v, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
	if Write.String() != "write" || Op(7).String() != "Op(7)" {
		t.Errorf("Op strings: %q %q", Write, Op(7))
	}
}
