package coord

import (
	"context"
	"slices"
	"sort"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/placement"
)

// The quorum gatherer is the one loop every operation runs to reach its replicas: writes,
// reads, erasure-coded chunk reads and scans. It asks the nearest candidates as many as a
// level needs (or all of them, for writes), preferring the datacenters the level names,
// fails over to the next candidate when one fails, counts acknowledgements per DC, and
// returns as soon as the level is met or can no longer be.

// target is one thing the gatherer may ask a node for: a member, the group it answers
// for (one key, one token range), and the operation's own index (a chunk's slot).
type target struct {
	placement.Member
	group int
	slot  int
}

// group is one requirement and the candidates that can meet it.
type group struct {
	required   consistency.Requirement
	candidates []target       // not asked yet, nearest first
	asked      map[string]int // per DC: asked and not failed
	acked      map[string]int // per DC: answered
}

func newGroup(required consistency.Requirement, candidates []target) *group {
	return &group{required: required, candidates: candidates, asked: map[string]int{}, acked: map[string]int{}}
}

// met reports whether the group's answers meet its requirement.
func (g *group) met() bool { return g.required.Satisfied(g.acked) }

// hopeless reports whether even every request in flight and every candidate left could
// not meet the requirement.
func (g *group) hopeless() bool {
	possible := addCounts(g.asked, nil)
	for _, t := range g.candidates {
		possible[t.DC]++
	}
	return !g.required.Satisfied(possible)
}

// quorum is one gathering: its groups and how to ask them.
type quorum struct {
	self   string // this node: asked inline, with no goroutine
	groups []*group
	// askAll sends to every candidate at once (writes), not only as many as needed.
	askAll bool
	// waitAll waits for every answer, even once the requirements are met or hopeless
	// (scans of erasure-coded keyspaces judge the level per key afterwards).
	waitAll bool
	// byNode sends one request per node for all the groups it is asked for (scans).
	byNode bool
	// more, when set, is how many further candidates the operation wants asked beyond
	// what the requirement needs, given how many requests are in flight (a chunk read
	// whose newest version still lacks chunks).
	more func(inFlight int) int
	// enough, when set, must hold besides the requirements before the gathering ends.
	enough func() bool
	// abort, when set, sees every failed answer's error; returning true ends the
	// gathering at once, unmet (a Paxos prepare refused for a higher ballot: the round
	// is lost, whatever the other replicas answer).
	abort func(err error) bool
}

// outcome is what a gathering established.
type outcome struct {
	met     bool // every requirement, and enough, held
	acked   int  // answers counted, over all groups
	lastErr error
}

// answer is one node's reply to one request.
type answer[T any] struct {
	member  placement.Member
	targets []target
	value   T
	err     error
}

// gather runs q. ask sends one request to a node for some targets; accept sees every
// successful answer, in the gathering goroutine, before it is counted. The error is
// ctx's when the caller's deadline ended the gathering; the outcome says how far it got.
// Requests still in flight when gather returns finish in the background.
func gather[T any](ctx context.Context, q *quorum, ask func(placement.Member, []target) (T, error), accept func([]target, T)) (outcome, error) {
	capacity := 0
	for _, g := range q.groups {
		capacity += len(g.candidates)
	}
	results := make(chan answer[T], capacity) // every candidate is asked at most once
	inFlight := 0
	var out outcome

	send := func(m placement.Member, targets []target) {
		v, err := ask(m, targets)
		results <- answer[T]{member: m, targets: targets, value: v, err: err}
	}
	// dispatch asks what the groups still need, remote nodes first (each in its own
	// goroutine), this node last and inline.
	dispatch := func() {
		var batches [][]target
		batchOf := map[string]int{} // with byNode: node id -> its batch
		take := func(g *group, i int) {
			t := g.candidates[i]
			g.candidates = slices.Delete(g.candidates, i, i+1)
			g.asked[t.DC]++
			if q.byNode {
				if b, ok := batchOf[t.ID]; ok {
					batches[b] = append(batches[b], t)
					return
				}
				batchOf[t.ID] = len(batches)
			}
			batches = append(batches, []target{t})
		}
		for _, g := range q.groups {
			for len(g.candidates) > 0 && (q.askAll || !g.required.Satisfied(g.asked)) {
				take(g, pickNeeded(g.candidates, g.required, g.asked))
			}
		}
		if q.more != nil {
			for extra := q.more(inFlight + len(batches)); extra > 0 && len(q.groups[0].candidates) > 0; extra-- {
				take(q.groups[0], 0)
			}
		}
		var local [][]target
		for _, targets := range batches {
			inFlight++
			if targets[0].ID == q.self {
				local = append(local, targets)
				continue
			}
			go send(targets[0].Member, targets)
		}
		for _, targets := range local {
			send(targets[0].Member, targets)
		}
	}
	done := func() bool {
		for _, g := range q.groups {
			if !g.met() {
				return false
			}
		}
		return q.enough == nil || q.enough()
	}
	hopeless := func() bool {
		for _, g := range q.groups {
			if g.hopeless() {
				return true
			}
		}
		return false
	}

	dispatch()
	for inFlight > 0 {
		select {
		case a := <-results:
			inFlight--
			if a.err != nil {
				out.lastErr = a.err
				for _, t := range a.targets {
					q.groups[t.group].asked[t.DC]--
				}
				if q.abort != nil && q.abort(a.err) {
					return out, nil
				}
			} else {
				accept(a.targets, a.value)
				for _, t := range a.targets {
					q.groups[t.group].acked[t.DC]++
					out.acked++
				}
			}
			if !q.waitAll {
				if done() {
					out.met = true
					return out, nil
				}
				if hopeless() {
					return out, nil
				}
			}
			dispatch()
		case <-ctx.Done():
			return out, ctx.Err()
		}
	}
	out.met = done()
	return out, nil
}

// pickNeeded returns the index of the first candidate (nearest first) in a datacenter the
// requirement still needs, or 0 when none is specially needed.
func pickNeeded(candidates []target, required consistency.Requirement, asked map[string]int) int {
	for i, t := range candidates {
		if need, ok := required.PerDC[t.DC]; ok && asked[t.DC] < need {
			return i
		}
	}
	return 0
}

// nearestFirst orders targets for asking: this node, then its DC, then the others, each
// group by measured distance; the order among equals is kept.
func (c *Coordinator) nearestFirst(targets []target) []target {
	self := c.view.Self()
	rank := func(t target) (int, int64) {
		switch {
		case t.ID == self.ID:
			return 0, 0
		case t.DC == self.DC:
			return 1, int64(c.proximity.Distance(t.ID))
		default:
			return 2, int64(c.proximity.Distance(t.ID))
		}
	}
	sort.SliceStable(targets, func(i, j int) bool {
		gi, di := rank(targets[i])
		gj, dj := rank(targets[j])
		if gi != gj {
			return gi < gj
		}
		return di < dj
	})
	return targets
}

// readable returns the members that may be asked for reads, as targets of group, nearest
// first.
func (c *Coordinator) readable(members []placement.Member, group int) []target {
	var out []target
	for i, m := range members {
		if m.Reads() {
			out = append(out, target{Member: m, group: group, slot: i})
		}
	}
	return c.nearestFirst(out)
}

func dcCounts(targets []target) map[string]int {
	counts := map[string]int{}
	for _, t := range targets {
		counts[t.DC]++
	}
	return counts
}

func addCounts(a, b map[string]int) map[string]int {
	out := make(map[string]int, len(a)+len(b))
	for dc, n := range a {
		out[dc] += n
	}
	for dc, n := range b {
		out[dc] += n
	}
	return out
}
