package remote

import (
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/data/replica"
)

// Set hands out the Replica of any node: the local one for this node, a Remote over the
// network for the others.
type Set struct {
	self  string
	local replica.Replica
	net   Caller
}

// NewSet returns the replicas of a cluster seen from node self.
func NewSet(self string, local replica.Replica, net Caller) *Set {
	return &Set{self: self, local: local, net: net}
}

// Replica returns n's replica.
func (s *Set) Replica(n cluster.Node) replica.Replica {
	if n.ID == s.self {
		return s.local
	}
	return &Remote{net: s.net, peer: peerOf(n)}
}
