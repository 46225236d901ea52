package ring

import "slices"

// Placement is a strategy's replica sets, with the always-on rule applied (see
// Ring.ReplicasFor), precomputed for every range of a ring, so the request path finds a
// token's replicas with one binary search and no allocation.
type Placement struct {
	ring     *Ring
	strategy Strategy
	replicas [][]Member // replicas[i] serves the range ending at ring.tokens[i]
}

// Placement precomputes r.ReplicasFor(s, ·) for every range of r. Every token of a range
// has the same replicas, because a walk from any of them starts at the range's vnode.
func (r *Ring) Placement(s Strategy) *Placement {
	p := &Placement{ring: r, strategy: s, replicas: make([][]Member, len(r.tokens))}
	// One backing array for all sets keeps the long-lived placement to a single allocation
	// the garbage collector must scan.
	var backing []Member
	bounds := make([]int, len(r.tokens)+1)
	for i, t := range r.tokens {
		backing = append(backing, r.ReplicasFor(s, t)...)
		bounds[i+1] = len(backing)
	}
	for i := range p.replicas {
		// The full slice expression caps each set, so a caller's append cannot overwrite
		// the next range's set.
		p.replicas[i] = backing[bounds[i]:bounds[i+1]:bounds[i+1]]
	}
	return p
}

// Ring returns the ring the placement was computed for.
func (p *Placement) Ring() *Ring {
	return p.ring
}

// Strategy returns the strategy the placement was computed with.
func (p *Placement) Strategy() Strategy {
	return p.strategy
}

// ReplicasFor returns t's replica set, primary first, as Ring.ReplicasFor would. The
// slice is shared by every caller: it must not be modified.
func (p *Placement) ReplicasFor(t Token) []Member {
	if len(p.replicas) == 0 {
		return nil
	}
	return p.replicas[p.ring.successor(t)]
}

// Sets returns every range's replica set, in the order of Ring().Ranges(), so that a
// caller can check a property of every set (the power package checks that every range
// keeps an awake replica). The sets are shared with the placement: they must not be
// modified.
func (p *Placement) Sets() [][]Member {
	return slices.Clone(p.replicas)
}

// Ownership returns, per member id, the share of the key space it holds a replica of
// (nodetool's effective ownership): the shares add up to the replication factor.
func (p *Placement) Ownership() map[string]float64 {
	owned := map[string]float64{}
	for i, rg := range p.ring.Ranges() {
		for _, m := range p.replicas[i] {
			owned[m.ID] += rg.Fraction()
		}
	}
	return owned
}
