// Package placement answers the coordinator's one placement question, "which nodes hold
// this key (or this range), and what is each of them doing", for every routing mode
// behind one interface: Ring places replicas on the full ring view with the keyspace's
// strategy (onehop); DHT finds a key's owner by a chord or mlchord lookup and places the
// further replicas on its successors, per DC where the keyspace asks for it. The
// power-aware placement of paper 003 will be a third implementation.
package placement

import (
	"context"
	"errors"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
)

// Member is a node that holds a key's data, with its state as the view reports it.
type Member struct {
	ID    string
	DC    string
	State cluster.State
	// Pending: the member will hold the data once a move in progress completes (it joins,
	// replaces a dead node, or takes over from a leaving one). It receives writes, and
	// the level is raised by one for it; its read answers count only on top of the
	// level's (coord asks it with the replicas that serve reads).
	Pending bool
}

// Counts reports whether the member's acknowledgement of a write counts for a level.
func (m Member) Counts() bool { return !m.Pending && m.State.Writable() }

// Reads reports whether the member serves reads whose answers count for a level.
func (m Member) Reads() bool { return !m.Pending && m.State.Readable() }

// Receives reports whether the member is sent writes that do not count: a pending
// member, or a joining one.
func (m Member) Receives() bool { return (m.Pending || m.State.Pending()) && m.State.Reachable() }

// RangeReplicas is a token range and the members that hold it, primary first.
type RangeReplicas struct {
	Range    ring.Range
	Replicas []Member
}

// Placement is where data lives.
type Placement interface {
	// Replicas returns the replica set of key, primary first. It is built in buf's
	// memory when buf has room (buf's contents are overwritten; nil is fine), so that a
	// caller that reuses buf allocates nothing for it.
	Replicas(ctx context.Context, ks schema.Keyspace, key []byte, buf []Member) ([]Member, error)
	// ChunkOwners returns the node that stores each chunk key of an erasure-coded
	// keyspace, by index: the primary owner of the chunk key's hash token.
	ChunkOwners(ctx context.Context, ks schema.Keyspace, chunkKeys [][]byte) ([]Member, error)
	// ScanRanges returns the token ranges a scan of [start, end) must read (all of them
	// with the hash partitioner, those the interval maps to with the ordered one), each
	// with its replicas. Ranges with the same replicas (members, order and states) share
	// one Replicas slice, so that a caller can group them by it. The caller must not
	// modify them: one plan may serve many scans.
	ScanRanges(ctx context.Context, ks schema.Keyspace, start, end []byte) ([]RangeReplicas, error)
	// Members returns every node that holds data, by id.
	Members(ctx context.Context) ([]Member, error)
}

// ErrNoRoute means the placement could not tell where a key lives: the ring is empty,
// or a DHT lookup failed or named a node the view does not know. The coordinator
// answers it with unavailable.
var ErrNoRoute = errors.New("placement: no route")

// withStates attaches each member's state from the view.
func withStates(view cluster.View, members []ring.Member) []Member {
	return appendWithStates(make([]Member, 0, len(members)), view, members)
}

// appendWithStates appends members to dst, each with its state from the view.
func appendWithStates(dst []Member, view cluster.View, members []ring.Member) []Member {
	for _, m := range members {
		dst = append(dst, Member{ID: m.ID, DC: m.DC, State: view.State(m.ID)})
	}
	return dst
}
