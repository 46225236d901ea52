package node

import (
	"context"
	"time"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/service/membership/feed"
)

// The default keyspace's definition settles (internal/core/schema/settle.go): a node
// that founds the cluster settles its own proposal as it starts, any other one adopts
// the cluster's settled definition when it pulls the catalog, or settles its own once
// it knows the members and none holds one nor, with a smaller id, proposes one
// (settleDefault). Until then the coordinator
// refuses the keyspace's lightweight transactions (schema.Catalog.TransactionsReady).

// settleAtStart settles the node's proposal when it founds a new cluster; it runs
// before gossip starts, which then carries the settled definition's digest.
func (n *Node) settleAtStart() error {
	proposal, ok := n.catalog.Proposal(schema.DefaultKeyspace)
	if !ok || !schema.SettleAtStart(n.fresh, n.cfg.Founding, n.hasSeeds()) {
		return nil
	}
	_, _, err := n.catalog.Settle(proposal)
	return err
}

// keyDefaultProposal is the application state in which a node gossips that it holds a
// proposal of its own for the default keyspace, not settled yet ("1"; empty once
// settled): of the members that propose, the one of the smallest id settles its own
// (schema.SettleOwn).
const keyDefaultProposal = "default_proposal"

// settleDefaultLoop runs settleDefault once a gossip round until the default keyspace
// holds no proposal any more (settled here, or adopted from the cluster), or the node
// stops; newFeed gossips meanwhile that the node proposes one.
func (n *Node) settleDefaultLoop() {
	defer n.wg.Done()
	ctx, cancel := n.stopContext()
	defer cancel()
	ticker := time.NewTicker(n.feed.Interval())
	defer ticker.Stop()
	for {
		if _, ok := n.catalog.Proposal(schema.DefaultKeyspace); !ok {
			n.feed.SetAppState(keyDefaultProposal, "")
			return
		}
		n.settleDefault(ctx)
		select {
		case <-n.stop:
			return
		case <-ticker.C:
		}
	}
}

// settleDefault settles the node's proposal for the default keyspace when
// schema.SettleOwn says it may, and announces it.
func (n *Node) settleDefault(ctx context.Context) {
	proposal, ok := n.catalog.Proposal(schema.DefaultKeyspace)
	if !ok {
		return
	}
	var peers []schema.Peer
	for _, m := range n.View().Nodes() {
		if m.ID == n.cfg.ID || m.Status == cluster.StatusLeft || m.Status == cluster.StatusRemoved {
			continue
		}
		p := schema.Peer{ID: m.ID, Up: n.directory.State(m.ID).Reachable()}
		if g, ok := n.feed.Member(m.ID); ok {
			p.Digest, p.DigestKnown = feed.SchemaDigest(g)
			p.Proposes = g.AppState[keyDefaultProposal] != ""
			p.PartitionTransactions = announcesTransactions(g.AppState, partitionTransactionsVersion)
			p.CollectionInstances = announcesTransactions(g.AppState, collectionInstancesVersion)
		}
		peers = append(peers, p)
	}
	settle, why := schema.SettleOwn(n.cfg.ID, proposal, n.directory.Trusted(), n.catalog.Digest(), peers)
	if why != "" {
		n.log.Debug("default keyspace not settled yet", "why", why)
		return
	}
	settled, ok, err := n.catalog.Settle(settle)
	if err != nil || !ok {
		if err != nil {
			n.log.Warn("settle the default keyspace", "err", err)
		}
		return
	}
	n.log.Info("settled the default keyspace's definition: no member holds one", "definition", schema.DescribeImplicit(settled))
	if err := n.schemas.Publish(ctx, settled); err != nil {
		n.log.Warn("announce the default keyspace", "err", err)
	}
}
