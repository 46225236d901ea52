package node

import (
	"strconv"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/service/rebalance"
	"github.com/kuradb/kura/internal/service/ringchange"
)

// keyProtocol is the application state in which a node announces the newest internode
// protocol version it speaks (transport.ProtocolVersion).
const keyProtocol = "protocol"

// unannouncedProtocol is the version of a member that announces none: nodes began to
// announce theirs in version 4, and a node of version 3 gossips an unknown key on without
// reading it.
const unannouncedProtocol = 3

// keyRecordTypes is the application state in which a node announces that it reads typed
// records (lww.Record.Type): their stored flag bits and the internode record's type field.
// A build from before types announces nothing, refuses a typed record's flag bits and
// takes a typed internode record for a string's. The value is the version of the types
// the build reads (recordTypesVersion).
const keyRecordTypes = "record_types"

// recordTypesVersion is what this build announces under keyRecordTypes: 1 for the
// collection types (hash, set, sorted set, list), 2 since the PN counter's type
// (lww.Counter), which a build of version 1 refuses as an unknown type.
const recordTypesVersion = 2

// keyTransactions is the application state in which a node announces that it runs
// lightweight transactions on a partition's Paxos instance (batch proposals, prepares
// naming the keys they read: docs/lwt.md). A build from before announces nothing, and
// would run a keyspace created with transactions partition per key, beside the others'
// partition instances, where two values could be chosen. The value is
// transactionsVersion.
const keyTransactions = "transactions"

// The versions a build announces under keyTransactions: partitionTransactionsVersion
// since it runs partition instances, collectionInstancesVersion since it runs a
// collection's element records on their collection key's partition instance in a
// keyspace that says so (schema.Keyspace.CollectionInstances); a build of version 1
// runs them on their own instances. transactionsVersion is this build's.
const (
	partitionTransactionsVersion = 1
	collectionInstancesVersion   = 2
	transactionsVersion          = collectionInstancesVersion
)

// recordTypesVersionFor is the version a build must announce to read records of type t.
func recordTypesVersionFor(t lww.Type) int {
	if t >= lww.Counter {
		return 2
	}
	return 1
}

// ProtocolVersions returns the internode protocol version each member of the cluster
// announces in gossip, by node id: every node on the ring or moving onto or off it, down
// ones included (each may come back in the version it last ran), but not those that left
// or were removed.
func (n *Node) ProtocolVersions() map[string]uint16 {
	versions := map[string]uint16{}
	n.eachMemberState(func(id string, appState map[string]string) {
		versions[id] = unannouncedProtocol
		if v, err := strconv.ParseUint(appState[keyProtocol], 10, 16); err == nil {
			versions[id] = uint16(v)
		}
	})
	return versions
}

// RecordTypesRead reports whether every member of the cluster reads records of every
// type this build writes (RecordTypeRead of lww.TypeMax).
func (n *Node) RecordTypesRead() bool { return n.RecordTypeRead(lww.TypeMax) }

// RecordTypeRead reports whether every member of the cluster, as ProtocolVersions counts
// them, announces that it reads records of type t: the cluster-wide switch the
// coordinator writes typed records behind (docs/redis-types.md). It is false until the
// node has started. A member that is down counts with what it last announced, since it
// may come back in the build it last ran.
func (n *Node) RecordTypeRead(t lww.Type) bool {
	select {
	case <-n.ready:
	default:
		return false
	}
	need, all := recordTypesVersionFor(t), true
	n.eachMemberState(func(_ string, appState map[string]string) {
		v, err := strconv.Atoi(appState[keyRecordTypes])
		all = all && err == nil && v >= need
	})
	return all
}

// PartitionTransactionsRead reports whether every member of the cluster, as
// ProtocolVersions counts them, announces that it runs partition instances: the switch a
// keyspace with transactions partition is created behind. It is false until the node
// has started; a member that is down counts with what it last announced.
func (n *Node) PartitionTransactionsRead() bool {
	return n.transactionsRead(partitionTransactionsVersion)
}

// CollectionInstancesRead reports whether every member of the cluster, as
// PartitionTransactionsRead counts them, announces that it runs a collection's element
// records on their collection's partition instance: the switch a keyspace with
// schema.Keyspace.CollectionInstances is created behind.
func (n *Node) CollectionInstancesRead() bool {
	return n.transactionsRead(collectionInstancesVersion)
}

// transactionsRead reports whether every member announces keyTransactions at version
// need or later; false until the node has started.
func (n *Node) transactionsRead(need int) bool {
	select {
	case <-n.ready:
	default:
		return false
	}
	all := true
	n.eachMemberState(func(_ string, appState map[string]string) {
		all = all && announcesTransactions(appState, need)
	})
	return all
}

// announcesTransactions reports whether a member's gossiped state announces
// keyTransactions at version need or later.
func announcesTransactions(appState map[string]string, need int) bool {
	v, err := strconv.Atoi(appState[keyTransactions])
	return err == nil && v >= need
}

// eachMemberState calls fn with the id and the gossiped application state of each member
// of the cluster: every node on the ring or moving onto or off it, down ones included,
// but not those that left or were removed. This node's own state is the one it announces;
// a member gossip has not told of yet has an empty state.
func (n *Node) eachMemberState(fn func(id string, appState map[string]string)) {
	for _, m := range n.View().Nodes() {
		if m.Status == cluster.StatusLeft || m.Status == cluster.StatusRemoved {
			continue
		}
		var appState map[string]string
		if m.ID == n.cfg.ID {
			appState = announced()
		} else if g, ok := n.feed.Member(m.ID); ok {
			appState = g.AppState
		}
		fn(m.ID, appState)
	}
}

// announced is the application state by which this build tells the cluster what it
// speaks and reads.
func announced() map[string]string {
	return map[string]string{
		keyProtocol:                   strconv.Itoa(transport.ProtocolVersion),
		keyRecordTypes:                strconv.Itoa(recordTypesVersion),
		keyTransactions:               strconv.Itoa(transactionsVersion),
		ringchange.KeyJoinArbitration: "1",
		rebalance.KeyAlter:            "1",
	}
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
