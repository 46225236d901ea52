package chord

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// Partial membership: what a DHT node must know of the cluster. A onehop node holds a
// directory of every node; a chord or mlchord node needs only the peers its tables name,
// and it learns and repairs those by the protocol's own messages (join, stabilize /
// notify, the gap walk, fix_fingers, check_predecessor), never from a directory:
//
//   - on the global ring: the predecessor, the successor list (mlchord's gap list, the
//     successors up to the next node of the own DC) and the fingers;
//   - on mlchord's local ring: the own DC's predecessor, successors and fingers, the
//     own-DC members a lookup travels through;
//   - gateways (Config.KeepGateways): for each other DC, the nearest node of that DC
//     clockwise, through which the node reaches that DC without a lookup; the successor's
//     answer to stabilize carries its gateways, from which they follow (takeGateways).
//
// Members lists them; its size grows as O(log n) where a directory grows as O(n).

// Role says why a node keeps a member; a member can have several.
type Role uint8

// The roles of a member, as bits.
const (
	// RolePredecessor: the predecessor on a ring.
	RolePredecessor Role = 1 << iota
	// RoleSuccessor: in a successor list (mlchord's global one is the gap list).
	RoleSuccessor
	// RoleFinger: in a finger table.
	RoleFinger
	// RoleLocal: named by the tables of mlchord's local ring, over the own DC.
	RoleLocal
	// RoleGateway: the nearest node of its DC, for a DC other than the own.
	RoleGateway
)

var roleNames = []string{"predecessor", "successor", "finger", "local", "gateway"}

// String lists the roles, e.g. "successor+finger".
func (r Role) String() string {
	var names []string
	for i, name := range roleNames {
		if r&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "+")
}

// Member is one peer of a node's partial membership and the roles it has there.
type Member struct {
	Peer
	Roles Role
}

// Members returns the node's partial membership: every distinct peer its tables name on
// either ring, nearest clockwise first, with its roles. Suspected peers are left out, as
// routing leaves them out.
func (n *Node) Members() []Member {
	index := make(map[string]int)
	var members []Member
	add := func(p Peer, role Role) {
		if p.IsZero() || p.Name == n.self.Name || n.isSuspect(p) {
			return
		}
		if i, ok := index[p.Name]; ok {
			members[i].Roles |= role
			return
		}
		index[p.Name] = len(members)
		members = append(members, Member{Peer: p, Roles: role})
	}
	for _, l := range n.layers() {
		r := &n.rings[l]
		local := Role(0)
		if l == LayerLocal {
			local = RoleLocal
		}
		add(r.pred, RolePredecessor|local)
		for _, p := range r.succs {
			add(p, RoleSuccessor|local)
		}
		for _, p := range r.fingers {
			add(p, RoleFinger|local)
		}
	}
	for _, g := range n.gateways {
		add(g, RoleGateway)
	}
	slices.SortFunc(members, func(a, b Member) int {
		return cmp.Compare(n.distance(a.ID), n.distance(b.ID))
	})
	return members
}

// Gateways returns the node's gateway to each DC other than its own, by DC name: its
// nearest node of that DC clockwise. Only a node with Config.KeepGateways keeps them.
func (n *Node) Gateways() map[string]Peer { return maps.Clone(n.gateways) }

// gatewayList returns the gateways sorted by DC, as a Neighbors message carries them.
func (n *Node) gatewayList() []Peer {
	list := slices.Collect(maps.Values(n.gateways))
	slices.SortFunc(list, func(a, b Peer) int { return strings.Compare(a.DC, b.DC) })
	return list
}

// takeGateways replaces the gateways with those the successor's answer to stabilize
// implies. The nearest node of a DC clockwise from this node is the successor when the
// successor is of that DC, and otherwise the successor's own gateway to it, since no node
// lies between the two: so each round of stabilize makes the gateways exact one node
// further back along the ring, after a join or a failure as at the start. A DC that
// neither names is dropped, as a DC all of whose nodes failed must be.
func (n *Node) takeGateways(succ Peer, theirs []Peer) {
	gateways := make(map[string]Peer, len(theirs)+1)
	for _, g := range append([]Peer{succ}, theirs...) {
		if _, ok := gateways[g.DC]; !ok && g.DC != n.self.DC && n.acceptable(g, LayerGlobal) {
			gateways[g.DC] = g
		}
	}
	n.gateways = gateways
}

// installGateways sets the gateways a stabilised ring gives the node: walking clockwise
// over the sorted peers of every DC (dcs of them) from the node, the first of each other
// DC.
func (n *Node) installGateways(sorted []Peer, dcs int) {
	at := successorIndex(sorted, n.self.ID)
	for k := 1; k < len(sorted) && len(n.gateways) < dcs-1; k++ {
		p := sorted[(at+k)%len(sorted)]
		if _, ok := n.gateways[p.DC]; !ok && p.DC != n.self.DC {
			n.gateways[p.DC] = p
		}
	}
}
