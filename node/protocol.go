package node

import (
	"strconv"

	"github.com/kuradb/kura/cluster"
	"github.com/kuradb/kura/transport"
)

// keyProtocol is the application state in which a node announces the newest internode
// protocol version it speaks (transport.ProtocolVersion).
const keyProtocol = "protocol"

// unannouncedProtocol is the version of a member that announces none: nodes began to
// announce theirs in version 4, and a node of version 3 gossips an unknown key on without
// reading it.
const unannouncedProtocol = 3

// ProtocolVersions returns the internode protocol version each member of the cluster
// announces in gossip, by node id: every node on the ring or moving onto or off it, down
// ones included (each may come back in the version it last ran), but not those that left
// or were removed.
func (n *Node) ProtocolVersions() map[string]uint16 {
	versions := map[string]uint16{}
	for _, m := range n.View().Nodes() {
		if m.Status == cluster.StatusLeft || m.Status == cluster.StatusRemoved {
			continue
		}
		versions[m.ID] = unannouncedProtocol
		if m.ID == n.cfg.ID {
			versions[m.ID] = transport.ProtocolVersion
		} else if g, ok := n.feed.Member(m.ID); ok {
			if v, err := strconv.ParseUint(g.AppState[keyProtocol], 10, 16); err == nil {
				versions[m.ID] = uint16(v)
			}
		}
	}
	return versions
}

// ClusterProtocolVersion is the oldest internode protocol version a member of the cluster
// announces (ProtocolVersions): what a feature that every node must understand waits
// for, as Cassandra gates features on the oldest version in its cluster. It is 0 until
// the node has started.
func (n *Node) ClusterProtocolVersion() uint16 {
	select {
	case <-n.ready:
	default:
		return 0
	}
	oldest := uint16(transport.ProtocolVersion)
	for _, v := range n.ProtocolVersions() {
		oldest = min(oldest, v)
	}
	return oldest
}
