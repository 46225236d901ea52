package chord

import (
	"errors"
	"fmt"
	"slices"
)

// Layout is a complete view of who is on the ring: every node sorted by identifier, and
// each DC's nodes. It answers who truly owns a key (the oracle experiments check lookups
// against) and builds nodes whose tables are exactly what stabilisation converges to, so
// experiments without churn and tests need not run the protocol to get there.
type Layout struct {
	peers []Peer
	byDC  map[string][]Peer
}

// ErrBadLayout is returned by NewLayout for an empty layout, a nameless peer, or two peers
// sharing a name or an identifier, and by StableNode for a node not in the layout.
var ErrBadLayout = errors.New("chord: bad layout")

// NewLayout sorts peers by identifier and groups them by DC. It copies its input.
func NewLayout(peers []Peer) (*Layout, error) {
	if len(peers) == 0 {
		return nil, fmt.Errorf("%w: no peers", ErrBadLayout)
	}
	sorted := slices.Clone(peers)
	slices.SortFunc(sorted, func(a, b Peer) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	names := make(map[string]bool, len(sorted))
	byDC := make(map[string][]Peer)
	for i, p := range sorted {
		switch {
		case p.IsZero():
			return nil, fmt.Errorf("%w: peer %s has no name", ErrBadLayout, p.ID)
		case names[p.Name]:
			return nil, fmt.Errorf("%w: name %q twice", ErrBadLayout, p.Name)
		case i > 0 && sorted[i-1].ID == p.ID:
			return nil, fmt.Errorf("%w: %q and %q share identifier %s", ErrBadLayout, sorted[i-1].Name, p.Name, p.ID)
		}
		names[p.Name] = true
		byDC[p.DC] = append(byDC[p.DC], p)
	}
	return &Layout{peers: sorted, byDC: byDC}, nil
}

// Peers returns every node, sorted by identifier.
func (l *Layout) Peers() []Peer { return slices.Clone(l.peers) }

// Owner returns the node that owns key: the first at or after it on the circle.
func (l *Layout) Owner(key ID) Peer {
	return l.peers[successorIndex(l.peers, key)]
}

// successorIndex returns the index in sorted of the first peer at or after id, wrapping.
func successorIndex(sorted []Peer, id ID) int {
	i, _ := slices.BinarySearchFunc(sorted, id, func(p Peer, id ID) int {
		switch {
		case p.ID < id:
			return -1
		case p.ID > id:
			return 1
		}
		return 0
	})
	return i % len(sorted)
}

// StableNode returns a node for cfg.Self with the tables a fully stabilised ring gives it:
// predecessor, successor list (mlchord's running on to the own DC), and every finger, on
// the global ring and, for the ML protocols, on its DC's local ring.
func (l *Layout) StableNode(cfg Config) (*Node, error) {
	n, err := New(cfg)
	if err != nil {
		return nil, err
	}
	i := successorIndex(l.peers, n.self.ID)
	if l.peers[i].Name != n.self.Name {
		return nil, fmt.Errorf("%w: %q is not in it", ErrBadLayout, n.self.Name)
	}
	for _, layer := range n.layers() {
		members := l.peers
		if layer == LayerLocal {
			members = l.byDC[n.self.DC]
		}
		n.installStable(layer, members)
	}
	if n.cfg.KeepGateways {
		n.installGateways(l.peers, len(l.byDC))
	}
	n.joined = true
	return n, nil
}

// following returns the k members after sorted[at] in ring order. Where they do not wrap
// around the ring's end it is a window of sorted, not a copy: a stable layout of 100,000
// nodes asks each node for up to GapListMax of them, and trimSuccessors keeps a few.
func following(sorted []Peer, at, k int) []Peer {
	if at+1+k <= len(sorted) {
		return sorted[at+1 : at+1+k : at+1+k]
	}
	out := make([]Peer, 0, k)
	for i := 1; i <= k; i++ {
		out = append(out, sorted[(at+i)%len(sorted)])
	}
	return out
}

// installStable fills one ring's tables from the sorted members of that ring.
func (n *Node) installStable(layer Layer, members []Peer) {
	r := &n.rings[layer]
	at := successorIndex(members, n.self.ID)
	count := len(members)
	if count == 1 {
		return // alone: no predecessor, successors or fingers
	}
	r.pred = members[(at-1+count)%count]
	r.succs = n.trimSuccessors(layer, following(members, at, min(count-1, n.cfg.GapListMax)))
	for i := range r.fingers {
		f := members[successorIndex(members, fingerStart(n.self.ID, i, n.cfg.IDBits))]
		if f.Name != n.self.Name {
			r.fingers[i] = f
		}
	}
}
