package placement

import (
	"context"
	"fmt"
	"sync"

	"github.com/kuradb/kura/cluster"
	"github.com/kuradb/kura/ring"
	"github.com/kuradb/kura/schema"
)

// Ring places data on the token ring of every node the view knows, with the keyspace's
// strategy. Down nodes stay on the ring: replicas do not move because a node is down.
type Ring struct {
	view   cluster.View
	vnodes int

	mu         sync.Mutex
	ring       *ring.Ring
	version    uint64
	placements map[string]*ring.Placement // by strategy, for the current ring
}

// NewRing returns the ring placement over view, with vnodes tokens for every node that
// was not given its own (every node of a cluster must use the same).
func NewRing(view cluster.View, vnodes int) *Ring {
	if vnodes <= 0 {
		vnodes = ring.DefaultVnodes
	}
	return &Ring{view: view, vnodes: vnodes}
}

// Ring returns the token ring of the nodes currently known, rebuilt when the view changes.
func (p *Ring) Ring() (*ring.Ring, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	version := p.view.Version()
	if p.ring != nil && p.version == version {
		return p.ring, nil
	}
	nodes := p.view.Nodes()
	members := make([]ring.Member, len(nodes))
	for i, n := range nodes {
		members[i] = ring.Member{ID: n.ID, DC: n.DC, Tokens: n.RingTokens(p.vnodes)}
	}
	r, err := ring.New(members)
	if err != nil {
		return nil, fmt.Errorf("%w: build ring: %w", ErrNoRoute, err)
	}
	p.ring, p.version = r, version
	p.placements = map[string]*ring.Placement{}
	return r, nil
}

// placement returns the precomputed replica sets of a strategy on the current ring.
func (p *Ring) placement(s ring.Strategy) (*ring.Placement, error) {
	r, err := p.Ring()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ring != r {
		return r.Placement(s), nil // the ring changed meanwhile; do not cache against it
	}
	pl, ok := p.placements[s.String()]
	if !ok {
		pl = r.Placement(s)
		p.placements[s.String()] = pl
	}
	return pl, nil
}

// Replicas returns the strategy's replica set of key's token.
func (p *Ring) Replicas(_ context.Context, ks schema.Keyspace, key []byte) ([]Member, error) {
	pl, err := p.placement(ks.Strategy())
	if err != nil {
		return nil, err
	}
	return withStates(p.view, pl.ReplicasFor(ks.Partition().Token(key))), nil
}

// ChunkOwners returns the primary owner of each chunk key's hash token, whatever the
// keyspace's partitioner: that spreads a key's chunks independently and uniformly.
func (p *Ring) ChunkOwners(_ context.Context, ks schema.Keyspace, chunkKeys [][]byte) ([]Member, error) {
	pl, err := p.placement(ks.Strategy())
	if err != nil {
		return nil, err
	}
	owners := make([]ring.Member, len(chunkKeys))
	for i, key := range chunkKeys {
		owners[i] = pl.ReplicasFor(ring.HashPartitioner().Token(key))[0]
	}
	return withStates(p.view, owners), nil
}

// ScanRanges returns the ranges of [start, end) with their replica sets.
func (p *Ring) ScanRanges(_ context.Context, ks schema.Keyspace, start, end []byte) ([]RangeReplicas, error) {
	pl, err := p.placement(ks.Strategy())
	if err != nil {
		return nil, err
	}
	ranges := scanRanges(pl.Ring(), ks, start, end)
	out := make([]RangeReplicas, len(ranges))
	for i, rg := range ranges {
		out[i] = RangeReplicas{Range: rg, Replicas: withStates(p.view, pl.ReplicasFor(rg.End))}
	}
	return out, nil
}

// Members returns every node on the ring.
func (p *Ring) Members(context.Context) ([]Member, error) {
	r, err := p.Ring()
	if err != nil {
		return nil, err
	}
	return withStates(p.view, r.Members()), nil
}

// scanRanges returns the ring ranges a scan of [start, end) must read.
func scanRanges(r *ring.Ring, ks schema.Keyspace, start, end []byte) []ring.Range {
	all := r.Ranges()
	if ks.Partitioner != "ordered" {
		return all
	}
	// Order-preserving tokens: keys in [start, end) have tokens in [Token(start), Token(end)].
	lo := ks.Partition().Token(start)
	hi := ^ring.Token(0)
	if end != nil {
		hi = ks.Partition().Token(end)
	}
	var out []ring.Range
	for _, rg := range all {
		if rangeIntersects(rg, lo, hi) {
			out = append(out, rg)
		}
	}
	return out
}

// rangeIntersects reports whether (rg.Start, rg.End] shares a token with [lo, hi].
func rangeIntersects(rg ring.Range, lo, hi ring.Token) bool {
	if rg.Contains(lo) || rg.Contains(hi) {
		return true
	}
	// The range lies inside [lo, hi] when its end does (and it does not wrap past hi).
	return rg.Start < rg.End && lo <= rg.End && rg.End <= hi && lo <= rg.Start
}
