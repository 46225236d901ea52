package bench

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/power"
)

func TestTierOf(t *testing.T) {
	var tier0 []int
	for i := range topologyNodes {
		if tierOf(i, topologyNodes) == 0 {
			tier0 = append(tier0, i)
		}
	}
	// Five nodes of tier 0, spread: no two of them next to each other in topology order.
	if want := []int{0, 4, 7, 10, 13}; !slices.Equal(tier0, want) {
		t.Fatalf("tier-0 nodes %v, want %v", tier0, want)
	}
}

func TestIdealPct(t *testing.T) {
	tests := []struct {
		name    string
		profile power.Profile
		asleep  int
		want    float64
	}{
		{"none asleep", power.S4, 0, 100},
		// The paper's ideal for 3 of 16 asleep, 81.5 %, counts the 1.65 W they still draw.
		{"paper exp1 S4", power.S4, 3, 81.48},
		{"S1 keeps most of the draw", power.S1, 3, 97.95},
		{"all asleep S4", power.S4, 16, 1.2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := idealPct(tt.profile, topologyNodes, tt.asleep); math.Abs(got-tt.want) > 0.01 {
				t.Fatalf("idealPct = %.3f, want %.2f", got, tt.want)
			}
		})
	}
}

// samplesAt builds samples one second apart from t0 whose energy grows by the given
// watts in each second, and whose every-node-awake reference grows by reference[i] (the
// last one given for the seconds past the end of reference).
func samplesAt(t0 time.Time, reference []float64, watts ...float64) []powerSample {
	out := []powerSample{{at: t0}}
	for i, w := range watts {
		ref := reference[min(i, len(reference)-1)]
		out = append(out, powerSample{at: t0.Add(time.Duration(i+1) * time.Second),
			joules: out[i].joules + w, allAwakeJoules: out[i].allAwakeJoules + ref})
	}
	return out
}

func TestPowerPct(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const full = topologyNodes * 137.0
	// Ten seconds at full power, then ten at 13/16 of it.
	var watts []float64
	for i := range 20 {
		w := full
		if i >= 10 {
			w = full * 13 / 16
		}
		watts = append(watts, w)
	}
	samples := samplesAt(t0, []float64{full}, watts...)
	sec := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	tests := []struct {
		name     string
		from, to time.Time
		want     float64
	}{
		{"all awake", sec(0), sec(10), 100},
		{"after the sleeps", sec(10), sec(20), 81.25},
		{"across", sec(5), sec(15), (100 + 81.25) / 2},
		// Ends off the samples are matched to the nearest ones.
		{"nearest samples", sec(10.2), sec(19.9), 81.25},
		{"window past the samples", sec(10), sec(30), 81.25},
		{"one sample", sec(3.1), sec(3.2), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := powerPct(samples, tt.from, tt.to); math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("powerPct = %v, want %v", got, tt.want)
			}
		})
	}

	// With the load, every node awake draws 100 W more than idle; three asleep (S4)
	// save their idle watts less their sleep watts, and the work's 100 W stays.
	busy := full + 100
	asleep := busy - 3*(137-1.65)
	loaded := samplesAt(t0, []float64{busy}, busy, busy, asleep, asleep)
	if got, want := powerPct(loaded, sec(2), sec(4)), 100*asleep/busy; math.Abs(got-want) > 1e-9 {
		t.Errorf("powerPct with the load = %v, want %v", got, want)
	}
	if modelled, rapl := meanWatts(loaded, sec(0), sec(2)); modelled != busy || rapl != 0 {
		t.Errorf("meanWatts = %v, %v; want %v, 0", modelled, rapl, busy)
	}
}

func TestBuckets(t *testing.T) {
	t0 := time.Unix(0, 0)
	s := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	tests := []struct {
		name   string
		end    float64
		bucket time.Duration
		want   [][2]float64
	}{
		{"whole buckets", 10, 5 * time.Second, [][2]float64{{0, 5}, {5, 10}}},
		{"long tail kept", 13, 5 * time.Second, [][2]float64{{0, 5}, {5, 10}, {10, 13}}},
		{"short tail merged", 12, 5 * time.Second, [][2]float64{{0, 5}, {5, 12}}},
		{"shorter than a bucket", 3, 5 * time.Second, [][2]float64{{0, 3}}},
		{"empty", 0, 5 * time.Second, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got [][2]float64
			for _, w := range buckets(t0, s(tt.end), tt.bucket) {
				got = append(got, [2]float64{w[0].Sub(t0).Seconds(), w[1].Sub(t0).Seconds()})
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("buckets = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTransitions(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e"}
	prev := powerSample{states: []power.State{power.Active, power.Draining, power.Asleep, power.Waking, power.Active}}
	cur := powerSample{states: []power.State{power.Draining, power.Asleep, power.Waking, power.Active, power.Asleep}}
	var got []string
	for _, e := range transitions(ids, prev, cur) {
		got = append(got, e.text)
	}
	// b falling asleep and d turning active continue a transition already named; e went
	// from active to asleep between two samples.
	if want := []string{"sleep a", "wake c", "sleep e"}; !slices.Equal(got, want) {
		t.Fatalf("transitions = %v, want %v", got, want)
	}
	if n := (powerSample{states: cur.states}).asleep(); n != 2 {
		t.Fatalf("asleep = %d, want 2", n)
	}
}

func TestSummarise(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	ops := []opRecord{
		{latency: ms(2), write: true},
		{latency: ms(4)},
		{latency: ms(150)},
		{latency: ms(3000), write: true}, // waited one attempt timeout, then succeeded
		{latency: ms(10), failed: true},
		{latency: ms(5000), write: true, failed: true},
	}
	got := summarise(ops, 3*time.Second, 100*time.Millisecond)
	want := opStats{ops: 6, failed: 2, timeouts: 2, overTarget: 3, writesFailed: 1, readsFailed: 1,
		meanMs: 789, maxMs: 3000, p99Ms: 3000}
	if got != want {
		t.Fatalf("summarise = %+v, want %+v", got, want)
	}
	if got := summarise(nil, time.Second, 0); got != (opStats{}) {
		t.Fatalf("summarise(nil) = %+v, want zeros", got)
	}
}

func TestObjects(t *testing.T) {
	objs := newObjects(3, 64)
	v := objs.value(2, 7, 9)
	if len(v) != 64 || !belongs(v, 2) || belongs(v, 1) || belongs(v[:10], 2) {
		t.Fatalf("value %x: wrong size or owner", v)
	}
	// The newest acknowledged write is the one with the highest timestamp, whatever the
	// order the acknowledgements arrive in.
	for _, ts := range []hlc.Timestamp{5, 9, 7} {
		objs.ack(1, ts)
	}
	if got := objs.newest(1); got != 9 {
		t.Fatalf("newest = %d, want 9", got)
	}
	if got := objs.newest(0); got != 0 {
		t.Fatalf("never written: newest = %d, want 0", got)
	}
}

func TestDayLoad(t *testing.T) {
	const trough = 0.1
	if got := dayLoad(4, trough); math.Abs(got-trough) > 1e-9 {
		t.Fatalf("load at 04:00 = %v, want the trough %v", got, trough)
	}
	if got := dayLoad(16, trough); math.Abs(got-1) > 1e-9 {
		t.Fatalf("load at 16:00 = %v, want the peak 1", got)
	}
	for h := 4.0; h < 16; h += 0.5 {
		if dayLoad(h+0.5, trough) <= dayLoad(h, trough) {
			t.Fatalf("load falls between %v:00 and %v:00", h, h+0.5)
		}
	}
}

func TestApplyQuick(t *testing.T) {
	fs := flag.NewFlagSet("power", flag.ContinueOnError)
	setupPower(fs)
	if err := fs.Parse([]string{"--quick", "--interval", "9s"}); err != nil {
		t.Fatal(err)
	}
	if err := applyQuick(fs, quickSettings); err != nil {
		t.Fatal(err)
	}
	// A flag given keeps its value; the others take the quick ones.
	for name, want := range map[string]string{"interval": "9s", "objects": quickSettings["objects"], "value-bytes": "65536"} {
		if got := fs.Lookup(name).Value.String(); got != want {
			t.Errorf("--%s = %s, want %s", name, got, want)
		}
	}
}

func TestPowerOptionsValidate(t *testing.T) {
	good := powerOptions{objects: 10, valueBytes: 1024, clients: 4, interval: time.Second, sleepers: 3, bucket: time.Second,
		profile: "s4", requests: 40, sleepAt: time.Second, attemptTimeout: time.Second, day: time.Minute,
		peakOpsPerSecond: 100, troughPct: 10, latencyTarget: time.Second, controllerProfile: "s1", controllerValueBytes: 64, traceOver: time.Millisecond}
	if err := good.validate(); err != nil {
		t.Fatalf("valid options refused: %v", err)
	}
	tests := []struct {
		name  string
		spoil func(*powerOptions)
	}{
		{"unknown profile", func(o *powerOptions) { o.profile = "s3" }},
		{"too many sleepers", func(o *powerOptions) { o.sleepers = 12 }},
		{"value smaller than its header", func(o *powerOptions) { o.valueBytes = 8 }},
		// 40 requests from 4 clients last 10 x 200 ms.
		{"sleep after the requests", func(o *powerOptions) { o.sleepAt = 2 * time.Second }},
		{"trough above the peak", func(o *powerOptions) { o.troughPct = 120 }},
		{"no trace threshold", func(o *powerOptions) { o.traceOver = 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			tt.spoil(&o)
			if err := o.validate(); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestPowerReportAndFigure(t *testing.T) {
	row := func(run string, from, to float64, asleep int, pct float64, events string) PowerRow {
		return PowerRow{Run: run, FromS: from, toS: to, Asleep: asleep, PowerPct: pct, Ops: 400, LatencyMsMean: 3.2, LatencyMsMax: 41, Events: events}
	}
	exp1 := &runResult{name: runExp1, rows: []PowerRow{
		row(runExp1, 0, 5, 0, 100, ""), row(runExp1, 5, 10, 1, 98.1, "sleep node-02"), row(runExp1, 10, 15, 1, 93.8, ""),
	}, ideal: func(k int) float64 { return idealPct(power.S4, topologyNodes, k) }}
	load := 40.0
	controller := &runResult{name: runController, target: 100 * time.Millisecond, rows: []PowerRow{
		{Run: runController, FromS: 0, toS: 10, LoadPct: &load, PowerPct: 100},
		{Run: runController, FromS: 10, toS: 20, LoadPct: &load, PowerPct: 99, Asleep: 1},
	}}
	rows := append(append([]PowerRow(nil), exp1.rows...), controller.rows...)
	report := &Report{Bench: "power", Scale: "test", Rows: rows, Summary: map[string]any{runExp1: map[string]any{"writes_lost": 0}}}
	var table bytes.Buffer
	if err := report.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	var columns []string
	for _, c := range tableColumns(reflect.TypeFor[PowerRow](), nil) {
		columns = append(columns, c.name)
	}
	if want := "run from_s asleep load_pct power_pct ops latency_ms_mean latency_ms_max failed timeouts events"; strings.Join(columns, " ") != want {
		t.Errorf("table columns %v, want %s", columns, want)
	}
	// A person reads the table in a terminal: every line fits 120 columns; the runs head
	// their rows, and exp1's rows show no load.
	lines := strings.Split(table.String(), "\n")
	for _, line := range lines {
		if width := utf8.RuneCountInString(line); width > MaxWidth {
			t.Errorf("a line is %d characters wide:\n%s", width, line)
		}
	}
	if lines[3] != "run exp1" || !strings.Contains(lines[7], "  sleep node-02") || strings.Fields(lines[6])[2] != "-" {
		t.Errorf("exp1 rows should follow their heading and show no load:\n%s", table.String())
	}
	var js bytes.Buffer
	if err := report.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"bench": "power"`, `"rows"`, `"summary"`, `"load_pct": 40`} {
		if !strings.Contains(js.String(), field) {
			t.Errorf("JSON lacks %s", field)
		}
	}

	figures := powerFigures(exp1, controller)
	if len(figures) != 4 {
		t.Fatalf("%d figures, want 4 (exp1 power and latency, the controller's)", len(figures))
	}
	if got := figures[0].Series[1].Y; !slices.Equal(got, []float64{100, idealPct(power.S4, topologyNodes, 1), idealPct(power.S4, topologyNodes, 1)}) {
		t.Errorf("ideal series %v", got)
	}
	path := filepath.Join(t.TempDir(), "power.png")
	if err := SavePanels(path, 2, figures...); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(data, []byte("\x89PNG")) {
		t.Fatalf("%s is not a PNG (err %v)", path, err)
	}
	if len(powerFigures(nil, nil)) != 0 {
		t.Fatal("figures without a timeline")
	}
	if err := SavePanels(filepath.Join(t.TempDir(), "x.svg"), 2, figures...); err == nil {
		t.Fatal("a non-PNG path was accepted")
	}
}

func TestNothingLostOrFailed(t *testing.T) {
	tests := []struct {
		name          string
		asleep, woken checkResult
		oneAwake      int // ranges with a single replica awake
		failed        int
		want          bool
	}{
		{"all read back", checkResult{Objects: 10}, checkResult{Objects: 10}, 0, 0, true},
		{"unreadable at QUORUM where one replica is awake", checkResult{Objects: 10, Unreadable: 3}, checkResult{Objects: 10}, 2, 0, true},
		{"unreadable with two replicas awake everywhere", checkResult{Objects: 10, Unreadable: 1}, checkResult{Objects: 10}, 0, 0, false},
		{"lost while asleep", checkResult{Objects: 10, Lost: 1}, checkResult{Objects: 10}, 2, 0, false},
		{"lost after the wakes", checkResult{Objects: 10}, checkResult{Objects: 10, Lost: 1}, 0, 0, false},
		{"unreadable after the wakes", checkResult{Objects: 10}, checkResult{Objects: 10, Unreadable: 1}, 2, 0, false},
		{"a request failed", checkResult{Objects: 10}, checkResult{Objects: 10}, 0, 1, false},
	}
	for _, tt := range tests {
		if got := nothingLostOrFailed(tt.asleep, tt.woken, tt.oneAwake, tt.failed); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestSplitUtilization(t *testing.T) {
	tests := []struct {
		name      string
		cpu, wall time.Duration
		cores     float64
		served    []uint64
		want      []float64
	}{
		// Four nodes on 2 cores: half a core each.
		{"by requests served", time.Second, time.Second, 2, []uint64{1, 1, 2, 0}, []float64{0.5, 0.5, 1, 0}},
		{"evenly by requests", time.Second, 4 * time.Second, 2, []uint64{5, 5, 5, 5}, []float64{0.125, 0.125, 0.125, 0.125}},
		{"nothing served: evenly", time.Second, 4 * time.Second, 2, []uint64{0, 0, 0, 0}, []float64{0.125, 0.125, 0.125, 0.125}},
		{"clamped at 1", 4 * time.Second, time.Second, 2, []uint64{1, 0}, []float64{1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := splitUtilization(tt.cpu, tt.wall, tt.cores, tt.served); !slices.Equal(got, tt.want) {
				t.Errorf("splitUtilization = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRAPLMeter reads package counters laid out as Linux's powercap shows them, a
// sub-domain and a wraparound included.
func TestRAPLMeter(t *testing.T) {
	root := t.TempDir()
	write := func(zone, file, value string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, zone), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, zone, file), []byte(value+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if newRAPLMeter(root) != nil {
		t.Fatal("a meter without counters")
	}
	write("intel-rapl:0", "energy_uj", "1000000")
	write("intel-rapl:0", "max_energy_range_uj", "10000000")
	write("intel-rapl:0:0", "energy_uj", "500") // a core sub-domain: not counted again
	write("intel-rapl:0:0", "max_energy_range_uj", "10000000")
	m := newRAPLMeter(root)
	if m == nil {
		t.Fatal("no meter over the package counter")
	}
	write("intel-rapl:0", "energy_uj", "4000000")
	if got := m.read(); got != 3 {
		t.Errorf("read = %v J, want 3", got)
	}
	write("intel-rapl:0", "energy_uj", "1000000") // wrapped past 10 J
	if got := m.read(); got != 10 {
		t.Errorf("after the wrap read = %v J, want 10", got)
	}
}
