package node

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/io/cluster/ringstore"
	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/service/ringchange"
)

// The ring's life cycle runs in package ringchange; the node gives it its parts, binds
// its calls to their message kinds, and serves the operator's commands through it.

// newChanger builds the node's ring changer, once its directory and feed exist.
func (n *Node) newChanger() (*ringchange.Changer, error) {
	return ringchange.New(ringchange.Config{
		ID:             n.cfg.ID,
		Replace:        n.cfg.Replace,
		Founding:       n.cfg.Founding,
		Fresh:          n.fresh,
		Seeded:         n.hasSeeds(),
		Named:          n.cfg.Peers,
		Vnodes:         n.cfg.Vnodes,
		GossipInterval: n.feed.Interval(),
		RingDelay:      n.cfg.RingDelay,
		AbortJoinAfter: n.cfg.AbortJoinAfter,
		Logger:         n.log,
	}, ringchange.Parts{Directory: n.directory, Gossip: n.feed, Peers: ringParts{n}, Streamer: ringParts{n}, Moves: ringParts{n},
		Promises: ringstore.New(n.engine)})
}

// ringParts adapts the node's transport, streamer and ring to the ring changer. It
// reads them at each call: the streamer and the ring are built after the changer.
type ringParts struct{ n *Node }

func (p ringParts) PullRing(ctx context.Context, to cluster.Node) ([]byte, error) {
	return p.n.transport.Call(ctx, toPeer(to), transport.KindRingPull, nil)
}

func (p ringParts) StreamGains(ctx context.Context, to cluster.Node, req []byte) ([]byte, error) {
	return p.n.transport.Call(ctx, toPeer(to), transport.KindStreamGains, req)
}

func (p ringParts) Gain(ctx context.Context, exclude string) (ringchange.Stats, error) {
	st, err := p.n.streamer.Gain(ctx, exclude)
	return ringchange.Stats(st), err
}

func (p ringParts) WaitingFor() []string { return p.n.streamer.WaitingFor() }

func (p ringParts) Gainers() ([]string, error) {
	var ids []string
	for _, ks := range p.n.catalog.List() {
		moves, err := p.n.ring.Moves(ks)
		if err != nil {
			return nil, err
		}
		for _, m := range moves {
			for _, g := range m.Gainers {
				ids = append(ids, g.ID)
			}
		}
	}
	return ids, nil
}

func (p ringParts) Replications() ([]ringchange.Replication, error) {
	var out []ringchange.Replication
	for _, ks := range p.n.catalog.List() {
		if ks.Erasure.Enabled() {
			continue // one chunk per owner: no replicas to count
		}
		strategy, err := ring.ParseReplication(ks.Replication)
		if err != nil {
			return nil, fmt.Errorf("keyspace %s: %w", ks.Name, err)
		}
		out = append(out, ringchange.Replication{Keyspace: ks.Name, Strategy: strategy})
	}
	return out, nil
}

func (p ringParts) MovingKeyspaces() []string {
	var names []string
	for _, ks := range p.n.catalog.List() {
		if ks.Moving {
			names = append(names, ks.Name)
		}
	}
	slices.Sort(names)
	return names
}

// hasSeeds reports whether the node was given seeds other than itself.
func (n *Node) hasSeeds() bool {
	self := n.transport.Addr()
	for _, s := range n.cfg.Seeds {
		if s != self && s != n.cfg.Listen {
			return true
		}
	}
	return len(n.cfg.Peers) > 0
}

// JoinRefused receives, once, why this node will never join the ring: a replacement
// (Config.Replace) refused for good (ringchange.ErrReplaceRefused), which no wait
// changes, so a server process should stop with it. Nothing comes otherwise.
func (n *Node) JoinRefused() <-chan error { return n.joinRefused }

// JoinsPromised returns the joins this node promised as their arbiter and gossips so,
// node id to generation (ringchange.Changer.JoinsPromised).
func (n *Node) JoinsPromised() map[string]uint64 { return n.changer.JoinsPromised() }

// ringDelay is the wait after announcing a ring change before acting on it, so that
// every node has learned it (ringchange.Changer.RingDelay).
func (n *Node) ringDelay() time.Duration { return n.changer.RingDelay() }

// Decommission hands this node's ranges to the nodes that take them over, then leaves the
// ring; with force, even when that leaves its DC short of a keyspace's replicas
// (ringchange.Changer.Decommission).
func (n *Node) Decommission(ctx context.Context, force bool) (ringchange.MoveStats, error) {
	return n.changer.Decommission(ctx, force)
}

// RemoveNode takes dead node id off the ring, its ranges streamed from the surviving
// replicas to their new owners first; with force, even when that leaves a DC short of
// a keyspace's replicas (ringchange.Changer.RemoveNode).
func (n *Node) RemoveNode(ctx context.Context, id string, force bool) (ringchange.MoveStats, error) {
	return n.changer.RemoveNode(ctx, id, force)
}

// Cleanup drops the records of keyspace (every keyspace when empty) that this node no
// longer holds on the current ring. It refuses while a move is in progress: the data may
// still be needed.
func (n *Node) Cleanup(_ context.Context, keyspace string) (records int64, bytes int64, err error) {
	if err := ringchange.NoMoves(n.directory); err != nil {
		return 0, 0, err
	}
	for _, ks := range n.catalog.List() {
		if keyspace != "" && ks.Name != keyspace || ks.Erasure.Enabled() {
			continue // chunk ownership follows chunk keys, not the keyspace's ring ranges
		}
		// During a rebalance the records of the next split keys' replicas are needed too.
		owned, err := n.balancer.Keeps(ks)
		if err != nil {
			return records, bytes, err
		}
		removed, size, err := n.local.DropUnless(ks.Name, owned)
		records += removed
		bytes += size
		if err != nil {
			return records, bytes, err
		}
	}
	return records, bytes, nil
}
