package cli

import "testing"

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"listen", "listen", 0}, {"listn", "listen", 1}, {"lsten", "listen", 1},
		{"seeds", "seed", 1}, {"kitten", "sitting", 3}, {"", "abc", 3},
	} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
