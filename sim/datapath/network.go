package datapath

import (
	"bytes"
	"container/heap"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing/synctest"
	"time"

	"github.com/kuradb/kura/sim"
	"github.com/kuradb/kura/transport"
)

// network carries the data path's messages between simulated nodes in virtual time. Its
// links are a sim.Network (latency, jitter, loss, bandwidth, partitions, byte counters
// per DC pair and kind). One driver goroutine owns delivery: it waits until every
// goroutine of the bubble is blocked, puts the messages sent meanwhile on the links in a
// fixed order (so the links' randomness and queues do not depend on which goroutine ran
// first), sleeps until the next arrival and delivers it. A request is served by the
// receiver's handler inline, which takes no virtual time.
type network struct {
	links *sim.Network
	start time.Time
	trace func(string)

	mu      sync.Mutex
	nodes   map[string]*endpoint
	outbox  []*message // sent since the last flush, in no particular order
	queue   arrivals
	seq     uint64
	calls   map[uint64]chan reply
	callSeq uint64
	closed  bool
	wake    chan struct{}
	// lost names the message kinds whose requests are lost on the way (dropKinds).
	lost map[string]bool
}

// endpoint is one node on the network.
type endpoint struct {
	peer    transport.Peer
	handler transport.Handler
	up      bool
	nicFree time.Duration
}

// message is a request or its response in flight.
type message struct {
	from, to string
	kind     transport.Kind
	payload  []byte
	call     uint64 // pairs a response with its request
	response bool
	err      string // a handler's error, carried by a response
	// deadline is when the caller stops waiting for the response (0: never). The driver
	// ends the call then, in its ordered queue: two deadlines at one instant must not
	// race each other as two timers would.
	deadline time.Duration
	expiry   bool // not a message: the deadline of call
	at       time.Duration
	seq      uint64
}

type reply struct {
	payload []byte
	err     error
}

// arrivals is a min-heap of messages by arrival time, then by the order they were put on
// the links.
type arrivals []*message

func (a arrivals) Len() int { return len(a) }
func (a arrivals) Less(i, j int) bool {
	if a[i].at != a[j].at {
		return a[i].at < a[j].at
	}
	return a[i].seq < a[j].seq
}
func (a arrivals) Swap(i, j int)  { a[i], a[j] = a[j], a[i] }
func (a *arrivals) Push(x any)    { *a = append(*a, x.(*message)) }
func (a *arrivals) Pop() (x any)  { old := *a; x = old[len(old)-1]; *a = old[:len(old)-1]; return x }
func (a arrivals) peek() *message { return a[0] }

func newNetwork(links *sim.Network, trace func(string)) *network {
	return &network{
		links: links,
		start: time.Now(),
		trace: trace,
		nodes: map[string]*endpoint{},
		calls: map[uint64]chan reply{},
		wake:  make(chan struct{}, 1),
	}
}

// now is the virtual time since the network started.
func (n *network) now() time.Duration { return time.Since(n.start) }

// attach puts a node on the network, or brings it back up with a new handler.
func (n *network) attach(peer transport.Peer, handler transport.Handler) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if e, ok := n.nodes[peer.ID]; ok {
		e.handler, e.up = handler, true
		return
	}
	n.nodes[peer.ID] = &endpoint{peer: peer, handler: handler, up: true}
}

// detach takes a node off the network: what is sent to it is lost, what it sends fails.
func (n *network) detach(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if e, ok := n.nodes[id]; ok {
		e.up = false
	}
}

// poke wakes the driver; n.mu is held.
func (n *network) poke() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// caller is one node's side of the network: what its Remote replicas call through.
type caller struct {
	net  *network
	self string
}

// Call sends a request and waits for its response, or for ctx to end. A deadline is kept
// by the driver, in virtual time, so ctx.Done is only watched when ctx has none.
func (c caller) Call(ctx context.Context, to transport.Peer, kind transport.Kind, payload []byte) ([]byte, error) {
	n := c.net
	n.mu.Lock()
	if e := n.nodes[c.self]; n.closed || e == nil || !e.up {
		n.mu.Unlock()
		return nil, transport.ErrClosed
	}
	n.callSeq++
	id := n.callSeq
	ch := make(chan reply, 1)
	n.calls[id] = ch
	m := &message{from: c.self, to: to.ID, kind: kind, payload: bytes.Clone(payload), call: id}
	deadline, hasDeadline := ctx.Deadline()
	if hasDeadline {
		m.deadline = max(deadline.Sub(n.start), n.now())
	}
	n.outbox = append(n.outbox, m)
	n.poke()
	n.mu.Unlock()
	if hasDeadline {
		r := <-ch // the driver answers by the deadline at the latest
		return r.payload, r.err
	}
	select {
	case r := <-ch:
		return r.payload, r.err
	case <-ctx.Done():
		n.mu.Lock()
		delete(n.calls, id)
		n.mu.Unlock()
		return nil, ctx.Err()
	}
}

// run is the driver; it returns when stop is closed.
func (n *network) run(stop <-chan struct{}) {
	for {
		synctest.Wait()
		n.mu.Lock()
		n.flush()
		var next *message
		if n.queue.Len() > 0 {
			next = n.queue.peek()
		}
		n.mu.Unlock()
		if next == nil {
			select {
			case <-n.wake:
			case <-stop:
				return
			}
			continue
		}
		if wait := next.at - n.now(); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-n.wake:
				timer.Stop()
				continue
			case <-stop:
				timer.Stop()
				return
			}
		}
		n.mu.Lock()
		m := heap.Pop(&n.queue).(*message)
		n.mu.Unlock()
		n.deliver(m)
	}
}

// flush puts the messages sent since the last flush on the links, in an order that does
// not depend on goroutine scheduling; n.mu is held.
func (n *network) flush() {
	slices.SortFunc(n.outbox, func(a, b *message) int {
		if c := strings.Compare(a.from, b.from); c != 0 {
			return c
		}
		if c := strings.Compare(a.to, b.to); c != 0 {
			return c
		}
		if a.kind != b.kind {
			return int(a.kind) - int(b.kind)
		}
		if a.response != b.response {
			if a.response {
				return 1
			}
			return -1
		}
		return bytes.Compare(a.payload, b.payload)
	})
	now := n.now()
	for _, m := range n.outbox {
		from, to := n.nodes[m.from], n.nodes[m.to]
		if to == nil {
			n.fail(m, fmt.Errorf("node %s is not on the network", m.to))
			continue
		}
		arrive, dropped, err := n.links.Transmit(now, from.peer.DC, to.peer.DC, m.kind.String(), len(m.payload)+len(m.err), &from.nicFree)
		if err != nil {
			n.fail(m, err)
			continue
		}
		if m.deadline > 0 {
			n.seq++
			heap.Push(&n.queue, &message{from: m.from, to: m.to, kind: m.kind, call: m.call, expiry: true, at: m.deadline, seq: n.seq})
		}
		if dropped || (!m.response && n.lost[m.kind.String()]) {
			n.tracef(now, "drop", m)
			continue
		}
		n.seq++
		m.at, m.seq = arrive, n.seq
		heap.Push(&n.queue, m)
	}
	n.outbox = n.outbox[:0]
}

// fail answers a request that cannot be sent with err at once; n.mu is held.
func (n *network) fail(m *message, err error) {
	if ch, ok := n.calls[m.call]; ok && !m.response {
		delete(n.calls, m.call)
		ch <- reply{err: err}
	}
}

// deliver hands a message to its receiver: a response to the waiting call, a request to
// the node's handler, whose answer goes back on the network.
func (n *network) deliver(m *message) {
	n.mu.Lock()
	if m.expiry {
		if ch, ok := n.calls[m.call]; ok {
			delete(n.calls, m.call)
			n.tracef(m.at, "expire", m)
			ch <- reply{err: context.DeadlineExceeded}
		}
		n.mu.Unlock()
		return
	}
	to := n.nodes[m.to]
	if !to.up {
		n.tracef(m.at, "lost", m)
		n.mu.Unlock()
		return
	}
	n.tracef(m.at, "deliver", m)
	if m.response {
		if ch, ok := n.calls[m.call]; ok {
			delete(n.calls, m.call)
			var err error
			if m.err != "" {
				err = &transport.RemoteError{Msg: m.err}
			}
			ch <- reply{payload: m.payload, err: err}
		}
		n.mu.Unlock()
		return
	}
	handler, from := to.handler, n.nodes[m.from].peer
	n.mu.Unlock()
	payload, err := handler.Handle(context.Background(), from, m.kind, m.payload)
	resp := &message{from: m.to, to: m.from, kind: m.kind, payload: payload, call: m.call, response: true}
	if err != nil {
		resp.payload, resp.err = nil, err.Error()
	}
	n.mu.Lock()
	n.outbox = append(n.outbox, resp)
	n.mu.Unlock()
}

// dropKinds makes every request of the named kinds sent from now on lost; none delivers
// them all again.
func (n *network) dropKinds(kinds []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lost = map[string]bool{}
	for _, k := range kinds {
		n.lost[k] = true
	}
}

// close fails every call in flight and every later one.
func (n *network) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	for id, ch := range n.calls {
		delete(n.calls, id)
		ch <- reply{err: transport.ErrClosed}
	}
}

// tracef reports one message's fate; n.mu is held.
func (n *network) tracef(at time.Duration, what string, m *message) {
	if n.trace == nil {
		return
	}
	dir := "request"
	switch {
	case m.response:
		dir = "response"
	case m.expiry:
		dir = "deadline"
	}
	n.trace(fmt.Sprintf("%v %s %s %s->%s %v %d bytes", at, what, dir, m.from, m.to, m.kind, len(m.payload)))
}
