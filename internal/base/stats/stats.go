// Package stats owns the summary statistics that kura's benchmarks, experiments and demo
// report: the mean, the median and percentiles. Every figure named p50, p99 or median in
// their output comes from here, so the same name means the same computation everywhere;
// runs with too many latencies to keep take the same percentiles from a histogram, to
// 0.1 %, through package internal/base/stats/hdr.
//
// The functions take values in any order and leave them as they are, accept whole
// numbers (hop counts, time.Duration) as well as floats, and return 0 for no values, since
// a report prints an empty measurement as a zero next to its count.
package stats

import (
	"fmt"
	"math"
	"slices"
)

// Number is what the statistics accept: counts, durations and measurements.
type Number interface {
	~int | ~int64 | ~float64
}

// Mean returns the arithmetic mean of values; 0 for none.
func Mean[T Number](values []T) float64 {
	if len(values) == 0 {
		return 0
	}
	var sum float64
	for _, v := range values {
		sum += float64(v)
	}
	return sum / float64(len(values))
}

// Percentile returns the q-quantile (0 ≤ q ≤ 1) of values by nearest rank: the smallest
// value that at least a fraction q of the values are less than or equal to. With the
// values sorted and counted from 0 it is the one at ceil(q·n) − 1, the first for q = 0 and
// the last for q = 1; for an even count, q = 0.5 gives the lower of the two middle values.
// The answer is always one of the values, never an interpolation, so the p99 of hop counts
// is a hop count. It is gonum's stat.Quantile with stat.Empirical (the tests check), done
// here so that the server, whose power controller takes percentiles, links no gonum.
// Percentile returns 0 for no values and panics when q is outside [0, 1].
func Percentile[T Number](values []T, q float64) T {
	if !(q >= 0 && q <= 1) {
		panic(fmt.Sprintf("stats: percentile %v outside [0, 1]", q))
	}
	if len(values) == 0 {
		return 0
	}
	xs := sorted(values)
	atOrBelow := int(math.Ceil(q * float64(len(xs)))) // how many values the answer covers
	return T(xs[max(atOrBelow, 1)-1])
}

// Median returns the middle value of values, the mean of the two middle ones for an even
// count (rounded toward zero for whole numbers); 0 for none. It is the textbook median,
// not Percentile(values, 0.5): where the report wants a robust centre of a few
// measurements (the latency model's block means) rather than a rank among many.
func Median[T Number](values []T) T {
	if len(values) == 0 {
		return 0
	}
	xs := sorted(values)
	mid := len(xs) / 2
	if len(xs)%2 == 0 {
		return T((xs[mid-1] + xs[mid]) / 2)
	}
	return T(xs[mid])
}

// toFloats converts values to float64: exact for whole numbers
// below 2^53, which covers any count and any duration under 104 days.
func toFloats[T Number](values []T) []float64 {
	out := make([]float64, len(values))
	for i, v := range values {
		out[i] = float64(v)
	}
	return out
}

// sorted returns values as float64 in increasing order, leaving values untouched.
func sorted[T Number](values []T) []float64 {
	xs := toFloats(values)
	slices.Sort(xs)
	return xs
}
