package metrics

import (
	"cmp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kuradb/kura/consistency"
)

// Requests is the latency histogram of the requests of one operation at one consistency
// level, over both front ends, since the node started: what kura_request_duration_seconds
// holds, summed over its api label. Its count is kura_requests_total's for the same labels,
// since Observe feeds both.
type Requests struct {
	Op    string // get, put, delete, scan, cas
	Level string // the level's name, as the consistency label carries it
	Count uint64
	// SumSeconds is the requests' total latency.
	SumSeconds float64
	// Buckets are the cumulative counts at each upper bound, ascending, as Prometheus
	// keeps them; requests slower than the last bound are in Count only.
	Buckets []Bucket
}

// Bucket is one bucket of a cumulative latency histogram.
type Bucket struct {
	UpperBoundSeconds float64
	Count             uint64 // requests no slower than UpperBoundSeconds
}

// Requests summarises the request histograms per operation and consistency level, in the
// order of the levels (weakest first), then of the operations' names. It reads the
// histograms alone, not the whole registry, so it is cheap enough to call every second.
func (r *Registry) Requests() []Requests {
	metrics := make(chan prometheus.Metric)
	go func() {
		r.latency.Collect(metrics)
		close(metrics)
	}()
	type key struct{ op, level string }
	merged := map[key]*Requests{}
	for m := range metrics {
		var series dto.Metric
		if err := m.Write(&series); err != nil || series.GetHistogram() == nil {
			continue // a histogram of this vector always writes; nothing to summarise otherwise
		}
		labels := map[string]string{}
		for _, l := range series.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		k := key{op: labels["op"], level: labels["consistency"]}
		sum := merged[k]
		if sum == nil {
			sum = &Requests{Op: k.op, Level: k.level}
			merged[k] = sum
		}
		sum.add(series.GetHistogram())
	}
	out := make([]Requests, 0, len(merged))
	for _, s := range merged {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Requests) int {
		return cmp.Or(cmp.Compare(levelOrder(a.Level), levelOrder(b.Level)), cmp.Compare(a.Level, b.Level), cmp.Compare(a.Op, b.Op))
	})
	return out
}

// levelOrder ranks a level's name by consistency.Level's order (weakest first); names it
// does not know go last.
func levelOrder(name string) int {
	l, err := consistency.Parse(name)
	if err != nil {
		return int(^uint(0) >> 1)
	}
	return int(l)
}

// add merges one series of the histogram vector (one front end's) into s. Every series
// has the vector's buckets, so they add bound by bound.
func (s *Requests) add(h *dto.Histogram) {
	s.Count += h.GetSampleCount()
	s.SumSeconds += h.GetSampleSum()
	if s.Buckets == nil {
		s.Buckets = make([]Bucket, len(h.GetBucket()))
		for i, b := range h.GetBucket() {
			s.Buckets[i].UpperBoundSeconds = b.GetUpperBound()
		}
	}
	for i, b := range h.GetBucket() {
		s.Buckets[i].Count += b.GetCumulativeCount()
	}
}

// Since returns the requests s counts that prev, an earlier summary of the same series,
// did not: the histogram of a window of time. A summary with no buckets counts as empty.
func (s Requests) Since(prev Requests) Requests {
	d := Requests{Op: s.Op, Level: s.Level, Count: s.Count - prev.Count, SumSeconds: s.SumSeconds - prev.SumSeconds,
		Buckets: slices.Clone(s.Buckets)}
	if len(prev.Buckets) == len(s.Buckets) {
		for i := range d.Buckets {
			d.Buckets[i].Count -= prev.Buckets[i].Count
		}
	}
	return d
}

// Quantile estimates the q-quantile (0 < q < 1) of the latencies in seconds as
// Prometheus's histogram_quantile does: it finds the bucket holding the rank q·Count and
// interpolates linearly inside it, from 0 for the first bucket. A rank beyond the last
// bound answers the last bound, the most the histogram can tell. ok is false when s
// counts no request.
func (s Requests) Quantile(q float64) (seconds float64, ok bool) {
	if s.Count == 0 || len(s.Buckets) == 0 {
		return 0, false
	}
	rank := q * float64(s.Count)
	lower, below := 0.0, uint64(0)
	for _, b := range s.Buckets {
		if float64(b.Count) >= rank {
			inBucket := float64(b.Count - below)
			if inBucket == 0 { // only for q <= 0, which ranks below every request
				return lower, true
			}
			return lower + (b.UpperBoundSeconds-lower)*(rank-float64(below))/inBucket, true
		}
		lower, below = b.UpperBoundSeconds, b.Count
	}
	return s.Buckets[len(s.Buckets)-1].UpperBoundSeconds, true
}
