package sim

import "time"

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

// eventKey is an event's place in the heap: its order, and the slot of the
// queue's slab that holds it. The heap moves these 24 bytes, not the event
// (over 100 bytes), and compares them without an interface call: at 10,000
// nodes the simulator queues and pops some 10⁸ events.
type eventKey struct {
	at   time.Duration
	seq  uint64
	slot int32
}

func (a eventKey) before(b eventKey) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// eventQueue is a min-heap of events by (at, seq): a total order, so the
// events come out in one order whatever the heap's shape.
type eventQueue struct {
	keys []eventKey
	// slab holds the queued events by slot; free lists the empty slots.
	slab []event
	free []int32
	seq  uint64
}

// Len is the number of queued events.
func (q *eventQueue) Len() int { return len(q.keys) }

// push schedules e, stamping it with the next sequence number.
func (q *eventQueue) push(e event) {
	q.seq++
	e.seq = q.seq
	var slot int32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
		q.slab[slot] = e
	} else {
		slot = int32(len(q.slab))
		q.slab = append(q.slab, e)
	}
	k := eventKey{at: e.at, seq: e.seq, slot: slot}
	// Sift up: move parents down into the hole until k fits.
	i := len(q.keys)
	q.keys = append(q.keys, k)
	for i > 0 {
		p := (i - 1) / 2
		if !k.before(q.keys[p]) {
			break
		}
		q.keys[i] = q.keys[p]
		i = p
	}
	q.keys[i] = k
}

// pop removes and returns the earliest event; the queue must not be empty.
func (q *eventQueue) pop() event {
	top := q.keys[0]
	e := q.slab[top.slot]
	q.slab[top.slot] = event{} // drop the message and closure for the collector
	q.free = append(q.free, top.slot)
	last := len(q.keys) - 1
	k := q.keys[last]
	q.keys = q.keys[:last]
	if last > 0 {
		// Sift down: move the earlier child up into the hole until k fits.
		i := 0
		for {
			c := 2*i + 1
			if c >= last {
				break
			}
			if c+1 < last && q.keys[c+1].before(q.keys[c]) {
				c++
			}
			if !q.keys[c].before(k) {
				break
			}
			q.keys[i] = q.keys[c]
			i = c
		}
		q.keys[i] = k
	}
	return e
}

// peekTime is the time of the earliest event; the queue must not be empty.
func (q *eventQueue) peekTime() time.Duration { return q.keys[0].at }
