package ring

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSplitPartitionerWithoutSplitsIsOrdered(t *testing.T) {
	// Stored data of keyspaces without splits was placed by OrderedPartitioner's tokens.
	for _, splits := range [][][]byte{nil, {}} {
		p := SplitPartitioner(splits)
		for _, key := range []string{"", "a", "user123", "\xff\xff\xff\xff\xff\xff\xff\xff\xff"} {
			if got, want := p.Token([]byte(key)), OrderedPartitioner().Token([]byte(key)); got != want {
				t.Errorf("splits %q: Token(%q) = %#x, want the ordered partitioner's %#x", splits, key, got, want)
			}
		}
		if p.Name() != "ordered" {
			t.Errorf("Name() = %q", p.Name())
		}
	}
}

func TestSplitPartitionerBuckets(t *testing.T) {
	splits := [][]byte{[]byte("b"), []byte("m"), []byte("t")}
	p := SplitPartitioner(splits)
	const width = 1 << 62 // four buckets
	tests := []struct {
		key      string
		min, max Token // the token lies in [min, max]
	}{
		{"", 0, 0},
		{"a", 0, width - 1},
		{"b", width, width},
		{"b\x00", width, width + width/2},
		{"g", width, 2*width - 1},
		{"m", 2 * width, 2 * width},
		{"s\xff\xff", 2*width + 1, 3*width - 1},
		{"t", 3 * width, 3 * width},
		{"zzz", 3 * width, 4*width - 1},
		{"\xff\xff\xff\xff\xff\xff\xff\xff", 4*width - 1, 4*width - 1},
	}
	for _, tt := range tests {
		if got := p.Token([]byte(tt.key)); got < tt.min || got > tt.max {
			t.Errorf("Token(%q) = %#x, want in [%#x, %#x]", tt.key, got, tt.min, tt.max)
		}
	}
}

// TestSplitPartitionerIsMonotone checks a < b => Token(a) <= Token(b) on random keys,
// split sets and keys built around the splits (their prefixes and extensions, where the
// interpolation's edge cases are), from a fixed seed.
func TestSplitPartitionerIsMonotone(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 4))
	alphabets := []string{"\x00\x01\xfe\xff", "0123456789", "abcdefghijklmnopqrstuvwxyz", ""}
	randomKey := func(alphabet string) []byte {
		key := make([]byte, rng.IntN(24))
		for i := range key {
			if alphabet == "" {
				key[i] = byte(rng.UintN(256))
			} else {
				key[i] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		return key
	}
	for round := range 200 {
		alphabet := alphabets[round%len(alphabets)]
		var splits [][]byte
		for range 1 + rng.IntN(40) {
			splits = append(splits, append([]byte("pre"), randomKey(alphabet)...))
		}
		slices.SortFunc(splits, bytes.Compare)
		splits = slices.CompactFunc(splits, bytes.Equal)
		p := SplitPartitioner(splits)
		var keys [][]byte
		for range 300 {
			keys = append(keys, append([]byte("pre"), randomKey(alphabet)...), randomKey(alphabet))
		}
		for _, s := range splits {
			keys = append(keys, s, s[:rng.IntN(len(s)+1)], append(slices.Clone(s), 0), append(slices.Clone(s), 0xff, 0xff))
		}
		slices.SortFunc(keys, bytes.Compare)
		for i := 1; i < len(keys); i++ {
			if a, b := p.Token(keys[i-1]), p.Token(keys[i]); a > b {
				t.Fatalf("round %d, splits %q: Token(%q) = %#x > Token(%q) = %#x", round, splits, keys[i-1], a, keys[i], b)
			}
		}
	}
}

// TestSplitPartitionerInterpolatesInsideABucket: a key halfway between a bucket's
// bounds (after their common prefix) gets the token halfway through the bucket's share.
func TestSplitPartitionerInterpolatesInsideABucket(t *testing.T) {
	p := SplitPartitioner([][]byte{[]byte("user-a"), []byte("user-c")})
	width := Token(1 << 64 / 3) // three buckets; bucket 1 starts at width
	got, want := p.Token([]byte("user-b")), width+width/2
	if diff := int64(got - want); diff < -16 || diff > 16 {
		t.Errorf("Token(user-b) = %#x, want about %#x, the middle of bucket 1", got, want)
	}
}
