package resp

import (
	"strings"
	"testing"
)

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true},
		{"*", "anything", true},
		{"user:*", "user:42", true},
		{"user:*", "users:42", false},
		{"h?llo", "hello", true},
		{"h?llo", "hllo", false},
		{"h*llo", "heeeello", true},
		{"h*llo", "hello!", false},
		{"h[ae]llo", "hallo", true},
		{"h[ae]llo", "hillo", false},
		{"h[^e]llo", "hallo", true},
		{"h[^e]llo", "hello", false},
		{"h[a-b]llo", "hbllo", true},
		{"h[b-a]llo", "hbllo", true}, // reversed range, as Redis reads it
		{"h[a-b]llo", "hcllo", false},
		{`h\*llo`, "h*llo", true},
		{`h\*llo`, "hello", false},
		{`[\]]`, "]", true},
		{"a*b*c", "a-b-b-c", true},
		{"a*b*c", "a-b-b-d", false},
		{"*a", "bbbbba", true},
		{"key with space*", "key with space and more", true},
		{"[abc", "b", true}, // an unterminated class runs to the end
		{"", "", true},
		{"", "x", false},
	}
	for _, tt := range tests {
		if got := matchGlob([]byte(tt.pattern), []byte(tt.s)); got != tt.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func TestMatchGlobIsNotExponential(t *testing.T) {
	pattern := []byte(strings.Repeat("*a", 30) + "b")
	s := []byte(strings.Repeat("a", 2000))
	if matchGlob(pattern, s) {
		t.Fatal("matched a string without b")
	}
}
