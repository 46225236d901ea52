package bench

import (
	"math"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestHistogramMax(t *testing.T) {
	buckets := []float64{math.Inf(-1), 0.001, 0.01, 0.1, math.Inf(1)}
	hist := func(counts ...uint64) *metrics.Float64Histogram {
		return &metrics.Float64Histogram{Counts: counts, Buckets: buckets}
	}
	for _, tc := range []struct {
		name          string
		before, after *metrics.Float64Histogram
		want          float64
	}{
		{"nothing new", hist(1, 2, 3, 0), hist(1, 2, 3, 0), 0},
		{"highest bucket that counted", hist(0, 0, 0, 0), hist(5, 1, 0, 0), 0.01},
		{"counts before the window do not count", hist(0, 0, 7, 0), hist(0, 1, 7, 0), 0.01},
		{"open last bucket: its lower bound", hist(0, 0, 0, 0), hist(0, 0, 0, 1), 0.1},
		{"no histogram", nil, hist(0, 0, 0, 1), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := histogramMax(tc.before, tc.after); got != tc.want {
				t.Errorf("histogramMax = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBreakdown(t *testing.T) {
	buckets := []float64{0, 0.002, 0.05, math.Inf(1)}
	from := runtimeSample{gcCPUSeconds: 1, cpuSeconds: 10,
		gcPauses:       &metrics.Float64Histogram{Counts: []uint64{3, 0, 0}, Buckets: buckets},
		schedLatencies: &metrics.Float64Histogram{Counts: []uint64{9, 1, 0}, Buckets: buckets}}
	to := runtimeSample{gcCPUSeconds: 1.5, cpuSeconds: 14, heapLiveBytes: 3 << 20,
		gcPauses:       &metrics.Float64Histogram{Counts: []uint64{4, 0, 0}, Buckets: buckets},
		schedLatencies: &metrics.Float64Histogram{Counts: []uint64{9, 1, 2}, Buckets: buckets}}
	want := runtimeBreakdown{GCCPUPct: 12.5, GCPauseMsMax: 2, GoSchedWaitMsMax: 50, HeapLiveMB: 3}
	if got := breakdown(from, to); got != want {
		t.Errorf("breakdown = %+v, want %+v", got, want)
	}
}

// TestReadRuntime checks that the runtime serves every metric the breakdown reads, so
// that a Go release renaming one shows up here and not as zeros in a report. The CPU
// classes and the live heap are set by a collection.
func TestReadRuntime(t *testing.T) {
	runtime.GC()
	r := readRuntime()
	if r.cpuSeconds <= 0 || r.gcPauses == nil || r.schedLatencies == nil || r.heapLiveBytes == 0 {
		t.Errorf("readRuntime = %+v: a metric is missing", r)
	}
}

func TestRunQueueWait(t *testing.T) {
	for _, tc := range []struct {
		name      string
		schedstat string
		want      time.Duration
	}{
		{"run time, wait, slices", "211049182 697725317 1080\n", 697725317},
		{"no wait field", "211049182\n", 0},
		{"not a number", "211049182 x 1080\n", 0},
		{"empty", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runQueueWait([]byte(tc.schedstat)); got != tc.want {
				t.Errorf("runQueueWait(%q) = %v, want %v", tc.schedstat, got, tc.want)
			}
		})
	}
}

func TestOSRunWaitMax(t *testing.T) {
	at := func(waits ...time.Duration) []runtimeSample {
		var out []runtimeSample
		for _, w := range waits {
			out = append(out, runtimeSample{osRunWait: w})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		samples []runtimeSample
		want    time.Duration
	}{
		{"largest step between samples", at(10, 30, 35, 95), 60},
		{"a thread that exited takes its wait away: no negative step", at(100, 40, 50), 10},
		{"one sample: no step", at(7), 0},
		{"none", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := osRunWaitMax(tc.samples); got != tc.want {
				t.Errorf("osRunWaitMax = %v, want %v", got, tc.want)
			}
		})
	}
}
