package ring

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestHashPartitionerPinned(t *testing.T) {
	// Data placement depends on these values; a change would strand stored keys.
	tests := []struct {
		key  string
		want Token
	}{
		{"", 0xef46db3751d8e999}, // the published xxhash64 of the empty input
		{"kura", 0x740914fe7559317},
	}
	for _, tt := range tests {
		if got := HashPartitioner().Token([]byte(tt.key)); got != tt.want {
			t.Errorf("Token(%q) = %#x, want %#x", tt.key, got, tt.want)
		}
	}
}

func TestHashPartitionerSpread(t *testing.T) {
	const keys = 10_000
	r := mustRing(t, vnodeMembers(10, 16, "a")...)
	p := HashPartitioner()
	counts := make(map[string]int)
	for i := range keys {
		r.Walk(p.Token(fmt.Appendf(nil, "key-%d", i)), func(m Member) bool {
			counts[m.ID]++
			return false
		})
	}
	for _, m := range r.Members() {
		if share := float64(counts[m.ID]) / keys; share < 0.05 || share > 0.15 {
			t.Errorf("member %s got %.1f%% of keys, want 5%%..15%%", m.ID, 100*share)
		}
	}
}

func TestOrderedPartitionerPreservesOrder(t *testing.T) {
	// Each pair is in ascending key order and differs within the first 8 bytes.
	pairs := [][2]string{
		{"", "a"},
		{"a", "b"},
		{"\x00", "\x01"},
		{"apple", "apricot"},
		{"abcdefgh9999", "abcdefgi"},
		{"zzzzzzzz", "zzzzzzz{"},
		{"\x7f", "\x80"},
		{"user:041", "user:042"},
	}
	p := OrderedPartitioner()
	for _, pair := range pairs {
		lo, hi := []byte(pair[0]), []byte(pair[1])
		if bytes.Compare(lo, hi) >= 0 {
			t.Fatalf("bad test pair %q: not ascending", pair)
		}
		if p.Token(lo) >= p.Token(hi) {
			t.Errorf("Token(%q) = %#x >= Token(%q) = %#x", lo, p.Token(lo), hi, p.Token(hi))
		}
	}
}

func TestOrderedPartitionerTokens(t *testing.T) {
	tests := []struct {
		name string
		key  string
		want Token
	}{
		{"first byte is the top byte", "\x01", 1 << 56},
		{"short key is zero-padded", "a", 0x61 << 56},
		{"trailing zero bytes change nothing", "a\x00\x00", 0x61 << 56},
		{"bytes past the eighth are ignored", "abcdefgh-anything", 0x6162636465666768},
		{"empty key", "", 0},
	}
	p := OrderedPartitioner()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Token([]byte(tt.key)); got != tt.want {
				t.Errorf("Token(%q) = %#x, want %#x", tt.key, got, tt.want)
			}
		})
	}
}

func TestPartitionerByName(t *testing.T) {
	tests := []struct {
		name    string
		wantErr error
	}{
		{"hash", nil},
		{"grouped", nil},
		{"ordered", nil},
		{"Hash", ErrUnknownPartitioner},
		{"", ErrUnknownPartitioner},
		{"random", ErrUnknownPartitioner},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := PartitionerByName(tt.name)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("PartitionerByName(%q) error = %v, want %v", tt.name, err, tt.wantErr)
			}
			if err == nil && p.Name() != tt.name {
				t.Errorf("PartitionerByName(%q).Name() = %q", tt.name, p.Name())
			}
		})
	}
}

func TestHashTag(t *testing.T) {
	// Redis Cluster's keyHashSlot cases: the first '{', the first '}' after it, and at
	// least one byte between them; otherwise the whole key.
	tests := []struct {
		key, want string
	}{
		{"", ""},
		{"user42", "user42"},
		{"{user42}:cart", "user42"},
		{"{user42}:profile", "user42"},
		{"cart:{user42}", "user42"},
		{"a{b}c{d}", "b"},
		{"{a}{b}", "a"},
		{"{}{a}", "{}{a}"},     // empty first tag: the whole key, not "a"
		{"{}", "{}"},           // likewise
		{"a{b", "a{b"},         // no '}' after the '{'
		{"a}b{c", "a}b{c"},     // a '}' before the first '{' does not count
		{"x{{y}}", "{y"},       // the tag runs from the first '{' to the first '}'
		{"x{y}}z", "y"},        // and stops at the first '}'
		{"\x00{\xff}", "\xff"}, // bytes, not runes
	}
	for _, tt := range tests {
		if got := string(HashTag([]byte(tt.key))); got != tt.want {
			t.Errorf("HashTag(%q) = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestGroupedPartitionerTokens(t *testing.T) {
	hash, grouped := HashPartitioner(), GroupedPartitioner()
	tests := []struct {
		key    string
		sameAs string // the key whose hash token the grouped token must equal
	}{
		{"", ""},
		{"kura", "kura"}, // no tag: placed exactly as under hash
		{"user:42", "user:42"},
		{"{}{a}", "{}{a}"},
		{"a{b", "a{b"},
		{"{user42}:cart", "user42"},
		{"cart:{user42}", "user42"},
		{"{user42}", "user42"},
	}
	for _, tt := range tests {
		got, want := grouped.Token([]byte(tt.key)), hash.Token([]byte(tt.sameAs))
		if got != want {
			t.Errorf("grouped Token(%q) = %#x, want hash Token(%q) = %#x", tt.key, got, tt.sameAs, want)
		}
	}
	if grouped.Token([]byte("{user42}:cart")) == hash.Token([]byte("{user42}:cart")) {
		t.Errorf("a tagged key's grouped token equals its hash token: the tag is ignored")
	}
}

func TestGroupedPartitionerSharesReplicaSets(t *testing.T) {
	r := mustRing(t, vnodeMembers(12, 8, "a", "b", "c")...)
	p := r.Placement(Network(map[string]int{"a": 2, "b": 1, "c": 1}))
	grouped := GroupedPartitioner()
	distinct := map[string]bool{}
	for tag := range 20 {
		first := ids(p.ReplicasFor(grouped.Token(fmt.Appendf(nil, "{user%d}:cart", tag))))
		for _, suffix := range []string{"profile", "session", "x", ""} {
			key := fmt.Appendf(nil, "{user%d}:%s", tag, suffix)
			if got := ids(p.ReplicasFor(grouped.Token(key))); !slices.Equal(got, first) {
				t.Errorf("%q has replicas %v, want those of its tag's cart %v", key, got, first)
			}
		}
		distinct[strings.Join(first, ",")] = true
	}
	// The tags themselves still spread: a partitioner that put every key on one
	// replica set would pass the loop above.
	if len(distinct) < 5 {
		t.Errorf("20 tags landed on %d replica sets, want them spread over at least 5", len(distinct))
	}
}
