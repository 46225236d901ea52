package schema

import (
	"bytes"
	"fmt"
)

// Settling the default keyspace's definition. Every node defines DefaultKeyspace by
// itself (EnsureDefault), and nodes may define it differently: an older build, another
// --default-replication or --default-transactions. Its lightweight transactions run on
// one Paxos instance per key or per partition as the definition says, and a coordinator
// on a key's instance and one on its partition's do not see each other's proposals, so
// the definition must not change under the transactions of a running cluster. A node
// therefore runs none in the keyspace until its definition is settled: its own proposal
// when it founds the cluster (SettleAtStart, SettleOwn), else the cluster's, which it
// adopts (Merge). A settled definition never changes by a merge with another implicit
// one; only an operator's (kura keyspace create, drop) replaces it.

// SettleAtStart reports whether a node settles its own proposal as it starts: it founds
// a new cluster, as the first node (a fresh data dir, no seeds) or one of the nodes a
// founding list names (node.Config.Founding), so there is no cluster's definition to
// learn. A node whose data dir was wiped and that is started without seeds looks the
// same; if the cluster it was a member of settled another definition, the conflict is
// met, and refused, when the two meet (Merge, TransactionsReady).
func SettleAtStart(fresh, founding, seeded bool) bool {
	return fresh && (founding || !seeded)
}

// Peer is what a node knows of another member of the cluster when it decides whether
// to settle its own proposal (SettleOwn).
type Peer struct {
	ID string
	// Up: gossip sees it up; a down member says nothing of its catalog.
	Up bool
	// Digest is the catalog digest it gossips (Catalog.Digest), DigestKnown whether it
	// gossiped one yet.
	Digest      uint64
	DigestKnown bool
	// Proposes: it gossips that it holds a proposal of its own, not settled yet.
	Proposes bool
	// PartitionTransactions: it announces that it runs partition instances (the gossip
	// feature "transactions"); a build that does not reads a definition with
	// transactions partition as per key.
	PartitionTransactions bool
	// CollectionInstances: it announces that it runs element records on their
	// collection's instance (Keyspace.CollectionInstances); a build that does not runs
	// them on their own.
	CollectionInstances bool
}

// SettleOwn decides whether node self settles its own proposal for a keyspace, and on
// what: once it has learned the ring (ringKnown: it knows the members), every other
// member that is up gossips the digest of this node's catalog, which lacks the proposal
// (Catalog.Definitions), so none of them holds a settled definition to adopt, and no
// member up with a smaller id proposes one of its own. That member settles first, and
// this one adopts its definition when it pulls the changed catalog (Merge): nodes that
// found a cluster together (each started with the others as seeds, or a topology file's
// addresses) settle on one definition without waiting for a node that is down, or that
// proposes none (--default-replication none, a build before settling). A member that
// holds a settled definition gossips another digest, and this node pulls its catalog
// and adopts it rather than settle. The definition settled keeps the proposal's
// transactions, unless a member does not run partition instances: then per key, the
// instances every build runs; and its element records' instances, unless a member does
// not run them on their collection's: then their own. It returns the definition to
// settle, or why not yet.
func SettleOwn(self string, proposal Keyspace, ringKnown bool, digest uint64, peers []Peer) (Keyspace, string) {
	if !ringKnown {
		return Keyspace{}, "this node has not learned the ring yet"
	}
	partition, collection := true, true
	for _, p := range peers {
		partition = partition && p.PartitionTransactions
		collection = collection && p.CollectionInstances
		switch {
		case !p.Up:
		case !p.DigestKnown:
			return Keyspace{}, fmt.Sprintf("member %s has not gossiped its catalog yet", p.ID)
		case p.Digest != digest:
			return Keyspace{}, fmt.Sprintf("member %s holds another catalog, which this node pulls", p.ID)
		case p.Proposes && p.ID < self:
			return Keyspace{}, fmt.Sprintf("member %s proposes a definition too, and settles first", p.ID)
		}
	}
	if proposal.PartitionTransactions() && !partition {
		proposal.Transactions = TransactionsKey
	}
	if !partition || !collection {
		proposal.CollectionInstances = false
	}
	return proposal, ""
}

// Merge merges definition in, learned from another node or created here, with old, the
// one this node holds, and returns the one to keep, truncations aside (they merge by
// max). Implicit definitions (at ImplicitTimestamp, this node's own proposal, and at
// SettledTimestamp) meet by their settling: a proposal yields to a settled definition,
// and a settled one is never replaced by another implicit one, since the instances of
// the keyspace's transactions could change under the rounds in flight. Two settled
// implicit definitions that differ conflict: nodes settled differently (founding
// together with other flags, or a wiped first node started again without seeds with
// other flags than its cluster's). Each node then keeps its own, and conflict is true on
// the node whose definition loses (ImplicitConflict), which refuses transactions in the
// keyspace from then on; the winner's nodes go on. Any other pair merges last writer
// wins.
func Merge(old, in Keyspace) (keep Keyspace, conflict bool) {
	switch {
	case old.Timestamp > SettledTimestamp || in.Timestamp > SettledTimestamp:
		if newerDefinition(in, old) {
			return in, false
		}
		return old, false
	case old.Timestamp == ImplicitTimestamp:
		return in, false // in is settled, or this node's proposal again
	case in.Timestamp == ImplicitTimestamp || sameDefinition(old, in):
		return old, false
	}
	return old, ImplicitConflict(old, in)
}

// ImplicitConflict reports whether, of two settled implicit definitions that differ,
// mine loses to theirs: the one of per-key transactions wins (every cluster before
// settling had it, and a node that meets it is the newcomer), then the one whose element
// records run on their own instances (likewise: every cluster before
// CollectionInstances), then, as records do, the larger encoding (which keeps an older
// build's "hash" partitioner over DefaultPartitioner).
func ImplicitConflict(mine, theirs Keyspace) bool {
	if mine.PartitionTransactions() != theirs.PartitionTransactions() {
		return mine.PartitionTransactions()
	}
	if mine.CollectionInstances != theirs.CollectionInstances {
		return mine.CollectionInstances
	}
	return newerDefinition(theirs, mine)
}

// sameDefinition reports whether a and b define the keyspace alike, truncations aside.
func sameDefinition(a, b Keyspace) bool {
	a.TruncatedAt, b.TruncatedAt = 0, 0
	return a.Timestamp == b.Timestamp && bytes.Equal(encode(a).Value, encode(b).Value)
}
