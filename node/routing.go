package node

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/kuradb/kura/cluster"
	"github.com/kuradb/kura/routing"
	"github.com/kuradb/kura/routing/chord"
	"github.com/kuradb/kura/transport"
)

// kindChord carries the DHT cores' messages between nodes.
var kindChord = transport.RegisterKind("chord")

// dhtTick is how often the DHT core's timers run.
const dhtTick = 100 * time.Millisecond

// dhtRuntime drives the node's chord core when --routing is chord, mlchord-paper or
// mlchord: it delivers received messages, ticks the core, sends what it emits over the
// transport, and joins the rings once the directory knows other nodes.
type dhtRuntime struct {
	n       *Node
	dht     *routing.DHT
	started time.Time
	joinAt  time.Time
}

func newDHTRuntime(n *Node, protocol chord.Protocol) (*dhtRuntime, error) {
	seed := fnv.New64a()
	seed.Write([]byte(n.cfg.ID))
	core, err := chord.New(chord.Config{
		Self:           chord.Peer{ID: chord.NodeID(n.cfg.ID), Name: n.cfg.ID, DC: n.cfg.DC},
		Protocol:       protocol,
		RequestTimeout: n.cfg.DHTRequestTimeout,
		Rand:           rand.New(rand.NewPCG(seed.Sum64(), 1)),
	})
	if err != nil {
		return nil, err
	}
	r := &dhtRuntime{n: n, started: time.Now()}
	r.dht = routing.NewDHT(core, func() time.Duration { return time.Since(r.started) }, r.send)
	return r, nil
}

// foundPatience is how long a node tries to join an existing ring before it concludes
// there is none. Nodes that are not on a ring hold join requests without answering, so a
// node that hears nothing for this long knows no ring exists among the nodes it knows.
const foundPatience = 2 * time.Second

// foundFallback is how long the nodes wait for the designated founder (see founds) before
// the smallest live one founds the ring instead.
const foundFallback = 10 * foundPatience

// send transmits the core's messages; a message to a node the directory does not know
// (yet) is dropped, and the core's timeouts deal with it as with any loss.
func (r *dhtRuntime) send(envelopes []chord.Envelope) {
	for _, env := range envelopes {
		node, ok := r.n.directory.Node(env.To.Name)
		if !ok {
			continue
		}
		payload := env.Msg.Marshal()
		go func(peer transport.Peer) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := r.n.transport.Send(ctx, peer, kindChord, payload); err != nil {
				r.n.log.Debug("send chord message", "peer", peer.ID, "err", err)
			}
		}(transport.Peer{ID: node.ID, DC: node.DC, Addr: node.Addr})
	}
}

// tick runs the core's timers and, until the node is on the ring, (re)tries to join.
func (r *dhtRuntime) tick(context.Context) {
	if !r.dht.Joined() && time.Now().After(r.joinAt) {
		r.join()
	}
	r.dht.Tick()
}

// join tries to join the ring through the live nodes the directory knows, and founds it
// when founds says so. known is sorted by id, so the first bootstrap is the designated
// founder: it holds the join requests until it founds the ring, then answers them all at
// once. A restarted node joins the ring that exists, since its members answer.
func (r *dhtRuntime) join() {
	var known []chord.Peer
	for _, node := range r.n.directory.Nodes() {
		if node.ID != r.n.cfg.ID && r.n.directory.Alive(node.ID) {
			known = append(known, peerOf(node))
		}
	}
	if r.founds() {
		r.dht.Join()
		return
	}
	if len(known) == 0 {
		return // the heartbeat has not met anyone yet
	}
	r.dht.Join(known...)
	r.joinAt = time.Now().Add(time.Second)
}

// founds reports whether this node starts the ring alone: it has heard from no ring for
// foundPatience and has the smallest id of all the nodes the directory knows, alive or
// not. Two nodes that know the same nodes thus never both found a ring, which Chord could
// not merge, even when one of them misses the other's heartbeats. Only if the designated
// founder stays away for foundFallback does the smallest live node found the ring.
func (r *dhtRuntime) founds() bool {
	waited := time.Since(r.started)
	if waited <= foundPatience {
		return false
	}
	for _, node := range r.n.directory.Nodes() {
		if node.ID < r.n.cfg.ID && (waited <= foundFallback || r.n.directory.Alive(node.ID)) {
			return false
		}
	}
	return true
}

func peerOf(n cluster.Node) chord.Peer {
	return chord.Peer{ID: chord.NodeID(n.ID), Name: n.ID, DC: n.DC}
}

func (r *dhtRuntime) handle(payload []byte) error {
	m, err := chord.Unmarshal(payload)
	if err != nil {
		return fmt.Errorf("decode chord message: %w", err)
	}
	r.dht.Deliver(m)
	return nil
}
