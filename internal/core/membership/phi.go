package membership

import (
	"math"
	"time"
)

// PhiModel is a phi-accrual failure detector's setting (Hayashibara et al.):
// phi is -log10 of the probability that a heartbeat still arrives after a
// silence this long, given the intervals seen so far.
type PhiModel struct {
	// Normal selects the normal-distribution estimate (as in Akka), which
	// reacts faster; false gives Cassandra 0.6's exponential estimate,
	// phi = silence / mean / ln 10.
	Normal bool
	// MinStdDev keeps the normal estimate from becoming hair-triggered when
	// heartbeats arrive like clockwork.
	MinStdDev time.Duration
	// AcceptablePause is silence added to the mean before the normal
	// estimate starts to rise, so a few lost heartbeats cost nothing.
	AcceptablePause time.Duration
	// Threshold is the phi above which the peer is convicted.
	Threshold float64
	// FirstInterval stands in for the mean before any interval is seen
	// (Cassandra uses half the gossip interval).
	FirstInterval time.Duration
	// WindowSamples is how many intervals the mean remembers: an exact mean
	// up to that many, then an exponentially weighted one with the same
	// memory, which keeps each window O(1) in size.
	WindowSamples int
}

// CassandraPhi is Cassandra 0.6's detector: exponential, threshold 8, a
// window of 1000 intervals, first interval half the one-second gossip round.
var CassandraPhi = PhiModel{Threshold: 8, FirstInterval: 500 * time.Millisecond, WindowSamples: 1000}

// ArrivalWindow is one peer's heartbeat history.
type ArrivalWindow struct {
	last     time.Duration
	seen     bool
	samples  int
	mean     float64 // seconds
	variance float64 // seconds²
}

// Report records a heartbeat arriving at now.
func (w *ArrivalWindow) Report(now time.Duration, m PhiModel) {
	if !w.seen {
		w.seen = true
		w.last = now
		w.add(m.FirstInterval.Seconds(), m)
		return
	}
	w.add((now - w.last).Seconds(), m)
	w.last = now
}

// add folds one interval into the mean and variance.
func (w *ArrivalWindow) add(x float64, m PhiModel) {
	w.samples++
	alpha := 1 / float64(min(w.samples, max(m.WindowSamples, 1)))
	diff := x - w.mean
	incr := alpha * diff
	w.mean += incr
	w.variance = (1 - alpha) * (w.variance + diff*incr)
}

// Silence is the time since the last heartbeat.
func (w *ArrivalWindow) Silence(now time.Duration) time.Duration { return now - w.last }

// Phi is the suspicion level at now; 0 before the first heartbeat.
func (w *ArrivalWindow) Phi(now time.Duration, m PhiModel) float64 {
	if !w.seen {
		return 0
	}
	t := (now - w.last).Seconds()
	if !m.Normal {
		if w.mean <= 0 {
			return math.Inf(1)
		}
		return t / w.mean / math.Ln10
	}
	mean := w.mean + m.AcceptablePause.Seconds()
	std := max(math.Sqrt(w.variance), m.MinStdDev.Seconds())
	// A logistic approximation of the normal CDF, as Akka uses.
	y := (t - mean) / std
	e := math.Exp(-y * (1.5976 + 0.070566*y*y))
	if t > mean {
		return -math.Log10(e / (1 + e))
	}
	return -math.Log10(1 - 1/(1+e))
}

// Convicted reports whether phi is above the model's threshold.
func (w *ArrivalWindow) Convicted(now time.Duration, m PhiModel) bool {
	return w.Phi(now, m) > m.Threshold
}
