package placement

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
)

// Ring places data on the token ring with the keyspace's strategy. Down nodes stay on
// the ring: replicas do not move because a node is down. While nodes join, leave or
// replace others, two rings exist: the current one (normal and leaving nodes), whose
// replicas serve reads and count for writes, and the future one (normal and joining
// nodes), whose extra replicas receive writes as pending ones, so that nothing written
// during a move is missing once it completes.
type Ring struct {
	view   cluster.View
	vnodes int

	mu      sync.Mutex
	version uint64
	current *rings
	future  *rings // the same as current when no move is in progress
	// wholeRing holds, by strategy, the last plan of a scan of every range (see
	// ScanRanges).
	wholeRing map[string]*scanPlan
}

// scanPlan is the plan of a scan of every range: the ranges of the current rings it was
// made on, with their replicas and the replicas' states then.
type scanPlan struct {
	rings  *rings
	states map[string]cluster.State
	ranges []RangeReplicas
}

// rings is one ring with its replica sets per strategy.
type rings struct {
	ring       *ring.Ring
	placements map[string]*ring.Placement
}

// NewRing returns the ring placement over view, with vnodes tokens for every node that
// was not given its own (every node of a cluster must use the same).
func NewRing(view cluster.View, vnodes int) *Ring {
	if vnodes <= 0 {
		vnodes = ring.DefaultVnodes
	}
	return &Ring{view: view, vnodes: vnodes}
}

// Ring returns the current token ring (normal and leaving nodes), rebuilt when the view
// changes.
func (p *Ring) Ring() (*ring.Ring, error) {
	current, _, err := p.rings()
	if err != nil {
		return nil, err
	}
	return current.ring, nil
}

// FutureRing returns the ring once the moves in progress complete (normal and joining
// nodes, without those being replaced).
func (p *Ring) FutureRing() (*ring.Ring, error) {
	_, future, err := p.rings()
	if err != nil {
		return nil, err
	}
	return future.ring, nil
}

// rings returns the current and future rings of the view, refusing a view that is not
// trusted yet: coordinating on a partial ring would acknowledge writes on wrong replicas.
func (p *Ring) rings() (current, future *rings, err error) {
	if !p.view.Trusted() {
		return nil, nil, fmt.Errorf("%w: this node has not learned the ring yet", ErrNoRoute)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	version := p.view.Version()
	if p.current != nil && p.version == version {
		return p.current, p.future, nil
	}
	nodes := p.view.Nodes()
	// A dead node leaves the current ring once a replacement of it is normal, and the
	// future one once a replacement will own its tokens. Any of its replacements counts:
	// a second one, refused or not yet (still booting), must not put the dead node's
	// tokens back beside the first's.
	replacedNow, replacedLater := map[string]bool{}, map[string]bool{}
	for _, n := range nodes {
		if n.Replaces != "" {
			replacedNow[n.Replaces] = replacedNow[n.Replaces] || n.Status == cluster.StatusNormal
			replacedLater[n.Replaces] = replacedLater[n.Replaces] || n.Status.WillOwn()
		}
	}
	var now, later []ring.Member
	for _, n := range nodes {
		m := ring.Member{ID: n.ID, DC: n.DC, Tier: n.Tier, Tokens: n.RingTokens(p.vnodes)}
		if n.Status.OnRing() && !replacedNow[n.ID] {
			now = append(now, m)
		}
		if n.Status.WillOwn() && !replacedLater[n.ID] {
			later = append(later, m)
		}
	}
	cur, err := ring.New(now)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: build ring: %w", ErrNoRoute, err)
	}
	fut, err := ring.New(later)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: build the ring after the moves in progress: %w", ErrNoRoute, err)
	}
	p.current = &rings{ring: cur, placements: map[string]*ring.Placement{}}
	p.future = p.current
	if !sameMembers(now, later) {
		p.future = &rings{ring: fut, placements: map[string]*ring.Placement{}}
	}
	p.version = version
	return p.current, p.future, nil
}

func sameMembers(a, b []ring.Member) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID {
			return false
		}
	}
	return true
}

// placement returns the precomputed replica sets of a strategy on one of the rings.
func (p *Ring) placement(r *rings, s ring.Strategy) *ring.Placement {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := s.String()
	pl, ok := r.placements[key]
	if !ok {
		pl = r.ring.Placement(s)
		r.placements[key] = pl
	}
	return pl
}

// Replicas returns the strategy's replica set of key's token on the current ring, then
// the replicas that will hold it once the moves in progress complete, as pending ones:
// those of the future ring, and during a move of the keyspace (schema.Keyspace's
// Moving: a rebalance or a change of replication) those of its token under the next
// split keys and the next strategy, which receive writes until every record has been
// copied there and the definition switches.
func (p *Ring) Replicas(_ context.Context, ks schema.Keyspace, key []byte, buf []Member) ([]Member, error) {
	current, future, err := p.rings()
	if err != nil {
		return nil, err
	}
	token := ks.Partition().Token(key)
	members := appendWithStates(buf[:0], p.view, p.placement(current, ks.Strategy()).ReplicasFor(token))
	if future != current {
		members = p.withPending(members, p.placement(future, ks.Strategy()).ReplicasFor(token))
	}
	if next := ks.NextPartition(); next != nil {
		members = p.withPending(members, p.placement(current, ks.NextStrategy()).ReplicasFor(next.Token(key)))
	}
	return members, nil
}

// withPending appends the future replicas that are not current ones, marked pending.
func (p *Ring) withPending(members []Member, future []ring.Member) []Member {
	for _, f := range future {
		if !slices.ContainsFunc(members, func(m Member) bool { return m.ID == f.ID }) {
			members = append(members, Member{ID: f.ID, DC: f.DC, State: p.view.State(f.ID), Pending: true})
		}
	}
	return members
}

// Moves returns, for every range of the future ring, the members that gain it (they
// will hold it and do not now) and its current holders: what the gainers must stream. A
// rebuilding member gains every range it holds: it lost them.
func (p *Ring) Moves(ks schema.Keyspace) ([]Move, error) {
	current, future, err := p.rings()
	if err != nil {
		return nil, err
	}
	now, later := p.placement(current, ks.Strategy()), p.placement(future, ks.Strategy())
	var moves []Move
	for _, rg := range splitRanges(current.ring.Ranges(), future.ring.Ranges()) {
		holders := withStates(p.view, now.ReplicasFor(rg.End))
		var gainers []Member
		for _, h := range holders {
			if h.State == cluster.StateRebuilding {
				gainers = append(gainers, h)
			}
		}
		future := later.ReplicasFor(rg.End)
		for _, f := range future {
			if !slices.ContainsFunc(holders, func(m Member) bool { return m.ID == f.ID }) {
				gainers = append(gainers, Member{ID: f.ID, DC: f.DC, State: p.view.State(f.ID), Pending: true})
			}
		}
		var losers []Member
		for _, h := range holders {
			if !slices.ContainsFunc(future, func(f ring.Member) bool { return f.ID == h.ID }) {
				losers = append(losers, h)
			}
		}
		if len(gainers) > 0 {
			moves = append(moves, Move{Range: rg, Gainers: gainers, Holders: holders, Losers: losers})
		}
	}
	return moves, nil
}

// Move is one range that changes hands.
type Move struct {
	Range ring.Range
	// Gainers will hold the range and do not now.
	Gainers []Member
	// Holders are the range's current replicas, primary first: the sources of a stream.
	Holders []Member
	// Losers are the holders that will no longer hold the range: the copies the gainers
	// take over.
	Losers []Member
}

// splitRanges returns the ranges bounded by the tokens of both rings, so that every
// range has one replica set on each.
func splitRanges(a, b []ring.Range) []ring.Range {
	var bounds []ring.Token
	for _, rg := range a {
		bounds = append(bounds, rg.End)
	}
	for _, rg := range b {
		bounds = append(bounds, rg.End)
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	out := make([]ring.Range, len(bounds))
	for i, end := range bounds {
		start := bounds[(i+len(bounds)-1)%len(bounds)]
		out[i] = ring.Range{Start: start, End: end}
	}
	return out
}

// ChunkOwners returns the primary owner of each chunk key's hash token, whatever the
// keyspace's partitioner: that spreads a key's chunks independently and uniformly.
func (p *Ring) ChunkOwners(_ context.Context, ks schema.Keyspace, chunkKeys [][]byte) ([]Member, error) {
	current, _, err := p.rings()
	if err != nil {
		return nil, err
	}
	pl := p.placement(current, ks.Strategy())
	owners := make([]ring.Member, len(chunkKeys))
	for i, key := range chunkKeys {
		owners[i] = pl.ReplicasFor(ring.HashPartitioner().Token(key))[0]
	}
	return withStates(p.view, owners), nil
}

// ScanRanges returns the ranges of [start, end) with their replica sets. A scan of the
// hash partitioner reads every range, whatever its interval: its plan is kept and
// returned again while the rings and the replicas' states stay as they were (planning
// anew was an eighth of the bytes a short scan's coordinator allocated).
func (p *Ring) ScanRanges(_ context.Context, ks schema.Keyspace, start, end []byte) ([]RangeReplicas, error) {
	current, _, err := p.rings()
	if err != nil {
		return nil, err
	}
	strategy := ks.Strategy()
	pl := p.placement(current, strategy)
	if ks.Partitioner == "ordered" {
		ranges, _ := p.plan(pl, orderedRanges(pl.Ring(), ks, start, end))
		return ranges, nil
	}
	p.mu.Lock()
	kept := p.wholeRing[strategy.String()]
	p.mu.Unlock()
	if kept != nil && kept.rings == current && p.statesHold(kept.states) {
		return kept.ranges, nil
	}
	ranges, states := p.plan(pl, pl.Ring().Ranges())
	p.mu.Lock()
	if p.wholeRing == nil {
		p.wholeRing = map[string]*scanPlan{}
	}
	p.wholeRing[strategy.String()] = &scanPlan{rings: current, states: states, ranges: ranges}
	p.mu.Unlock()
	return ranges, nil
}

// plan returns ranges with their replica sets, and the state of each replica as it put
// it in them.
func (p *Ring) plan(pl *ring.Placement, ranges []ring.Range) ([]RangeReplicas, map[string]cluster.State) {
	out := make([]RangeReplicas, len(ranges))
	// A scan of the hash partitioner plans every range (48 on 3 nodes of 16 vnodes) on
	// a few nodes: each node's state is looked up once, and the replica lists share one
	// allocation, rather than one lookup per replica and one slice per range.
	states := map[string]cluster.State{}
	stateOf := func(m ring.Member) cluster.State {
		st, ok := states[m.ID]
		if !ok {
			st = p.view.State(m.ID)
			states[m.ID] = st
		}
		return st
	}
	// Ranges with the same replicas in the same order share one list (the interface's
	// promise): on a few nodes the 48 ranges of a ring have a handful of lists. A
	// node's DC and state are the same in every list of the plan, so its id says all.
	// The lists are laid out in one array; when it grows, those laid out before stay
	// valid in the old one.
	var members []Member
	lists := map[string][]Member{}
	var key []byte
	for i, rg := range ranges {
		replicas := pl.ReplicasFor(rg.End)
		key = key[:0]
		for _, m := range replicas {
			key = binary.AppendUvarint(key, uint64(len(m.ID)))
			key = append(key, m.ID...)
		}
		list, ok := lists[string(key)]
		if !ok {
			from := len(members)
			for _, m := range replicas {
				members = append(members, Member{ID: m.ID, DC: m.DC, State: stateOf(m)})
			}
			list = members[from:len(members):len(members)]
			lists[string(key)] = list
		}
		out[i] = RangeReplicas{Range: rg, Replicas: list}
	}
	return out, states
}

// statesHold reports whether every node of states is still in the state it gives.
func (p *Ring) statesHold(states map[string]cluster.State) bool {
	for id, st := range states {
		if p.view.State(id) != st {
			return false
		}
	}
	return true
}

// Members returns every node on the current ring.
func (p *Ring) Members(context.Context) ([]Member, error) {
	r, err := p.Ring()
	if err != nil {
		return nil, err
	}
	return withStates(p.view, r.Members()), nil
}

// orderedRanges returns the ring ranges a scan of [start, end) of an ordered keyspace
// must read: those its keys' order-preserving tokens fall in, [Token(start),
// Token(end)].
func orderedRanges(r *ring.Ring, ks schema.Keyspace, start, end []byte) []ring.Range {
	lo := ks.Partition().Token(start)
	hi := ^ring.Token(0)
	if end != nil {
		hi = ks.Partition().Token(end)
	}
	var out []ring.Range
	for _, rg := range r.Ranges() {
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
