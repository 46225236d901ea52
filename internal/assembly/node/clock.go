package node

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/io/transport"
)

// clockPingTimeout bounds a clock ping. It is generous: the first write after a start
// waits for the pings, and is refused if none came back, so a loaded machine must not
// fail them.
const clockPingTimeout = 2 * time.Second

// clockPingsFirst is how many peers a node pings at once while it has measured none: its
// guard refuses writes until it has.
const clockPingsFirst = 3

// pingClocks measures this node's clock against one random reachable peer each round
// (every peer answers calls with its wall clock, so calls the node makes anyway measure
// too). One peer a round keeps the traffic linear in the cluster's size; the guard's
// samples stay valid between rounds, as it follows this node's clock with the monotonic
// clock. While it has no sample, it pings a few peers at once.
func (n *Node) pingClocks(ctx context.Context) {
	n.forgetDepartedClocks()
	peers := n.reachablePeers()
	if len(peers) == 0 {
		return
	}
	count := 1
	if _, sampled := n.guard.Offset(); sampled == 0 {
		count = clockPingsFirst
	}
	rand.Shuffle(len(peers), func(i, j int) { peers[i], peers[j] = peers[j], peers[i] })
	for _, p := range peers[:min(count, len(peers))] {
		callCtx, cancel := context.WithTimeout(ctx, clockPingTimeout)
		if _, err := n.transport.Call(callCtx, p, transport.KindClockPing, nil); err != nil {
			n.log.Debug("clock ping", "peer", p.ID, "err", err)
		}
		cancel()
	}
}

// reachablePeers returns the other nodes the directory sees reachable.
func (n *Node) reachablePeers() []transport.Peer {
	var peers []transport.Peer
	for _, other := range n.directory.Nodes() {
		if other.ID != n.cfg.ID && n.directory.State(other.ID).Reachable() {
			peers = append(peers, toPeer(other))
		}
	}
	return peers
}

// forgetDepartedClocks drops the guard's samples of the nodes that left or were removed
// since it measured them: a sample lasts for ever, so a departed node would count among
// the peers the clock is measured against (kura status's clock line, the median, the
// majority that must agree) long after it stopped being one.
func (n *Node) forgetDepartedClocks() {
	for _, p := range n.guard.Peers() {
		if !n.clockPeer(p.Peer) {
			n.guard.Forget(p.Peer)
		}
	}
}

// clockPeer reports whether the guard measures this node's clock against id: a member of
// the directory that neither left nor was removed. The gossip driver also calls seeds by
// address, under ids of its own ("seed@addr"), whose samples would count a peer twice; a
// node that left may still run and answer gossip for a while.
func (n *Node) clockPeer(id string) bool {
	other, known := n.directory.Node(id)
	return known && other.Status != cluster.StatusLeft && other.Status != cluster.StatusRemoved
}

// memberClocks passes the transport's clock samples of clock peers (clockPeer) to the
// guard.
type memberClocks struct{ n *Node }

// Sample implements transport.ClockSampler.
func (m memberClocks) Sample(peer string, remote, local time.Time, uncertainty time.Duration) {
	if m.n.clockPeer(peer) {
		m.n.guard.Sample(peer, remote, local, uncertainty)
	}
}
