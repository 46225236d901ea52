package ring

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/core/element"
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

func TestGroupedPartitionerPinned(t *testing.T) {
	// Data placement depends on these values; a change would strand stored keys.
	tests := []struct {
		key  []byte
		want Token
	}{
		{[]byte("kura"), 0x740914fe7559317}, // no tag: the hash token
		{[]byte("{user42}:cart"), 0x934164743b6a6a0c},
		{[]byte("{}{a}"), 0xd3d9864141518c2e},
		{[]byte("\x00\x01\x0d{user42}:carthqty"), 0x934164743b6a6a0c}, // a field of {user42}:cart
	}
	for _, tt := range tests {
		if got := GroupedPartitioner().Token(tt.key); got != tt.want {
			t.Errorf("Token(%q) = %#x, want %#x", tt.key, got, tt.want)
		}
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
	// Element records take their collection key's token, tag rule included; a key that
	// only starts like one is an ordinary key.
	elements := []struct {
		key        []byte
		collection string
	}{
		{element.Key([]byte("cart"), element.HashField, []byte("qty")), "cart"},
		{element.Key([]byte("{user42}:cart"), element.SetAdd, []byte("m")), "user42"},
		{element.Key([]byte(""), element.Reset, nil), ""},
		{element.Key([]byte("{}{a}"), element.ListItem, []byte("{b}")), "{}{a}"},
		{[]byte("\x00\x01\x09cart"), "\x00\x01\x09cart"},                   // shorter than its length
		{[]byte("\x00\x01\x03{a}h{b}"), "a"},                               // an element of "{a}"
		{element.Key([]byte("\x00\x01\x000"), element.HashField, nil), ""}, // its collection is an element key of ""
	}
	for _, tt := range elements {
		got, want := grouped.Token(tt.key), hash.Token([]byte(tt.collection))
		if got != want {
			t.Errorf("grouped Token(%q) = %#x, want hash Token(%q) = %#x", tt.key, got, tt.collection, want)
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

// FuzzGroupedElementsShareTheirCollectionsToken checks, for any collection key, kind and
// suffix, that an element record's token under the grouped partitioner is its
// collection key's.
func FuzzGroupedElementsShareTheirCollectionsToken(f *testing.F) {
	f.Add([]byte("{user42}:cart"), byte(element.HashField), []byte("qty"))
	f.Add([]byte("plain"), byte(element.SetAdd), []byte("{x}"))
	grouped := GroupedPartitioner()
	f.Fuzz(func(t *testing.T, collection []byte, kind byte, suffix []byte) {
		key := element.Key(collection, element.Kind(kind), suffix)
		if got, want := grouped.Token(key), grouped.Token(collection); got != want {
			t.Fatalf("token of %q = %#x, its collection %q's = %#x", key, got, collection, want)
		}
	})
}
