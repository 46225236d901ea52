package resp

import (
	"sort"
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

// TestMatchGlobAsRedis: the keys each pattern matches, as redis-server 7.0.15 answered
// KEYS pattern with these keys set (recorded by running the patterns against it): a
// class is read as Redis's stringmatchlen reads it, '-' at its edges and ']' ending a
// range included.
func TestMatchGlobAsRedis(t *testing.T) {
	keys := []string{"a", "b", "c", "x", "-", "]", "[", "^", "_", "`", "\\", "*", "?", "a-", "ab", "ac", "a]", "a^", "a_", "a`", "a\\", "a[", "ab]", "a-]", "x-y", "xay", "xby", "xcy", "x]y", "x^y", "x-yz", "xa]y", "a-b", "abc", "aXc", "A", "B", "xy", "b-", "]a", "-a", "]]"}
	tests := []struct {
		pattern string
		want    []string
	}{
		{"[a-]*", []string{"*", "]", "^", "_", "`", "a"}},
		{"x[a-]y", []string{"xy"}},
		{"a[b-]", []string{"a]", "a^", "a_", "a`", "ab"}},
		{"a[-b]", []string{"a-", "ab"}},
		{"[-]", []string{"-"}},
		{"[]]", []string{}},
		{"[]a]", []string{}},
		{"[^]]", []string{"]]", "a]"}},
		{"[^a-]*", []string{"-", "?", "A", "B", "[", "\\", "b", "c", "x"}},
		{"a[\\-]", []string{"a-"}},
		{"[a-c]", []string{"a", "b", "c"}},
		{"[c-a]", []string{"a", "b", "c"}},
		{"[a-c", []string{"a", "b", "c"}},
		{"a[", []string{}},
		{"a[^", []string{"a-", "a[", "a\\", "a]", "a^", "a_", "a`", "ab", "ac"}},
		{"[\\]]", []string{"]"}},
		{"\\", []string{"\\"}},
		{"a\\", []string{"a\\"}},
		{"*[", []string{}},
		{"x[a-]*", []string{}},
		{"[]-a]", []string{}},
		{"[a-\\]]", []string{"]]", "a]"}},
		{"[a-]]", []string{"]", "^", "_", "`", "a"}},
		{"a[b-]]", []string{"a]", "a^", "a_", "a`", "ab"}},
		{"?", []string{"*", "-", "?", "A", "B", "[", "\\", "]", "^", "_", "`", "a", "b", "c", "x"}},
		{"[^-]", []string{"*", "?", "A", "B", "[", "\\", "]", "^", "_", "`", "a", "b", "c", "x"}},
		{"[!a]", []string{"a"}},
		{"*-*", []string{"-", "-a", "a-", "a-]", "a-b", "b-", "x-y", "x-yz"}},
		{"*]", []string{"]", "]]", "a-]", "a]", "ab]"}},
		{"[[]", []string{"["}},
		{"[a-b-c]", []string{"-", "a", "b", "c"}},
		{"[--a]", []string{"-", "?", "A", "B", "[", "\\", "]", "^", "_", "`", "a"}},
		{"[a-]", []string{"]", "^", "_", "`", "a"}},
		{"[^a-]", []string{"*", "-", "?", "A", "B", "[", "\\", "b", "c", "x"}},
		{"x[^a-]y", []string{}},
		{"[A-z]", []string{"A", "B", "[", "\\", "]", "^", "_", "`", "a", "b", "c", "x"}},
		{"[z-A]", []string{"A", "B", "[", "\\", "]", "^", "_", "`", "a", "b", "c", "x"}},
		{"a[-]", []string{"a-"}},
		{"[a-]x", []string{"]", "^", "_", "`", "a", "x"}},
		{"*[a-]", []string{"-a", "]", "]]", "]a", "^", "_", "`", "a", "a-]", "a]", "a^", "a_", "a`", "ab]"}},
		{"a*[b-]", []string{"a-]", "a-b", "a]", "a^", "a_", "a`", "ab", "ab]"}},
		{"[\\", []string{"\\"}},
		{"[^", []string{"*", "-", "?", "A", "B", "[", "\\", "]", "^", "_", "`", "a", "b", "c", "x"}},
		{"[", []string{}},
		{"*", []string{"*", "-", "-a", "?", "A", "B", "[", "\\", "]", "]]", "]a", "^", "_", "`", "a", "a-", "a-]", "a-b", "aXc", "a[", "a\\", "a]", "a^", "a_", "a`", "ab", "ab]", "abc", "ac", "b", "b-", "c", "x", "x-y", "x-yz", "x]y", "x^y", "xa]y", "xay", "xby", "xcy", "xy"}},
		{"**", []string{"*", "-", "-a", "?", "A", "B", "[", "\\", "]", "]]", "]a", "^", "_", "`", "a", "a-", "a-]", "a-b", "aXc", "a[", "a\\", "a]", "a^", "a_", "a`", "ab", "ab]", "abc", "ac", "b", "b-", "c", "x", "x-y", "x-yz", "x]y", "x^y", "xa]y", "xay", "xby", "xcy", "xy"}},
		{"a*", []string{"a", "a-", "a-]", "a-b", "aXc", "a[", "a\\", "a]", "a^", "a_", "a`", "ab", "ab]", "abc", "ac"}},
		{"*a", []string{"-a", "]a", "a"}},
		{"?*?", []string{"-a", "]]", "]a", "a-", "a-]", "a-b", "aXc", "a[", "a\\", "a]", "a^", "a_", "a`", "ab", "ab]", "abc", "ac", "b-", "x-y", "x-yz", "x]y", "x^y", "xa]y", "xay", "xby", "xcy", "xy"}},
		{"[^]", []string{"*", "-", "?", "A", "B", "[", "\\", "]", "^", "_", "`", "a", "b", "c", "x"}},
		{"[]", []string{}},
		{"[-a]*", []string{"-", "-a", "a", "a-", "a-]", "a-b", "aXc", "a[", "a\\", "a]", "a^", "a_", "a`", "ab", "ab]", "abc", "ac"}},
		{"a?", []string{"a-", "a[", "a\\", "a]", "a^", "a_", "a`", "ab", "ac"}},
		{"\\a", []string{"a"}},
		{"\\*", []string{"*"}},
		{"[*]", []string{"*"}},
		{"x[a-]y*", []string{"xy"}},
		{"x[a-]]y", []string{"x]y", "x^y", "xay"}},
	}
	for _, tt := range tests {
		var got []string
		for _, k := range keys {
			if matchGlob([]byte(tt.pattern), []byte(k)) {
				got = append(got, k)
			}
		}
		sort.Strings(got)
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%q matches %q, want %q", tt.pattern, got, tt.want)
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
