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
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/kuradb/kura/internal/data/sched"
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

// --mixes picks the paper's mixes, in the paper's order, each once.
func TestParseMixes(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"9:1,5:5", "9:1,5:5"},
		{"5:5", "5:5"},
		{"5:5, 9:1", "9:1,5:5"},
		{"9:1,9:1", "9:1"},
	} {
		got, err := parseMixes(tt.in)
		var names []string
		for _, m := range got {
			names = append(names, m.name)
		}
		if err != nil || strings.Join(names, ",") != tt.want {
			t.Errorf("parseMixes(%q) = %v, %v; want %s", tt.in, names, err, tt.want)
		}
	}
	for _, bad := range []string{"", "1:9", "9:1,"} {
		if _, err := parseMixes(bad); err == nil {
			t.Errorf("parseMixes(%q) accepted", bad)
		}
	}
}

func TestSchedOrder(t *testing.T) {
	for _, tt := range []struct{ variants, repeats int }{{1, 3}, {2, 3}, {3, 3}, {7, 3}, {7, 7}, {7, 10}} {
		first := map[int]bool{}
		places := make([]map[int]bool, tt.variants) // places[v]: where variant v ran
		for v := range places {
			places[v] = map[int]bool{}
		}
		for r := range tt.repeats {
			order := schedOrder(tt.variants, r)
			if sorted := slices.Sorted(slices.Values(order)); len(order) != tt.variants || sorted[0] != 0 || sorted[len(sorted)-1] != tt.variants-1 || len(slices.Compact(sorted)) != tt.variants {
				t.Fatalf("%d variants, repeat %d: order %v is not each variant once", tt.variants, r, order)
			}
			if r > 0 && tt.variants > 1 && order[0] == schedOrder(tt.variants, r-1)[0] {
				t.Errorf("%d variants: repeats %d and %d both start with variant %d", tt.variants, r-1, r, order[0])
			}
			first[order[0]] = true
			for place, v := range order {
				places[v][place] = true
			}
		}
		if want := min(tt.variants, tt.repeats); len(first) != want {
			t.Errorf("%d variants, %d repeats: %d variants ran first, want %d", tt.variants, tt.repeats, len(first), want)
		}
		for v, p := range places {
			if want := min(tt.variants, tt.repeats); len(p) != want {
				t.Errorf("%d variants, %d repeats: variant %d ran in %d places, want %d", tt.variants, tt.repeats, v, len(p), want)
			}
		}
	}
}

// schedRuns makes runs of a variant whose get and scan mean latencies are gets and scans,
// with p99s twice those and one failed query each.
func schedRuns(gets, scans []float64) []SchedulingRun {
	var runs []SchedulingRun
	for i := range gets {
		runs = append(runs, SchedulingRun{Repeat: i, Position: i, SchedulingFigures: SchedulingFigures{
			GetLatencyMsMean: gets[i], GetLatencyMsP99: 2 * gets[i], ScanLatencyMsMean: scans[i], ScanLatencyMsP99: 2 * scans[i],
			ThroughputQPS: 1000 / gets[i], Failed: 1}})
	}
	return runs
}

func TestSchedMedianRow(t *testing.T) {
	tests := []struct {
		name                        string
		gets, scans                 []float64
		getMedian, scanMedian       float64
		getSpread, scanSpread       [2]float64
		getSpreadPct, scanSpreadPct float64
	}{
		{"one run", []float64{100}, []float64{800}, 100, 800, [2]float64{100, 100}, [2]float64{800, 800}, 0, 0},
		// The median, not the best (lowest) nor the mean of the runs.
		{"three runs", []float64{300, 100, 200}, []float64{900, 1000, 800}, 200, 900, [2]float64{100, 300}, [2]float64{800, 1000}, 100, 22.2},
		{"an outlier", []float64{100, 1000, 110}, []float64{500, 510, 490}, 110, 500, [2]float64{100, 1000}, [2]float64{490, 510}, 818.2, 4},
		// An even count: the mean of the two middle runs.
		{"four runs", []float64{100, 400, 200, 300}, []float64{10, 10, 10, 10}, 250, 10, [2]float64{100, 400}, [2]float64{10, 10}, 120, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs := schedRuns(tt.gets, tt.scans)
			row := schedMedianRow(1, "9:1", 1000, "ReS", runs)
			if row.GetLatencyMsMean != tt.getMedian || row.ScanLatencyMsMean != tt.scanMedian ||
				row.GetLatencyMsP99 != 2*tt.getMedian || row.ScanLatencyMsP99 != 2*tt.scanMedian {
				t.Errorf("medians: get %v (p99 %v), scan %v (p99 %v); want %v, %v", row.GetLatencyMsMean, row.GetLatencyMsP99,
					row.ScanLatencyMsMean, row.ScanLatencyMsP99, tt.getMedian, tt.scanMedian)
			}
			if row.Spread["get_latency_ms_mean"] != tt.getSpread || row.Spread["scan_latency_ms_mean"] != tt.scanSpread ||
				row.Spread["get_latency_ms_p99"] != [2]float64{2 * tt.getSpread[0], 2 * tt.getSpread[1]} {
				t.Errorf("spread %v; want get %v, scan %v", row.Spread, tt.getSpread, tt.scanSpread)
			}
			if len(row.Spread) != len(row.figures()) {
				t.Errorf("spread of %d figures, want %d", len(row.Spread), len(row.figures()))
			}
			if row.GetMeanSpreadPct != tt.getSpreadPct || row.ScanMeanSpreadPct != tt.scanSpreadPct {
				t.Errorf("spread %v %% and %v %%, want %v and %v", row.GetMeanSpreadPct, row.ScanMeanSpreadPct, tt.getSpreadPct, tt.scanSpreadPct)
			}
			if row.Failed != len(runs) || !slices.Equal(row.Repeats, runs) {
				t.Errorf("failed %d, repeats %+v; want %d and every run as measured", row.Failed, row.Repeats, len(runs))
			}
		})
	}
}

func TestSchedReductionsAndDoneWhen(t *testing.T) {
	// Each variant ran three times; the reductions and checks must come from the medians
	// (the middle runs below), whatever the best or the mean run says.
	point := func(mix, variant string, gets, scans []float64) SchedulingRow {
		return schedMedianRow(1, mix, 1000, variant, schedRuns(gets, scans))
	}
	rows := []SchedulingRow{
		point("9:1", "O", []float64{100, 60, 400}, []float64{1000, 1900, 500}),
		point("9:1", "ReS", []float64{70, 71, 20}, []float64{1010, 1500, 900}),
		point("9:1", "A", []float64{72, 72, 72}, []float64{880, 870, 890}),
		point("9:1", "kura", []float64{71, 71, 71}, []float64{870, 860, 880}),
		point("5:5", "O", []float64{100, 100, 100}, []float64{1000, 1000, 1000}),
		point("5:5", "ReS", []float64{25, 10, 90}, []float64{1000, 1000, 1000}),
		point("5:5", "A", []float64{20, 20, 20}, []float64{800, 800, 800}),
		point("5:5", "kura", []float64{30, 30, 30}, []float64{850, 850, 850}),
		schedMedianRow(3, "5:5", 1000, "O", schedRuns([]float64{100, 100, 100}, []float64{1000, 1000, 1000})),
		schedMedianRow(3, "5:5", 1000, "A", schedRuns([]float64{20, 20, 20}, []float64{800, 800, 800})),
		schedMedianRow(3, "5:5", 1000, "kura", schedRuns([]float64{10, 10, 10}, []float64{700, 700, 700})),
	}
	reductions := schedReductions(rows)
	if len(reductions) != 8 || reductions[0].Variant != "ReS" || reductions[0].GetMeanPct != 30 || reductions[0].ScanMeanPct != -1 ||
		reductions[0].GetP99Pct != 30 || reductions[0].ScanP99Pct != -1 {
		t.Fatalf("reductions %+v", reductions)
	}
	got := map[string]float64{}
	met := map[string]bool{}
	for _, c := range doneWhen(reductions, []int{125, 1000}, []int{1000}) {
		got[c.Check], met[c.Check] = c.GotPct, c.Met
	}
	want := map[string]bool{
		"ReS get mean vs O, 9:1, 1000 clients":              true,
		"A scan mean vs O, 9:1, 1000 clients":               true,
		"kura get mean vs O (want A's), 9:1, 1000 clients":  true,
		"kura scan mean vs O (want A's), 9:1, 1000 clients": true,
		"kura scan p99 vs O, 9:1, 1000 clients":             true,
		"ReS get mean vs O, 5:5, 1000 clients":              false, // median 75 % < 80 %; its best run, 90 %
		"A scan mean vs O, 5:5, 1000 clients":               true,
		"kura get mean vs O (want A's), 5:5, 1000 clients":  false,
		"kura scan mean vs O (want A's), 5:5, 1000 clients": false,
		"kura scan p99 vs O, 5:5, 1000 clients":             true,
		// With three replicas, kura against A only; 9:1 was not run.
		"kura get mean vs O (want A's), 5:5, rf 3, 1000 clients":  true,
		"kura scan mean vs O (want A's), 5:5, rf 3, 1000 clients": true,
	}
	if !maps.Equal(met, want) {
		t.Fatalf("checks %v, want %v", met, want)
	}
	if g := got["ReS get mean vs O, 5:5, 1000 clients"]; g != 75 {
		t.Errorf("ReS get mean vs O at 5:5: %v %%, want 75 %% (the medians)", g)
	}
}

// TestSchedulingQuick runs the whole bench at --quick, each point twice, and checks the
// report's shape: a row per point and variant, its repeats in rotated places, measured latencies, a reduction per
// variant but O, no failed or wrong query, a table that fits 120 columns, the JSON and
// the figure. It asserts nothing about which variant is faster: that needs the default
// scale. It runs in parallel with the package's other end-to-end runs
// (TestRedisBenchEndToEnd says why), as does TestSchedulingSharedDevice.
func TestSchedulingQuick(t *testing.T) {
	t.Parallel()
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
		// Two repeats of seven variants rotated: each ran in two places.
		if len(r.Repeats) != 2 || r.Repeats[0].Position == r.Repeats[1].Position {
			t.Fatalf("row %s %s %d clients: repeats %+v, want two in different places", r.Mix, r.Variant, r.Clients, r.Repeats)
		}
		if r.GetLatencyMsMean <= 0 || r.ScanLatencyMsMean <= 0 || r.GetLatencyMsP99 < r.GetLatencyMsMean || r.ThroughputQPS <= 0 || r.ScanDeviceMsMean <= 0 {
			t.Fatalf("row %+v lacks a measurement", r)
		}
		if r.GetDeviceWaitMsMean != 0 || r.ScanPageDeviceWaitMsMean != 0 {
			t.Fatalf("row %+v: reads waited for a device of their own", r)
		}
	}
	if got := report.Summary["device_model"]; got != "each with its own device" {
		t.Fatalf("device model %q, want each with its own device", got)
	}
	if got := len(report.Reduction.([]SchedulingReduction)); got != len(rows)*(variants-1)/variants {
		t.Fatalf("%d reductions for %d rows", got, len(rows))
	}
	if report.Summary["queries_failed"] != 0 || report.Summary["scans_wrong_rows"] != 0 {
		t.Fatalf("failed %v, wrong scans %v", report.Summary["queries_failed"], report.Summary["scans_wrong_rows"])
	}
	if checks := report.Summary["done_when"].([]schedCheck); len(checks) != 14 {
		t.Fatalf("%d checks of the targets, want 14 (10 without replication, 4 with three replicas)", len(checks))
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

// TestSchedulingSharedDevice runs one mix of the bench at --quick with a node's workers
// sharing one device, and checks that the report says so and that every query was
// answered right; and that the flag without a device time is refused.
func TestSchedulingSharedDevice(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a 12-node cluster")
	}
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "shared", args: []string{"--quick", "--repeat", "1", "--mixes", "5:5", "--rf3-clients", "none", "--variants", "ReS,A", "--read-workers", "4", "--emulate-disk-shared"}},
		{name: "no device time", args: []string{"--quick", "--emulate-disk", "0", "--emulate-disk-shared"}, wantErr: "--emulate-disk-shared needs a device time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("scheduling", flag.ContinueOnError)
			runner := setupScheduling(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			report, err := runner(ctx, Env{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if model, _ := report.Summary["device_model"].(string); !strings.HasPrefix(model, "sharing one device") || !strings.Contains(report.Scale, "4 worker(s) per node, sharing one device") {
				t.Fatalf("device model %q, scale %q: want the shared device named", model, report.Scale)
			}
			if rows := report.Rows.([]SchedulingRow); len(rows) != 2*3 {
				t.Fatalf("%d rows, want 2 client counts x 3 variants", len(rows))
			}
			if report.Summary["queries_failed"] != 0 || report.Summary["scans_wrong_rows"] != 0 {
				t.Fatalf("failed %v, wrong scans %v", report.Summary["queries_failed"], report.Summary["scans_wrong_rows"])
			}
		})
	}
}

// TestSchedulingVirtual runs the bench at --quick's size in virtual time, as --virtual
// does (here in the test's own bubble, as bubble.Run gives one to kura-bench), and checks
// that every query was answered right, that the report says it ran in virtual time, and
// that the cluster leaves no goroutine behind (synctest.Test fails if one is left).
func TestSchedulingVirtual(t *testing.T) {
	device, err := sched.ParseDevice(schedQuickSettings["emulate-disk"])
	if err != nil {
		t.Fatal(err)
	}
	o := schedOptions{rows: 240, limitMax: 200, queries: 40, clients: []int{4, 8}, rf3Clients: []int{8}, mixes: schedMixes,
		variants: sched.Variants(), readWorkers: 1, device: device, repeat: 2, seed: 1, virtual: true}
	synctest.Test(t, func(t *testing.T) {
		points := 0
		report, err := measureScheduling(context.Background(), Env{}, o, startVirtualSchedCluster, func(total int) (func(string), func()) {
			return func(string) { points++ }, func() {
				if points != total {
					t.Errorf("%d points told done of %d", points, total)
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		rows := report.Rows.([]SchedulingRow)
		if want := (2*2 + 2*1) * len(sched.Variants()); len(rows) != want {
			t.Fatalf("%d rows, want %d", len(rows), want)
		}
		for _, r := range rows {
			if r.GetLatencyMsMean <= 0 || r.ScanLatencyMsMean <= 0 || r.ThroughputQPS <= 0 || r.ScanDeviceMsMean <= 0 {
				t.Fatalf("row %+v lacks a measurement", r)
			}
			if r.GoSchedWaitMsMean != 0 {
				t.Fatalf("row %+v: a wait for a CPU in virtual time", r)
			}
		}
		if report.Summary["queries_failed"] != 0 || report.Summary["scans_wrong_rows"] != 0 {
			t.Fatalf("failed %v, wrong scans %v", report.Summary["queries_failed"], report.Summary["scans_wrong_rows"])
		}
		if report.Summary["virtual"] != true || !strings.HasPrefix(report.Scale, "VIRTUAL TIME (--virtual, not the default)") ||
			!strings.HasSuffix(report.Summary["device_model"].(string), "CPU free (--virtual)") {
			t.Fatalf("virtual %v, scale %q, device model %q: want the virtual time named", report.Summary["virtual"], report.Scale, report.Summary["device_model"])
		}
	})
}
