package schema

import (
	"bytes"
	"slices"
)

// SplitsFromSample returns up to n split keys for the ordered partitioner from a sample
// of a keyspace's keys: the sample's smallest key, its largest, and n-2 keys at evenly
// spaced ranks between them, so each bucket between two consecutive splits holds about
// the same share of the sample (keys outside the sample's range land in the two outer
// buckets). Keys are cut to MaxSplitKeyBytes and empty ones skipped; n is capped at
// MaxSplits, and fewer distinct keys than n give them all. The result shares no memory
// with keys, and is nil for n <= 0 or an empty sample.
func SplitsFromSample(keys [][]byte, n int) [][]byte {
	n = min(n, MaxSplits)
	if n <= 0 {
		return nil
	}
	distinct := make([][]byte, 0, len(keys))
	for _, k := range keys {
		if len(k) > 0 {
			distinct = append(distinct, k[:min(len(k), MaxSplitKeyBytes)])
		}
	}
	slices.SortFunc(distinct, bytes.Compare)
	distinct = slices.CompactFunc(distinct, bytes.Equal)
	m := len(distinct)
	if m == 0 {
		return nil
	}
	out := make([][]byte, 0, min(n, m))
	switch {
	case m <= n:
		out = append(out, distinct...)
	case n == 1:
		out = append(out, distinct[m/2])
	default:
		// Ranks i*(m-1)/(n-1) run from 0 to m-1 and strictly increase, as m > n.
		for i := range n {
			out = append(out, distinct[i*(m-1)/(n-1)])
		}
	}
	for i := range out {
		out[i] = slices.Clone(out[i])
	}
	return out
}
