// Package lifecycle runs whole kura nodes — gossip, the ring's life cycle (join,
// decommission, remove, replace, rebuild, restart) and the data path — in virtual time:
// every node is a real node.Node started with the same code as `kura server`, its storage
// Pebble on a strict in-memory filesystem that a crash rolls back to what was synced, its
// messages carried by the simulated network of internal/tools/sim/simnet. It runs inside a
// testing/synctest bubble, so a scenario of restarts, kills and joins that takes minutes
// of a cluster's time takes well under a second of real time, with no wall-clock sleep.
//
// The operator's commands are the node's own methods (Decommission, RemoveNode, ...),
// and a node is started as `kura server` starts it: with the seeds it was given, its
// data dir as the last life left it.
package lifecycle

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/io/faults"
	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/tools/sim"
	"github.com/kuradb/kura/internal/tools/sim/simnet"
)

// Config describes a simulated cluster.
type Config struct {
	// Seed drives the links' loss and jitter and every node's random choices.
	Seed uint64
	// DCs names the datacenters; Links gives latency, bandwidth, jitter and loss per DC
	// pair.
	DCs   []string
	Links sim.LinkModel
	// Vnodes per node; default 8, so that small clusters still spread their ranges and
	// the simulation stays cheap.
	Vnodes int
	// DefaultReplication is every node's default keyspace (node.Config's); default
	// node.NoDefaultKeyspace: scenarios create the keyspaces they use.
	DefaultReplication string
	// Logger receives every node's log; nil discards it.
	Logger *slog.Logger
	// Trace, when set, sees every message delivered, lost or dropped.
	Trace func(string)
	// Configure, when set, changes a node's settings at each start, after the simulation
	// filled in its own: for what an experiment sets and the scenarios leave at the
	// node's defaults (tokens placed by hand, the read stage). It must leave the
	// identity, storage and network fields as they are, which the simulation needs.
	Configure func(spec NodeSpec, cfg *node.Config)
}

// NodeSpec is how a node is started, as the flags of `kura server` would say it.
type NodeSpec struct {
	ID, DC string
	// Seeds are the ids of the nodes whose addresses the node is given as --seeds.
	Seeds []string
	// Replace names a dead node this new node replaces (--replace).
	Replace string
	// DefaultReplication is its --default-replication; empty is the cluster's
	// (Config.DefaultReplication).
	DefaultReplication string
	// DefaultTransactions is its --default-transactions: where the lightweight
	// transactions of the default keyspace it defines run; empty is the default.
	DefaultTransactions string
	// Founders, when set, are the nodes of a topology file that lists their addresses,
	// as `kura server --topology` is given one: they found the cluster together
	// (node.Config.Founding), each knowing the others from the start.
	Founders []cluster.Node
}

// Cluster is a simulated cluster. Start it, and use it, inside synctest.Test.
type Cluster struct {
	cfg Config
	net *simnet.Network
	// mu guards nodes, order and the nodes' fields: scenarios start and stop nodes while
	// clients pick among the running ones. It is never held while a node starts or
	// stops, which takes virtual time: a goroutine waiting on a mutex would stop the
	// bubble's clock.
	mu    sync.Mutex
	nodes map[string]*Node
	order []string
	stop  chan struct{}
	done  chan struct{}
}

// Node is one simulated node: its disk survives a stop or a crash; the process is
// started anew each time.
type Node struct {
	spec NodeSpec
	fs   *vfs.MemFS
	run  *node.Node         // nil while stopped
	ep   transport.Endpoint // the running node's endpoint
	life int                // how many times the node was started
	busy bool               // starting or stopping: no other start or stop meanwhile
	// alive ends when the running process stops: the operator commands it runs end too.
	alive  context.Context
	cancel context.CancelFunc
	// refused is why the node's last life stopped by itself, as `kura server` exits when
	// its node will never join (node.JoinRefused); "" for none.
	refused string
}

// Start builds the cluster's network and starts its driver; add nodes with StartNode.
func Start(cfg Config) (*Cluster, error) {
	if cfg.Vnodes <= 0 {
		cfg.Vnodes = 8
	}
	if cfg.DefaultReplication == "" {
		cfg.DefaultReplication = node.NoDefaultKeyspace
	}
	if len(cfg.DCs) == 0 {
		return nil, fmt.Errorf("lifecycle: no DC")
	}
	links, err := sim.NewNetwork(cfg.DCs, cfg.Links, sim.TCPIPv4, cfg.Seed)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, net: simnet.New(links, cfg.Trace), nodes: map[string]*Node{}, stop: make(chan struct{}), done: make(chan struct{})}
	// Its nodes are processes on hosts that stay up: a stopped or killed one's port
	// refuses connections.
	c.net.SetRefuseClosed(true)
	go func() {
		defer close(c.done)
		c.net.Run(c.stop)
	}()
	return c, nil
}

// ErrNotRunning: the node named is stopped (or was never started).
var ErrNotRunning = errors.New("lifecycle: node is not running")

// Addr is the address a node listens at in the simulation.
func Addr(id string) string { return "sim:" + id }

// StartNode starts a node: a new one (a fresh, empty disk) the first time its id is
// given, else the same node over the disk its last life left, with the new spec's flags
// (a restart with the same command gives the same spec).
func (c *Cluster) StartNode(spec NodeSpec) error {
	c.mu.Lock()
	n, ok := c.nodes[spec.ID]
	if !ok {
		if !slices.Contains(c.cfg.DCs, spec.DC) {
			c.mu.Unlock()
			return fmt.Errorf("lifecycle: node %s: no DC %q", spec.ID, spec.DC)
		}
		n = &Node{fs: vfs.NewCrashableMem()}
		c.nodes[spec.ID] = n
		c.order = append(c.order, spec.ID)
	}
	if n.busy || n.run != nil {
		c.mu.Unlock()
		return fmt.Errorf("lifecycle: node %s is running", spec.ID)
	}
	n.busy = true
	n.spec = spec
	n.life++
	seed := c.cfg.Seed*1_000_003 + uint64(len(c.order))*7919 + uint64(n.life)
	fs := n.fs
	c.mu.Unlock()

	seeds := make([]string, len(spec.Seeds))
	for i, s := range spec.Seeds {
		seeds[i] = Addr(s)
	}
	logger := c.cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var ep transport.Endpoint
	config := node.Config{
		ID: spec.ID, DC: spec.DC, Listen: Addr(spec.ID), Seeds: seeds, Replace: spec.Replace,
		Founding: len(spec.Founders) > 0 && spec.Replace == "", Peers: peers(spec),
		DataDir: "data", FS: fs, Vnodes: c.cfg.Vnodes,
		// The simulator runs on virtual time: no compaction may wait on the real clock.
		CompactionThroughput: -1,
		DefaultReplication:   cmp.Or(spec.DefaultReplication, c.cfg.DefaultReplication),
		DefaultTransactions:  spec.DefaultTransactions,
		// Pebble pools the write tasks of a table's data blocks, each with a channel,
		// across the process: a table of two blocks or more built in one synctest bubble
		// leaves a channel of that bubble in the pool, and the next bubble to draw it (the
		// explorer runs many, kura simulate in one process) dies ("send on synctest
		// channel from outside bubble"). Blocks larger than the tables a simulated node
		// writes keep each table to one block, which draws nothing from the pool.
		StorageBlockBytes: 4 << 20,
		// The strict in-memory filesystem copies a whole write-ahead log on every
		// sync; a small memtable rotates the log before that grows costly. At 1 MiB
		// those copies were a third of the explorer's CPU, at 256 KiB a quarter.
		StorageMemTableBytes: 256 << 10,
		// Its clock is the bubble's, offset by SetClockOffset; the injector's other
		// faults act on the TCP transport only, not on the simulated network.
		EnableFaults: true,
		Seed:         seed,
		Logger:       logger,
		Network: func(cfg transport.Config) (transport.Endpoint, error) {
			var err error
			ep, err = c.net.Listen(cfg)
			return ep, err
		},
	}
	if c.cfg.Configure != nil {
		c.cfg.Configure(spec, &config)
	}
	run, err := node.Start(config)
	c.mu.Lock()
	defer c.mu.Unlock()
	n.busy = false
	if err != nil {
		return err
	}
	n.run, n.ep = run, ep
	n.alive, n.cancel = context.WithCancel(context.Background())
	n.refused = ""
	go c.exitIfRefused(spec.ID, n, run.JoinRefused(), n.alive)
	return nil
}

// peers are the founders other than the node itself, with their addresses, as
// `kura server` makes a topology file's nodes known peers.
func peers(spec NodeSpec) []cluster.Node {
	var out []cluster.Node
	for _, f := range spec.Founders {
		if f.ID != spec.ID {
			out = append(out, cluster.Node{ID: f.ID, DC: f.DC, Addr: Addr(f.ID)})
		}
	}
	return out
}

// exitIfRefused stops node id, as `kura server` exits, if its node will never join,
// and keeps why for Refused; it returns when the process stops first.
func (c *Cluster) exitIfRefused(id string, n *Node, refused <-chan error, alive context.Context) {
	select {
	case err := <-refused:
		c.mu.Lock()
		n.refused = err.Error()
		c.mu.Unlock()
		c.Stop(id) // a process that exits on its own reports to nobody
	case <-alive.Done():
	}
}

// Refused returns why a node's last life stopped by itself (its join refused for
// good), or "" when it did not.
func (c *Cluster) Refused(id string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nodes[id]
	if !ok {
		return "", fmt.Errorf("lifecycle: no node %s", id)
	}
	return n.refused, nil
}

// Alive returns a context that ends when the running node stops: for commands the node
// runs in the background, which end with its process.
func (c *Cluster) Alive(id string) (context.Context, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.runningLocked(id)
	if err != nil {
		return nil, err
	}
	return n.alive, nil
}

// runningLocked returns a running node by id; c.mu is held.
func (c *Cluster) runningLocked(id string) (*Node, error) {
	n, ok := c.nodes[id]
	switch {
	case !ok:
		return nil, fmt.Errorf("lifecycle: no node %s", id)
	case n.run == nil:
		return nil, fmt.Errorf("%w: %s", ErrNotRunning, id)
	}
	return n, nil
}

// Running returns a running node's process.
func (c *Cluster) Running(id string) (*node.Node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.runningLocked(id)
	if err != nil {
		return nil, err
	}
	return n.run, nil
}

// Spec returns how a node was last started.
func (c *Cluster) Spec(id string) (NodeSpec, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nodes[id]
	if !ok {
		return NodeSpec{}, fmt.Errorf("lifecycle: no node %s", id)
	}
	return n.spec, nil
}

// take marks a running node as stopping and returns it; the caller closes it and calls
// stopped.
func (c *Cluster) take(id string) (*Node, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.runningLocked(id)
	if err != nil {
		return nil, err
	}
	if n.busy {
		return nil, fmt.Errorf("lifecycle: node %s is stopping", id)
	}
	n.busy = true
	n.cancel()
	return n, nil
}

func (c *Cluster) stopped(n *Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n.run, n.busy = nil, false
}

// Stop stops a node as SIGTERM does: it announces its shutdown and closes its storage.
func (c *Cluster) Stop(id string) error {
	n, err := c.take(id)
	if err != nil {
		return err
	}
	defer c.stopped(n)
	return n.run.Close()
}

// Kill stops a node as kill -9 or a power loss does: it vanishes from the network at
// once, says nothing, and its disk keeps only what was synced.
func (c *Cluster) Kill(id string) error {
	n, err := c.take(id)
	if err != nil {
		return err
	}
	defer c.stopped(n)
	n.ep.Close()
	// The disk as the power loss leaves it; what the closing node writes after it goes to
	// the old one, which is dropped.
	crashed := n.fs.CrashClone(vfs.CrashCloneCfg{})
	n.run.Close() // a dead process's errors go nowhere
	n.fs = crashed
	return nil
}

// Wipe empties a stopped node's disk, as a replaced drive would.
func (c *Cluster) Wipe(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.nodes[id]
	switch {
	case !ok:
		return fmt.Errorf("lifecycle: no node %s", id)
	case n.run != nil || n.busy:
		return fmt.Errorf("lifecycle: node %s is running; stop or kill it first", id)
	}
	n.fs = vfs.NewCrashableMem()
	return nil
}

// SetClockOffset sets a running node's wall clock offset from the bubble's (negative:
// behind), as a machine's clock that steps would; 0 ends it. It lasts the process's life.
func (c *Cluster) SetClockOffset(id string, offset time.Duration) error {
	run, err := c.Running(id)
	if err != nil {
		return err
	}
	return run.SetFaults(faults.Spec{ClockOffset: offset})
}

// Cut loses every message from a to b (one way); Mend lets them through again.
func (c *Cluster) Cut(a, b string) { c.net.Cut(a, b) }

// Mend ends a Cut.
func (c *Cluster) Mend(a, b string) { c.net.Mend(a, b) }

// Partition blocks every message between DCs a and b; Heal lets them through again.
func (c *Cluster) Partition(a, b string) error { return c.net.Partition(a, b) }

// Heal ends a partition.
func (c *Cluster) Heal(a, b string) error { return c.net.Heal(a, b) }

// Run lets d of virtual time pass. Inside the bubble it takes no real time.
func (c *Cluster) Run(d time.Duration) { time.Sleep(d) }

// Nodes returns the ids of every node ever started, in the order they first were.
func (c *Cluster) Nodes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.order)
}

// View describes how a running node sees every other node it knows: id, liveness and
// ring status, sorted by id ("n2 up normal, n3 down normal").
func (c *Cluster) View(id string) (string, error) {
	run, err := c.Running(id)
	if err != nil {
		return "", err
	}
	view := run.View()
	var parts []string
	for _, other := range view.Nodes() {
		if other.ID == id {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s %s", other.ID, view.State(other.ID), other.Status))
	}
	sort.Strings(parts)
	self := run.Self()
	return fmt.Sprintf("%s(%s): %s", id, self.Status, strings.Join(parts, ", ")), nil
}

// Converged reports whether every running member sees every other running member up,
// and every member that is not running down; where not, it says which node sees what.
// A node that left or was removed is no member, running or not.
func (c *Cluster) Converged() (bool, string) {
	order, running := c.snapshot()
	member := func(run *node.Node) bool {
		st := run.Self().Status
		return st != cluster.StatusLeft && st != cluster.StatusRemoved
	}
	var wrong []string
	for _, id := range order {
		run, ok := running[id]
		if !ok || !member(run) {
			continue
		}
		view := run.View()
		for _, otherID := range order {
			other, up := running[otherID]
			if otherID == id || up && !member(other) {
				continue
			}
			entry, known := view.Node(otherID)
			if !known {
				if up {
					wrong = append(wrong, fmt.Sprintf("%s does not know %s", id, otherID))
				}
				continue
			}
			if !entry.Status.OnRing() && entry.Status != cluster.StatusJoining {
				continue // left or removed: not a member
			}
			if view.State(otherID).Reachable() != up {
				wrong = append(wrong, fmt.Sprintf("%s sees %s %s", id, otherID, view.State(otherID)))
			}
		}
	}
	return len(wrong) == 0, strings.Join(wrong, "; ")
}

// snapshot returns the node ids in start order and the running ones' processes.
func (c *Cluster) snapshot() ([]string, map[string]*node.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	running := map[string]*node.Node{}
	for id, n := range c.nodes {
		if n.run != nil {
			running[id] = n.run
		}
	}
	return slices.Clone(c.order), running
}

// Close stops every running node, then the network's driver. Call it before the bubble
// ends, then let background work drain (synctest.Wait).
func (c *Cluster) Close() error {
	var errs []string
	order, _ := c.snapshot()
	for _, id := range order {
		if err := c.Stop(id); err != nil && !errors.Is(err, ErrNotRunning) {
			errs = append(errs, fmt.Sprintf("%s: %v", id, err))
		}
	}
	close(c.stop)
	<-c.done
	c.net.Close()
	if len(errs) > 0 {
		return fmt.Errorf("lifecycle: close: %s", strings.Join(errs, "; "))
	}
	return nil
}
