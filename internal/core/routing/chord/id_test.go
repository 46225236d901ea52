package chord

import (
	"testing"

	"github.com/kuradb/kura/internal/core/ring"
)

func TestIntervals(t *testing.T) {
	const top = ^ID(0)
	tests := []struct {
		x, a, b            ID
		wantOpen, wantHalf bool
	}{
		{5, 1, 10, true, true},
		{10, 1, 10, false, true},
		{1, 1, 10, false, false},
		{12, 10, 3, true, true}, // wraps past zero
		{0, 10, 3, true, true},
		{3, 10, 3, false, true},
		{5, 10, 3, false, false},
		{top, top - 1, 0, true, true},
		{7, 7, 7, false, true}, // (a, a] is the whole circle, (a, a) all but a
		{8, 7, 7, true, true},
	}
	for _, tt := range tests {
		if got := inOpen(tt.x, tt.a, tt.b); got != tt.wantOpen {
			t.Errorf("inOpen(%d, %d, %d) = %v", tt.x, tt.a, tt.b, got)
		}
		if got := inHalfOpen(tt.x, tt.a, tt.b); got != tt.wantHalf {
			t.Errorf("inHalfOpen(%d, %d, %d) = %v", tt.x, tt.a, tt.b, got)
		}
	}
}

func TestFingerStart(t *testing.T) {
	tests := []struct {
		id        ID
		i, bits   int
		wantStart ID
	}{
		{1, 3, 4, 9},
		{10, 3, 4, 2}, // 18 mod 16
		{^ID(0), 0, 64, 0},
		{5, 63, 64, 5 + 1<<63},
	}
	for _, tt := range tests {
		if got := fingerStart(tt.id, tt.i, tt.bits); got != tt.wantStart {
			t.Errorf("fingerStart(%d, %d, %d) = %d, want %d", tt.id, tt.i, tt.bits, got, tt.wantStart)
		}
	}
}

// TestIDsMatchRing: the DHT places nodes and keys where the store's ring does, so both
// name the same owner.
func TestIDsMatchRing(t *testing.T) {
	if got, want := NodeID("tokyo-1"), ID(ring.TokensFor("tokyo-1", 1)[0]); got != want {
		t.Errorf("NodeID = %d, ring token %d", got, want)
	}
	if got, want := KeyID([]byte("foo_0")), ID(ring.HashPartitioner().Token([]byte("foo_0"))); got != want {
		t.Errorf("KeyID = %d, ring token %d", got, want)
	}
	if NodeID("a") == NodeID("b") {
		t.Error("two names share an identifier")
	}
}
