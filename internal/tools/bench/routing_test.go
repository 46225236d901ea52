package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/io/topology"
	"github.com/kuradb/kura/internal/tools/routing/experiment"
)

// runRoutingFlags runs the bench as `kura bench routing args...` does.
func runRoutingFlags(t *testing.T, args ...string) (*Report, error) {
	t.Helper()
	fs := flag.NewFlagSet("routing", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	run := setupRouting(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return run(context.Background(), Env{})
}

// The simulated bench at a tiny scale: the rows the issue asks for, mlchord at the lower
// bound, the paper's figures beside kura's, JSON and figure.
func TestRoutingBenchSimulated(t *testing.T) {
	r, err := runRoutingFlags(t, "--nodes-per-dc", "20,20", "--lookups", "200", "--seed", "3")
	if err != nil {
		t.Fatal(err)
	}
	rows := r.Rows.([]RoutingRow)
	var protocols []string
	byProtocol := map[string]RoutingRow{}
	for _, row := range rows {
		protocols = append(protocols, row.Protocol)
		byProtocol[row.Protocol] = row
		if row.Lookups != 200 || row.CorrectFraction != 1 {
			t.Errorf("%s: %d lookups, correct %v; want 200 all correct", row.Protocol, row.Lookups, row.CorrectFraction)
		}
	}
	if want := []string{"onehop", "chord", "mlchord-paper", "mlchord"}; !slices.Equal(protocols, want) {
		t.Fatalf("protocols %v, want %v", protocols, want)
	}
	ml, ch := byProtocol["mlchord"], byProtocol["chord"]
	if ml.InterDCHopsMax > 1 || ml.InterDCHopsMean != r.Summary["interdc_hops_lower_bound_mean"] {
		t.Errorf("mlchord inter-DC hops mean %v max %d; want the lower bound %v, max 1", ml.InterDCHopsMean, ml.InterDCHopsMax, r.Summary["interdc_hops_lower_bound_mean"])
	}
	if ch.InterDCHopsMean <= ml.InterDCHopsMean || ch.MaintenanceBpsPerNode <= 0 || ml.RoutingEntriesPerNode <= ch.RoutingEntriesPerNode {
		t.Errorf("chord %+v against mlchord %+v: want more inter-DC hops, traffic counted, fewer entries", ch, ml)
	}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Rows      []map[string]any `json:"rows"`
		Reduction struct {
			InterDCHopsMean float64              `json:"interdc_hops_mean"`
			HopsMean        float64              `json:"hops_mean"`
			LatencyMsMean   float64              `json:"latency_ms_mean"`
			Paper           experiment.Reduction `json:"paper"`
		} `json:"reduction"`
	}
	if err := json.Unmarshal(buf.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"protocol", "hops_mean", "hops_p99", "interdc_hops_mean", "interdc_hops_max", "latency_ms_mean", "latency_ms_p99", "correct_fraction", "routing_entries_per_node", "maintenance_bps_per_node"} {
		if _, ok := decoded.Rows[1][field]; !ok {
			t.Errorf("JSON row lacks %s: %v", field, decoded.Rows[1])
		}
	}
	if red := decoded.Reduction; red.InterDCHopsMean <= 0 || red.LatencyMsMean <= 0 || red.Paper != paperRoutingReduction {
		t.Errorf("reduction %+v", red)
	}
	path := filepath.Join(t.TempDir(), "routing.png")
	if err := r.Plot(path); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(path); err != nil || info.Size() == 0 {
		t.Errorf("figure: %v, %v", info, err)
	}
}

func TestRoutingBenchRejectsFlags(t *testing.T) {
	tests := [][]string{
		{"--nodes-per-dc", "20,20,20"}, // the default topology has 2 DCs
		{"--nodes-per-dc", "20,0"},
		{"--lookups", "-1"},
		{"--churn-per-min", "101"},
		{"--emulated", "--churn-per-min", "1"},
		{"--topology", "no-such-example"},
	}
	for _, args := range tests {
		if _, err := runRoutingFlags(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

// The emulated mode on the paper's 2 + 1 nodes, one DHT and a few lookups: real nodes
// over the emulated Tokyo / São Paulo WAN find the true owner within one inter-DC hop.
// It runs in parallel with the package's other end-to-end runs (TestRedisBenchEndToEnd
// says why).
func TestRoutingBenchEmulated(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a cluster over the emulated WAN")
	}
	topo, err := topology.Example("tokyo-saopaulo")
	if err != nil {
		t.Fatal(err)
	}
	r, err := runRoutingEmulated(context.Background(), Env{}, routingOptions{
		topo: topo, nodesPerDC: []int{2, 1}, lookups: 8, seed: 1, protocols: []string{"mlchord"},
	})
	if err != nil {
		t.Fatal(err)
	}
	rows := r.Rows.([]RoutingEmulatedRow)
	if len(rows) != 2 || rows[0].Protocol != "onehop" || rows[1].Protocol != "mlchord" {
		t.Fatalf("rows %+v, want onehop and mlchord", rows)
	}
	oneHop, ml := rows[0], rows[1]
	if ml.Layout != "tokyo 2 + saopaulo 1" || ml.Lookups != 8 || ml.CorrectFraction != 1 || ml.InterDCHopsMax > 1 {
		t.Errorf("mlchord %+v: want 8 correct lookups, at most 1 inter-DC hop", ml)
	}
	// Every inter-DC hop costs the 192 ms one-way link plus the owner's reply home.
	if ml.InterDCHopsMean != oneHop.InterDCHopsMean || ml.LatencyMsMean < oneHop.LatencyMsMean*0.9 {
		t.Errorf("mlchord %+v against the direct request %+v", ml, oneHop)
	}
}
