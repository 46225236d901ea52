package ring

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"sort"
)

// SplitPartitioner is the ordered partitioner balanced by split keys: sorted, distinct
// keys (usually quantiles of a key sample, see schema.SplitsFromSample) that cut the key
// space into len(splits)+1 buckets: keys below splits[0], [splits[i], splits[i+1]) for
// each i, and keys at or after the last split. Every bucket gets an equal share of the
// token space, and inside its share a key's token is interpolated from its bytes after
// the prefix the bucket's two bounds share. Keys thus spread over the ring as the sample
// did, so nodes with uniform tokens hold similar row counts, while order is kept weakly
// as with OrderedPartitioner: a < b implies Token(a) <= Token(b). Its name is "ordered":
// the splits are part of the keyspace's definition, not of the partitioner's name.
//
// With no splits it is OrderedPartitioner itself, so a keyspace without splits keeps the
// tokens its stored data was placed by. The caller keeps splits sorted and distinct
// (schema validates them) and does not modify them afterwards.
func SplitPartitioner(splits [][]byte) Partitioner {
	if len(splits) == 0 {
		return OrderedPartitioner()
	}
	// 2^64 / (n+1): the 128-bit dividend (1, 0) over n+1 >= 2 fits a 64-bit quotient.
	width, _ := bits.Div64(1, 0, uint64(len(splits))+1)
	return splitPartitioner{splits: splits, width: width}
}

type splitPartitioner struct {
	splits [][]byte
	width  uint64 // tokens per bucket
}

func (splitPartitioner) Name() string { return "ordered" }

func (p splitPartitioner) Token(key []byte) Token {
	// j is the number of splits <= key: the bucket's index.
	j := sort.Search(len(p.splits), func(i int) bool { return bytes.Compare(p.splits[i], key) > 0 })
	var lo, hi []byte // hi nil: the last bucket, unbounded above
	if j > 0 {
		lo = p.splits[j-1]
	}
	if j < len(p.splits) {
		hi = p.splits[j]
	}
	// The last bucket may end below 2^64 - 1 by up to n tokens (the division's
	// remainder); no bucket crosses into the next.
	return Token(uint64(j)*p.width + interpolate(key, lo, hi, p.width-1))
}

// interpolate returns key's place in [0, span] between lo (inclusive, nil: the empty
// key) and hi (exclusive, nil: above every key), for lo <= key < hi. Keys in the bucket
// share the bounds' common prefix, so the 8 bytes after it locate a key, and reading
// them as a big-endian number keeps order weakly (zero padding, truncation), which is
// all monotonicity needs.
func interpolate(key, lo, hi []byte, span uint64) uint64 {
	prefix := 0
	b := ^uint64(0)
	if hi != nil {
		prefix = commonPrefix(lo, hi)
		b = word(hi, prefix)
	}
	a, k := word(lo, prefix), word(key, prefix)
	if b <= a {
		// The bounds differ only past 8 bytes after their prefix (or by trailing zero
		// bytes): too narrow to tell keys apart, and it holds few.
		return 0
	}
	// lo <= key < hi gives a <= k <= b, so (k-a) * span / (b-a), in 128 bits, has a
	// product whose high word is below b-a (k-a <= b-a, span < 2^64): the quotient fits
	// and is at most span.
	high, low := bits.Mul64(k-a, span)
	q, _ := bits.Div64(high, low, b-a)
	return q
}

// word returns the 8 bytes of s from offset, big-endian, zero-padded.
func word(s []byte, offset int) uint64 {
	var w [8]byte
	if offset < len(s) {
		copy(w[:], s[offset:])
	}
	return binary.BigEndian.Uint64(w[:])
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
