// Package coord is the coordinator: any node takes a client's put, get, delete or scan,
// finds the key's replicas on the ring, sends the request to them over the transport,
// and answers when the consistency level is met. It keeps hints for replicas that are
// down and repairs stale replicas it reads from. It also serves the replica side of
// those requests for other coordinators.
package coord

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/kuradb/kura/cluster"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/ring"
	"github.com/kuradb/kura/routing"
	"github.com/kuradb/kura/schema"
	"github.com/kuradb/kura/storage"
	"github.com/kuradb/kura/transport"
)

// Limits bound what a request may carry.
type Limits struct {
	KeyBytesMax      int // default 64 KiB
	ValueBytesMax    int // default 16 MiB
	ScanLimitDefault int // rows a scan returns when the client names no limit; default 1000
	ScanLimitMax     int // default 100,000
}

// DefaultLimits are the limits a node applies unless configured otherwise.
func DefaultLimits() Limits {
	return Limits{KeyBytesMax: 64 << 10, ValueBytesMax: 16 << 20, ScanLimitDefault: 1000, ScanLimitMax: 100_000}
}

// Config configures a coordinator.
type Config struct {
	Limits Limits
	// ReplicaTimeout bounds each request to a replica, including the background ones
	// that finish a write after the client was answered; a replica that misses it gets
	// a hint. Default 10 s (several WAN round trips).
	ReplicaTimeout time.Duration
	// Vnodes is the number of tokens per node; every node of a cluster must use the same.
	Vnodes int
	// Router, when set, finds a key's owner by DHT lookup (chord, mlchord): the replicas
	// are then the owner and its successors, as many as the keyspace's replication factor
	// (datacenters are not considered). Nil places replicas on the full ring view with the
	// keyspace's strategy (onehop).
	Router routing.Router
	Logger *slog.Logger
}

// Proximity ranks nodes for reads: a smaller distance is asked first.
type Proximity interface {
	Distance(nodeID string) time.Duration
}

// Coordinator serves client requests and replica requests of one node.
type Coordinator struct {
	cfg       Config
	view      cluster.View
	catalog   *schema.Catalog
	engine    *storage.Engine
	transport *transport.Transport
	clock     *hlc.Clock
	proximity Proximity
	log       *slog.Logger
	hints     *hintStore

	ringMu      sync.Mutex
	ring        *ring.Ring
	ringVersion uint64
	placements  map[string]*ring.Placement // by strategy, for the current ring
}

// Message kinds the coordinator sends between nodes.
var (
	kindMutate = transport.RegisterKind(2, "mutate")
	kindRead   = transport.RegisterKind(3, "read")
	kindScan   = transport.RegisterKind(4, "scan")
)

// New returns a coordinator over the node's parts.
func New(cfg Config, view cluster.View, catalog *schema.Catalog, engine *storage.Engine, tr *transport.Transport, clock *hlc.Clock, proximity Proximity) *Coordinator {
	defaults := DefaultLimits()
	if cfg.Limits.KeyBytesMax <= 0 {
		cfg.Limits.KeyBytesMax = defaults.KeyBytesMax
	}
	if cfg.Limits.ValueBytesMax <= 0 {
		cfg.Limits.ValueBytesMax = defaults.ValueBytesMax
	}
	if cfg.Limits.ScanLimitDefault <= 0 {
		cfg.Limits.ScanLimitDefault = defaults.ScanLimitDefault
	}
	if cfg.Limits.ScanLimitMax <= 0 {
		cfg.Limits.ScanLimitMax = defaults.ScanLimitMax
	}
	if cfg.ReplicaTimeout <= 0 {
		cfg.ReplicaTimeout = 10 * time.Second
	}
	if cfg.Vnodes <= 0 {
		cfg.Vnodes = ring.DefaultVnodes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Coordinator{
		cfg:       cfg,
		view:      view,
		catalog:   catalog,
		engine:    engine,
		transport: tr,
		clock:     clock,
		proximity: proximity,
		log:       cfg.Logger,
		hints:     &hintStore{engine: engine},
	}
}

// Ring returns the token ring of the nodes currently known, rebuilt when the view changes.
// Dead nodes stay on the ring: replicas do not move because a node is down.
func (c *Coordinator) Ring() (*ring.Ring, error) {
	c.ringMu.Lock()
	defer c.ringMu.Unlock()
	version := c.view.Version()
	if c.ring != nil && c.ringVersion == version {
		return c.ring, nil
	}
	nodes := c.view.Nodes()
	members := make([]ring.Member, len(nodes))
	for i, n := range nodes {
		members[i] = ring.Member{ID: n.ID, DC: n.DC, Tokens: n.RingTokens(c.cfg.Vnodes)}
	}
	r, err := ring.New(members)
	if err != nil {
		return nil, fmt.Errorf("build ring: %w", err)
	}
	c.ring, c.ringVersion = r, version
	c.placements = map[string]*ring.Placement{}
	return r, nil
}

// placement returns the precomputed replica sets of a strategy on the current ring.
func (c *Coordinator) placement(s ring.Strategy) (*ring.Placement, error) {
	r, err := c.Ring()
	if err != nil {
		return nil, err
	}
	c.ringMu.Lock()
	defer c.ringMu.Unlock()
	if c.ring != r {
		return r.Placement(s), nil // the ring changed meanwhile; do not cache against it
	}
	p, ok := c.placements[s.String()]
	if !ok {
		p = r.Placement(s)
		c.placements[s.String()] = p
	}
	return p, nil
}

// replicaSet is where one key lives.
type replicaSet struct {
	keyspace schema.Keyspace
	members  []ring.Member // placement order, primary first
	rfPerDC  map[string]int
}

func (c *Coordinator) replicasFor(ctx context.Context, ks schema.Keyspace, key []byte) (replicaSet, error) {
	var members []ring.Member
	if c.cfg.Router != nil {
		route, err := c.cfg.Router.Lookup(ctx, key)
		if err != nil {
			return replicaSet{}, fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		ids := append([]string{route.Owner}, route.Successors...)
		for _, id := range ids[:min(len(ids), ks.Strategy().ReplicationFactor())] {
			n, ok := c.view.Node(id)
			if !ok {
				return replicaSet{}, fmt.Errorf("%w: routing named node %s, unknown to the directory", ErrUnavailable, id)
			}
			members = append(members, ring.Member{ID: n.ID, DC: n.DC})
		}
	} else {
		p, err := c.placement(ks.Strategy())
		if err != nil {
			return replicaSet{}, err
		}
		members = p.ReplicasFor(ks.Partition().Token(key))
	}
	dcs := make([]string, len(members))
	for i, m := range members {
		dcs[i] = m.DC
	}
	return replicaSet{keyspace: ks, members: members, rfPerDC: consistency.Counts(dcs)}, nil
}

// liveByDistance returns the live members nearest first: this node, then its DC, then
// the others, each group by measured distance.
func (c *Coordinator) liveByDistance(members []ring.Member) []ring.Member {
	self := c.view.Self()
	live := make([]ring.Member, 0, len(members))
	for _, m := range members {
		if c.view.Alive(m.ID) {
			live = append(live, m)
		}
	}
	rank := func(m ring.Member) (int, time.Duration) {
		switch {
		case m.ID == self.ID:
			return 0, 0
		case m.DC == self.DC:
			return 1, c.proximity.Distance(m.ID)
		default:
			return 2, c.proximity.Distance(m.ID)
		}
	}
	sort.SliceStable(live, func(i, j int) bool {
		gi, di := rank(live[i])
		gj, dj := rank(live[j])
		if gi != gj {
			return gi < gj
		}
		return di < dj
	})
	return live
}

func (c *Coordinator) peer(m ring.Member) (transport.Peer, error) {
	n, ok := c.view.Node(m.ID)
	if !ok {
		return transport.Peer{}, fmt.Errorf("node %s is not in the directory", m.ID)
	}
	return toPeer(n), nil
}

func toPeer(n cluster.Node) transport.Peer {
	return transport.Peer{ID: n.ID, DC: n.DC, Addr: n.Addr}
}

func (c *Coordinator) checkKey(key []byte) error {
	if len(key) == 0 {
		return invalid("empty key")
	}
	if len(key) > c.cfg.Limits.KeyBytesMax {
		return invalid("key of %d bytes exceeds the limit of %d bytes", len(key), c.cfg.Limits.KeyBytesMax)
	}
	return nil
}

// Limits returns the limits the coordinator enforces.
func (c *Coordinator) Limits() Limits { return c.cfg.Limits }

// replicaContext bounds a request to one replica. It is detached from the client's
// context so that a write still reaches slow replicas, or leaves hints, after the client
// was answered.
func (c *Coordinator) replicaContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.cfg.ReplicaTimeout)
}
