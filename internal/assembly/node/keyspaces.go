package node

import (
	"context"
	"fmt"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/service/schemasync"
)

// newSchemaSyncer builds the schema propagation over this node's catalog, directory,
// transport, gossip and clocks.
func (n *Node) newSchemaSyncer() (*schemasync.Syncer, error) {
	return schemasync.New(schemasync.Config{Self: n.cfg.ID, Logger: n.log}, schemasync.Parts{
		Catalog: n.catalog,
		View:    n.directory,
		Peers:   schemaPeers{n},
		Digests: n.feed,
		Clock:   n.clock,
		Guard:   n.guard,
		Store:   n.engine,
	})
}

// schemaPeers binds the schema propagation's calls to their message kinds.
type schemaPeers struct{ n *Node }

func (p schemaPeers) Announce(ctx context.Context, to cluster.Node, update []byte) error {
	_, err := p.n.transport.Call(ctx, toPeer(to), transport.KindSchema, update)
	return err
}

func (p schemaPeers) Pull(ctx context.Context, from cluster.Node) ([]byte, error) {
	return p.n.transport.Call(ctx, toPeer(from), transport.KindSchemaPull, nil)
}

// CreateKeyspace defines a keyspace and announces it to every live node
// (schemasync.Syncer.CreateKeyspace). One whose transactions run per partition waits
// until every member announces that it runs them (PartitionTransactionsRead), and runs
// its element records on their collection's instance when every member announces that
// it runs those (CollectionInstancesRead); otherwise on their own, as every build of
// partition instances does. That is this build's choice, whatever the request says.
func (n *Node) CreateKeyspace(ctx context.Context, ks schema.Keyspace) error {
	partition := ks.Transactions == schema.TransactionsPartition
	if partition && !n.PartitionTransactionsRead() {
		return fmt.Errorf("%w %s: transactions %s need every member of a build that runs them, and some member announces none (upgrade every node first)",
			schema.ErrInvalidKeyspace, ks.Name, ks.Transactions)
	}
	ks.CollectionInstances = partition && n.CollectionInstancesRead()
	return n.schemas.CreateKeyspace(ctx, ks)
}

// Truncate truncates keyspace name (Redis's FLUSHDB) on every node and returns the
// truncation's timestamp (schemasync.Syncer.Truncate).
func (n *Node) Truncate(ctx context.Context, name string) (hlc.Timestamp, error) {
	return n.schemas.Truncate(ctx, name)
}

// DropKeyspace drops keyspace name on every node and returns the drop's timestamp
// (schemasync.Syncer.DropKeyspace).
func (n *Node) DropKeyspace(ctx context.Context, name string) (hlc.Timestamp, error) {
	return n.schemas.DropKeyspace(ctx, name)
}

// dropTruncatedLoop drops the records hidden by the truncations learned while the node
// runs, until it stops.
func (n *Node) dropTruncatedLoop() {
	defer n.wg.Done()
	ctx, cancel := n.stopContext()
	defer cancel()
	n.schemas.DropTruncated(ctx)
}

// Keyspaces lists the keyspaces this node knows.
func (n *Node) Keyspaces() []schema.Keyspace { return n.catalog.List() }

// Keyspace returns one keyspace definition.
func (n *Node) Keyspace(name string) (schema.Keyspace, error) { return n.catalog.Get(name) }
