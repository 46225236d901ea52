// Package rebalance moves a keyspace to a new placement without losing an acknowledged
// write: an ordered keyspace to new split keys (kura rebalance), which it computes from
// a sample of the keys every node holds, or any replicated keyspace to a new replication
// (kura keyspace alter). Both walk the cluster through the same move, each step a new
// keyspace definition announced to every node, followed by a ring delay so that every
// coordinator has learned it. It also serves the steps other nodes' moves ask of this
// one (sample, copy, drop), and tells which records this node must keep (Keeps), which
// cleanup shares.
//
// The runtime sees the rest of the node only through small interfaces (Parts): the
// cluster view, the keyspace catalog, the schema propagation that announces a
// definition, the clock, the calls to peers, this node's own records, the copies to
// other replicas and the ring. The node wires the real ones and binds the message kind
// a step travels as.
package rebalance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/service/ringchange"
)

// View is the cluster as this node sees it; *cluster.Directory is one.
type View interface {
	ringchange.View
	Node(id string) (cluster.Node, bool)
}

// Catalog holds this node's keyspace definitions; *schema.Catalog is one.
type Catalog interface {
	Get(name string) (schema.Keyspace, error)
	Apply(ks schema.Keyspace) (changed bool, err error)
}

// Publisher gossips the catalog's new digest and announces a definition this node
// applied to every live node, waiting for them; *schemasync.Syncer is one.
type Publisher interface {
	Publish(ctx context.Context, ks schema.Keyspace) error
}

// Clock stamps definitions as writes are stamped (refusing on a clock that is off) and
// reads the wall clock that expiry deadlines compare with; *clockguard.Guard is one.
type Clock interface {
	Stamp() (hlc.Timestamp, error)
	Now() hlc.Timestamp
}

// Peers asks another node for a step of a rebalance: the request and the answer are
// the encoded kurav1.RebalanceStepRequest and RebalanceStepResponse, which the other
// node serves with HandleStep. The node binds the message kind.
type Peers interface {
	Step(ctx context.Context, to cluster.Node, request []byte) ([]byte, error)
}

// Store is this node's own copy of the data: reading every record of a keyspace
// (storage.Engine's Each) and dropping those it no longer holds (local.Local's
// DropUnless).
type Store interface {
	Each(keyspace string, withTombstones bool, fn func(lww.Record) error) error
	DropUnless(keyspace string, keep func(key []byte) bool) (removed, bytes int64, err error)
}

// Copier writes records to one node's replica, this node's own included (a
// remote.Set's Replica(to).Apply).
type Copier interface {
	Apply(ctx context.Context, to cluster.Node, keyspace string, records []lww.Record) error
}

// Placement is the ring: the current one and the future one while the ring changes;
// *placement.Ring is one.
type Placement interface {
	Ring() (*ring.Ring, error)
	FutureRing() (*ring.Ring, error)
}

// Parts are what a Rebalancer works with; every one is required.
type Parts struct {
	View      View
	Catalog   Catalog
	Publisher Publisher
	Clock     Clock
	Peers     Peers
	Store     Store
	Copier    Copier
	Placement Placement
}

// Config configures a Rebalancer.
type Config struct {
	// Self is this node's id: it serves its own steps without a call, and samples and
	// keeps the keys it is a replica of.
	Self string
	// DHT names the routing when the node routes with a DHT (chord, mlchord...): a
	// key's replicas then follow the DHT, which has no pending replicas for split keys,
	// so a rebalance is refused. Empty with onehop routing.
	DHT string
	// RingDelay is how long every coordinator takes to learn a new definition: the move
	// waits that long after each one it announces.
	RingDelay time.Duration
	// RetryInterval is how long a failed step waits before it is asked again: a gossip
	// round, in which a node that missed the definition's announcement learns it.
	RetryInterval time.Duration
	// ReplicaTimeout is the node's bound on a replica request; a copied batch may take
	// four of them and five seconds more, since it carries copyBatch records.
	ReplicaTimeout time.Duration
	// Logger; nil is slog.Default().
	Logger *slog.Logger
}

func (c Config) validate() error {
	switch {
	case c.Self == "":
		return errors.New("rebalance: Self is required")
	case c.RingDelay <= 0:
		return fmt.Errorf("rebalance: RingDelay %s must be positive", c.RingDelay)
	case c.RetryInterval <= 0:
		return fmt.Errorf("rebalance: RetryInterval %s must be positive", c.RetryInterval)
	}
	return nil
}

func (p Parts) validate() error {
	if p.View == nil || p.Catalog == nil || p.Publisher == nil || p.Clock == nil || p.Peers == nil ||
		p.Store == nil || p.Copier == nil || p.Placement == nil {
		return errors.New("rebalance: every part is required")
	}
	return nil
}

// Rebalancer runs this node's rebalances and serves the steps other nodes' ask of it.
type Rebalancer struct {
	cfg       Config
	log       *slog.Logger
	view      View
	catalog   Catalog
	publisher Publisher
	clock     Clock
	peers     Peers
	store     Store
	copier    Copier
	placement Placement

	// stepsMu guards steps: the steps this node runs for other nodes' moves, by request
	// (HandleStep).
	stepsMu sync.Mutex
	steps   map[string]*stepJob
}

// New returns a Rebalancer for one node, or the error of an invalid Config or Parts.
func New(cfg Config, parts Parts) (*Rebalancer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := parts.validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Rebalancer{cfg: cfg, log: log, view: parts.View, catalog: parts.Catalog, publisher: parts.Publisher,
		clock: parts.Clock, peers: parts.Peers, store: parts.Store, copier: parts.Copier, placement: parts.Placement, steps: map[string]*stepJob{}}, nil
}
