package ring

import (
	"fmt"
	"slices"
	"testing"
)

func TestTokensForPinned(t *testing.T) {
	// Every node, of every version, must derive the same tokens from the same id.
	want := []Token{0x83aee9f84e5537a2, 0xcf8f6e6245f06b28, 0x9440a79ea04e73b3}
	if got := TokensFor("node-1", 3); !slices.Equal(got, want) {
		t.Errorf("TokensFor(node-1, 3) = %#x, want %#x", got, want)
	}
}

func TestTokensFor(t *testing.T) {
	tests := []struct {
		name   string
		id     string
		vnodes int
		want   int
	}{
		{"none", "a", 0, 0},
		{"negative", "a", -3, 0},
		{"one", "a", 1, 1},
		{"many", "node-with-a-long-name", 256, 256},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TokensFor(tt.id, tt.vnodes)
			if len(got) != tt.want {
				t.Fatalf("TokensFor returned %d tokens, want %d", len(got), tt.want)
			}
			if again := TokensFor(tt.id, tt.vnodes); !slices.Equal(got, again) {
				t.Errorf("TokensFor is not deterministic: %v then %v", got, again)
			}
			if fewer := TokensFor(tt.id, tt.vnodes/2); !slices.Equal(fewer, got[:len(fewer)]) {
				t.Errorf("fewer vnodes should give a prefix of the tokens")
			}
		})
	}
}

func TestTokensForDistinctAcrossNodes(t *testing.T) {
	seen := make(map[Token]string)
	for i := range 100 {
		id := fmt.Sprintf("node-%d", i)
		for _, tok := range TokensFor(id, 16) {
			if other, dup := seen[tok]; dup {
				t.Fatalf("token %#x given to both %s and %s", tok, other, id)
			}
			seen[tok] = id
		}
	}
}

func TestEvenTokens(t *testing.T) {
	tests := []struct {
		n    int
		want []Token
	}{
		{0, nil},
		{-1, nil},
		{1, []Token{0}},
		{2, []Token{0, 1 << 63}},
		{3, []Token{0, 0x5555555555555555, 0xaaaaaaaaaaaaaaaa}},
		{4, []Token{0, 1 << 62, 1 << 63, 3 << 62}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			if got := EvenTokens(tt.n); !slices.Equal(got, tt.want) {
				t.Errorf("EvenTokens(%d) = %#x, want %#x", tt.n, got, tt.want)
			}
		})
	}
}
