package node

import (
	"context"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/replica/local"
	"github.com/kuradb/kura/internal/data/replica/remote"
	"github.com/kuradb/kura/internal/io/storage"
	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/service/apiserver"
	"github.com/kuradb/kura/internal/service/rebalance"
)

// newRebalancer builds the rebalance runtime over this node's parts; replicas reach
// every node's replica, for the records a step copies.
func (n *Node) newRebalancer(replicas *remote.Set) (*rebalance.Rebalancer, error) {
	dht := ""
	if n.dht != nil {
		dht = n.cfg.Routing
	}
	return rebalance.New(rebalance.Config{
		Self:           n.cfg.ID,
		DHT:            dht,
		RingDelay:      n.ringDelay(),
		RetryInterval:  n.feed.Interval(),
		ReplicaTimeout: n.cfg.ReplicaTimeout,
		Logger:         n.log,
	}, rebalance.Parts{
		View:      n.directory,
		Catalog:   n.catalog,
		Publisher: n.schemas,
		Clock:     n.guard,
		Peers:     rebalancePeers{n},
		Store:     rebalanceStore{engine: n.engine, local: n.local},
		Copier:    replicaCopier{replicas},
		Placement: n.ring,
	})
}

// rebalancePeers binds a rebalance's calls to their message kind.
type rebalancePeers struct{ n *Node }

func (p rebalancePeers) Step(ctx context.Context, to cluster.Node, request []byte) ([]byte, error) {
	return p.n.transport.Call(ctx, toPeer(to), transport.KindRebalance, request)
}

// rebalanceStore reads this node's records from the engine and drops them through the
// local replica.
type rebalanceStore struct {
	engine *storage.Engine
	local  *local.Local
}

func (s rebalanceStore) Each(keyspace string, withTombstones bool, fn func(lww.Record) error) error {
	return s.engine.Each(keyspace, withTombstones, fn)
}

func (s rebalanceStore) DropUnless(keyspace string, keep func(key []byte) bool) (removed, bytes int64, err error) {
	return s.local.DropUnless(keyspace, keep)
}

// replicaCopier writes records to a node through its replica (rebalance.Copier).
type replicaCopier struct{ replicas *remote.Set }

func (c replicaCopier) Apply(ctx context.Context, to cluster.Node, keyspace string, records []lww.Record) error {
	return c.replicas.Replica(to).Apply(ctx, keyspace, records)
}

// Rebalance balances keyspace name, of the ordered partitioner, over the nodes
// (rebalance.Rebalancer.Rebalance); report is called after each step.
func (n *Node) Rebalance(ctx context.Context, name string, splits int, report func(rebalance.Progress)) error {
	return n.balancer.Rebalance(ctx, name, splits, report)
}

// AlterKeyspace changes keyspace name's replication (rebalance.Rebalancer.Alter), or
// with settle ends a move cut short (Settle); report is called after each step.
func (n *Node) AlterKeyspace(ctx context.Context, name, replication string, settle bool, report func(rebalance.Progress)) error {
	if settle {
		return n.balancer.Settle(ctx, name, report)
	}
	members := map[string]map[string]string{}
	n.eachMemberState(func(id string, appState map[string]string) { members[id] = appState })
	if err := rebalance.AlterAnnounced(members); err != nil {
		return err
	}
	return n.balancer.Alter(ctx, name, replication, report)
}

// AlterKeyspace serves the Admin API's AlterKeyspace: each step as the client API
// reports it.
func (b apiBackend) AlterKeyspace(ctx context.Context, keyspace, replication string, settle bool, report func(apiserver.RebalanceStep)) error {
	return refusedMove(b.n.AlterKeyspace(ctx, keyspace, replication, settle, func(p rebalance.Progress) { report(apiserver.RebalanceStep(p)) }))
}

// Rebalance serves the Admin API's Rebalance: each step as the client API reports it.
func (b apiBackend) Rebalance(ctx context.Context, keyspace string, splits int, report func(apiserver.RebalanceStep)) error {
	return refusedMove(b.n.Rebalance(ctx, keyspace, splits, func(p rebalance.Progress) { report(apiserver.RebalanceStep(p)) }))
}
