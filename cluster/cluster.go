// Package cluster holds a node's view of the cluster: which nodes exist, where they
// listen, which datacenter they are in, and which of them are reachable now. Whatever
// maintains the view (the seed heartbeat today, gossip membership later) writes into a
// Directory; the coordinator and the client API only read it through View.
package cluster

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/kuradb/kura/ring"
)

// Node is a member of the cluster as the directory knows it.
type Node struct {
	ID         string
	DC         string
	Addr       string // node-to-node transport address
	ClientAddr string // gRPC client API address; empty when the node serves none
	// Tokens are the node's ring positions when chosen by hand (experiments that need
	// evenly spaced tokens); empty means the positions derived from the id.
	Tokens []uint64
}

// RingTokens returns the node's ring positions: those it was given, or else vnodes
// positions derived from its id.
func (n Node) RingTokens(vnodes int) []ring.Token {
	if len(n.Tokens) == 0 {
		return ring.TokensFor(n.ID, vnodes)
	}
	tokens := make([]ring.Token, len(n.Tokens))
	for i, t := range n.Tokens {
		tokens[i] = ring.Token(t)
	}
	return tokens
}

// Equal reports whether two entries are identical.
func (n Node) Equal(o Node) bool {
	return n.ID == o.ID && n.DC == o.DC && n.Addr == o.Addr && n.ClientAddr == o.ClientAddr && slices.Equal(n.Tokens, o.Tokens)
}

// State is what a node is doing as far as the data path is concerned. The coordinator
// decides per state: whom to ask for reads, whom to write to, whose writes to hint.
type State uint8

// The states of a node. The zero value is StateDown, so a node nobody vouched for is
// never asked.
const (
	// StateDown: not reachable. Skipped without waiting; its writes are hinted.
	StateDown State = iota
	// StateUp: serves reads and writes.
	StateUp
	// StateJoining: taking over ranges. It gets writes as a pending replica, in addition
	// to the current ones and never counted for the level, and serves no reads.
	StateJoining
	// StateLeaving: handing its ranges over. It still serves reads and writes.
	StateLeaving
	// StateAsleep: powered down on purpose. Skipped at once; its writes are hinted for
	// it (offloaded) until it wakes.
	StateAsleep
)

// String names the state as status pages print it.
func (s State) String() string {
	switch s {
	case StateDown:
		return "down"
	case StateUp:
		return "up"
	case StateJoining:
		return "joining"
	case StateLeaving:
		return "leaving"
	case StateAsleep:
		return "asleep"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Readable reports whether a node in this state may be asked for reads.
func (s State) Readable() bool { return s == StateUp || s == StateLeaving }

// Writable reports whether a node in this state takes writes that count for a level.
func (s State) Writable() bool { return s == StateUp || s == StateLeaving }

// Pending reports whether a node in this state takes writes that do not count for a
// level: it is still receiving the ranges it will own.
func (s State) Pending() bool { return s == StateJoining }

// Reachable reports whether the node answers messages at all.
func (s State) Reachable() bool { return s == StateUp || s == StateJoining || s == StateLeaving }

// View is the read side of the directory.
type View interface {
	// Self is the node this view belongs to.
	Self() Node
	// Nodes returns every known node, the local one included, sorted by id.
	Nodes() []Node
	// Node looks up one node.
	Node(id string) (Node, bool)
	// State reports what a node is doing; an unknown node is StateDown, and the local
	// node is StateUp unless it was set otherwise.
	State(id string) State
	// Version changes whenever the set of nodes or their addresses change (not liveness),
	// so readers can cache what they derive from Nodes, such as the token ring.
	Version() uint64
}

// Directory is a concurrency-safe, writable View.
type Directory struct {
	self Node

	mu      sync.RWMutex
	nodes   map[string]Node
	states  map[string]State
	version uint64
	sorted  []Node // cached Nodes(); nil after a change
}

// NewDirectory returns a directory that knows only self.
func NewDirectory(self Node) *Directory {
	return &Directory{
		self:   self,
		nodes:  map[string]Node{self.ID: self},
		states: map[string]State{self.ID: StateUp},
	}
}

// Self returns the local node.
func (d *Directory) Self() Node { return d.self }

// Nodes returns every known node sorted by id. The slice must not be modified.
func (d *Directory) Nodes() []Node {
	d.mu.RLock()
	if d.sorted != nil {
		defer d.mu.RUnlock()
		return d.sorted
	}
	d.mu.RUnlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sorted == nil {
		nodes := make([]Node, 0, len(d.nodes))
		for _, n := range d.nodes {
			nodes = append(nodes, n)
		}
		sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
		d.sorted = nodes
	}
	return d.sorted
}

// Node looks up one node by id.
func (d *Directory) Node(id string) (Node, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	n, ok := d.nodes[id]
	return n, ok
}

// State reports what id is doing. Unknown nodes are down.
func (d *Directory) State(id string) State {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.states[id]
}

// Version counts changes of the node set.
func (d *Directory) Version() uint64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.version
}

// Upsert adds a node or updates its addresses; it reports whether anything changed. The
// local node's own entry cannot be overwritten from outside.
func (d *Directory) Upsert(n Node) bool {
	if n.ID == "" || n.ID == d.self.ID {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, ok := d.nodes[n.ID]; ok && old.Equal(n) {
		return false
	}
	if _, known := d.nodes[n.ID]; !known {
		d.states[n.ID] = StateUp // a node is presumed up when first heard of
	}
	d.nodes[n.ID] = n
	d.version++
	d.sorted = nil
	return true
}

// SetState records what a known node is doing; it reports whether that changed. The local
// node may change its own state (joining, leaving, asleep) but is never down to itself.
func (d *Directory) SetState(id string, state State) bool {
	if id == d.self.ID && state == StateDown {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.nodes[id]; !ok {
		return false
	}
	if d.states[id] == state {
		return false
	}
	d.states[id] = state
	return true
}
