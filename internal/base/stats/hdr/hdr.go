// Package hdr keeps durations in an HDR histogram (github.com/HdrHistogram/hdrhistogram-go)
// for the benches that record too many samples to keep them all: its size is fixed
// (about 440 KiB) however many it counts. Its percentiles are stats.Percentile's, by
// nearest rank, to SignificantDigits: each is within 0.1 % of the percentile of the
// sorted samples, never below it (the tests check).
//
// The histogram takes what 55,000 samples of 8 bytes do, so it pays only above that: in
// `kura bench peers`, whose rows count up to a million operations and more. The benches
// with fewer per figure keep and sort them (scheduling's 2,000 queries per point,
// routing's 10,000 simulated lookups, ldr's 40 keys per scheme and DC by default), as
// does rebalance, which cuts its before and during windows from the samples' start
// times after each step and keeps every acknowledged key for its loss check anyway.
//
// Only the benches import it, so that the server links no histogram library.
package hdr

import (
	"fmt"
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// SignificantDigits is the histogram's precision: two durations that agree in their
// first three significant decimal digits may share a count, any other two do not.
// Durations below 2,048 ns are counted exactly.
const SignificantDigits = 3

// Histogram counts durations from 1 ns to the largest time.Duration; not safe for
// concurrent use.
type Histogram struct {
	h *hdrhistogram.Histogram
}

// New returns an empty histogram.
func New() *Histogram {
	return &Histogram{h: hdrhistogram.New(1, math.MaxInt64, SignificantDigits)}
}

// Record counts d. Durations measured with time.Since are never negative; a negative
// one is a bug in the caller, and Record panics on it rather than count it wrong.
func (h *Histogram) Record(d time.Duration) {
	if err := h.h.RecordValue(int64(d)); err != nil {
		panic(fmt.Sprintf("hdr: record %v: %v", d, err))
	}
}

// Merge adds every count of other to h.
func (h *Histogram) Merge(other *Histogram) {
	if dropped := h.h.Merge(other.h); dropped != 0 {
		panic(fmt.Sprintf("hdr: merge dropped %d durations: the two histograms differ in range", dropped))
	}
}

// Count returns how many durations h has counted.
func (h *Histogram) Count() int { return int(h.h.TotalCount()) }

// Percentile returns the q-quantile (0 ≤ q ≤ 1) by nearest rank, as stats.Percentile
// does for the samples: the duration of rank ceil(q·n) (the first for q = 0), given as
// the largest duration its count stands for. It returns 0 for no durations and panics
// when q is outside [0, 1].
func (h *Histogram) Percentile(q float64) time.Duration {
	if !(q >= 0 && q <= 1) {
		panic(fmt.Sprintf("hdr: percentile %v outside [0, 1]", q))
	}
	n := h.h.TotalCount()
	if n == 0 {
		return 0
	}
	rank := max(int64(math.Ceil(q*float64(n))), 1)
	// The library's percentile p picks rank int(p/100·n + 0.5), which rounds rather than
	// rounding up; p = 100·rank/n gives rank back, as the float error of p/100·n is far
	// below the 0.5 added. Above 0, it answers with the count's largest duration.
	return time.Duration(h.h.ValueAtPercentile(100 * float64(rank) / float64(n)))
}
