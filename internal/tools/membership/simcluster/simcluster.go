// Package simcluster runs a cluster of membership cores in the simulator:
// it wraps each core as a sim.Node, starts, crashes, restarts and retires
// nodes, hands every event to a hook, and checks whether the views agree with
// the truth the simulator knows. The datadriven scenarios and the gossip
// experiment both build on it.
package simcluster

import (
	"errors"
	"fmt"
	"time"

	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/tools/sim"
)

// GenerationBase makes generations look like Cassandra's (boot time in unix
// seconds), so digests have realistic sizes: generation = base + start second.
const GenerationBase = 1_700_000_000

// GossipInterval is the round length of both cores (membership.Round). A
// core is ticked every TickInterval, which may be shorter.
const GossipInterval = membership.Round

// Sentinel errors.
var (
	// ErrNodeUp: Start of a node that is already running.
	ErrNodeUp = errors.New("simcluster: node is running")
	// ErrNodeDown: an action on a node that is not running.
	ErrNodeDown = errors.New("simcluster: node is not running")
	// ErrEncoding: a message did not survive Marshal/Unmarshal, or its
	// WireSize was wrong (only checked with Config.CheckEncoding).
	ErrEncoding = errors.New("simcluster: message encoding mismatch")
)

// Config sets up a cluster.
type Config struct {
	Protocol membership.Protocol
	// Seed drives the simulator and every core.
	Seed  uint64
	DCs   []string
	Links sim.LinkModel
	Wire  sim.Wire
	// Seeds are the IDs every node is given to join through.
	Seeds []string
	// RemoveAfter is passed to every core (0: the core's default).
	RemoveAfter time.Duration
	// CheckEncoding sends every message through Marshal and Unmarshal and
	// checks WireSize; slower, for tests.
	CheckEncoding bool
	// OnEvent sees every event of every core.
	OnEvent func(now time.Duration, observer string, e membership.Event)
	// Trace, when set, sees every message (see sim.Config.Trace).
	Trace func(sim.Trace)
}

// node adapts one core to sim.Node.
type node struct {
	id, dc     string
	cluster    *Cluster
	core       membership.Core
	generation uint64
	up         bool
	left       bool
}

// Cluster is a simulated membership cluster.
type Cluster struct {
	cfg   Config
	sim   *sim.Simulator
	nodes map[string]*node
	order []string
	// shared is what the cores share (Protocol.NewShared), or nil.
	shared any
	// err is the first encoding error seen; Err reports it.
	err error
	// cut holds the node pairs whose link drops everything (Cut).
	cut map[[2]string]bool
}

// New builds an empty cluster.
func New(cfg Config) (*Cluster, error) {
	s, err := sim.New(sim.Config{Seed: cfg.Seed, DCs: cfg.DCs, Links: cfg.Links, Wire: cfg.Wire, Trace: cfg.Trace})
	if err != nil {
		return nil, fmt.Errorf("simcluster: %w", err)
	}
	c := &Cluster{cfg: cfg, sim: s, nodes: make(map[string]*node)}
	if cfg.Protocol.NewShared != nil {
		c.shared = cfg.Protocol.NewShared()
	}
	return c, nil
}

// Sim is the underlying simulator (clock, network, counters).
func (c *Cluster) Sim() *sim.Simulator { return c.sim }

// Err is the first encoding error, when Config.CheckEncoding is on.
func (c *Cluster) Err() error { return c.err }

// Start starts a new node, or restarts a crashed one with a new generation.
func (c *Cluster) Start(id, dc string) error {
	n, known := c.nodes[id]
	if known && n.up {
		return fmt.Errorf("start %s: %w", id, ErrNodeUp)
	}
	if known && n.dc != dc {
		return fmt.Errorf("start %s in %s: it was in %s: %w", id, dc, n.dc, sim.ErrUnknownDC)
	}
	generation := c.generation()
	if known {
		generation = max(generation, n.generation+1)
	}
	cfg := c.coreConfig(id, dc, generation)
	cfg.Rand = c.sim.NewRand()
	core, err := c.cfg.Protocol.New(cfg)
	if err != nil {
		return fmt.Errorf("start %s: %w", id, err)
	}
	if known {
		n.core, n.generation, n.up, n.left = core, generation, true, false
		return c.sim.Restart(id, n)
	}
	return c.add(id, dc, generation, core)
}

// StartConverged starts new nodes, ids[i] in dcs[i], as a cluster that has
// already converged: each core starts from the view such a cluster would
// have saved (membership.Config.View), knowing every one of these nodes at
// the state it starts with, so that none joins through a seed and the
// cluster is steady from its first round.
func (c *Cluster) StartConverged(ids, dcs []string) error {
	if len(ids) != len(dcs) {
		return fmt.Errorf("start converged: %d IDs and %d DCs", len(ids), len(dcs))
	}
	generation := c.generation()
	cfgs := make([]membership.Config, len(ids))
	view := make([]membership.EndpointState, len(ids))
	for i, id := range ids {
		if _, known := c.nodes[id]; known {
			return fmt.Errorf("start converged %s: started before (Start restarts a node)", id)
		}
		cfgs[i] = c.coreConfig(id, dcs[i], generation)
		view[i] = membership.NewLocalState(cfgs[i]).EndpointState
	}
	for _, cfg := range cfgs {
		cfg.View, cfg.Rand = view, c.sim.NewRand()
		core, err := c.cfg.Protocol.New(cfg)
		if err != nil {
			return fmt.Errorf("start converged %s: %w", cfg.ID, err)
		}
		if err := c.add(cfg.ID, cfg.DC, generation, core); err != nil {
			return err
		}
	}
	return nil
}

// generation is the generation of a node started now.
func (c *Cluster) generation() uint64 { return uint64(GenerationBase + c.sim.Now()/time.Second) }

// coreConfig is the configuration of a node's core, but for its Rand.
func (c *Cluster) coreConfig(id, dc string, generation uint64) membership.Config {
	return membership.Config{
		ID: id, DC: dc, Addr: id + ":7000", Generation: generation,
		Seeds: c.cfg.Seeds, RemoveAfter: c.cfg.RemoveAfter, Shared: c.shared,
	}
}

// add adds a node that was never started to the cluster and the simulator.
func (c *Cluster) add(id, dc string, generation uint64, core membership.Core) error {
	n := &node{id: id, dc: dc, cluster: c, core: core, generation: generation, up: true}
	c.nodes[id] = n
	c.order = append(c.order, id)
	return c.sim.AddNode(sim.NodeSpec{ID: id, DC: dc, TickInterval: core.TickInterval()}, n)
}

// Crash stops a node abruptly.
func (c *Cluster) Crash(id string) error {
	n, err := c.running(id)
	if err != nil {
		return err
	}
	n.up = false
	return c.sim.Crash(id)
}

// Leave makes a node leave gracefully; it keeps running but counts as gone.
func (c *Cluster) Leave(id string) error {
	n, err := c.running(id)
	if err != nil {
		return err
	}
	n.left = true
	return c.sim.Do(id, func(now time.Duration) []sim.Envelope { return n.handle(now, n.core.Leave(now)) })
}

// Shutdown stops a node gracefully: its core announces the shutdown, the
// messages it returns leave, and the node stops as in Crash. Restart it with
// Start.
func (c *Cluster) Shutdown(id string) error {
	n, err := c.running(id)
	if err != nil {
		return err
	}
	if err := c.sim.Do(id, func(now time.Duration) []sim.Envelope { return n.handle(now, n.core.Shutdown(now)) }); err != nil {
		return err
	}
	n.up = false
	return c.sim.Crash(id)
}

// SetAppState changes an application state of a node.
func (c *Cluster) SetAppState(id, key, value string) error {
	n, err := c.running(id)
	if err != nil {
		return err
	}
	return c.sim.Do(id, func(now time.Duration) []sim.Envelope {
		return n.handle(now, n.core.SetAppState(now, key, value))
	})
}

// Cut breaks the link between two nodes, both ways: every message between
// them is lost (it still counts as sent), while each still reaches every
// other node. Mend repairs it.
func (c *Cluster) Cut(a, b string) error { return c.setCut(a, b, true) }

// Mend repairs a link broken by Cut.
func (c *Cluster) Mend(a, b string) error { return c.setCut(a, b, false) }

func (c *Cluster) setCut(a, b string, cut bool) error {
	for _, id := range []string{a, b} {
		if _, ok := c.nodes[id]; !ok {
			return fmt.Errorf("cut %s-%s: %s: %w", a, b, id, sim.ErrUnknownNode)
		}
	}
	if c.cut == nil {
		c.cut = make(map[[2]string]bool)
	}
	key := [2]string{min(a, b), max(a, b)}
	if cut {
		c.cut[key] = true
	} else {
		delete(c.cut, key)
	}
	return nil
}

// running returns a node that is up.
func (c *Cluster) running(id string) (*node, error) {
	n, ok := c.nodes[id]
	if !ok || !n.up {
		return nil, fmt.Errorf("%s: %w", id, ErrNodeDown)
	}
	return n, nil
}

// Core returns a running node's core.
func (c *Cluster) Core(id string) (membership.Core, error) {
	n, err := c.running(id)
	if err != nil {
		return nil, err
	}
	return n.core, nil
}

// IDs lists every node ever started, in start order.
func (c *Cluster) IDs() []string { return append([]string(nil), c.order...) }

// Live lists the nodes that run and have not left, in start order.
func (c *Cluster) Live() []string {
	var out []string
	for _, id := range c.order {
		if n := c.nodes[id]; n.up && !n.left {
			out = append(out, id)
		}
	}
	return out
}

// IsLive reports whether a node runs and has not left.
func (c *Cluster) IsLive(id string) bool {
	n, ok := c.nodes[id]
	return ok && n.up && !n.left
}

// Generation is the current generation of a node.
func (c *Cluster) Generation(id string) uint64 {
	if n, ok := c.nodes[id]; ok {
		return n.generation
	}
	return 0
}

// DC is the DC of a node.
func (c *Cluster) DC(id string) string {
	if n, ok := c.nodes[id]; ok {
		return n.dc
	}
	return ""
}

// Disagreement returns "" when every live node's view matches the truth:
// it knows every live node as alive at its current generation, and holds
// no other member as alive. Otherwise it describes the first mismatch.
func (c *Cluster) Disagreement() string {
	live := c.Live()
	for _, observer := range live {
		core := c.nodes[observer].core
		for _, id := range live {
			m, ok := core.Member(id)
			switch {
			case !ok:
				return fmt.Sprintf("%s does not know %s", observer, id)
			case m.Generation != c.nodes[id].generation:
				return fmt.Sprintf("%s sees %s at generation %d, not %d", observer, id, m.Generation, c.nodes[id].generation)
			case !m.Alive:
				return fmt.Sprintf("%s sees live %s as down", observer, id)
			}
		}
		for _, m := range core.Members() {
			if m.Alive && !c.IsLive(m.ID) {
				return fmt.Sprintf("%s sees %s as alive, but it is gone", observer, m.ID)
			}
		}
	}
	return ""
}

// RunUntilConverged runs until Disagreement is "" (checked every round) or
// timeout passes; it returns the virtual time it took and whether it
// converged.
func (c *Cluster) RunUntilConverged(timeout time.Duration) (time.Duration, bool) {
	start := c.sim.Now()
	for c.sim.Now()-start <= timeout {
		if c.Disagreement() == "" {
			return c.sim.Now() - start, true
		}
		c.sim.RunFor(GossipInterval)
	}
	return c.sim.Now() - start, false
}

// Step implements sim.Node.
func (n *node) Step(now time.Duration, env sim.Envelope) []sim.Envelope {
	if c := n.cluster.cut; c != nil && c[[2]string{min(env.From, n.id), max(env.From, n.id)}] {
		return nil // lost on a broken link
	}
	m := env.Msg.(membership.Message)
	if n.cluster.cfg.CheckEncoding {
		m = n.cluster.roundTrip(m)
	}
	return n.handle(now, n.core.Step(now, env.From, m))
}

// Tick implements sim.Node.
func (n *node) Tick(now time.Duration) []sim.Envelope { return n.handle(now, n.core.Tick(now)) }

// handle reports a Ready's events and turns its messages into envelopes.
func (n *node) handle(now time.Duration, r membership.Ready) []sim.Envelope {
	if hook := n.cluster.cfg.OnEvent; hook != nil {
		for _, e := range r.Events {
			hook(now, n.id, e)
		}
	}
	if len(r.Messages) == 0 {
		return nil
	}
	out := make([]sim.Envelope, len(r.Messages))
	for i, m := range r.Messages {
		out[i] = sim.Envelope{From: n.id, To: m.To, Kind: m.Msg.Kind(), Msg: m.Msg}
	}
	return out
}

// roundTrip encodes and decodes m, recording the first mismatch.
func (c *Cluster) roundTrip(m membership.Message) membership.Message {
	b := membership.Marshal(m)
	if len(b) != m.WireSize() && c.err == nil {
		c.err = fmt.Errorf("%w: %s: WireSize %d, encoded %d bytes", ErrEncoding, m.Kind(), m.WireSize(), len(b))
	}
	decoded, err := c.cfg.Protocol.Unmarshal(b)
	if err != nil {
		if c.err == nil {
			c.err = fmt.Errorf("%w: %s: %w", ErrEncoding, m.Kind(), err)
		}
		return m
	}
	return decoded
}
