package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/core/erasure"
	"github.com/kuradb/kura/internal/core/schema"
)

func TestParseShares(t *testing.T) {
	tests := []struct {
		spec string
		step float64
		want string
		ok   bool
	}{
		{"0.1..0.9", 0.1, "[0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9]", true},
		{"0.25..0.75", 0.25, "[0.25 0.5 0.75]", true},
		{"0.2, 0.5", 0.1, "[0.2 0.5]", true},
		{"0..0.5", 0.1, "", false},
		{"0.5..1", 0.1, "", false},
		{"0.9..0.1", 0.1, "", false},
		{"0.1..0.9", 0, "", false},
		{"half", 0.1, "", false},
	}
	for _, tt := range tests {
		got, err := parseShares(tt.spec, tt.step)
		if tt.ok != (err == nil) || (tt.ok && fmt.Sprint(got) != tt.want) {
			t.Errorf("parseShares(%q, %v) = %v, %v; want %s, ok %v", tt.spec, tt.step, got, err, tt.want, tt.ok)
		}
	}
}

func TestLDRPlanRejectsBadFlags(t *testing.T) {
	good := ldrConfig{dcsNodes: "20,10", valueBytes: 10240, keys: 10, keysMax: 100, stderrPct: 2, grid: "2..8", remoteShare: "0.5", shareStep: 0.1, sweep: "6,4", latencyKeys: 0}
	if _, err := good.plan(); err != nil {
		t.Fatalf("default flags: %v", err)
	}
	for _, bad := range []func(*ldrConfig){
		func(c *ldrConfig) { c.dcsNodes = "20" },
		func(c *ldrConfig) { c.dcsNodes = "20,0" },
		func(c *ldrConfig) { c.grid = "8..2" },
		func(c *ldrConfig) { c.grid = "2-8" },
		func(c *ldrConfig) { c.sweep = "4,6" },
		func(c *ldrConfig) { c.keys = 0 },
		func(c *ldrConfig) { c.keysMax = 9 },
		func(c *ldrConfig) { c.stderrPct = 0 },
	} {
		c := good
		bad(&c)
		if _, err := c.plan(); err == nil {
			t.Errorf("plan(%+v) accepted bad flags", c)
		}
	}
}

func TestRemoteChunks(t *testing.T) {
	tests := []struct {
		m, k       int
		localShare float64
		mean, sd   float64
	}{
		{1, 1, 0.25, 0.75, math.Sqrt(0.75 * 0.25)}, // a single copy: remote with 1 - p
		{4, 4, 0.5, 2, 1},                          // a stripe fetches every remote chunk: Binomial(4, 1/2)
		{6, 4, 1, 0, 0},                            // everything local
		{6, 4, 0, 4, 0},                            // everything remote: exactly k chunks
		// (6, 4) from a DC with 2/3 of the ring: L <= 3 needs 4 - L chunks.
		{6, 4, 2.0 / 3, 4*math.Pow(1.0/3, 6) + 3*6*(2.0/3)*math.Pow(1.0/3, 5) + 2*15*math.Pow(2.0/3, 2)*math.Pow(1.0/3, 4) + 20*math.Pow(2.0/3, 3)*math.Pow(1.0/3, 3), -1},
	}
	for _, tt := range tests {
		mean, sd := remoteChunks(tt.m, tt.k, tt.localShare)
		if math.Abs(mean-tt.mean) > 1e-9 || (tt.sd >= 0 && math.Abs(sd-tt.sd) > 1e-9) {
			t.Errorf("remoteChunks(%d, %d, %v) = %v, %v; want %v, %v", tt.m, tt.k, tt.localShare, mean, sd, tt.mean, tt.sd)
		}
	}
}

func TestCoveredKeys(t *testing.T) {
	plan := ldrPlan{keys: 3000, keysMax: 500000, stderrPct: 2}
	tests := []struct {
		scheme     ldrScheme
		localShare float64
		want       int
	}{
		{erasureScheme("ldr", 8, 8), 0.335, 3000},     // every chunk of 8 needed: sd/mean 0.25, few keys do
		{erasureScheme("ldr", 4, 2), 2.0 / 3, 21800},  // E[X] = 10/81, Var X = 872/6561: (sd/mean)^2 / 0.02^2
		{erasureScheme("ldr", 8, 2), 2.0 / 3, 500000}, // 1 in 350: capped
		{erasureScheme("ldr", 6, 4), 1, 3000},         // nothing remote
		{ldrScheme{name: "single", m: 1, k: 1}, 0.5, 3000},
		{ldrScheme{name: "replicate", m: 1, k: 1}, 0.5, 3000},
	}
	for _, tt := range tests {
		if got := coveredKeys(tt.scheme, tt.localShare, plan); got != tt.want {
			t.Errorf("coveredKeys(%s (%d,%d), %.3f) = %d, want %d", tt.scheme.name, tt.scheme.m, tt.scheme.k, tt.localShare, got, tt.want)
		}
	}
}

func TestCoveredMeanCountsUnreadKeysAsTheLocalGetsRead(t *testing.T) {
	tests := []struct {
		name         string
		st           getStats
		unread       int
		mean, stddev float64
		ok           bool
	}{
		{"every key read", getStats{bytes: []float64{0, 0, 6000}}, 0, 2000, math.Sqrt(8e6), true},
		{"seven unread local keys count as zeros", getStats{bytes: []float64{0, 0, 5000}, localBytes: []float64{0, 0}}, 7, 500, 1500, true},
		{"unread keys count with what local gets cost", getStats{bytes: []float64{10, 5000}, localBytes: []float64{10}}, 3, 5040 / 5.0, math.Sqrt((4*100+5000*5000)/5.0 - 1008*1008), true},
		{"unread keys and no local get to count them by", getStats{bytes: []float64{5000}}, 3, 0, 0, false},
	}
	for _, tt := range tests {
		mean, stddev, err := coveredMeanStddev(tt.st, &ldrSample{unread: tt.unread})
		if (err == nil) != tt.ok || tt.ok && (math.Abs(mean-tt.mean) > 1e-9 || math.Abs(stddev-tt.stddev) > 1e-6) {
			t.Errorf("%s: mean %v, stddev %v, err %v; want %v, %v, ok %v", tt.name, mean, stddev, err, tt.mean, tt.stddev, tt.ok)
		}
	}
}

func TestLDRKeysAreDeterministicAndNeverHoldZero(t *testing.T) {
	d := ldrKeys{seed: 5, valueBytes: 100}
	seen := map[string]bool{}
	for i := range 1000 {
		key := d.key(i)
		if len(key) != ldrKeyBytes || bytes.IndexByte(key, 0) >= 0 || seen[string(key)] {
			t.Fatalf("key %d = %x: want %d bytes, no 0x00, distinct", i, key, ldrKeyBytes)
		}
		seen[string(key)] = true
		if !bytes.Equal(d.key(i), key) || !bytes.Equal(d.value(i), d.value(i)) || len(d.value(i)) != 100 {
			t.Fatalf("key %d or its value differs between calls", i)
		}
	}
	if bytes.Equal(d.value(0), d.value(1)) || bytes.Equal(d.key(0), ldrKeys{seed: 6}.key(0)) {
		t.Fatal("values of two keys, or keys of two seeds, are equal")
	}
}

func TestGridAndSweepLayout(t *testing.T) {
	schemes := gridSchemes(2, 8)
	ldr, stripes := 0, 0
	for _, s := range schemes {
		if s.name == "ldr" && (s.k < 2 || s.k >= s.m || s.m > 8) || s.name == "stripe" && s.k != s.m {
			t.Fatalf("scheme %+v outside the grid", s)
		}
		if s.name == "ldr" {
			ldr++
		} else {
			stripes++
		}
	}
	if ldr != 21 || stripes != 7 {
		t.Fatalf("grid 2..8 has %d codes and %d stripes, want 21 and 7", ldr, stripes)
	}
	splits, readers := sweepSplits([]float64{0.1, 0.5, 0.9}, 30)
	if fmt.Sprint(splits) != "[[27 3] [15 15]]" || fmt.Sprint(readers[[2]int{27, 3}]) != "[dc1 dc2]" || fmt.Sprint(readers[[2]int{15, 15}]) != "[dc1]" {
		t.Fatalf("sweep splits = %v, readers = %v", splits, readers)
	}
}

// TestLDRBenchSmallRun runs the whole bench on a small cluster and checks what the
// report must show: exact storage, no WAN for gets with k local chunks, and inter-DC
// bytes that are the placed expectation plus bounded protocol overhead (its cluster's own
// counters). It runs in parallel with the package's other end-to-end runs
// (TestRedisBenchEndToEnd says why).
func TestLDRBenchSmallRun(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts several clusters")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const valueBytes = 2048
	plan := ldrPlan{dcsNodes: []int{4, 2}, valueBytes: valueBytes, keys: 60, keysMax: 400, stderrPct: 10, gridLo: 2, gridHi: 3, shares: []float64{0.5}, sweep: schema.Erasure{M: 4, K: 2}, seed: 7}
	report, err := runLDR(ctx, Env{}, plan)
	if err != nil {
		t.Fatal(err)
	}
	rows := report.Rows.([]ldrRow)
	// Fig. 9: (3,2), stripes 2 and 3, replicate, single, each from 2 DCs; Fig. 10: one row.
	if len(rows) != 5*2+1 {
		t.Fatalf("%d rows, want 11", len(rows))
	}
	extended := 0
	for _, r := range rows {
		if r.Gets < plan.keys || r.Keys < r.Gets || r.Keys > plan.keysMax {
			t.Fatalf("%s (%d,%d) from %s: %d gets over %d keys, want %d to %d", r.Scheme, r.M, r.K, r.ReaderDC, r.Gets, r.Keys, plan.keys, plan.keysMax)
		}
		extended += boolInt(r.Keys > plan.keys)
		if math.Abs(r.StorageRatio-r.StorageRatioExpected) > 1e-3 {
			t.Fatalf("%s (%d,%d): storage ratio %v, want %v", r.Scheme, r.M, r.K, r.StorageRatio, r.StorageRatioExpected)
		}
		if r.Scheme == "replicate" && r.InterDCBytesPerGetMean != 0 {
			t.Fatalf("replicate read from %s crossed the WAN: %v bytes per get", r.ReaderDC, r.InterDCBytesPerGetMean)
		}
		// A remote chunk costs its shard, its header and at most 72 bytes of request,
		// framing and the response's wall-clock stamp; a remote copy (single) its value and
		// the generic read's 136.
		remoteChunks := r.PlacedInterDCBytesPerGet / (float64(valueBytes) / float64(r.K))
		perChunk := float64(erasure.ShardBytes(valueBytes, r.K) + erasure.HeaderBytes + 72)
		if r.Scheme == "single" {
			perChunk = valueBytes + 136
		}
		if low, high := r.PlacedInterDCBytesPerGet, remoteChunks*perChunk; r.InterDCBytesPerGetMean < low-1 || r.InterDCBytesPerGetMean > high+1 {
			t.Fatalf("%s (%d,%d) from %s: %v inter-DC bytes per get, want within [%v, %v]", r.Scheme, r.M, r.K, r.ReaderDC, r.InterDCBytesPerGetMean, low, high)
		}
	}
	if extended == 0 {
		t.Fatal("no row covers more keys than it reads: the small run does not exercise the wider rows")
	}
	if n := report.Summary["gets_with_k_local_chunks_crossing_wan"]; n != 0 {
		t.Fatalf("%v gets with k local chunks crossed the WAN", n)
	}
	path := filepath.Join(t.TempDir(), "ldr.png")
	if err := report.Plot(path); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, filepath.Join(filepath.Dir(path), "ldr-fig10.png")} {
		if info, err := os.Stat(p); err != nil || info.Size() == 0 {
			t.Fatalf("figure %s not written: %v", p, err)
		}
	}
}
