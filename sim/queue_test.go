package sim

import (
	"testing"
	"time"
)

func TestEventQueueOrdersByTimeThenSequence(t *testing.T) {
	tests := []struct {
		name  string
		times []time.Duration
		want  []int // indices into times, in pop order
	}{
		{"sorted", []time.Duration{1, 2, 3}, []int{0, 1, 2}},
		{"reversed", []time.Duration{3, 2, 1}, []int{2, 1, 0}},
		{"ties keep insertion order", []time.Duration{5, 5, 1, 5}, []int{2, 0, 1, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q eventQueue
			for i, at := range tt.times {
				q.push(event{at: at, node: i})
			}
			for k, want := range tt.want {
				e := q.pop()
				if e.node != want {
					t.Fatalf("pop %d: got event %d, want %d", k, e.node, want)
				}
			}
			if q.Len() != 0 {
				t.Fatalf("queue has %d events left", q.Len())
			}
		})
	}
}
