// Package embedded runs every node of a topology inside one process, over real loopback
// sockets, with the topology's WAN emulated between datacenters: the cluster behind
// `kura cluster`, `kura demo`, the integration tests and the benches.
package embedded

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/io/topology"
	"github.com/kuradb/kura/internal/io/transport"
)

// Options configures an embedded cluster.
type Options struct {
	// DataDir, when set, gives each node durable storage in DataDir/<node id>; otherwise
	// nodes keep their data in memory.
	DataDir string
	// EmulateWAN applies the topology's latency and bandwidth between nodes.
	EmulateWAN bool
	// ClientAPI starts each node's gRPC client API (on the topology's client_addr or a
	// free loopback port).
	ClientAPI bool
	// RESP and HTTP start each node's Redis protocol server and HTTP admin server on free
	// loopback ports.
	RESP, HTTP bool
	// BasePort, when set, gives node i (in topology order) fixed loopback ports instead
	// of free ones: BasePort+i between nodes, BasePort+100+i for clients, +200+i for
	// Redis and +300+i for HTTP, so at most 100 nodes. Addresses the topology gives win.
	BasePort int
	// Node is the template for every node's settings (limits, intervals, logger); its
	// identity, addresses and storage fields are filled in per node.
	Node node.Config
	// Logger receives the nodes' logs; nil discards them.
	Logger *slog.Logger
	// Tokens, when set, places each node on the ring by hand (e.g. ring.EvenTokens for an
	// experiment's layout): it gets the node's position in topology order and its spec.
	Tokens func(index int, spec topology.NodeInDC) []uint64
	// PowerTier, when set, gives each node its power tier (node.Config.PowerTier: 0 never
	// sleeps, 1 and above may): it gets the node's position in topology order and its
	// spec, so an experiment decides which nodes may sleep.
	PowerTier func(index int, spec topology.NodeInDC) int
}

// Cluster is a running embedded cluster.
type Cluster struct {
	Topology *topology.Topology
	Nodes    []*node.Node
	// Stats counts the transport traffic of every node of the cluster.
	Stats *transport.Stats

	configs []node.Config // as each node was started, for Restart
	stopped []bool
}

// startTimeout bounds how long Start waits for the nodes to find each other.
const startTimeout = time.Minute

// Start starts every node of topo and returns once they all see each other; they find
// each other by gossip through the first.
func Start(topo *topology.Topology, opts Options) (*Cluster, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if nodes := len(topo.Nodes()); opts.BasePort != 0 && (nodes > 100 || opts.BasePort < 1 || opts.BasePort+300+nodes > 65536) {
		return nil, fmt.Errorf("embedded: base port %d: needs ports up to %d+300+%d nodes below 65536, and at most 100 nodes", opts.BasePort, opts.BasePort, nodes)
	}
	c := &Cluster{Topology: topo, Stats: transport.NewStats()}
	for i, spec := range topo.Nodes() {
		cfg := opts.Node
		cfg.ID, cfg.DC = spec.ID, spec.DC
		if opts.Tokens != nil {
			cfg.Tokens = opts.Tokens(i, spec)
		}
		if opts.PowerTier != nil {
			cfg.PowerTier = opts.PowerTier(i, spec)
		}
		port := func(offset int) string {
			if opts.BasePort == 0 {
				return "127.0.0.1:0"
			}
			return fmt.Sprintf("127.0.0.1:%d", opts.BasePort+offset+i)
		}
		cfg.Listen = cmp.Or(spec.Addr, port(0))
		if opts.ClientAPI {
			cfg.ClientAddr = cmp.Or(spec.ClientAddr, port(100))
		}
		if opts.RESP {
			cfg.RESPAddr = port(200)
		}
		if opts.HTTP {
			cfg.HTTPAddr = port(300)
		}
		cfg.InMemory = opts.DataDir == ""
		if !cfg.InMemory {
			cfg.DataDir = filepath.Join(opts.DataDir, spec.ID)
		}
		cfg.Topology, cfg.EmulateWAN = topo, opts.EmulateWAN
		cfg.Stats = c.Stats
		cfg.Logger = logger
		cfg.Founding = true // the topology's nodes make a new cluster together
		if len(c.Nodes) > 0 {
			// Every node joins the cluster's gossip through the first one.
			cfg.Seeds = []string{c.Nodes[0].Addr()}
		}
		n, err := node.Start(cfg)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("start node %s: %w", spec.ID, err)
		}
		c.Nodes = append(c.Nodes, n)
		c.stopped = append(c.stopped, false)
		cfg.Listen, cfg.ClientAddr = n.Addr(), n.ClientAddr()
		cfg.RESPAddr, cfg.HTTPAddr = n.RESPAddr(), n.HTTPAddr()
		c.configs = append(c.configs, cfg)
	}
	// Started means usable: every node sees every other through gossip.
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := c.WaitConverged(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Node returns the node with the given id, or nil.
func (c *Cluster) Node(id string) *node.Node {
	if i := c.index(id); i >= 0 {
		return c.Nodes[i]
	}
	return nil
}

func (c *Cluster) index(id string) int {
	for i, n := range c.Nodes {
		if n.ID() == id {
			return i
		}
	}
	return -1
}

// Stop stops one node, as a crash would (in-memory data is lost with it).
func (c *Cluster) Stop(id string) error {
	i := c.index(id)
	if i < 0 {
		return fmt.Errorf("no node %q", id)
	}
	c.stopped[i] = true
	return c.Nodes[i].Close()
}

// Restart starts a stopped node again on its old addresses and introduces it to the
// others.
func (c *Cluster) Restart(id string) error {
	i := c.index(id)
	if i < 0 || !c.stopped[i] {
		return fmt.Errorf("no stopped node %q", id)
	}
	cfg := c.configs[i]
	cfg.Seeds = nil
	for j, other := range c.Nodes {
		if !c.stopped[j] {
			cfg.Seeds = append(cfg.Seeds, other.Addr())
		}
	}
	n, err := node.Start(cfg)
	if err != nil {
		return fmt.Errorf("restart node %s: %w", id, err)
	}
	c.Nodes[i], c.stopped[i] = n, false
	return nil
}

// CreateKeyspace defines a keyspace through the first running node.
func (c *Cluster) CreateKeyspace(ctx context.Context, ks schema.Keyspace) error {
	for i, n := range c.Nodes {
		if !c.stopped[i] {
			return n.CreateKeyspace(ctx, ks)
		}
	}
	return errors.New("no node is running")
}

// WaitConverged waits until every running node sees every other running node alive and
// knows the same keyspaces, or ctx ends.
func (c *Cluster) WaitConverged(ctx context.Context) error {
	for {
		if c.converged() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster did not converge: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (c *Cluster) converged() bool {
	want := -1
	for i, n := range c.Nodes {
		if c.stopped[i] {
			continue
		}
		if want < 0 {
			want = len(n.Keyspaces())
		}
		if len(n.Keyspaces()) != want {
			return false
		}
		for j, other := range c.Nodes {
			if n.View().State(other.ID()).Reachable() == c.stopped[j] {
				return false
			}
		}
	}
	return true
}

// Close stops every node.
func (c *Cluster) Close() error {
	var errs []error
	for i, n := range c.Nodes {
		if !c.stopped[i] {
			errs = append(errs, n.Close())
		}
	}
	return errors.Join(errs...)
}
