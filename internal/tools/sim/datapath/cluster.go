// Package datapath runs kura's data path in virtual time: every node's coordinator,
// replicas and storage (Pebble on a strict in-memory filesystem, which forgets what was
// not synced when a node crashes), connected by a simulated network with the latency,
// bandwidth, jitter, loss and partitions of sim.Network. It runs inside a
// testing/synctest bubble, whose clock stands still until every goroutine is blocked:
// the coordinator's own code, goroutines, deadlines and all, runs unchanged, and a
// 9-node, 3-DC scenario of writes, crashes, hints and read repair takes milliseconds of
// real time. With the same seed, a scenario gives the same run, message for message:
// the network puts every message on its links in an order independent of goroutine
// scheduling, and the links draw their randomness from the seed.
//
// Each node's data path (read stage, replica, coordinator, repairer) is assembled by
// node.AssembleDataPath, the wiring the real node uses; what differs is what it is
// assembled over. Membership is not simulated: a scenario says when nodes see each
// other's state (SetState), as a perfect failure detector would, and the nodes share the
// bubble's clock, so their clock guards have nothing to measure.
package datapath

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/paxos"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/antientropy"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica/local"
	"github.com/kuradb/kura/internal/data/replica/remote"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/io/clockguard"
	"github.com/kuradb/kura/internal/io/storage"
	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/tools/sim"
	"github.com/kuradb/kura/internal/tools/sim/simnet"
)

// Config describes a simulated cluster.
type Config struct {
	// Seed drives the links' loss and jitter.
	Seed uint64
	// Nodes lists every node with its DC, in the order they are started.
	Nodes []NodeSpec
	// Links gives latency, bandwidth, jitter and loss per DC pair.
	Links sim.LinkModel
	// ReplicaTimeout bounds each request to a replica; default 2 s.
	ReplicaTimeout time.Duration
	// Vnodes per node; default 8, so that small clusters still spread their ranges.
	Vnodes int
	// Trace, when set, sees every message delivered, lost or dropped.
	Trace func(string)
	// TombstoneGrace is every engine's tombstone grace; default storage's.
	TombstoneGrace time.Duration
	// ReadWorkers and ReadPolicy set every node's read stage (package sched); defaults
	// sched's, and FIFO with sequential scans.
	ReadWorkers int
	ReadPolicy  sched.Policy
	// Rows, when set, are the row estimates every coordinator sizes parallel scans by;
	// nil gives each node's exact live row count, as if gossip were instant.
	Rows coord.RowEstimates
}

// NodeSpec places one node.
type NodeSpec struct {
	ID, DC string
}

// Cluster is a simulated cluster. Start it, and use it, inside synctest.Test.
type Cluster struct {
	cfg     Config
	net     *simnet.Network
	nodes   map[string]*Node
	order   []string
	schemas []schema.Keyspace
	power   map[string]cluster.Power // set by SetPower, known to every node that starts
	rows    coord.RowEstimates
	stop    chan struct{}
	done    chan struct{}
}

// Node is one simulated node: its disk survives a crash, everything else is rebuilt on
// restart.
type Node struct {
	spec    NodeSpec
	fs      *vfs.MemFS
	engine  *storage.Engine
	dir     *cluster.Directory
	catalog *schema.Catalog
	local   *local.Local
	stage   *sched.Stage
	clock   *clockguard.Guard
	coord   *coord.Coordinator
	repair  *antientropy.Repairer
	ep      transport.Endpoint
	up      bool
}

// Start builds the cluster and starts its network's driver.
func Start(cfg Config) (*Cluster, error) {
	if cfg.ReplicaTimeout <= 0 {
		cfg.ReplicaTimeout = 2 * time.Second
	}
	if cfg.Vnodes <= 0 {
		cfg.Vnodes = 8
	}
	var dcs []string
	seen := map[string]bool{}
	for _, n := range cfg.Nodes {
		if !seen[n.DC] {
			seen[n.DC] = true
			dcs = append(dcs, n.DC)
		}
	}
	links, err := sim.NewNetwork(dcs, cfg.Links, sim.TCPIPv4, cfg.Seed)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, net: simnet.New(links, cfg.Trace), nodes: map[string]*Node{}, power: map[string]cluster.Power{}, stop: make(chan struct{}), done: make(chan struct{})}
	c.rows = cfg.Rows
	if c.rows == nil {
		c.rows = exactRows{c}
	}
	for _, spec := range cfg.Nodes {
		if _, dup := c.nodes[spec.ID]; dup {
			return nil, fmt.Errorf("datapath: node %s listed twice", spec.ID)
		}
		c.nodes[spec.ID] = &Node{spec: spec, fs: vfs.NewCrashableMem()}
		c.order = append(c.order, spec.ID)
	}
	for _, id := range c.order {
		if err := c.open(c.nodes[id]); err != nil {
			return nil, err
		}
	}
	go func() {
		defer close(c.done)
		c.net.Run(c.stop)
	}()
	return c, nil
}

// open builds a node's parts over its disk and puts it on the network.
func (c *Cluster) open(n *Node) error {
	var err error
	n.engine, err = storage.Open(storage.Options{Dir: "data", FS: n.fs, CacheBytes: 1 << 20, TombstoneGrace: c.cfg.TombstoneGrace,
		// The simulator runs on virtual time: no compaction may wait on the real clock.
		CompactionBytesPerSecond: -1})
	if err != nil {
		return fmt.Errorf("datapath: open %s: %w", n.spec.ID, err)
	}
	catalog, err := schema.Open(n.engine)
	if err != nil {
		return err
	}
	n.catalog = catalog
	for _, ks := range c.schemas {
		if _, err := catalog.Apply(ks); err != nil {
			return err
		}
	}
	n.dir = cluster.NewDirectory(c.clusterNode(n.spec))
	for _, id := range c.order {
		if id != n.spec.ID {
			n.dir.Upsert(c.clusterNode(c.nodes[id].spec))
		}
	}
	for _, id := range c.order {
		if other := c.nodes[id]; other != n && other.engine != nil && !other.up {
			n.dir.SetState(id, cluster.StateDown)
		}
		if p, ok := c.power[id]; ok {
			n.dir.SetPower(id, p)
		}
	}
	// The simulated nodes share the bubble's one clock: their guards have no peer to
	// measure and never refuse.
	n.clock = clockguard.New(clockguard.Config{Clock: hlc.NewClock(nil)})
	// The network may deliver a request as soon as the endpoint exists: it waits for the
	// replica server, which is built over the endpoint.
	built := make(chan struct{})
	var server *remote.Server
	ep, err := c.net.Listen(transport.Config{Self: transport.Peer{ID: n.spec.ID, DC: n.spec.DC},
		Handler: transport.HandlerFunc(func(ctx context.Context, from transport.Peer, kind transport.Kind, payload []byte) ([]byte, error) {
			select {
			case <-built:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return server.Handle(ctx, from, kind, payload)
		}),
		ErrorCode: remote.ErrorCode})
	if err != nil {
		return err
	}
	n.ep = ep
	quiet := slog.New(slog.DiscardHandler)
	dp, err := node.AssembleDataPath(node.DataPathConfig{ID: n.spec.ID, Reads: sched.Config{Workers: c.cfg.ReadWorkers, Policy: c.cfg.ReadPolicy},
		ReplicaTimeout: c.cfg.ReplicaTimeout, Logger: quiet}, node.DataPathParts{
		Engine:    n.engine,
		Keyspaces: catalog,
		View:      n.dir,
		Placement: placement.NewRing(n.dir, c.cfg.Vnodes),
		Network:   ep,
		Clock:     n.clock,
		Proximity: sameDistance{},
		Rows:      c.rows,
		// Every simulated node runs this build, which reads typed records.
		TypedRecords: func(lww.Type) bool { return true },
	})
	if err != nil {
		ep.Close()
		return err
	}
	server = dp.Server
	close(built)
	n.stage, n.local, n.coord, n.repair = dp.Stage, dp.Local, dp.Coordinator, dp.Repairer
	n.up = true
	return nil
}

func (c *Cluster) clusterNode(spec NodeSpec) cluster.Node {
	return cluster.Node{ID: spec.ID, DC: spec.DC, Addr: "sim:" + spec.ID}
}

// exactRows are every node's live row counts, read from its engine when asked: the
// estimates a coordinator would have if gossip were instant.
type exactRows struct{ c *Cluster }

// Rows counts node's live rows of keyspace; not ok while the node is down.
func (r exactRows) Rows(node, keyspace string) (int64, bool) {
	n, ok := r.c.nodes[node]
	if !ok || !n.up {
		return 0, false
	}
	page, err := n.engine.ScanLive(keyspace, storage.LiveScan{Spans: []storage.Span{{From: 0, To: ^uint64(0)}}, CountOnly: true})
	if err != nil {
		return 0, false
	}
	return int64(page.Live), true
}

// sameDistance ranks every peer alike: the coordinator then orders by DC alone.
type sameDistance struct{}

func (sameDistance) Distance(string) time.Duration { return 0 }

// node returns a node by id.
func (c *Cluster) node(id string) (*Node, error) {
	n, ok := c.nodes[id]
	if !ok {
		return nil, fmt.Errorf("datapath: no node %s", id)
	}
	return n, nil
}

// Coordinator returns a running node's coordinator.
func (c *Cluster) Coordinator(id string) (*coord.Coordinator, error) {
	n, err := c.node(id)
	if err != nil {
		return nil, err
	}
	if !n.up {
		return nil, fmt.Errorf("datapath: node %s is crashed", id)
	}
	return n.coord, nil
}

// CreateKeyspace defines a keyspace on every node, as schema propagation would.
func (c *Cluster) CreateKeyspace(ks schema.Keyspace) error {
	ks.Timestamp = hlc.FromTime(time.Now())
	compiled, err := ks.Compile()
	if err != nil {
		return err
	}
	c.schemas = append(c.schemas, compiled)
	for _, id := range c.order {
		if n := c.nodes[id]; n.up {
			if _, err := n.catalog.Apply(compiled); err != nil {
				return err
			}
		}
	}
	return nil
}

// Crash stops a node as a power loss would: messages to it are lost, and its disk keeps
// only what was synced.
func (c *Cluster) Crash(id string) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	if !n.up {
		return fmt.Errorf("datapath: node %s is already crashed", id)
	}
	n.up = false
	n.ep.Close()
	// The disk as the power loss leaves it; what the closing engine writes after it goes
	// to the old one, which is dropped.
	crashed := n.fs.CrashClone(vfs.CrashCloneCfg{})
	n.stage.Close()
	err = n.engine.Close()
	n.fs = crashed
	return err
}

// Restart brings a crashed node back over its disk. The others still see it in the
// state they last set.
func (c *Cluster) Restart(id string) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	if n.up {
		return fmt.Errorf("datapath: node %s is running", id)
	}
	return c.open(n)
}

// Wipe empties a crashed node's disk, as a replaced drive would: it restarts with no
// data, and no tombstone watermark.
func (c *Cluster) Wipe(id string) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	if n.up {
		return fmt.Errorf("datapath: node %s is running; crash it first", id)
	}
	n.fs = vfs.NewCrashableMem()
	return nil
}

// Repair runs an anti-entropy repair from a running node.
func (c *Cluster) Repair(ctx context.Context, id string, req antientropy.Request) (antientropy.Stats, error) {
	n, err := c.node(id)
	if err != nil {
		return antientropy.Stats{}, err
	}
	if !n.up {
		return antientropy.Stats{}, fmt.Errorf("datapath: node %s is crashed", id)
	}
	return n.repair.Repair(ctx, req)
}

// CollectGarbage collects a running node's expired records and tombstones, and its
// truncated records, as its hourly loop does.
func (c *Cluster) CollectGarbage(id string) (storage.Collected, error) {
	n, err := c.node(id)
	if err != nil {
		return storage.Collected{}, err
	}
	if !n.up {
		return storage.Collected{}, fmt.Errorf("datapath: node %s is crashed", id)
	}
	return n.engine.CollectGarbage(time.Now(), n.catalog.Truncations())
}

// Truncate truncates keyspace from node id as the node does: the truncation is stamped by
// id's clock, every running node's catalog learns it and moves its clock past it, and a
// crashed node learns it when it restarts, as from a schema pull. Unlike the node, it
// leaves the truncated records on every disk, for CollectGarbage to remove, so that
// scenarios see reads hide them first.
func (c *Cluster) Truncate(id, keyspace string) (hlc.Timestamp, error) {
	n, err := c.node(id)
	if err != nil {
		return 0, err
	}
	if !n.up {
		return 0, fmt.Errorf("datapath: node %s is crashed", id)
	}
	ts, err := n.clock.Stamp()
	if err != nil {
		return 0, err
	}
	for i, ks := range c.schemas {
		if ks.Name == keyspace {
			c.schemas[i].TruncatedAt = ts
		}
	}
	for _, other := range c.order {
		if o := c.nodes[other]; o.up {
			if _, err := o.catalog.Truncate(keyspace, ts); err != nil {
				return 0, err
			}
			if err := o.clock.Observe(ts); err != nil {
				return 0, err
			}
		}
	}
	return ts, nil
}

// Stored returns how many records a running node stores for keyspace, tombstones
// included.
func (c *Cluster) Stored(id, keyspace string) (int, error) {
	n, err := c.node(id)
	if err != nil {
		return 0, err
	}
	if !n.up {
		return 0, fmt.Errorf("datapath: node %s is crashed", id)
	}
	records, _, err := n.local.StoredBytes(keyspace)
	return records, err
}

// IndexStats returns a running node's live-key index counters (storage.Engine.IndexStats),
// counted since the node last started.
func (c *Cluster) IndexStats(id string) (storage.IndexStats, error) {
	n, err := c.node(id)
	if err != nil {
		return storage.IndexStats{}, err
	}
	if !n.up {
		return storage.IndexStats{}, fmt.Errorf("datapath: node %s is crashed", id)
	}
	return n.engine.IndexStats(), nil
}

// SetState makes every running node see id in state.
func (c *Cluster) SetState(id string, state cluster.State) error {
	if _, err := c.node(id); err != nil {
		return err
	}
	for _, other := range c.order {
		if n := c.nodes[other]; n.up {
			n.dir.SetState(id, state)
		}
	}
	return nil
}

// SetPower sets a node's power cycle entry (its state and offload holders) in the view
// of every running node, as gossip would; restarted nodes learn it from the next call.
func (c *Cluster) SetPower(id string, p cluster.Power) error {
	if _, err := c.node(id); err != nil {
		return err
	}
	c.power[id] = p
	for _, other := range c.order {
		if n := c.nodes[other]; n.up {
			n.dir.SetPower(id, p)
		}
	}
	return nil
}

// SetReadPolicy switches every node's read policy (package sched), as an operator's
// `--read-policy` would; a node restarted later starts with Config.ReadPolicy.
func (c *Cluster) SetReadPolicy(p sched.Policy) {
	for _, n := range c.nodes {
		n.stage.SetPolicy(p)
	}
}

// DropKinds loses every request of the named message kinds sent from now on, between
// any two nodes ("paxos_commit": a coordinator that stops between two phases of a round,
// as seen by the replicas), or those one node sends ("b1:paxos_commit"); none delivers
// them all again. Their callers wait until
// their deadlines.
func (c *Cluster) DropKinds(kinds ...string) { c.net.DropKinds(kinds) }

// PaxosState returns a running node's acceptor state of an instance (a key's, or a
// partition's).
func (c *Cluster) PaxosState(id, keyspace string, in paxos.Instance) (paxos.State, error) {
	n, err := c.node(id)
	if err != nil {
		return paxos.State{}, err
	}
	if !n.up {
		return paxos.State{}, fmt.Errorf("datapath: node %s is crashed", id)
	}
	return n.local.PaxosState(keyspace, in)
}

// Partition blocks every message between DCs a and b; Heal lets them through again.
func (c *Cluster) Partition(a, b string) error { return c.net.Partition(a, b) }

// Heal ends a partition.
func (c *Cluster) Heal(a, b string) error { return c.net.Heal(a, b) }

// Peek reads a running node's own copy of key, not through any coordinator.
func (c *Cluster) Peek(id, keyspace string, key []byte) (lww.Record, bool, error) {
	n, err := c.node(id)
	if err != nil {
		return lww.Record{}, false, err
	}
	if !n.up {
		return lww.Record{}, false, fmt.Errorf("datapath: node %s is crashed", id)
	}
	return n.local.Get(context.Background(), keyspace, key)
}

// Replicas returns key's replica set as node id places it.
func (c *Cluster) Replicas(id string, keyspace string, key []byte) ([]placement.Member, error) {
	n, err := c.node(id)
	if err != nil {
		return nil, err
	}
	ks, err := n.catalog.Get(keyspace)
	if err != nil {
		return nil, err
	}
	return placement.NewRing(n.dir, c.cfg.Vnodes).Replicas(context.Background(), ks, key, nil)
}

// Run lets d of virtual time pass: every node's work, messages and deadlines in that
// span happen before it returns. Inside the bubble it takes no real time.
func (c *Cluster) Run(d time.Duration) { time.Sleep(d) }

// CrashAfter crashes node id once d of virtual time has passed, in the middle of whatever
// is in flight then.
func (c *Cluster) CrashAfter(id string, d time.Duration, failed func(error)) {
	time.AfterFunc(d, func() {
		if err := c.Crash(id); err != nil {
			failed(err)
		}
	})
}

// Counters returns the network's traffic so far, per DC pair and message kind.
func (c *Cluster) Counters() sim.Counters { return c.net.Counters() }

// Nodes returns the node ids in start order.
func (c *Cluster) Nodes() []string { return append([]string(nil), c.order...) }

// Close stops the driver, fails the calls in flight and closes every running node's
// storage. Call it before the bubble ends, then let background work drain
// (synctest.Wait) so no goroutine outlives it.
func (c *Cluster) Close() error {
	close(c.stop)
	<-c.done
	c.net.Close()
	var firstErr error
	ids := append([]string(nil), c.order...)
	sort.Strings(ids)
	for _, id := range ids {
		if n := c.nodes[id]; n.up {
			n.up = false
			n.stage.Close()
			if err := n.engine.Close(); err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	return firstErr
}
