package node

import (
	"context"
	"maps"
	"slices"

	"google.golang.org/grpc"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/cluster"
	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/rebalance"
	"github.com/kuradb/kura/replica"
	"github.com/kuradb/kura/storage"
	"github.com/kuradb/kura/transport"
)

// kindRebalance asks a node for one step of a rebalance: sample its keys, copy its
// records to their next replicas, or drop what it no longer holds.
var kindRebalance = transport.RegisterKind(25, "rebalance")

// newRebalancer builds the rebalance runtime over this node's parts; replicas reach
// every node's replica, for the records a step copies.
func (n *Node) newRebalancer(replicas *replica.Set) (*rebalance.Rebalancer, error) {
	dht := ""
	if n.dht != nil {
		dht = n.cfg.Routing
	}
	return rebalance.New(rebalance.Config{
		Self:           n.cfg.ID,
		DHT:            dht,
		RingDelay:      n.ringDelay(),
		RetryInterval:  n.gossip.interval(),
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
	return p.n.transport.Call(ctx, toPeer(to), kindRebalance, request)
}

// rebalanceStore reads this node's records from the engine and drops them through the
// local replica.
type rebalanceStore struct {
	engine *storage.Engine
	local  *replica.Local
}

func (s rebalanceStore) Each(keyspace string, withTombstones bool, fn func(lww.Record) error) error {
	return s.engine.Each(keyspace, withTombstones, fn)
}

func (s rebalanceStore) DropUnless(keyspace string, keep func(key []byte) bool) (removed, bytes int64, err error) {
	return s.local.DropUnless(keyspace, keep)
}

// replicaCopier writes records to a node through its replica (rebalance.Copier).
type replicaCopier struct{ replicas *replica.Set }

func (c replicaCopier) Apply(ctx context.Context, to cluster.Node, keyspace string, records []lww.Record) error {
	return c.replicas.Replica(to).Apply(ctx, keyspace, records)
}

// Rebalance balances keyspace name, of the ordered partitioner, over the nodes
// (rebalance.Rebalancer.Rebalance); report is called after each step.
func (n *Node) Rebalance(ctx context.Context, name string, splits int, report func(rebalance.Progress)) error {
	return n.balancer.Rebalance(ctx, name, splits, report)
}

// Rebalance serves the Admin API's Rebalance, streaming each step.
func (s *apiServer) Rebalance(req *kurav1.RebalanceRequest, stream grpc.ServerStreamingServer[kurav1.RebalanceProgress]) error {
	err := s.node.Rebalance(stream.Context(), req.GetKeyspace(), int(req.GetSplits()), func(p rebalance.Progress) {
		// A client gone away ends the stream's context, which stops the rebalance.
		_ = stream.Send(&kurav1.RebalanceProgress{Step: p.Step, Before: nodeRows(p.Before), After: nodeRows(p.After)})
	})
	if err != nil {
		return moveStatus(err)
	}
	return nil
}

func nodeRows(rows map[string]int64) []*kurav1.NodeRows {
	out := make([]*kurav1.NodeRows, 0, len(rows))
	for _, id := range slices.Sorted(maps.Keys(rows)) {
		out = append(out, &kurav1.NodeRows{Node: id, Rows: rows[id]})
	}
	return out
}
