// Package schemasync propagates keyspace definitions between nodes: it creates,
// truncates and drops keyspaces in this node's catalog and announces each new
// definition to every live node, applies the definitions other nodes announce, answers
// and makes the pulls of a whole catalog that a node gossiping another schema digest
// triggers, and drops from this node's disk the records a truncation it learns hides.
//
// Definitions merge last-writer-wins in the catalog (package schema), so an
// announcement lost or applied twice does no harm: gossip carries each node's catalog
// digest, and a node that sees a digest other than its own pulls that node's catalog.
//
// The Syncer sees the rest of the node only through small interfaces (Parts): the
// catalog, the cluster view, the calls to peers (the node binds their message kinds),
// the gossip of the digest, the clocks and the engine's truncation.
package schemasync

import (
	"context"
	"errors"
	"log/slog"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/schema"
)

// Catalog is this node's keyspace catalog; *schema.Catalog is one.
type Catalog interface {
	Get(name string) (schema.Keyspace, error)
	Apply(ks schema.Keyspace) (changed bool, err error)
	Truncate(name string, truncatedAt hlc.Timestamp) (schema.Keyspace, error)
	Drop(name string, droppedAt hlc.Timestamp) (schema.Keyspace, error)
	// Truncations returns each keyspace's last truncation.
	Truncations() map[string]hlc.Timestamp
	// Definitions returns every definition, dropped ones included, as they travel.
	Definitions() []schema.Keyspace
	// Digest sums the definitions up: two catalogs with the same digest agree.
	Digest() uint64
}

// View is the cluster as this node sees it; cluster.View is one.
type View interface {
	Nodes() []cluster.Node
	State(id string) cluster.State
}

// Peers makes the calls to other nodes; the node binds their message kinds.
type Peers interface {
	// Announce sends a peer an encoded kurav1.SchemaUpdate, which it serves with
	// HandleUpdate.
	Announce(ctx context.Context, to cluster.Node, update []byte) error
	// Pull asks a peer for its whole catalog, which it serves with HandlePull: an
	// encoded kurav1.SchemaPullResponse.
	Pull(ctx context.Context, from cluster.Node) ([]byte, error)
}

// Digests gossips the catalog's digest, so that a node that missed a definition
// notices that its own differs and pulls the catalog.
type Digests interface {
	PublishDigest(digest uint64)
}

// Clock stamps a new keyspace's definition; *hlc.Clock is one. Unlike Guard it never
// refuses: CreateKeyspace has always stamped with the node's hybrid logical clock
// itself, not through the guard that Truncate and DropKeyspace stamp with.
type Clock interface {
	Now() hlc.Timestamp
}

// Guard stamps truncations and drops as writes are stamped, refusing on a clock that
// is off, and moves the clock past a truncation learned; *clockguard.Guard is one.
type Guard interface {
	Stamp() (hlc.Timestamp, error)
	Observe(ts hlc.Timestamp) error
}

// Store removes a keyspace's records hidden by a truncation from this node's disk;
// *storage.Engine is one.
type Store interface {
	Truncate(keyspace string, truncatedAt hlc.Timestamp) (removed int, err error)
}

// Parts are what a Syncer works with; every one is required.
type Parts struct {
	Catalog Catalog
	View    View
	Peers   Peers
	Digests Digests
	Clock   Clock
	Guard   Guard
	Store   Store
}

// Config configures a Syncer.
type Config struct {
	// Self is this node's id: it announces to every node but itself.
	Self string
	// Logger; nil is slog.Default().
	Logger *slog.Logger
}

// Syncer propagates this node's keyspace definitions and applies the others'.
type Syncer struct {
	self    string
	log     *slog.Logger
	catalog Catalog
	view    View
	peers   Peers
	digests Digests
	clock   Clock
	guard   Guard
	store   Store
	// truncated wakes DropTruncated when a truncation is learned; one pending wake-up
	// is enough, since each pass drops every truncation learned so far.
	truncated chan struct{}
}

// New returns a Syncer for one node, or the error of an invalid Config or Parts.
func New(cfg Config, parts Parts) (*Syncer, error) {
	if cfg.Self == "" {
		return nil, errors.New("schemasync: Self is required")
	}
	if parts.Catalog == nil || parts.View == nil || parts.Peers == nil || parts.Digests == nil ||
		parts.Clock == nil || parts.Guard == nil || parts.Store == nil {
		return nil, errors.New("schemasync: every part is required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Syncer{self: cfg.Self, log: log, catalog: parts.Catalog, view: parts.View, peers: parts.Peers,
		digests: parts.Digests, clock: parts.Clock, guard: parts.Guard, store: parts.Store,
		truncated: make(chan struct{}, 1)}, nil
}
