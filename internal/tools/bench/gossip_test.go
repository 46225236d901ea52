package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/tools/membership/experiment"
)

// tinySchedule compresses the experiment: 5 batches 1 s apart, a 20 s
// window, one kill.
var tinySchedule = experiment.Config{
	Batches: 5, BatchInterval: time.Second, WindowStart: 30 * time.Second, WindowEnd: 50 * time.Second,
	Kills: 1, DetectTimeout: 60 * time.Second,
}

func TestGossipBenchTinySweep(t *testing.T) {
	var progress bytes.Buffer
	o := gossipOptions{protocols: []string{"scuttlebutt", "ferry"}, sizes: []int{10, 20}, dcs: 2, seed: 1, crossDC: true,
		realInterval: time.Second, schedule: tinySchedule}
	r, err := runGossip(context.Background(), Env{Progress: &progress}, o)
	if err != nil {
		t.Fatal(err)
	}
	rows := r.Rows.([]GossipRow)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	row := map[string]map[int]GossipRow{}
	for _, x := range rows {
		if x.Source != "sim" || x.JoinsUnconverged != 0 || x.FailuresUndetected != 0 || x.InterDCBps <= 0 || x.InterDCBps >= x.TotalBps {
			t.Errorf("implausible row %+v", x)
		}
		if x.PaperTotalBps != experiment.PaperA*float64(x.N*x.N)+experiment.PaperB*float64(x.N) {
			t.Errorf("paper T(%d) = %v", x.N, x.PaperTotalBps)
		}
		if x.DarkDCDetectionSMax == nil || x.LoneNodeDetectionS == nil || *x.CrossDCUndetected != 0 || *x.LoneDCFalseSuspicions != 0 ||
			*x.LoneDCInterDCBps <= 0 || *x.DarkDCInterDCBps <= 0 {
			t.Errorf("%s n=%d: cross-DC columns %+v", x.Protocol, x.N, x)
		}
		if row[x.Protocol] == nil {
			row[x.Protocol] = map[int]GossipRow{}
		}
		row[x.Protocol][x.N] = x
	}
	// Scuttlebutt's per-node traffic grows with n; Ferry's does not.
	if sb := row["scuttlebutt"]; sb[20].PerNodeBps < 1.3*sb[10].PerNodeBps {
		t.Errorf("scuttlebutt per node: %.0f at 10, %.0f at 20: no O(n) growth", sb[10].PerNodeBps, sb[20].PerNodeBps)
	}
	if f := row["ferry"]; f[20].PerNodeBps > 1.1*f[10].PerNodeBps {
		t.Errorf("ferry per node: %.0f at 10, %.0f at 20: grows", f[10].PerNodeBps, f[20].PerNodeBps)
	}
	// Ferry's gateways catch a lone node and a dark DC as its monitors catch
	// a node inside a DC, with a WAN cost that does not grow with n.
	for _, n := range []int{10, 20} {
		f := row["ferry"][n]
		if *f.DarkDCDetectionSMax > 12 || *f.LoneNodeDetectionS > 12 || f.FailureDetectionSMax > 12 {
			t.Errorf("ferry n=%d detection: dark DC %.1f s, lone node %.1f s, inside a DC %.1f s", n, *f.DarkDCDetectionSMax, *f.LoneNodeDetectionS, f.FailureDetectionSMax)
		}
	}
	if f := row["ferry"]; *f[20].LoneDCInterDCBps != *f[10].LoneDCInterDCBps {
		t.Errorf("ferry's WAN traffic with a lone DC: %.0f at 10, %.0f at 20", *f[10].LoneDCInterDCBps, *f[20].LoneDCInterDCBps)
	}
	fits := r.Fits.([]GossipFit)
	if len(fits) != 2 || fits[0].Protocol != "scuttlebutt" || fits[0].PaperA != experiment.PaperA || fits[0].A <= 0 {
		t.Errorf("fits %+v", fits)
	}
	if !strings.Contains(progress.String(), "gossip  100%") || !strings.Contains(progress.String(), "sim ferry n=20: done") {
		t.Errorf("progress lacks the last run:\n%s", progress.String())
	}

	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"protocol", "nodes", "total_", "interdc_", "convergence_", "detection_", "lone_dc_", "dark_dc_", "paper_", "224.6", "scuttlebutt"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Rows []map[string]any `json:"rows"`
		Fits []map[string]any `json:"fits"`
	}
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	if _, ok := decoded.Rows[0]["total_diff_pct"]; ok || decoded.Rows[0]["nodes"] != 10.0 || decoded.Fits[1]["b"] == nil {
		t.Errorf("JSON rows %v, fits %v", decoded.Rows[0], decoded.Fits)
	}
	path := filepath.Join(t.TempDir(), "gossip.png")
	if err := r.Plot(path); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(path); err != nil || !bytes.HasPrefix(data, []byte("\x89PNG")) {
		t.Fatalf("plot is not a PNG (err %v)", err)
	}
}

func TestGossipFlags(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		wantSizes []int
		wantErr   string
		// noCrossDC: the cross-DC scenario is off.
		noCrossDC bool
	}{
		{"defaults", nil, []int{10, 50, 100, 200, 500, 1000}, "", false},
		{"real defaults to small sizes", []string{"--real"}, []int{10, 20, 50}, "", false},
		{"real with sizes", []string{"--real", "--nodes", "5, 7"}, []int{5, 7}, "", false},
		{"bad size", []string{"--nodes", "10,x"}, nil, "--nodes", false},
		{"unknown protocol", []string{"--protocols", "ferry,swim"}, nil, "swim", false},
		{"zero interval", []string{"--real-interval", "0s"}, nil, "--real-interval", false},
		{"no DC", []string{"--dcs", "0"}, nil, "--dcs", false},
		{"one DC drops the cross-DC scenario", []string{"--dcs", "1"}, []int{10, 50, 100, 200, 500, 1000}, "", true},
		{"cross-DC off", []string{"--cross-dc=false"}, []int{10, 50, 100, 200, 500, 1000}, "", true},
		{"cross-DC asked with one DC", []string{"--dcs", "1", "--cross-dc"}, nil, "--cross-dc", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("gossip", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			options := gossipFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			o, err := options()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one about %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.crossDC == tc.noCrossDC {
				t.Fatalf("crossDC %v", o.crossDC)
			}
			if len(o.sizes) != len(tc.wantSizes) {
				t.Fatalf("sizes %v, want %v", o.sizes, tc.wantSizes)
			}
			for i := range o.sizes {
				if o.sizes[i] != tc.wantSizes[i] {
					t.Fatalf("sizes %v, want %v", o.sizes, tc.wantSizes)
				}
			}
		})
	}
}

func TestGossipSummary(t *testing.T) {
	diff := -12.5
	rows := []GossipRow{
		{Source: "sim", Row: experiment.Row{Protocol: "ferry", N: 10, InterDCBps: 100, TotalBps: 1000, JoinConvergenceSMax: 2}},
		{Source: "sim", Row: experiment.Row{Protocol: "ferry", N: 100, InterDCBps: 200, TotalBps: 10000, JoinConvergenceSMax: 4}},
		{Source: "sim", Row: experiment.Row{Protocol: "ferry", N: 1000, InterDCBps: 260, TotalBps: 100000, JoinConvergenceSMax: 3, FalseSuspicions: 1}},
		{Source: "real", Row: experiment.Row{Protocol: "ferry", N: 10, InterDCBps: 90, TotalBps: 900}, TotalDiffPct: &diff},
	}
	s := gossipSummary(rows, nil)
	for key, want := range map[string]any{
		"ferry_total_bps_at_n1000":           100000.0,
		"ferry_interdc_growth_n100_to_n1000": 1.3,
		"ferry_join_convergence_s_max":       4.0,
		"ferry_false_suspicions":             1,
		"real_vs_sim_max_abs_diff_pct":       12.5,
	} {
		if got := s[key]; got != want {
			t.Errorf("%s = %v, want %v", key, got, want)
		}
	}
}

func TestGrowthBase(t *testing.T) {
	for _, tc := range []struct {
		n, base int
		want    bool
	}{
		{100, 10, true},   // at least 100 beats below 100
		{10, 100, false},  // and stays
		{200, 100, false}, // the smallest of at least 100
		{100, 200, true},
		{10, 20, true}, // below 100 only: the smallest
		{20, 10, false},
	} {
		if got := growthBase(tc.n, tc.base); got != tc.want {
			t.Errorf("growthBase(%d, %d) = %v, want %v", tc.n, tc.base, got, tc.want)
		}
	}
}

func TestDiffPct(t *testing.T) {
	if d := diffPct(110, 100); d == nil || math.Abs(*d-10) > 1e-9 {
		t.Errorf("diffPct(110, 100) = %v, want 10", d)
	}
	if d := diffPct(5, 0); d != nil {
		t.Errorf("diffPct against 0 = %v, want nil", *d)
	}
}

func TestGossipFigure(t *testing.T) {
	rows := []GossipRow{
		{Source: "sim", Row: experiment.Row{Protocol: "ferry", N: 10, TotalBps: 1000, InterDCBps: 100}},
		{Source: "sim", Row: experiment.Row{Protocol: "ferry", N: 100, TotalBps: 10000, InterDCBps: 0}},
		{Source: "real", Row: experiment.Row{Protocol: "ferry", N: 10, TotalBps: 990, InterDCBps: 99}},
	}
	f := gossipFigure(rows)
	names := map[string]int{}
	for _, s := range f.Series {
		names[s.Name] = len(s.X)
	}
	want := map[string]int{
		"ferry total (sim)": 2, "ferry inter-DC (sim)": 1, // a zero cannot go on a log axis
		"ferry total (real)": 1, "ferry inter-DC (real)": 1,
		"paper 001: 224.6 n² + 4314.8 n": 2,
	}
	if len(names) != len(want) {
		t.Fatalf("series %v, want %v", names, want)
	}
	for name, points := range want {
		if names[name] != points {
			t.Errorf("series %q has %d points, want %d (all: %v)", name, names[name], points, names)
		}
	}
	if !f.LogX || !f.LogY {
		t.Error("axes are not logarithmic")
	}
}
