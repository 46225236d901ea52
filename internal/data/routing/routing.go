// Package routing answers the coordinator's one routing question, "which node owns this
// key", behind one interface with three answers: onehop (the full ring view from
// membership; no forwarding), chord and mlchord (the DHT cores of internal/core/routing/chord, where a
// lookup is forwarded node to node). `--routing onehop|chord|mlchord` picks one.
//
// `kura bench routing` compares the three (and the paper's ML-Chord rule as printed) on
// the simulator; that experiment is package internal/tools/routing/experiment.
package routing

import (
	"context"
	"errors"

	"github.com/kuradb/kura/internal/core/ring"
)

// Router finds the node that owns a token. The coordinator asks it and never walks
// finger tables itself.
type Router interface {
	// Lookup returns where the keys of token live. It takes the token, not the key, since
	// the keyspace's partitioner decides a key's token (ring.GroupedPartitioner hashes a
	// key's tag), and the DHT must place a key where the ring's scans, repair and
	// streaming look for it.
	Lookup(ctx context.Context, token ring.Token) (Route, error)
	// Name is the router's --routing name: onehop, chord or mlchord.
	Name() string
}

// Route is a lookup's answer.
type Route struct {
	// Owner is the id of the node that owns the key.
	Owner string
	// Successors are the ids of the nodes after the owner on the ring, nearest first,
	// where the store places the key's further replicas.
	Successors []string
	// Hops counts the forwarding hops the lookup's request made from the coordinator
	// until it reached the owner, as the paper counts them; InterDCHops those between two
	// DCs. Both are 0 for onehop, which forwards nothing.
	Hops        int
	InterDCHops int
}

// ErrNoRing is returned by Lookup when the router has no ring to route on yet: no
// membership view for onehop, or a node that has not joined for the DHTs.
var ErrNoRing = errors.New("routing: no ring")
