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
// there is none. Nodes that are not on a ring stay silent to join requests, so a node
// that hears nothing for this long knows no ring exists among the nodes it knows.
const foundPatience = 2 * time.Second

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

// join tries to join the ring through the live nodes the directory knows. When none
// has answered for foundPatience, the node with the smallest id among them starts the
// ring alone, and the others join it on their next try. A restarted node joins the ring
// that exists, since its members answer.
func (r *dhtRuntime) join() {
	var known []chord.Peer
	smallest := true
	for _, node := range r.n.directory.Nodes() {
		if node.ID != r.n.cfg.ID && r.n.directory.Alive(node.ID) {
			known = append(known, peerOf(node))
			smallest = smallest && r.n.cfg.ID < node.ID
		}
	}
	if smallest && time.Since(r.started) > foundPatience {
		r.dht.Join()
		return
	}
	if len(known) == 0 {
		return // the heartbeat has not met anyone yet
	}
	// known is sorted by id, so the first bootstrap is the node that founds the ring when
	// there is none, or a member of the ring that exists.
	r.dht.Join(known...)
	r.joinAt = time.Now().Add(time.Second)
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
