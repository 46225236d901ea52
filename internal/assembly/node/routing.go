package node

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/routing/chord"
	"github.com/kuradb/kura/internal/data/routing"
	"github.com/kuradb/kura/internal/io/transport"
)

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

// foundPatience is how long the founder tries to join an existing ring before it
// concludes there is none. Nodes that are not on a ring hold join requests without
// answering, so a founder that hears nothing for this long knows no ring exists among the
// nodes it knows.
const foundPatience = 2 * time.Second

// foundFallback is how long the nodes of a topology wait for its designated founder (see
// founder) before the smallest live one founds the ring instead.
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
			if err := r.n.transport.Send(ctx, peer, transport.KindChord, payload); err != nil {
				r.n.log.Debug("send chord message", "peer", peer.ID, "err", err)
			}
		}(transport.Peer{ID: node.ID, DC: node.DC, Addr: node.Addr})
	}
}

// tick runs the core's timers and, while the node is on no ring or alone on one, (re)tries
// to join. A node is alone on its ring when it lost every successor and its predecessor,
// as when its links stalled for longer than the request timeout and its neighbours took
// it for failed: nobody will contact it again, so it joins anew through the nodes its
// directory knows, and the ring's answer reconnects it.
func (r *dhtRuntime) tick(context.Context) {
	if time.Now().After(r.joinAt) && (!r.dht.Joined() || r.alone()) {
		r.join()
	}
	r.dht.Tick()
}

// alone reports whether the node has neither a successor nor a predecessor on the global
// ring: the founder before the first join, or a node cut off from its ring.
func (r *dhtRuntime) alone() bool {
	pred, succs := r.dht.Neighbors()
	return pred == "" && len(succs) == 0
}

// join tries to join the ring through the founder (see founder) and the live nodes the
// directory knows, by id; until the directory knows the founder, only after foundFallback.
// The founder holds the join requests until it founds the ring, then answers them all at
// once; a restarted node joins the ring that exists, since its members answer. The
// founder itself tries to join too, and founds the ring only when no ring has answered it
// for foundPatience.
func (r *dhtRuntime) join() {
	founder, known := r.founder()
	if founder == r.n.cfg.ID && !r.dht.Joined() && time.Since(r.started) > foundPatience {
		r.dht.Join()
		return
	}
	var via []chord.Peer
	if node, ok := r.n.directory.Node(founder); ok && founder != r.n.cfg.ID {
		via = append(via, peerOf(node))
	}
	for _, node := range r.n.directory.Nodes() {
		if node.ID != r.n.cfg.ID && node.ID != founder && r.n.directory.State(node.ID).Reachable() {
			via = append(via, peerOf(node))
		}
	}
	if len(via) == 0 || (!known && time.Since(r.started) <= foundFallback) {
		return // no one is known yet, or not the founder, which the others wait for
	}
	r.dht.Join(via...)
	r.joinAt = time.Now().Add(time.Second)
}

// founder returns the id of the one node that may start the ring alone, and whether it
// is known yet. Chord cannot merge two rings, so the choice must not depend on what a
// node's directory happens to hold while gossip is still filling it in:
//   - with a topology given up front (Config.Peers, the same on every node), the node
//     with the smallest id in it; only if no ring exists after foundFallback does the
//     smallest live one take its place;
//   - otherwise the cluster's first node, the one started with no seeds, which every
//     other node joins the cluster through: the node itself, or the node the directory
//     lists at a seed's address.
func (r *dhtRuntime) founder() (string, bool) {
	self := r.n.cfg.ID
	if len(r.n.cfg.Peers) > 0 {
		fallback := time.Since(r.started) > foundFallback
		founder := self
		for _, p := range r.n.cfg.Peers {
			if p.ID < founder && (!fallback || r.n.directory.State(p.ID).Reachable()) {
				founder = p.ID
			}
		}
		return founder, true
	}
	if len(r.n.cfg.Seeds) == 0 {
		return self, true
	}
	for _, node := range r.n.directory.Nodes() {
		if slices.Contains(r.n.cfg.Seeds, node.Addr) {
			return node.ID, true
		}
	}
	return "", false
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
