// Package simnet carries messages between simulated nodes in virtual time: each node gets
// a transport.Endpoint, as it would get a TCP transport, and the network delivers what
// the endpoints send over a sim.Network (latency, bandwidth, jitter and loss per DC pair,
// partitions between DCs) and its own cuts between single nodes, one way or both.
//
// It runs inside a testing/synctest bubble, whose clock stands still until every
// goroutine is blocked. One driver goroutine owns delivery: it waits until every goroutine
// of the bubble is blocked, puts the messages sent meanwhile on the links in a fixed
// order (so the links' randomness and queues do not depend on which goroutine ran
// first), sleeps until the next arrival and delivers it. A request is served by the
// receiver's handler on a goroutine of its own, which may call other nodes in turn; the
// driver lets it run until it blocks before it delivers the next message, so the nodes
// take their turns in the order the messages arrive. With the same seed, a run is the
// same message for message, as long as the nodes' own goroutines do not race.
package simnet

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing/synctest"
	"time"

	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/tools/sim"
)

// Network is the simulated network between nodes. Build it with New inside the bubble
// and start its driver with Run.
type Network struct {
	links *sim.Network
	start time.Time
	trace func(string)

	mu      sync.Mutex
	nodes   map[string]*Endpoint // by node id
	byAddr  map[string]*Endpoint
	outbox  []*message // sent since the last flush, in no particular order
	queue   arrivals
	seq     uint64
	calls   map[uint64]*pendingCall
	callSeq uint64
	closed  bool
	wake    chan struct{}
	// lost names the message kinds whose requests are lost on the way, "node:kind" for
	// those one node sends (DropKinds).
	lost map[string]bool
	// cut holds the directed node pairs whose messages are lost (Cut).
	cut map[[2]string]bool
	// refuseClosed answers a request that reaches a closed endpoint with
	// transport.ErrUnreachable (SetRefuseClosed).
	refuseClosed bool
}

// SetRefuseClosed says what becomes of a request that arrives at a closed endpoint:
// lost, so that its caller waits until its deadline, as when a machine loses power or
// its link (the default); or refused at once, as a live host refuses connections to a
// port whose process has stopped.
func (n *Network) SetRefuseClosed(refuse bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.refuseClosed = refuse
}

// Endpoint is one node's side of the network; it implements transport.Endpoint.
type Endpoint struct {
	net     *Network
	peer    transport.Peer
	handler transport.Handler
	// errorCode names the handler's errors (transport.Config.ErrorCode), nil none: the
	// simulated nodes speak the newest protocol, whose error frames carry a code.
	errorCode func(error) transport.ErrorCode
	wall      func() time.Time
	clocks    transport.ClockSampler
	stats     *transport.Stats
	// up is false once the endpoint is closed: what is sent to it is lost.
	up      bool
	nicFree time.Duration
	ctx     context.Context // ends when the endpoint closes; handlers run under it
	cancel  context.CancelFunc
	rtts    map[string]time.Duration
}

// message is a request, a one-way message or a response in flight.
type message struct {
	from, to string
	kind     transport.Kind
	payload  []byte
	call     uint64 // pairs a response with its request; 0 for a one-way message
	response bool
	err      string // a handler's error, carried by a response
	code     transport.ErrorCode
	coded    bool      // the answering node named its errors: code is err's (transport.RemoteError.Coded)
	wall     time.Time // the responder's wall clock when it answered
	// deadline is when the caller stops waiting for the response (0: never). The driver
	// ends the call then, in its ordered queue: two deadlines at one instant must not
	// race each other as two timers would.
	deadline time.Duration
	expiry   bool // not a message: the deadline of call
	closed   bool // with expiry: call ends because its caller closed
	at       time.Duration
	seq      uint64
}

// pendingCall is a request waiting for its response.
type pendingCall struct {
	request *message
	from    string
	to      string
	sent    time.Duration
	start   time.Time // the caller's wall clock when it sent the request
	ch      chan reply
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

// New builds a network over links. trace, when set, sees every message delivered, lost
// or dropped.
func New(links *sim.Network, trace func(string)) *Network {
	return &Network{
		links:  links,
		start:  time.Now(),
		trace:  trace,
		nodes:  map[string]*Endpoint{},
		byAddr: map[string]*Endpoint{},
		calls:  map[uint64]*pendingCall{},
		wake:   make(chan struct{}, 1),
		cut:    map[[2]string]bool{},
	}
}

// Partition blocks every message between DCs a and b, both ways, from the next flush
// on. It takes the network's lock: the driver reads the links as it flushes.
func (n *Network) Partition(a, b string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.links.Partition(a, b)
}

// Heal ends a Partition of DCs a and b.
func (n *Network) Heal(a, b string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.links.Heal(a, b)
}

// Counters returns a snapshot of the DC links' traffic counters, which the driver
// updates as it flushes.
func (n *Network) Counters() sim.Counters {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.links.Counters()
}

// now is the virtual time since the network started.
func (n *Network) now() time.Duration { return time.Since(n.start) }

// Listen puts a node on the network, as transport.Listen puts it on TCP: cfg.Self names
// it (an empty address, or one ending in ":0", becomes "sim:ID"), cfg.Handler serves its
// requests, cfg.Wall stamps its answers and cfg.Clocks takes samples of its peers'
// clocks. A node listened for before, now closed, comes back at the same address.
func (n *Network) Listen(cfg transport.Config) (transport.Endpoint, error) {
	if cfg.Self.ID == "" || cfg.Handler == nil {
		return nil, fmt.Errorf("simnet: a node needs an id and a handler")
	}
	peer := cfg.Self
	if peer.Addr == "" || strings.HasSuffix(peer.Addr, ":0") {
		peer.Addr = "sim:" + peer.ID
	}
	wall := cfg.Wall
	if wall == nil {
		wall = time.Now
	}
	stats := cfg.Stats
	if stats == nil {
		stats = transport.NewStats()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if old, ok := n.nodes[peer.ID]; ok && old.up {
		return nil, fmt.Errorf("simnet: node %s is already on the network", peer.ID)
	}
	if other, ok := n.byAddr[peer.Addr]; ok && other.up && other.peer.ID != peer.ID {
		return nil, fmt.Errorf("simnet: address %s is in use by %s", peer.Addr, other.peer.ID)
	}
	e := &Endpoint{net: n, peer: peer, handler: cfg.Handler, errorCode: cfg.ErrorCode, wall: wall, clocks: cfg.Clocks, stats: stats, up: true, rtts: map[string]time.Duration{}}
	if old, ok := n.nodes[peer.ID]; ok {
		e.nicFree = old.nicFree // the link's queue outlives the process
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	n.nodes[peer.ID] = e
	n.byAddr[peer.Addr] = e
	return e, nil
}

// Self implements transport.Endpoint.
func (e *Endpoint) Self() transport.Peer { return e.peer }

// Addr implements transport.Endpoint.
func (e *Endpoint) Addr() string { return e.peer.Addr }

// Stats implements transport.Endpoint: the counters given at Listen, which the network
// does not fill (its links count every DC pair's traffic).
func (e *Endpoint) Stats() *transport.Stats { return e.stats }

// RTT implements transport.Endpoint: the last round trip of a call to the peer.
func (e *Endpoint) RTT(peerID string) (time.Duration, bool) {
	e.net.mu.Lock()
	defer e.net.mu.Unlock()
	rtt, ok := e.rtts[peerID]
	return rtt, ok
}

// Close takes the node off the network: what is sent to it from now on is lost, and its
// pending calls fail with transport.ErrClosed.
func (e *Endpoint) Close() error {
	n := e.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if !e.up {
		return nil
	}
	e.up = false
	e.cancel()
	n.failCallsLocked(func(c *pendingCall) bool { return c.from == e.peer.ID })
	return nil
}

// failCallsLocked fails the pending calls that match with transport.ErrClosed. The
// driver ends them one at a time, in the order of their requests (messageOrder), as it
// ends calls at their deadlines: failed all at once, their callers would wake in an
// order of the scheduler's choosing. n.mu is held.
func (n *Network) failCallsLocked(match func(*pendingCall) bool) {
	var requests []*message
	for _, c := range n.calls {
		if match(c) {
			requests = append(requests, c.request)
		}
	}
	slices.SortFunc(requests, messageOrder)
	now := n.now()
	for _, m := range requests {
		n.seq++
		heap.Push(&n.queue, &message{from: m.from, to: m.to, kind: m.kind, call: m.call, expiry: true, closed: true, at: now, seq: n.seq})
	}
	n.poke()
}

// Call implements transport.Endpoint. A deadline is kept by the driver, in virtual time,
// so ctx.Done is only watched when ctx has none.
func (e *Endpoint) Call(ctx context.Context, to transport.Peer, kind transport.Kind, payload []byte) ([]byte, error) {
	n := e.net
	n.mu.Lock()
	if n.closed || !e.up {
		n.mu.Unlock()
		return nil, transport.ErrClosed
	}
	n.callSeq++
	id := n.callSeq
	ch := make(chan reply, 1)
	m := &message{from: e.peer.ID, to: n.resolveLocked(to), kind: kind, payload: bytes.Clone(payload), call: id}
	n.calls[id] = &pendingCall{request: m, from: e.peer.ID, to: to.ID, sent: n.now(), start: e.wall(), ch: ch}
	deadline, hasDeadline := ctx.Deadline()
	if hasDeadline {
		m.deadline = max(deadline.Sub(n.start), n.now())
	}
	n.outbox = append(n.outbox, m)
	n.poke()
	n.mu.Unlock()
	select {
	case r := <-ch:
		return r.payload, r.err
	case <-ctx.Done():
		if hasDeadline && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			r := <-ch // the driver answers by the deadline, in the order of the requests
			return r.payload, r.err
		}
		// Cancelled before its deadline, as a caller that gave up on a peer cancels a
		// real call: it ends now.
		n.mu.Lock()
		delete(n.calls, id)
		n.mu.Unlock()
		return nil, ctx.Err()
	}
}

// Send implements transport.Endpoint: the message is queued, and lost if the peer cannot
// take it when it arrives.
func (e *Endpoint) Send(_ context.Context, to transport.Peer, kind transport.Kind, payload []byte) error {
	n := e.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || !e.up {
		return transport.ErrClosed
	}
	n.outbox = append(n.outbox, &message{from: e.peer.ID, to: n.resolveLocked(to), kind: kind, payload: bytes.Clone(payload)})
	n.poke()
	return nil
}

// resolveLocked names the node a message to peer goes to: by id, or by address for a
// peer named only by where it listens (transport.AnyNodeAt); n.mu is held.
func (n *Network) resolveLocked(peer transport.Peer) string {
	if _, ok := n.nodes[peer.ID]; ok {
		return peer.ID
	}
	if e, ok := n.byAddr[peer.Addr]; ok {
		return e.peer.ID
	}
	return peer.ID
}

// poke wakes the driver; n.mu is held.
func (n *Network) poke() {
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// Run is the driver; it returns when stop is closed.
func (n *Network) Run(stop <-chan struct{}) {
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
func (n *Network) flush() {
	slices.SortFunc(n.outbox, messageOrder)
	now := n.now()
	for _, m := range n.outbox {
		from, to := n.nodes[m.from], n.nodes[m.to]
		if to == nil {
			n.fail(m, fmt.Errorf("%w: node %s is not on the network", transport.ErrUnreachable, m.to))
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
		if dropped || n.cut[[2]string{m.from, m.to}] || (!m.response && (n.lost[m.kind.String()] || n.lost[m.from+":"+m.kind.String()])) {
			n.tracef(now, "drop", m)
			continue
		}
		n.seq++
		m.at, m.seq = arrive, n.seq
		heap.Push(&n.queue, m)
	}
	n.outbox = n.outbox[:0]
}

// messageOrder orders messages by what they are, not by when a goroutine sent them.
func messageOrder(a, b *message) int {
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
}

// fail answers a request that cannot be sent with err at once; n.mu is held.
func (n *Network) fail(m *message, err error) {
	if c, ok := n.calls[m.call]; ok && !m.response && m.call != 0 {
		delete(n.calls, m.call)
		c.ch <- reply{err: err}
	}
}

// deliver hands a message to its receiver: a response to the waiting call, a request to
// the node's handler, whose answer goes back on the network.
func (n *Network) deliver(m *message) {
	n.mu.Lock()
	if m.expiry {
		if c, ok := n.calls[m.call]; ok {
			delete(n.calls, m.call)
			if m.closed {
				n.tracef(m.at, "close", m)
				c.ch <- reply{err: transport.ErrClosed}
			} else {
				n.tracef(m.at, "expire", m)
				c.ch <- reply{err: context.DeadlineExceeded}
			}
		}
		n.mu.Unlock()
		return
	}
	to := n.nodes[m.to]
	if !to.up {
		if c, ok := n.calls[m.call]; ok && n.refuseClosed && !m.response && m.call != 0 {
			delete(n.calls, m.call)
			n.tracef(m.at, "refuse", m)
			c.ch <- reply{err: fmt.Errorf("%w: node %s is not running", transport.ErrUnreachable, m.to)}
		} else {
			n.tracef(m.at, "lost", m)
		}
		n.mu.Unlock()
		return
	}
	n.tracef(m.at, "deliver", m)
	if m.response {
		if c, ok := n.calls[m.call]; ok {
			delete(n.calls, m.call)
			var err error
			if m.err != "" {
				err = &transport.RemoteError{Code: m.code, Coded: m.coded, Msg: m.err}
			}
			rtt := n.now() - c.sent
			to.rtts[c.to] = rtt
			if to.clocks != nil {
				// The peer read its clock somewhere within the round trip: take the middle.
				to.clocks.Sample(c.to, m.wall, c.start.Add(rtt/2), rtt/2)
			}
			c.ch <- reply{payload: m.payload, err: err}
		}
		n.mu.Unlock()
		return
	}
	handler, errorCode, ctx, wall, from := to.handler, to.errorCode, to.ctx, to.wall, n.nodes[m.from].peer
	n.mu.Unlock()
	go func() {
		payload, err := handler.Handle(ctx, from, m.kind, m.payload)
		if m.call == 0 {
			return // one-way: nobody waits for the answer
		}
		resp := &message{from: m.to, to: m.from, kind: m.kind, payload: payload, call: m.call, response: true, wall: wall()}
		if err != nil {
			resp.payload, resp.err = nil, err.Error()
			if errorCode != nil {
				resp.code, resp.coded = errorCode(err), true
			}
		}
		n.mu.Lock()
		n.outbox = append(n.outbox, resp)
		n.poke()
		n.mu.Unlock()
	}()
	// Let the handler run until it answers or blocks, before anything else arrives: the
	// nodes take their turns in the order their messages arrive.
	synctest.Wait()
}

// DropKinds makes every request of the named kinds sent from now on lost, or with a kind
// written "node:kind", those node sends (a coordinator whose round stops between two
// phases, as its replicas see it); none delivers them all again.
func (n *Network) DropKinds(kinds []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lost = map[string]bool{}
	for _, k := range kinds {
		n.lost[k] = true
	}
}

// Cut loses every message from node a to node b from now on (one way: b still reaches
// a); Mend lets them through again.
func (n *Network) Cut(a, b string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[[2]string{a, b}] = true
}

// Mend ends a Cut from a to b.
func (n *Network) Mend(a, b string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.cut, [2]string{a, b})
}

// MendAll ends every Cut.
func (n *Network) MendAll() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.cut)
}

// Close fails every call in flight and every later one.
func (n *Network) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	// The driver has stopped: fail what is left at once.
	for id, c := range n.calls {
		delete(n.calls, id)
		c.ch <- reply{err: transport.ErrClosed}
	}
	for _, e := range n.nodes {
		e.cancel()
	}
}

// tracef reports one message's fate; n.mu is held.
func (n *Network) tracef(at time.Duration, what string, m *message) {
	if n.trace == nil {
		return
	}
	dir := "request"
	switch {
	case m.response:
		dir = "response"
	case m.expiry:
		dir = "deadline"
	case m.call == 0:
		dir = "oneway"
	}
	n.trace(fmt.Sprintf("%v %s %s %s->%s %v %d bytes", at, what, dir, m.from, m.to, m.kind, len(m.payload)))
}
