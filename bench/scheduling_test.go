package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kuradb/kura/sched"
)

func TestSchedKeys(t *testing.T) {
	keys := schedKeys(500, 1)
	if len(keys) != 500 || !slices.IsSortedFunc(keys, bytes.Compare) {
		t.Fatalf("%d keys, sorted %v", len(keys), slices.IsSortedFunc(keys, bytes.Compare))
	}
	for i, k := range keys {
		digits, ok := strings.CutPrefix(string(k), "user")
		if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
			t.Fatalf("key %q is not user + digits", k)
		}
		if i > 0 && bytes.Equal(keys[i-1], k) {
			t.Fatalf("key %q twice", k)
		}
	}
	if !slices.EqualFunc(keys, schedKeys(500, 1), bytes.Equal) {
		t.Fatal("the same seed gave other keys")
	}
	if slices.EqualFunc(keys, schedKeys(500, 2), bytes.Equal) {
		t.Fatal("another seed gave the same keys")
	}
}

func TestPlanQueries(t *testing.T) {
	o := schedOptions{rows: 100, limitMax: 30, queries: 101, seed: 3}
	for _, mix := range schedMixes {
		plan := planQueries(o, mix, 10)
		scans := 0
		for _, q := range plan {
			if q.key < 0 || q.key >= o.rows {
				t.Fatalf("key %d outside the %d rows", q.key, o.rows)
			}
			if q.scan {
				scans++
				if q.limit < 1 || q.limit > o.limitMax {
					t.Fatalf("limit %d outside 1..%d", q.limit, o.limitMax)
				}
			}
		}
		if want := o.queries - (o.queries*mix.getPct+50)/100; len(plan) != o.queries || scans != want {
			t.Fatalf("mix %s: %d queries with %d scans, want %d with %d", mix.name, len(plan), scans, o.queries, want)
		}
		if !slices.Equal(plan, planQueries(o, mix, 10)) {
			t.Fatalf("mix %s: the same point planned other queries", mix.name)
		}
		if slices.Equal(plan, planQueries(o, mix, 20)) {
			t.Fatalf("mix %s: another client count planned the same queries", mix.name)
		}
	}
}

func TestParseVariants(t *testing.T) {
	names := func(vs []sched.Variant) string {
		var out []string
		for _, v := range vs {
			out = append(out, v.Name)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		in, want string
	}{
		{"all", "O,ReS,P,ReS+P,P+RaS,A,kura"},
		// O always runs first: it is every reduction's baseline.
		{"A,kura", "O,A,kura"},
		{"res, KURA, A", "O,ReS,kura,A"},
		{"O", "O"},
		{"fifo,A,A", "O,A"},
		{"fair+parallel", "O,fair+parallel"},
	}
	for _, tt := range tests {
		got, err := parseVariants(tt.in)
		if err != nil || names(got) != tt.want {
			t.Errorf("parseVariants(%q) = %s, %v; want %s", tt.in, names(got), err, tt.want)
		}
	}
	for _, bad := range []string{"", "Z", "res+fair"} {
		if _, err := parseVariants(bad); err == nil {
			t.Errorf("parseVariants(%q) accepted", bad)
		}
	}
}

func TestSchedReductionsAndDoneWhen(t *testing.T) {
	point := func(mix, variant string, get, scan float64) SchedulingRow {
		return SchedulingRow{RF: 1, Mix: mix, Clients: 1000, Variant: variant, GetLatencyMsMean: get, GetLatencyMsP99: 2 * get, ScanLatencyMsMean: scan, ScanLatencyMsP99: 2 * scan}
	}
	rows := []SchedulingRow{
		point("9:1", "O", 100, 1000), point("9:1", "ReS", 70, 1010), point("9:1", "A", 72, 880), point("9:1", "kura", 71, 870),
		point("5:5", "O", 100, 1000), point("5:5", "ReS", 25, 1000), point("5:5", "A", 20, 800), point("5:5", "kura", 30, 850),
	}
	reductions := schedReductions(rows)
	if len(reductions) != 6 || reductions[0].Variant != "ReS" || reductions[0].GetMeanPct != 30 || reductions[0].ScanMeanPct != -1 {
		t.Fatalf("reductions %+v", reductions)
	}
	got := map[string]bool{}
	for _, c := range doneWhen(rows, reductions, []int{125, 1000}) {
		got[c.Check] = c.Met
	}
	want := map[string]bool{
		"ReS get mean vs O, 9:1, 1000 clients":              true,
		"A scan mean vs O, 9:1, 1000 clients":               true,
		"kura get mean vs O (want A's), 9:1, 1000 clients":  true,
		"kura scan mean vs O (want A's), 9:1, 1000 clients": true,
		"kura scan p99 vs O, 9:1, 1000 clients":             true,
		"ReS get mean vs O, 5:5, 1000 clients":              false, // 75 % < 80 %
		"A scan mean vs O, 5:5, 1000 clients":               true,
		"kura get mean vs O (want A's), 5:5, 1000 clients":  false,
		"kura scan mean vs O (want A's), 5:5, 1000 clients": false,
		"kura scan p99 vs O, 5:5, 1000 clients":             true,
	}
	if !maps.Equal(got, want) {
		t.Fatalf("checks %v, want %v", got, want)
	}
}

// TestSchedulingQuick runs the whole bench at --quick, each point twice, and checks the
// report's shape: a row per point and variant, measured latencies, a reduction per
// variant but O, no failed or wrong query, a table that fits 120 columns, the JSON and
// the figure. It asserts nothing about which variant is faster: that needs the default
// scale.
func TestSchedulingQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 12-node cluster")
	}
	fs := flag.NewFlagSet("scheduling", flag.ContinueOnError)
	runner := setupScheduling(fs)
	if err := fs.Parse([]string{"--quick", "--repeat", "2"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	report, err := runner(ctx, Env{})
	if err != nil {
		t.Fatal(err)
	}
	rows := report.Rows.([]SchedulingRow)
	variants := len(sched.Variants())
	// rf 1: two mixes at 4 and 8 clients; rf 3: two mixes at 8 clients.
	if points := 2*2 + 2*1; len(rows) != points*variants {
		t.Fatalf("%d rows, want %d points x %d variants", len(rows), points, variants)
	}
	for _, r := range rows {
		if r.GetLatencyMsMean <= 0 || r.ScanLatencyMsMean <= 0 || r.GetLatencyMsP99 < r.GetLatencyMsMean || r.ThroughputQPS <= 0 {
			t.Fatalf("row %+v lacks a measurement", r)
		}
	}
	if got := len(report.Reduction.([]SchedulingReduction)); got != len(rows)*(variants-1)/variants {
		t.Fatalf("%d reductions for %d rows", got, len(rows))
	}
	if report.Summary["queries_failed"] != 0 || report.Summary["scans_wrong_rows"] != 0 {
		t.Fatalf("failed %v, wrong scans %v", report.Summary["queries_failed"], report.Summary["scans_wrong_rows"])
	}
	if checks := report.Summary["done_when"].([]schedCheck); len(checks) != 10 {
		t.Fatalf("%d checks of the targets, want 10", len(checks))
	}

	var table bytes.Buffer
	if err := report.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(table.String(), "\n") {
		if width := utf8.RuneCountInString(line); width > MaxWidth {
			t.Errorf("a line of the table is %d characters wide:\n%s", width, line)
		}
	}
	var js bytes.Buffer
	if err := report.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var decoded map[string]any
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"bench", "scale", "rows", "reduction", "summary"} {
		if _, ok := decoded[key]; !ok {
			t.Errorf("JSON lacks %q", key)
		}
	}
	path := filepath.Join(t.TempDir(), "scheduling.png")
	if err := report.Plot(path); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(path); err != nil || !bytes.HasPrefix(data, []byte("\x89PNG")) {
		t.Fatalf("%s is not a PNG (err %v)", path, err)
	}
}
