package node

import (
	"context"
	"strconv"
	"time"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/core/power"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/service/membership/feed"
	"github.com/kuradb/kura/internal/service/powercycle"
	"github.com/kuradb/kura/internal/service/ringchange"
)

// The node's gossip runs in package internal/service/membership/feed; the node gives it its parts, and
// passes gossip's news on to the power cycle, the ring changer and the schema
// propagation.

// newFeed builds the node's membership feed, once its directory and catalog exist.
func newFeed(n *Node) (*feed.Feed, error) {
	appState := announced()
	appState[powercycle.KeyPower] = power.Active.String()
	appState[keyStartedAt] = strconv.FormatInt(n.started.UnixMilli(), 10)
	appState[powercycle.KeyLevels] = n.cfg.PowerLevels.String()
	if n.fresh && !n.cfg.Founding {
		appState[ringchange.KeyNewData] = "1"
	}
	if _, ok := n.catalog.Proposal(schema.DefaultKeyspace); ok {
		appState[keyDefaultProposal] = "1" // until settleDefaultLoop settles it
	}
	return feed.New(feed.Config{
		ID:       n.cfg.ID,
		Protocol: n.cfg.Membership,
		Interval: n.cfg.GossipInterval,
		Seeds:    n.cfg.Seeds,
		Named:    n.cfg.Peers,
		Seed:     n.cfg.Seed,
		Fresh:    n.fresh,
		TierKey:  powercycle.KeyTier,
		AppState: appState,
		Logger:   n.cfg.Logger,
	}, feed.Parts{Directory: n.directory, Catalog: n.catalog, Endpoint: n.transport, Observers: feedObservers{n}})
}

// feedObservers passes gossip's news to the parts of the node it concerns. It reads
// them at each call: the ring changer and the schema propagation are built after the
// feed.
type feedObservers struct{ n *Node }

func (o feedObservers) Observe(m membership.Member, alive bool) { o.n.power.Observe(m, alive) }

func (o feedObservers) RemovedSelf(by string) { o.n.changer.RemovedSelf(by) }

func (o feedObservers) SchemaDiffers(from cluster.Node) { go o.n.pullSchema(from) }

// pullSchema merges another node's keyspaces into the catalog, once this node knows
// whether it was a member before.
func (n *Node) pullSchema(from cluster.Node) {
	select {
	case <-n.changer.AskedMembership():
	case <-n.stop:
		return
	}
	n.schemas.Pull(context.Background(), from)
}

func toPeer(n cluster.Node) transport.Peer {
	return transport.Peer{ID: n.ID, DC: n.DC, Addr: n.Addr}
}

// proximity ranks replicas for the coordinator: the measured round trip of recent calls,
// else twice the topology's one-way latency, else unknown (last).
type proximity struct{ n *Node }

func (p proximity) Distance(id string) time.Duration {
	if rtt, ok := p.n.transport.RTT(id); ok {
		return rtt
	}
	if topo := p.n.cfg.Topology; topo != nil {
		if peer, ok := p.n.directory.Node(id); ok {
			if link, err := topo.Link(p.n.cfg.DC, peer.DC); err == nil {
				return 2 * link.Latency
			}
		}
	}
	return time.Hour
}
