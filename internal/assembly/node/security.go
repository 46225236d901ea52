package node

import (
	"crypto/tls"
	"fmt"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/service/membership/driver"
)

// errNotMember is a node's refusal of a request that only members may make: the replica
// protocol's sentinel, whose text the caller's remote.Remote recognises on the wire.
var errNotMember = replica.ErrNotMember

// admit refuses the messages a node takes only from members of its cluster (replica
// reads and writes, hints, streaming, repair, ring changes, keyspace announcements) when
// the sender is a node its directory does not know, or knows as gone for good. Anyone may
// send what keeps the overlays together while nodes are still learning of each other:
// gossip, which is how a node becomes a member, the DHT's messages, which the ring
// forwards between nodes that may not have heard of the sender yet, the ring and
// keyspace pulls a new node needs before it can take part, and clock pings, which
// answer nothing but the time.
//
// Without TLS the sender's id is only what it claims, so this keeps out strays (a node
// of another cluster, a removed node still running), not impostors; with TLS the id is
// the one its certificate names.
func (n *Node) admit(from transport.Peer, kind transport.Kind) error {
	if driver.Handles(kind) || kind == transport.KindChord || kind == transport.KindRingPull || kind == transport.KindSchemaPull || kind == transport.KindClockPing {
		return nil
	}
	member, known := n.directory.Node(from.ID)
	switch {
	case !known:
		return fmt.Errorf("%w: node %s does not know node %s, and serves %v only to members of its cluster", errNotMember, n.cfg.ID, from.ID, kind)
	case member.Status == cluster.StatusLeft || member.Status == cluster.StatusRemoved:
		return fmt.Errorf("%w: node %s knows node %s as %s, and serves %v only to members of its cluster", errNotMember, n.cfg.ID, from.ID, member.Status, kind)
	}
	return nil
}

// clientTLS is the TLS configuration of the client front ends (gRPC, Redis): the node's
// certificate, and client certificates verified against the CA when given. Nil
// without TLS.
func (n *Node) clientTLS() *tls.Config {
	if n.cfg.TLS == nil {
		return nil
	}
	return n.cfg.TLS.ServerConfig(tls.VerifyClientCertIfGiven)
}
