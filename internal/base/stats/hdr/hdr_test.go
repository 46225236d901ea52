package hdr

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/base/stats"
)

// quantiles are the ones the benches report, and the two ends.
var quantiles = []float64{0, 0.001, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999, 1}

// TestPercentileWithinPrecisionOfSorted: on random and skewed samples, every percentile
// of the histogram is the sorted samples' (stats.Percentile), or above it by at most
// 0.1 % (three significant digits), and exact below 2,048 ns.
func TestPercentileWithinPrecisionOfSorted(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	uniform := func(lo, hi time.Duration) func() time.Duration {
		return func() time.Duration { return lo + time.Duration(r.Int64N(int64(hi-lo))) }
	}
	tests := []struct {
		name string
		n    int
		draw func() time.Duration
	}{
		{"one sample", 1, func() time.Duration { return 1234567 * time.Nanosecond }},
		{"two samples", 2, uniform(time.Microsecond, time.Second)},
		{"all equal", 1000, func() time.Duration { return 987654321 * time.Nanosecond }},
		{"below 2048 ns, exact", 5000, uniform(0, 2048)},
		{"uniform 50 µs to 20 ms", 100_000, uniform(50*time.Microsecond, 20*time.Millisecond)},
		{"log-normal around 300 µs", 100_000, func() time.Duration {
			return time.Duration(300e3 * math.Exp(r.NormFloat64()))
		}},
		{"Pareto tail (alpha 1.1) from 100 µs", 100_000, func() time.Duration {
			return time.Duration(100e3 / math.Pow(1-r.Float64(), 1/1.1))
		}},
		{"bimodal: 0.5 % stalls of 1 to 10 s", 200_000, func() time.Duration {
			if r.Float64() < 0.005 {
				return uniform(time.Second, 10*time.Second)()
			}
			return uniform(100*time.Microsecond, 2*time.Millisecond)()
		}},
		{"hours", 1000, uniform(time.Hour, 48*time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples := make([]time.Duration, tt.n)
			h := New()
			for i := range samples {
				samples[i] = tt.draw()
				h.Record(samples[i])
			}
			if h.Count() != tt.n {
				t.Fatalf("Count %d, want %d", h.Count(), tt.n)
			}
			for _, q := range quantiles {
				got, sorted := h.Percentile(q), stats.Percentile(samples, q)
				switch {
				case got < sorted:
					t.Errorf("q %v: histogram %v below the sorted samples' %v", q, got, sorted)
				case sorted < 2048 && got != sorted:
					t.Errorf("q %v: histogram %v, sorted %v: not exact below 2048 ns", q, got, sorted)
				case float64(got-sorted) > float64(sorted)*1e-3:
					t.Errorf("q %v: histogram %v, sorted %v: %.4f %% apart, over 0.1 %%", q, got, sorted, 100*float64(got-sorted)/float64(sorted))
				}
			}
		})
	}
}

// TestPercentileRanksAsSorted: where neighbouring ranks are far apart, the histogram picks
// the rank stats.Percentile picks (ceil(q·n)), not the library's own rounding to the
// nearest rank (int(q·n + 0.5)), which would answer 1 µs here for q = 0.31.
func TestPercentileRanksAsSorted(t *testing.T) {
	samples := []time.Duration{time.Microsecond, time.Microsecond, time.Second, time.Second, time.Second,
		time.Microsecond, time.Second, time.Second, time.Second, time.Second} // 3 of 10 at 1 µs
	h := New()
	for _, d := range samples {
		h.Record(d)
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{
		{0, time.Microsecond}, {0.2, time.Microsecond}, {0.3, time.Microsecond}, {0.31, time.Second}, {1, time.Second},
	} {
		got := h.Percentile(tt.q)
		if sorted := stats.Percentile(samples, tt.q); sorted != tt.want {
			t.Fatalf("q %v: stats.Percentile %v, the table says %v", tt.q, sorted, tt.want)
		}
		if got < tt.want || float64(got-tt.want) > float64(tt.want)*1e-3 {
			t.Errorf("q %v: %v, want %v to 0.1 %%", tt.q, got, tt.want)
		}
	}
}

// TestMergeCountsBoth: a merged histogram answers as one that recorded every duration.
func TestMergeCountsBoth(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a, b, all := New(), New(), New()
	for i := range 20_000 {
		d := time.Duration(r.Int64N(int64(time.Second)))
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	a.Merge(b)
	if a.Count() != all.Count() {
		t.Fatalf("merged Count %d, want %d", a.Count(), all.Count())
	}
	for _, q := range quantiles {
		if got, want := a.Percentile(q), all.Percentile(q); got != want {
			t.Errorf("q %v: merged %v, recorded together %v", q, got, want)
		}
	}
}

// TestEmptyAndBadInput: no durations give 0, as stats.Percentile; a q outside [0, 1] and
// a negative duration panic.
func TestEmptyAndBadInput(t *testing.T) {
	if got := New().Percentile(0.99); got != 0 {
		t.Errorf("empty: %v, want 0", got)
	}
	for _, tt := range []struct {
		name string
		f    func()
	}{
		{"q -0.1", func() { New().Percentile(-0.1) }},
		{"q 1.5", func() { New().Percentile(1.5) }},
		{"q NaN", func() { New().Percentile(math.NaN()) }},
		{"negative duration", func() { New().Record(-time.Nanosecond) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("did not panic")
				}
			}()
			tt.f()
		})
	}
}
