package node

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/base/version"
)

// Info describes this node alone: what kura info prints.
func (b apiBackend) Info() (*kurav1.NodeInfo, error) {
	n := b.n
	self := n.directory.Self()
	bytes, keys := n.storedLoad()
	hints, err := n.hints.Pending()
	if err != nil {
		return nil, err
	}
	dataDir := n.cfg.DataDir
	if n.cfg.InMemory {
		dataDir = ""
	}
	info := &kurav1.NodeInfo{
		Id: self.ID, Dc: self.DC, Version: version.Get().String(), StartedAtUnixMs: n.started.UnixMilli(),
		Addr: self.Addr, ClientAddr: self.ClientAddr, RespAddr: n.RESPAddr(), HttpAddr: n.HTTPAddr(), DataDir: dataDir,
		StorageDiskBytes: bytes, StorageKeys: keys, Keyspaces: int32(len(n.catalog.List())), HintsPending: int64(hints),
		Clock: n.clockStatus(), Membership: n.membershipStatus(), RingStatus: self.Status.String(),
		Power: n.Power().String(), ReadPolicy: n.ReadPolicy().String(),
	}
	if r, err := n.Ring(); err == nil {
		info.Ownership = r.Share(self.ID)
	}
	return info, nil
}

// Ring lists every node's tokens and ownership on this node's ring, and with a keyspace,
// the share of its token space each node holds replicas of.
func (b apiBackend) Ring(keyspace string) (*kurav1.RingResponse, error) {
	n := b.n
	r, err := n.Ring()
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "%v: the node has not learned the ring yet; try again in a few seconds", err)
	}
	resp := &kurav1.RingResponse{Self: n.cfg.ID, Keyspace: keyspace}
	var effective map[string]float64
	if keyspace != "" {
		ks, err := n.Keyspace(keyspace)
		if err != nil {
			return nil, err
		}
		resp.Replication = ks.Replication
		effective = r.Placement(ks.Strategy()).Ownership()
	}
	for _, m := range r.Members() {
		rn := &kurav1.RingNode{Id: m.ID, Dc: m.DC, State: n.directory.State(m.ID).String(), Ownership: r.Share(m.ID), Effective: effective[m.ID]}
		for _, t := range m.Tokens {
			rn.Tokens = append(rn.Tokens, uint64(t))
		}
		resp.Nodes = append(resp.Nodes, rn)
	}
	return resp, nil
}

// clockStatus is the node's clock as its guard measures it.
func (n *Node) clockStatus() *kurav1.ClockStatus {
	c := n.guard.Status()
	return &kurav1.ClockStatus{OffsetMs: c.Offset.Milliseconds(), Peers: int32(c.Peers), Ok: c.OK, Refusal: c.Refusal,
		AheadMaxMs: c.AheadMax.Milliseconds(), MaxOffsetMs: n.guard.MaxOffset().Milliseconds()}
}

// membershipStatus is how the node's gossip stands: whether a seed answered, and what
// each said, so that a node given a wrong seed says so instead of looking like a healthy
// cluster of one.
func (n *Node) membershipStatus() *kurav1.Membership {
	d := n.feed
	m := &kurav1.Membership{Protocol: d.Protocol(), Joined: d.Joined()}
	for _, s := range d.Seeds() {
		seed := &kurav1.SeedStatus{Addr: s.Addr, Id: s.ID}
		if s.Err != nil {
			seed.Error = s.Err.Error()
		}
		m.Seeds = append(m.Seeds, seed)
	}
	for _, node := range n.directory.Nodes() {
		m.Members++
		if n.directory.State(node.ID).Reachable() {
			m.MembersUp++
		}
	}
	return m
}
