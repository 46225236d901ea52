package sim

import (
	"math/rand/v2"
	"slices"
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

func TestEventQueueInterleavedPushPop(t *testing.T) {
	// Pushes and pops interleaved, as a run does, with many ties: the events
	// come out by time, ties in the order they were pushed, and the slots of
	// popped events are reused.
	rng := rand.New(rand.NewPCG(7, 0))
	var q eventQueue
	var want []event // what is queued, kept sorted by (at, seq)
	seq := uint64(0)
	for step := range 5000 {
		if rng.IntN(3) > 0 || len(want) == 0 {
			at := time.Duration(rng.IntN(50))
			q.push(event{at: at, node: step})
			seq++
			i, _ := slices.BinarySearchFunc(want, at, func(e event, at time.Duration) int {
				if e.at <= at {
					return -1
				}
				return 1
			})
			want = slices.Insert(want, i, event{at: at, seq: seq, node: step})
			continue
		}
		got := q.pop()
		if got.node != want[0].node || got.at != want[0].at || got.seq != want[0].seq {
			t.Fatalf("step %d: popped %+v, want %+v", step, got, want[0])
		}
		want = want[1:]
	}
	if q.Len() != len(want) || len(q.slab) != len(want)+len(q.free) {
		t.Fatalf("%d events queued, want %d; slab %d, free %d", q.Len(), len(want), len(q.slab), len(q.free))
	}
}
