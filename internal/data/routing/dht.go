package routing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/routing/chord"
)

// DHT is the Router of a node that routes with chord or mlchord. It serialises access to
// the node's chord core and connects it to the node runtime: the runtime passes in the
// messages it receives (Deliver) and a periodic Tick, and DHT hands the core's outgoing
// messages to send, outside its lock.
type DHT struct {
	clock func() time.Duration
	send  func([]chord.Envelope)

	mu      sync.Mutex
	node    *chord.Node
	waiters map[uint64]chan chord.LookupResult
}

// NewDHT wraps a chord node. clock returns the time since any fixed origin; send
// transmits messages to their peers (by Envelope.To.Name) and must not block for long.
func NewDHT(node *chord.Node, clock func() time.Duration, send func([]chord.Envelope)) *DHT {
	return &DHT{clock: clock, send: send, node: node, waiters: make(map[uint64]chan chord.LookupResult)}
}

// Name returns the protocol's name: chord, mlchord-paper or mlchord.
func (d *DHT) Name() string { return d.node.Protocol().String() }

// Lookup routes a lookup for token through the DHT and waits for the owner's answer.
func (d *DHT) Lookup(ctx context.Context, token ring.Token) (Route, error) {
	result := make(chan chord.LookupResult, 1)
	d.mu.Lock()
	seq, out := d.node.Lookup(d.clock(), chord.ID(token))
	d.waiters[seq] = result
	d.dispatch(out)
	d.mu.Unlock()
	d.send(out.Messages)
	select {
	case res := <-result:
		if res.Err != nil {
			if errors.Is(res.Err, chord.ErrNotJoined) {
				return Route{}, fmt.Errorf("%w: %w", ErrNoRing, res.Err)
			}
			return Route{}, fmt.Errorf("routing: %s lookup: %w", d.Name(), res.Err)
		}
		route := Route{Owner: res.Owner.Name, Hops: res.Hops, InterDCHops: res.InterDCHops}
		for _, p := range res.Successors {
			route.Successors = append(route.Successors, p.Name)
		}
		return route, nil
	case <-ctx.Done():
		d.mu.Lock()
		delete(d.waiters, seq)
		d.mu.Unlock()
		return Route{}, ctx.Err()
	}
}

// Joined reports whether the node is on the global ring, so lookups can succeed.
func (d *DHT) Joined() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.node.Joined()
}

// Neighbors returns the node's predecessor ("" when unknown) and successor list on the
// global ring, by name: what a status page or a failing test shows of the ring.
func (d *DHT) Neighbors() (pred string, succs []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range d.node.Successors(chord.LayerGlobal) {
		succs = append(succs, p.Name)
	}
	return d.node.Predecessor(chord.LayerGlobal).Name, succs
}

// Deliver hands the core a message received from another node.
func (d *DHT) Deliver(m chord.Message) {
	d.do(func(now time.Duration) chord.Output { return d.node.Step(now, m) })
}

// Tick lets the core run its timers; call it every 100 ms or so.
func (d *DHT) Tick() { d.do(d.node.Tick) }

// Join puts the node on the rings through the known peers (none: start a new ring).
func (d *DHT) Join(known ...chord.Peer) {
	d.do(func(now time.Duration) chord.Output { return d.node.Join(now, known...) })
}

// Leave departs gracefully; the DHT answers no lookup afterwards.
func (d *DHT) Leave() { d.do(d.node.Leave) }

func (d *DHT) do(step func(now time.Duration) chord.Output) {
	d.mu.Lock()
	out := step(d.clock())
	d.dispatch(out)
	d.mu.Unlock()
	d.send(out.Messages)
}

// dispatch hands finished lookups to their waiters; d.mu must be held.
func (d *DHT) dispatch(out chord.Output) {
	for _, res := range out.Lookups {
		if w, ok := d.waiters[res.Seq]; ok {
			delete(d.waiters, res.Seq)
			w <- res
		}
	}
}
