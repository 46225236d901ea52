package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/gonum/stat"
)

func TestPercentile(t *testing.T) {
	tenUnsorted := []float64{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	tests := []struct {
		name   string
		values []float64
		q      float64
		want   float64
	}{
		{"empty", nil, 0.5, 0},
		{"one value", []float64{7}, 0.99, 7},
		{"q 0 is the least", tenUnsorted, 0, 1},
		{"q 0.1 of ten is the first", tenUnsorted, 0.1, 1},
		{"just above a rank moves up", tenUnsorted, 0.11, 2},
		{"p50 of an even count is the lower middle", tenUnsorted, 0.5, 5},
		{"p50 of an odd count is the middle", []float64{3, 1, 2}, 0.5, 2},
		{"p99 of ten is the last", tenUnsorted, 0.99, 10},
		{"q 1 is the greatest", tenUnsorted, 1, 10},
		{"p99 of a hundred is the 99th", hundred, 0.99, 99},
		{"ties", []float64{1, 2, 2, 2, 9}, 0.8, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.values)
			if got := Percentile(tt.values, tt.q); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.values, tt.q, got, tt.want)
			}
			if !slices.Equal(tt.values, before) {
				t.Errorf("Percentile reordered its input: %v, was %v", tt.values, before)
			}
		})
	}
}

// TestPercentileWholeNumbers: counts and durations come back in their own type, exactly.
func TestPercentileWholeNumbers(t *testing.T) {
	if got := Percentile([]int{3, 9, 1, 4}, 0.75); got != 4 {
		t.Errorf("int p75 = %d, want 4", got)
	}
	latencies := []time.Duration{192 * time.Millisecond, 195500 * time.Nanosecond, 384*time.Millisecond + 391*time.Microsecond}
	if got := Percentile(latencies, 0.99); got != 384*time.Millisecond+391*time.Microsecond {
		t.Errorf("duration p99 = %v, want 384.391ms", got)
	}
}

func TestPercentileRejectsQ(t *testing.T) {
	for _, q := range []float64{-0.01, 1.01, 99} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Percentile(q=%v) did not panic", q)
				}
			}()
			Percentile([]float64{1}, q)
		}()
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name   string
		values []time.Duration
		want   time.Duration
	}{
		{"empty", nil, 0},
		{"odd count", []time.Duration{5, 1, 100}, 5},
		{"even count takes the mean of the middle two", []time.Duration{4, 1, 2, 100}, 3},
		{"whole numbers round toward zero", []time.Duration{1, 2}, 1},
		{"one value", []time.Duration{7}, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.values)
			if got := Median(tt.values); got != tt.want {
				t.Errorf("Median(%v) = %v, want %v", tt.values, got, tt.want)
			}
			if !slices.Equal(tt.values, before) {
				t.Errorf("Median reordered its input: %v, was %v", tt.values, before)
			}
		})
	}
	if got := Median([]float64{1, 2}); got != 1.5 {
		t.Errorf("Median of floats 1, 2 = %v, want 1.5", got)
	}
}

func TestMean(t *testing.T) {
	tests := []struct {
		name   string
		values []float64
		want   float64
	}{
		{"empty", nil, 0},
		{"one value", []float64{3}, 3},
		{"several", []float64{1, 2, 3, 6}, 3},
		{"fractional", []float64{0, 1}, 0.5},
	}
	for _, tt := range tests {
		if got := Mean(tt.values); got != tt.want {
			t.Errorf("%s: Mean(%v) = %v, want %v", tt.name, tt.values, got, tt.want)
		}
	}
	if got := Mean([]int{1, 2}); got != 1.5 {
		t.Errorf("Mean of ints 1, 2 = %v, want 1.5", got)
	}
}

// TestAgreesWithGonum: Percentile is gonum's empirical quantile and Mean gonum's mean
// (to the last bits its summation order may round differently), on samples of every size
// from one to a few hundred, ties included; only the tests link gonum, not the server.
func TestAgreesWithGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	qs := []float64{0, 0.001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 1}
	for n := 1; n <= 300; n += 1 + n/10 {
		values := make([]float64, n)
		for i := range values {
			values[i] = math.Round(rng.ExpFloat64()*100) / 4 // quarters: many ties
		}
		ordered := slices.Sorted(slices.Values(values))
		for _, q := range qs {
			if got, want := Percentile(values, q), stat.Quantile(q, stat.Empirical, ordered, nil); got != want {
				t.Errorf("n %d: Percentile(q %v) = %v, gonum says %v", n, q, got, want)
			}
		}
		if got, want := Mean(values), stat.Mean(values, nil); math.Abs(got-want) > 1e-12*math.Abs(want) {
			t.Errorf("n %d: Mean = %v, gonum says %v", n, got, want)
		}
	}
}
