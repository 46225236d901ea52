package node

import (
	"testing"
	"time"
)

// TestWalkBudget: a walk runs at every call while it takes under walkShare of the time
// since it last started; a slower one is skipped until took / walkShare has passed.
func TestWalkBudget(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	tests := []struct {
		name string
		took time.Duration // the first walk's
		at   time.Duration // the next call, after the first walk started
		want bool
	}{
		{"a walk that took no time, at once", 0, 0, true},
		{"a quick walk, next interval", 10 * time.Millisecond, 2 * time.Second, true},
		{"a walk of 100 ms, 10 s on", 100 * time.Millisecond, 10 * time.Second, true},
		{"a walk of 100 ms, 9.9 s on", 100 * time.Millisecond, 9900 * time.Millisecond, false},
		{"a walk of 3 s, 10 s on", 3 * time.Second, 10 * time.Second, false},
		{"a walk of 3 s, 300 s on", 3 * time.Second, 300 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b walkBudget
			if !b.due(t0) {
				t.Fatal("the first walk is not due")
			}
			b.spent(t0, tt.took)
			if got := b.due(t0.Add(tt.at)); got != tt.want {
				t.Errorf("due %v after a walk of %v: %v, want %v", tt.at, tt.took, got, tt.want)
			}
		})
	}
}
