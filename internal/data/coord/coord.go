// Package coord is the coordinator: any node takes a client's put, get, delete or scan,
// asks Placement where the key lives, reaches the replicas through the Replica seam, and
// answers when the consistency level is met. It keeps hints for replicas that are down and
// repairs stale replicas it reads from.
//
// The coordinator sees the rest of the node only through small interfaces (Parts): the
// cluster view (who is in which state), the keyspace catalog, Placement, the replicas,
// the hint store, the clock and the proximity of peers. The node runtime gives it the
// real ones; the simulator (internal/tools/sim/datapath) gives it the same replicas and storage over a
// simulated network, in virtual time.
package coord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/base/workers"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/hints"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/data/sched"
)

// Limits bound what a request may carry.
type Limits struct {
	KeyBytesMax      int // default 64 KiB
	ValueBytesMax    int // default 16 MiB
	ScanLimitDefault int // rows a scan returns when the client names no limit; default 1000
	ScanLimitMax     int // default 100,000
	// AnswerBytesMax bounds the values GetAll answers (GetMany, MGET, a pipeline's
	// GETs): once the values read reach it, the keys not read yet answer ErrAnswerFull,
	// so that a request naming a large value a thousand times cannot make the node hold
	// them all. A scan whose records' keys and values pass it is refused with
	// ErrAnswerFull. Default 64 MiB (the Go client's receive limit).
	AnswerBytesMax int
}

// DefaultLimits are the limits a node applies unless configured otherwise.
func DefaultLimits() Limits {
	return Limits{KeyBytesMax: 64 << 10, ValueBytesMax: 16 << 20, ScanLimitDefault: 1000, ScanLimitMax: 100_000, AnswerBytesMax: 64 << 20}
}

// Config configures a coordinator.
type Config struct {
	Limits Limits
	// ReplicaTimeout bounds each request to a replica, including the background ones
	// that finish a write after the client was answered; a replica that misses it gets
	// a hint. Default 10 s (several WAN round trips).
	ReplicaTimeout time.Duration
	// LWTRounds bounds the Paxos rounds one lightweight transaction tries, each lost to
	// another coordinator's higher ballot followed by a back-off, before it gives up
	// with a timeout. Default 16.
	LWTRounds int
	// LWTBackoff is the first back-off's ceiling after a lost round: the wait is drawn
	// uniformly below a ceiling that doubles with each lost round, up to LWTBackoffMax.
	// Defaults 2 ms and 1 s.
	LWTBackoff, LWTBackoffMax time.Duration
	// BackgroundTasksMax bounds the tasks a request leaves running (an ANY write's
	// copies, read repairs, a scan's progress notes); once that many run, the next
	// request to leave one waits for a slot. Default 1024.
	BackgroundTasksMax int
	// TombstoneGrace is how long the replicas' storage keeps a tombstone or an expired
	// record before removing it (storage.Options.TombstoneGrace): a counter's increment
	// that finds no header reads it as the bound of an earlier life's death
	// (CounterRead.DiedAt). Default storage's default, 10 days; a node passes its
	// engine's (internal/assembly/node/datapath.go).
	TombstoneGrace time.Duration
	Logger         *slog.Logger
}

// defaultTombstoneGrace is storage.DefaultTombstoneGrace, which the coordinator may not
// link (layers_test.go keeps storage out of it): Config.TombstoneGrace's default, for a
// coordinator built without an engine's.
const defaultTombstoneGrace = 10 * 24 * time.Hour

// Keyspaces looks keyspace definitions up; *schema.Catalog is one.
type Keyspaces interface {
	Get(name string) (schema.Keyspace, error)
}

// Replicas hands out any node's Replica; *remote.Set is one.
type Replicas interface {
	Replica(n cluster.Node) replica.Replica
}

// Hints stores the writes owed to replicas that missed them; *hints.Store is one.
type Hints interface {
	Add(target, keyspace string, rec lww.Record) error
	Pending() (int, error)
	For(target string, limit, bytesMax int) (pending []hints.Hint, more bool, err error)
	Delivered(h hints.Hint) error
}

// Clock stamps writes and tells the time expiry deadlines are compared with;
// *clockguard.Guard is one. Stamp fails when this node's clock is too far from its peers'
// for its timestamps to be trusted; the write is then refused as unavailable before
// anything is stored. Observe merges a timestamp seen elsewhere (a higher Paxos ballot,
// the record a lightweight transaction overwrites), so that the next stamp is above it,
// and refuses one too far ahead of the cluster's clock.
type Clock interface {
	Stamp() (hlc.Timestamp, error)
	Now() hlc.Timestamp
	Observe(ts hlc.Timestamp) error
}

// Proximity ranks nodes for reads: a smaller distance is asked first.
type Proximity interface {
	Distance(nodeID string) time.Duration
}

// Parts are what a coordinator works with: every one an interface the simulator can
// stand in for.
type Parts struct {
	View      cluster.View
	Keyspaces Keyspaces
	Placement placement.Placement
	Replicas  Replicas
	Hints     Hints
	Clock     Clock
	Proximity Proximity
	// Reads gives the node's read policy, whose scan-side options (paper 004's P and
	// RaS) the coordinator applies; nil is FIFO with sequential scans.
	Reads ReadPolicy
	// Rows estimates the rows each node holds, for parallel scans; nil knows none.
	Rows RowEstimates
	// Workers runs the requests to other nodes, the batches' reads and writes and the
	// work a request leaves running on goroutines kept between requests (see package
	// workers); nil starts a goroutine for each. Close waits for that work either way.
	Workers *workers.Pool
	// TypedRecords reports whether every node of the cluster reads records of a type
	// (lww.Record.Type other than String): until then a write of one is refused as
	// unavailable. Nil: never.
	TypedRecords func(lww.Type) bool
	// TransactionsReady refuses the lightweight transactions of a keyspace whose
	// definition this node may still change under them (schema.Catalog.TransactionsReady:
	// the default keyspace before it is settled); they then fail as unavailable. Nil:
	// none refused.
	TransactionsReady func(keyspace string) error
}

// ReadPolicy gives the node's current read policy; *sched.Stage is one.
type ReadPolicy interface {
	Policy() sched.Policy
}

// RowEstimates gives the rows a node holds of a keyspace, as it last published them
// (gossiped per node); ok is false when the node published none.
type RowEstimates interface {
	Rows(node, keyspace string) (rows int64, ok bool)
}

// Coordinator serves client requests of one node.
type Coordinator struct {
	cfg       Config
	view      cluster.View
	keyspaces Keyspaces
	placement placement.Placement
	replicas  Replicas
	hints     Hints
	clock     Clock
	proximity Proximity
	reads     ReadPolicy
	rows      RowEstimates
	// tasks runs and counts the work beside the requests, which Close waits for.
	tasks *tasks
	log   *slog.Logger
	// lwtKeys queues this coordinator's lightweight transactions per key.
	lwtKeys keyQueue
	// lwtCommits are the commits of its transactions' chosen proposals still on their way.
	lwtCommits inflightCommits
	// pending is the reads this coordinator awaits from each node (kura's replica choice).
	pending pendingReads
	// scans numbers this coordinator's scans (nextScanID).
	scans atomic.Uint64
	// scanRereads counts the scan rounds read again after a digest mismatch.
	scanRereads atomic.Uint64
	// gate holds the writes this coordinator stamps while a cluster snapshot is taken.
	gate *writeGate
	// typedRecords is Parts.TypedRecords.
	typedRecords func(lww.Type) bool
	// transactionsReady is Parts.TransactionsReady.
	transactionsReady func(keyspace string) error
}

// New returns a coordinator over the node's parts.
func New(cfg Config, parts Parts) *Coordinator {
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
	if cfg.Limits.AnswerBytesMax <= 0 {
		cfg.Limits.AnswerBytesMax = defaults.AnswerBytesMax
	}
	if cfg.ReplicaTimeout <= 0 {
		cfg.ReplicaTimeout = 10 * time.Second
	}
	if cfg.LWTRounds <= 0 {
		cfg.LWTRounds = 16
	}
	if cfg.LWTBackoff <= 0 {
		cfg.LWTBackoff = 2 * time.Millisecond
	}
	if cfg.LWTBackoffMax <= 0 {
		cfg.LWTBackoffMax = time.Second
	}
	if cfg.TombstoneGrace <= 0 {
		cfg.TombstoneGrace = defaultTombstoneGrace
	}
	if cfg.BackgroundTasksMax <= 0 {
		cfg.BackgroundTasksMax = backgroundTasksMax
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Coordinator{
		cfg:       cfg,
		view:      parts.View,
		keyspaces: parts.Keyspaces,
		placement: parts.Placement,
		replicas:  parts.Replicas,
		hints:     parts.Hints,
		clock:     parts.Clock,
		proximity: parts.Proximity,
		reads:     parts.Reads,
		rows:      parts.Rows,
		tasks:     newTasks(parts.Workers, cfg.BackgroundTasksMax),
		log:       cfg.Logger,
		gate:      newWriteGate(),
		// Nil leaves typed records refused: a coordinator assembled without a switch.
		typedRecords:      parts.TypedRecords,
		transactionsReady: parts.TransactionsReady,
	}
}

// Close waits for the work the coordinator's requests left running (requests to
// replicas, writes' copies, repairs) to end, and from then on runs no new background
// work: a write's copy is hinted instead, a repair skipped. The node calls it once its
// client front ends are closed, before its transport and storage close, so that what
// was acknowledged is on the replicas or in hints by then. Requests may still be served
// afterwards; their requests to replicas run, untracked.
func (c *Coordinator) Close() { c.tasks.close() }

// member refuses a client request at once, as unavailable (LeftRingError), when this
// node is no longer a member of its cluster: it marked itself left at the end of a
// decommission, or learned it was removed. It may keep running for a while after (a ring
// delay, while the others learn it is gone), but its peers refuse what it would send
// them (replica.ErrNotMember): without this check each request would wait on those
// refusals only to fail, rather than be sent to another node straight away. A leaving
// node still serves: it owns its ranges until it has handed them over.
func (c *Coordinator) member() error {
	if self := c.view.Self(); self.Status == cluster.StatusLeft || self.Status == cluster.StatusRemoved {
		return &LeftRingError{Node: self.ID, Status: self.Status}
	}
	return nil
}

// replicaSet returns key's replicas, in buf's memory when it has room (nil is fine). A
// placement that cannot route is unavailable.
func (c *Coordinator) replicaSet(ctx context.Context, ks schema.Keyspace, key []byte, buf []placement.Member) ([]placement.Member, error) {
	members, err := c.placement.Replicas(ctx, ks, key, buf)
	return members, routed(err)
}

// routed turns a placement failure into unavailable.
func routed(err error) error {
	if errors.Is(err, placement.ErrNoRoute) {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return err
}

// replica returns member's Replica.
func (c *Coordinator) replica(m placement.Member) (replica.Replica, error) {
	n, ok := c.view.Node(m.ID)
	if !ok {
		return nil, fmt.Errorf("node %s is not in the directory", m.ID)
	}
	return c.replicas.Replica(n), nil
}

// countedPerDC counts, per DC, the members whose acknowledgements count for a level:
// every member but the pending ones (joining), which receive writes in addition.
func countedPerDC(members []placement.Member) map[string]int {
	counts := map[string]int{}
	for _, m := range members {
		if !m.Pending && !m.State.Pending() {
			counts[m.DC]++
		}
	}
	return counts
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

// checkType refuses a record of type t that not every node could store: a node of a
// build from before types refuses a typed record's stored form, and takes the internode
// record for a string's. A type this build does not know is an invalid argument.
func (c *Coordinator) checkType(t lww.Type) error {
	switch {
	case t == lww.String:
		return nil
	case t > lww.TypeMax:
		return invalid("unknown record type %d", t)
	case c.typedRecords == nil || !c.typedRecords(t):
		return fmt.Errorf("%w: a %v record is written only once every node of the cluster reads typed records, and a node runs an older build: upgrade it", ErrUnavailable, t)
	}
	return nil
}

// checkValue refuses a value larger than Limits.ValueBytesMax.
func (c *Coordinator) checkValue(value []byte) error {
	if len(value) > c.cfg.Limits.ValueBytesMax {
		return invalid("value of %d bytes exceeds the limit of %d bytes", len(value), c.cfg.Limits.ValueBytesMax)
	}
	return nil
}

// visible reports whether rec, the newest version of its key in keyspace ks, is a value
// a client sees at now: neither deleted nor expired (lww.Record.Live), and written after
// the keyspace's last truncation. A version that is not still wins reconciliation: it
// shadows the older ones.
func visible(ks schema.Keyspace, rec lww.Record, now hlc.Timestamp) bool {
	return rec.Live(now) && rec.Timestamp > ks.TruncatedAt
}

// Limits returns the limits the coordinator enforces.
func (c *Coordinator) Limits() Limits { return c.cfg.Limits }

// replicaContext bounds a request to one replica. It is detached from the client's
// context so that a write still reaches slow replicas, or leaves hints, after the client
// was answered.
func (c *Coordinator) replicaContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.cfg.ReplicaTimeout)
}

// callContext bounds one request to node's replica. A remote replica gets
// replicaContext's timeout. This node's own replica is called on the gathering goroutine
// and returns when its storage does (a closed engine or read stage fails the call), so
// it gets no timer: a context detached from the client's, as replicaContext's, that
// never ends.
func (c *Coordinator) callContext(node string) (context.Context, context.CancelFunc) {
	if node == c.view.Self().ID {
		return context.Background(), func() {}
	}
	return c.replicaContext()
}

// HintsPending returns how many hints this node holds for other replicas.
func (c *Coordinator) HintsPending() (int, error) { return c.hints.Pending() }
