package node

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/kuradb/kura/internal/base/version"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/service/console"
)

// consoleSnapshot is the node's side of the web console (package console): its view of
// the cluster from the directory, the ring, the catalog, the coordinator's hints, the
// transport's counters and the metrics registry.
func (n *Node) consoleSnapshot() (console.Snapshot, error) {
	r, err := n.Ring()
	if err != nil {
		return console.Snapshot{}, err
	}
	self := n.directory.Self()
	snap := console.Snapshot{
		At: time.Now(),
		Self: console.Self{ID: self.ID, DC: self.DC, Addr: self.Addr, ClientAddr: self.ClientAddr, HTTPAddr: n.HTTPAddr(),
			Version: version.Get().String(), Power: n.Power().String(), ClockOffsetSeconds: n.guard.Status().Offset.Seconds()},
		Nodes:     []console.Node{},
		Ring:      ringArcs(r),
		Keyspaces: []console.Keyspace{},
		Requests:  n.metrics.Requests(),
	}
	loads := n.NodeLoads()
	for _, member := range n.directory.Nodes() {
		state := n.directory.State(member.ID)
		node := console.Node{
			ID: member.ID, DC: member.DC, Addr: member.Addr, ClientAddr: member.ClientAddr,
			State: state.String(), Status: member.Status.String(), Tier: member.Tier,
			Share: r.Share(member.ID), Self: member.ID == self.ID,
		}
		load := loads[member.ID]
		if load.Known {
			node.LoadBytes, node.LoadKeys = &load.Bytes, &load.Keys
		}
		if !load.StartedAt.IsZero() && state != cluster.StateDown {
			uptime := snap.At.Sub(load.StartedAt).Seconds()
			node.UptimeSeconds = &uptime
		}
		snap.Nodes = append(snap.Nodes, node)
	}
	for _, ks := range n.Keyspaces() {
		snap.Keyspaces = append(snap.Keyspaces, console.Keyspace{Name: ks.Name, Replication: ks.Replication,
			Partitioner: cmp.Or(ks.Partitioner, "hash"), Erasure: ks.Erasure.String()})
	}
	slices.SortFunc(snap.Keyspaces, func(a, b console.Keyspace) int { return cmp.Compare(a.Name, b.Name) })
	if snap.HintsPending, err = n.coord.HintsPending(); err != nil {
		return console.Snapshot{}, err
	}
	snap.Traffic = trafficPerPair(n.Stats().Snapshot())
	return snap, nil
}

// trafficPerPair sums the transport's flows over their message kinds, per DC pair.
func trafficPerPair(flows map[transport.Flow]transport.Counter) []console.Traffic {
	byPair := map[[2]string]console.Traffic{}
	for flow, c := range flows {
		pair := [2]string{flow.FromDC, flow.ToDC}
		t := byPair[pair]
		t.From, t.To = flow.FromDC, flow.ToDC
		t.Bytes += c.Bytes
		t.Messages += c.Messages
		byPair[pair] = t
	}
	traffic := make([]console.Traffic, 0, len(byPair))
	for _, t := range byPair {
		traffic = append(traffic, t)
	}
	slices.SortFunc(traffic, func(a, b console.Traffic) int { return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To)) })
	return traffic
}

// ringArcs lays the ring out as arcs: each vnode owns the tokens after its predecessor's
// up to its own, the first vnode's arc wrapping past the top of the ring.
func ringArcs(r *ring.Ring) []console.Arc {
	type vnode struct {
		token ring.Token
		owner string
	}
	var vnodes []vnode
	for _, m := range r.Members() {
		for _, t := range m.Tokens {
			vnodes = append(vnodes, vnode{t, m.ID})
		}
	}
	slices.SortFunc(vnodes, func(a, b vnode) int { return cmp.Compare(a.token, b.token) })
	// A token as a fraction of the ring: 2^64 is exactly representable, the token nearly.
	fraction := func(t ring.Token) float64 { return float64(t) / math.Exp2(64) }
	arcs := make([]console.Arc, len(vnodes))
	for i, v := range vnodes {
		prev := vnodes[(i+len(vnodes)-1)%len(vnodes)]
		arcs[i] = console.Arc{Start: fraction(prev.token), End: fraction(v.token), Node: v.owner}
	}
	return arcs
}
