package sim

import (
	"container/heap"
	"time"
)

// eventKind says what an event does when its time comes.
type eventKind uint8

const (
	eventDeliver eventKind = iota
	eventTick
	eventCall
)

// event is one entry of the queue. Events at the same time run in the order
// they were scheduled (seq), which keeps runs deterministic.
type event struct {
	at   time.Duration
	seq  uint64
	kind eventKind
	// node is the index of the node for ticks and deliveries.
	node int
	// incarnation is the node's incarnation when the tick was scheduled; a
	// tick of an earlier incarnation (before a crash) is stale and skipped.
	incarnation uint64
	env         Envelope
	call        func()
}

// eventQueue is a min-heap of events by (at, seq).
type eventQueue struct {
	events []event
	seq    uint64
}

// Len implements heap.Interface.
func (q *eventQueue) Len() int { return len(q.events) }

// Less implements heap.Interface: earlier time first, then earlier sequence.
func (q *eventQueue) Less(i, j int) bool {
	a, b := &q.events[i], &q.events[j]
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// Swap implements heap.Interface.
func (q *eventQueue) Swap(i, j int) { q.events[i], q.events[j] = q.events[j], q.events[i] }

// Push implements heap.Interface; use push instead.
func (q *eventQueue) Push(x any) { q.events = append(q.events, x.(event)) }

// Pop implements heap.Interface; use pop instead.
func (q *eventQueue) Pop() any {
	last := len(q.events) - 1
	e := q.events[last]
	q.events[last] = event{}
	q.events = q.events[:last]
	return e
}

// push schedules e, stamping it with the next sequence number.
func (q *eventQueue) push(e event) {
	q.seq++
	e.seq = q.seq
	heap.Push(q, e)
}

// pop removes and returns the earliest event.
func (q *eventQueue) pop() event { return heap.Pop(q).(event) }

// peekTime is the time of the earliest event; the queue must not be empty.
func (q *eventQueue) peekTime() time.Duration { return q.events[0].at }
