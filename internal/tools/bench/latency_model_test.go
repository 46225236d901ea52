package bench

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/io/topology"
)

// TestLatencyModelEndToEnd runs both setups at a tiny scale: 6 operations per row, one
// block, delays 0 and 2 ms. Six stratified keys give each of the six-node ring's ranges
// exactly one key (and each of the three-node ring's two), so every row's mean must
// include p × the 4 ms round trip the emulator can only lengthen. It runs in parallel
// with the package's other end-to-end runs (TestRedisBenchEndToEnd says why).
func TestLatencyModelEndToEnd(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	report, err := runLatencyModel(ctx, Env{}, latencyModelConfig{
		ops: 6, blocks: 1, pings: 2, delays: "2", setups: "3-node,6-node-2dc", valueBytes: 256,
	})
	if err != nil {
		t.Fatal(err)
	}
	rows := report.Rows.([]latencyModelRow)
	if want := 2 * 2 * len(latencyCells()); len(rows) != want {
		t.Fatalf("%d rows, want %d (2 setups × 2 delays × %d cells)", len(rows), want, len(latencyCells()))
	}
	const roundTripMs = 4
	if !slices.ContainsFunc(rows, func(r latencyModelRow) bool { return r.Op == "incr" }) {
		t.Error("no incr rows: the default INCR's transaction is not measured")
	}
	for _, r := range rows {
		if r.Op == "write" && r.Setup == "6-node-2dc" && r.Consistency != "SERIAL" && (r.PaperP == nil || math.Abs(*r.PaperP-r.P) > 1e-9) {
			t.Errorf("%+v: p %v differs from the paper's, which is right for six nodes", r, r.P)
		}
		wantRoundTrips := 1
		if r.Op == "incr" || r.Op == "write" && r.Consistency == "SERIAL" {
			wantRoundTrips = 2 // prepare, propose; the commit is not waited for
		}
		if r.RoundTrips != wantRoundTrips {
			t.Errorf("%+v: %d round trips, want %d", r, r.RoundTrips, wantRoundTrips)
		}
		if r.DelayMs == 0 {
			continue
		}
		floor := r.P * roundTripMs * float64(r.RoundTrips)
		if r.LatencyMsMeasured < floor || r.LatencyMsPredicted < floor {
			t.Errorf("%s RF %d %s %s: measured %v, predicted %v ms; both must be at least p × RTT = %v ms",
				r.Setup, r.RF, r.Consistency, r.Op, r.LatencyMsMeasured, r.LatencyMsPredicted, floor)
		}
	}
	var table, js bytes.Buffer
	if err := report.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"latency_ms_predicted", "latency_ms_measured", "error_fraction", "paper_p", "t_proc_ms"} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("JSON lacks %q", want)
		}
	}
	// The table breaks long names over its header's lines.
	for _, want := range []string{"predicted", "measured", "error_", "fraction", "paper_", "t_proc_ms"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if err := report.Plot(filepath.Join(t.TempDir(), "latency-model.png")); err != nil {
		t.Errorf("plot: %v", err)
	}
}

func TestLatencyModelConfigErrors(t *testing.T) {
	tests := []latencyModelConfig{
		{ops: 10, blocks: 3, pings: 1, setups: "3-node"},
		{ops: 6, blocks: 1, pings: 0, setups: "3-node"},
		{ops: 6, blocks: 1, pings: 1, setups: "9-node"},
		{ops: 6, blocks: 1, pings: 1, setups: "3-node", delays: "4,x"},
		{ops: 6, blocks: 1, pings: 1, setups: "3-node", delays: "-4"},
	}
	for _, cfg := range tests {
		if _, err := runLatencyModel(context.Background(), Env{}, cfg); err == nil {
			t.Errorf("config %+v: no error", cfg)
		}
	}
}

func TestStratifiedKeys(t *testing.T) {
	const n = 12
	keys := stratifiedKeys("test", n)
	slice := math.MaxUint64/uint64(n) + 1
	var slots []uint64
	for _, key := range keys {
		slots = append(slots, uint64(ring.HashPartitioner().Token(key))/slice)
	}
	slices.Sort(slots)
	for i, slot := range slots {
		if slot != uint64(i) {
			t.Fatalf("keys fall in slices %v, want each of 0..%d once", slots, n-1)
		}
	}
	seen := map[string]bool{}
	for _, key := range append(keys, stratifiedKeys("other", n)...) {
		if seen[string(key)] {
			t.Errorf("key %q given twice", key)
		}
		seen[string(key)] = true
	}
}

func TestDelayedTopology(t *testing.T) {
	topo := paperSetups[1].topology(8)
	if err := topo.Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		from, to string
		want     time.Duration
	}{
		{"dc1", "dc2", 8 * time.Millisecond},
		{"dc2", "dc1", 8 * time.Millisecond},
		{"dc1", "dc1", 0},
	}
	for _, tt := range tests {
		if spec, err := topo.Link(tt.from, tt.to); err != nil || spec != (topology.LinkSpec{Latency: tt.want}) {
			t.Errorf("Link(%s, %s) = %+v, %v; want latency %v only", tt.from, tt.to, spec, err, tt.want)
		}
	}
	if dc, _ := topo.DCOf("node-4"); dc != "dc2" {
		t.Errorf("node-4 in %q, want dc2", dc)
	}
}

// TestProbedLinks: the probed round trips replace the nominal latency on the paths that
// touch the probing DC, in both directions; other paths keep their figures.
func TestProbedLinks(t *testing.T) {
	probed := probedLinks{
		topo:      paperSetups[0].topology(4),
		from:      "dc1",
		roundTrip: map[string]time.Duration{"dc1": 40 * time.Microsecond, "dc2": 9 * time.Millisecond},
	}
	tests := []struct {
		from, to string
		want     time.Duration
	}{
		{"dc1", "dc2", 4500 * time.Microsecond},
		{"dc2", "dc1", 4500 * time.Microsecond},
		{"dc1", "dc1", 20 * time.Microsecond},
		{"dc2", "dc3", 4 * time.Millisecond},
		{"dc1", "dc3", 4 * time.Millisecond}, // not probed
	}
	for _, tt := range tests {
		if spec, err := probed.Link(tt.from, tt.to); err != nil || spec.Latency != tt.want {
			t.Errorf("Link(%s, %s) = %v, %v; want %v", tt.from, tt.to, spec.Latency, err, tt.want)
		}
	}
}

func TestWithZero(t *testing.T) {
	if got := withZero([]float64{8, 4, 0, 4}); !slices.Equal(got, []float64{0, 4, 8}) {
		t.Errorf("withZero = %v, want [0 4 8]", got)
	}
}
