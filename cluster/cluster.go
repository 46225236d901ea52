// Package cluster holds a node's view of the cluster: which nodes exist, where they
// listen, which datacenter they are in, and which of them are reachable now. Whatever
// maintains the view (the seed heartbeat today, gossip membership later) writes into a
// Directory; the coordinator and the client API only read it through View.
package cluster

import (
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

// View is the read side of the directory.
type View interface {
	// Self is the node this view belongs to.
	Self() Node
	// Nodes returns every known node, the local one included, sorted by id.
	Nodes() []Node
	// Node looks up one node.
	Node(id string) (Node, bool)
	// Alive reports whether a node is believed reachable; the local node always is.
	Alive(id string) bool
	// Version changes whenever the set of nodes or their addresses change (not liveness),
	// so readers can cache what they derive from Nodes, such as the token ring.
	Version() uint64
}

// Directory is a concurrency-safe, writable View.
type Directory struct {
	self Node

	mu      sync.RWMutex
	nodes   map[string]Node
	down    map[string]bool
	version uint64
	sorted  []Node // cached Nodes(); nil after a change
}

// NewDirectory returns a directory that knows only self.
func NewDirectory(self Node) *Directory {
	return &Directory{
		self:  self,
		nodes: map[string]Node{self.ID: self},
		down:  map[string]bool{},
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

// Alive reports whether id is believed reachable. Unknown nodes are not alive.
func (d *Directory) Alive(id string) bool {
	if id == d.self.ID {
		return true
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	_, known := d.nodes[id]
	return known && !d.down[id]
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
	d.nodes[n.ID] = n
	d.version++
	d.sorted = nil
	return true
}

// SetAlive records whether a node is reachable; it reports whether that changed.
func (d *Directory) SetAlive(id string, alive bool) bool {
	if id == d.self.ID {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.nodes[id]; !ok {
		return false
	}
	if d.down[id] == !alive {
		return false
	}
	if alive {
		delete(d.down, id)
	} else {
		d.down[id] = true
	}
	return true
}
