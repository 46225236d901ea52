package coord

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/base/assert"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/data/sched"
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
	candidates []target // not asked yet, nearest first
	asked      dcTally  // per DC: asked and not failed
	acked      dcTally  // per DC: answered
	// failed counts per DC the failures other than refusals, and refused the refusals
	// (refusedByReplica): whether the refusals alone lost the requirement (lostToRefusals).
	failed  dcTally
	refused int
	// tallies back asked and acked for the usual replica sets, of up to two DCs, so
	// that a group is one allocation.
	tallies [2][2]dcCount
}

func newGroup(required consistency.Requirement, candidates []target) *group {
	g := &group{}
	g.init(required, candidates)
	return g
}

// init sets g up, nothing asked or answered yet, for a group allocated elsewhere (a
// pooled one, pointOp's).
func (g *group) init(required consistency.Requirement, candidates []target) {
	*g = group{required: required, candidates: candidates}
	g.asked, g.acked = g.tallies[0][:0], g.tallies[1][:0]
}

// met reports whether the group's answers meet its requirement.
func (g *group) met() bool { return g.acked.satisfies(g.required) }

// hopeless reports whether even every request in flight and every candidate left could
// not meet the requirement.
func (g *group) hopeless() bool { return g.hopelessWith(nil) }

// lostToRefusals reports whether the group is unmet because of refusals: had every
// request that failed otherwise been answered, the refusals alone would still leave it
// short. A level lost to refusals is unavailable; one lost to failures, a timeout.
func (g *group) lostToRefusals() bool {
	return g.refused > 0 && !g.met() && g.hopelessWith(g.failed)
}

// hopelessWith is hopeless with the requests of also counted as if in flight.
func (g *group) hopelessWith(also dcTally) bool {
	if g.asked.total()+also.total()+len(g.candidates) < g.required.Total {
		return true
	}
	for dc, need := range g.required.PerDC {
		possible := g.asked.get(dc) + also.get(dc)
		for _, t := range g.candidates {
			if t.DC == dc {
				possible++
			}
		}
		if possible < need {
			return true
		}
	}
	return false
}

// quorum is one gathering: its groups and how to ask them.
type quorum struct {
	self string // this node: asked on the gathering goroutine, with no goroutine of its own
	// workers runs the requests to other nodes; nil starts a goroutine for each.
	workers *tasks
	groups  []*group
	// askAll sends to every candidate at once (writes), not only as many as needed.
	askAll bool
	// waitAll waits for every answer, even once the requirements are met or hopeless
	// (scans of erasure-coded keyspaces judge the level per key afterwards).
	waitAll bool
	// byNode sends one request per node for all the groups it is asked for (scans).
	byNode bool
	// eachGroup ends each group on its own: a group that can no longer meet its
	// requirement does not end the gathering while others may still meet theirs (a
	// batch of independent writes, each acknowledged by its own group).
	eachGroup bool
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
	// sent, when its capacity holds every candidate, is the memory gather records the
	// targets asked in (a pooled pointOp's), instead of a slice of its own.
	sent []target
}

// outcome is what a gathering established.
type outcome struct {
	met     bool // every requirement, and enough, held
	acked   int  // answers counted, over all groups
	lastErr error
	// refusals are the replicas' refusals of this node (refusedByReplica), and refused
	// says that they lost a group its requirement (group.lostToRefusals) in a gathering
	// the caller's deadline did not end.
	refusals []error
	refused  bool
	// inFlight counts the requests not answered when gather returned: they finish in
	// the background, still reading their targets and whatever ask reads, so that
	// memory must not be reused while any is.
	inFlight int
}

// answer is one node's reply to one request.
type answer[T any] struct {
	targets []target
	value   T
	err     error
}

// gather runs q. ask sends one request to a node for some targets; accept sees every
// successful answer, in the gathering goroutine, before it is counted. The error is
// ctx's when the caller's deadline ended the gathering; the outcome says how far it got.
// Requests still in flight when gather returns finish in the background.
//
// Requests to remote nodes each run apart, on q.workers, and answer on a channel.
// Requests to this node (q.self) run on the caller's goroutine, after the remote ones of
// the same round were sent, and are counted as they return: a gathering that needs
// only this node starts no goroutine, makes no channel and never waits on ctx (the
// local replica returns when its storage does).
func gather[T any](ctx context.Context, q *quorum, ask func(placement.Member, []target) (T, error), accept func([]target, T)) (outcome, error) {
	capacity := 0
	for _, g := range q.groups {
		capacity += len(g.candidates)
	}
	sent := q.sent[:0]
	if cap(sent) < capacity {
		sent = make([]target, 0, capacity)
	}
	g := gathering[T]{q: q, ask: ask, accept: accept, sent: sent}
	for {
		localAsked := g.dispatch()
		if g.decided {
			return g.finish(nil)
		}
		if localAsked {
			continue // what this node answered may call for more requests
		}
		if g.inFlight == 0 {
			break
		}
		select {
		case a := <-g.results:
			g.settle(a)
			if g.decided {
				return g.finish(nil)
			}
		case <-ctx.Done():
			return g.finish(ctx.Err())
		}
	}
	g.out.met = g.done()
	return g.finish(nil)
}

// finish returns the outcome, with the requests still in flight, and err.
func (g *gathering[T]) finish(err error) (outcome, error) {
	g.out.inFlight = g.inFlight
	if err == nil && !g.out.met && g.out.refusals != nil {
		g.out.refused = slices.ContainsFunc(g.q.groups, (*group).lostToRefusals)
	}
	return g.out, err
}

// gathering is the state of one run of gather.
type gathering[T any] struct {
	q      *quorum
	ask    func(placement.Member, []target) (T, error)
	accept func([]target, T)
	// sent holds every target asked, in asking order; each request's targets are a
	// slice of it (every candidate is asked at most once, so it never grows).
	sent []target
	// results carries the remote answers; made with the first remote request.
	results  chan answer[T]
	inFlight int
	decided  bool // the gathering ends with out as it is
	out      outcome
}

// dispatch asks what the groups still need: remote nodes first, each in its own
// goroutine, then this node on the calling goroutine, its answers settled at once. It
// reports whether this node was asked.
func (g *gathering[T]) dispatch() bool {
	q := g.q
	from := len(g.sent)
	for _, gr := range q.groups {
		for len(gr.candidates) > 0 && (q.askAll || !gr.asked.satisfies(gr.required)) {
			g.take(gr, pickNeeded(gr.candidates, gr.required, gr.asked))
		}
	}
	if q.more != nil {
		for extra := q.more(g.inFlight + g.requests(from)); extra > 0 && len(q.groups[0].candidates) > 0; extra-- {
			g.take(q.groups[0], 0)
		}
	}
	var requests [][]target
	if q.byNode {
		requests = byNode(g.sent[from:])
	}
	// request returns the i-th request of this round: one target each, or one per node.
	request := func(i int) []target {
		if q.byNode {
			return requests[i]
		}
		j := from + i
		return g.sent[j : j+1 : j+1]
	}
	n := g.requests(from)
	if q.byNode {
		n = len(requests)
	}
	g.inFlight += n
	local := false
	for i := range n {
		if ts := request(i); ts[0].ID != q.self {
			if g.results == nil {
				g.results = make(chan answer[T], cap(g.sent))
			}
			// The closure holds what it needs, not q: a pooled op's quorum is reused once
			// every request answered, which may be before end runs.
			ask, results, t := g.ask, g.results, q.workers
			counted := t.start()
			t.run(func() {
				askRemote(ask, results, ts)
				t.end(counted)
			})
		} else {
			local = true
		}
	}
	if !local {
		return false
	}
	for i := range n {
		if ts := request(i); ts[0].ID == q.self {
			// Every request of the round is made, as before the level was known to
			// be met: a write still reaches this node's replica.
			v, err := g.ask(ts[0].Member, ts)
			if g.decided {
				g.inFlight-- // answered, after the outcome was decided: not counted
			} else {
				g.settle(answer[T]{targets: ts, value: v, err: err})
			}
		}
	}
	return true
}

// requests returns how many requests the targets sent from index from make when each
// is its own request.
func (g *gathering[T]) requests(from int) int { return len(g.sent) - from }

// take moves candidate i of gr to the targets asked.
func (g *gathering[T]) take(gr *group, i int) {
	t := gr.candidates[i]
	gr.candidates = slices.Delete(gr.candidates, i, i+1)
	gr.asked = gr.asked.add(t.DC, 1)
	assert.That(len(g.sent) < cap(g.sent), "coord: more targets asked than candidates: the requests in flight share sent's memory")
	g.sent = append(g.sent, t)
}

// byNode groups targets into one request per node, in the order the nodes first appear.
func byNode(targets []target) [][]target {
	var requests [][]target
	index := map[string]int{}
	for _, t := range targets {
		if i, ok := index[t.ID]; ok {
			requests[i] = append(requests[i], t)
			continue
		}
		index[t.ID] = len(requests)
		requests = append(requests, []target{t})
	}
	return requests
}

// askRemote asks a remote node and sends its answer to results, which has room for it.
func askRemote[T any](ask func(placement.Member, []target) (T, error), results chan<- answer[T], targets []target) {
	v, err := ask(targets[0].Member, targets)
	results <- answer[T]{targets: targets, value: v, err: err}
}

// settle counts one answer and decides whether the gathering ends.
func (g *gathering[T]) settle(a answer[T]) {
	q := g.q
	g.inFlight--
	assert.That(g.inFlight >= 0, "coord: an answer to a request not in flight")
	if a.err != nil {
		g.out.lastErr = a.err
		refused := refusedByReplica(a.err)
		if refused {
			g.out.refusals = append(g.out.refusals, a.err)
		}
		for _, t := range a.targets {
			gr := q.groups[t.group]
			gr.asked = gr.asked.add(t.DC, -1)
			assert.That(gr.asked.get(t.DC) >= 0, "coord: a group counts a failure of a request it never asked")
			if refused {
				gr.refused++
			} else {
				gr.failed = gr.failed.add(t.DC, 1)
			}
		}
		if q.abort != nil && q.abort(a.err) {
			g.decided = true
			return
		}
	} else {
		g.accept(a.targets, a.value)
		for _, t := range a.targets {
			gr := q.groups[t.group]
			gr.acked = gr.acked.add(t.DC, 1)
			assert.That(gr.acked.get(t.DC) <= gr.asked.get(t.DC), "coord: a group counts more answers than requests in one DC")
			g.out.acked++
		}
	}
	if q.waitAll {
		return
	}
	if g.done() {
		g.out.met, g.decided = true, true
		return
	}
	if q.eachGroup {
		g.decided = !slices.ContainsFunc(q.groups, func(gr *group) bool { return !gr.met() && !gr.hopeless() })
		return
	}
	for _, gr := range q.groups {
		if gr.hopeless() {
			g.decided = true
			return
		}
	}
}

// refusedByReplica reports whether err is a replica's refusal to serve this node at all
// (it does not count it as a member), rather than a failure: the replica answered, and
// would answer the same to a retry.
func refusedByReplica(err error) bool { return errors.Is(err, replica.ErrNotMember) }

// unmet returns the error of a gathering at level cl that ended without meeting required,
// out being its outcome and err the caller's context's error if that ended it; hinted
// counts the hints a write stored. A level lost to refusals is unavailable, with the
// refusals: the replicas answered at once, and another node can coordinate the request.
// Any other is a timeout.
func unmet(cl consistency.Level, required consistency.Requirement, out outcome, hinted int, err error) error {
	if err == nil && out.refused {
		return &RefusedError{Level: cl, Required: required, Acked: out.acked, Refusals: out.refusals}
	}
	return &TimeoutError{Level: cl, Required: required, Acked: out.acked, Hinted: hinted, Cause: cmp.Or(err, out.lastErr)}
}

// done reports whether every requirement, and enough, hold.
func (g *gathering[T]) done() bool {
	for _, gr := range g.q.groups {
		if !gr.met() {
			return false
		}
	}
	return g.q.enough == nil || g.q.enough()
}

// pickNeeded returns the index of the first candidate (nearest first) in a datacenter the
// requirement still needs, or 0 when none is specially needed.
func pickNeeded(candidates []target, required consistency.Requirement, asked dcTally) int {
	if len(required.PerDC) == 0 {
		return 0
	}
	for i, t := range candidates {
		if need, ok := required.PerDC[t.DC]; ok && asked.get(t.DC) < need {
			return i
		}
	}
	return 0
}

// nearestFirst orders targets for asking: this node, then its DC, then the others, each
// group by measured distance; the order among equals is kept.
func (c *Coordinator) nearestFirst(targets []target) []target {
	if len(targets) < 2 {
		return targets
	}
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
	slices.SortStableFunc(targets, func(a, b target) int {
		ga, da := rank(a)
		gb, db := rank(b)
		if ga != gb {
			return cmp.Compare(ga, gb)
		}
		return cmp.Compare(da, db)
	})
	return targets
}

// readable returns the members that may be asked for reads, as targets of group, nearest
// first, in buf's memory when it has room (nil is fine): those that serve reads, and the
// pending ones that answer, whose answers count on top of the level (levelRequirement).
// Under kura's read policy, those of this node's DC go least pending first (a scan's
// reads when scan: see pendingReads).
func (c *Coordinator) readable(buf []target, members []placement.Member, group int, scan bool) []target {
	out := slices.Grow(buf[:0], len(members))
	for i, m := range members {
		if m.Reads() || (m.Pending || m.State.Pending()) && m.State.Reachable() {
			out = append(out, target{Member: m, group: group, slot: i})
		}
	}
	out = c.nearestFirst(out)
	if c.readPolicy().Queue == sched.Fair {
		dc := c.view.Self().DC
		c.pending.leastFirst(out, scan, func(t target) bool { return t.DC == dc })
	}
	return out
}

// satisfiable reports whether targets, counted per DC, could meet required: without the
// map dcCounts makes, which only the unavailable error needs.
func satisfiable(targets []target, required consistency.Requirement) bool {
	var buf [2]dcCount
	alive := dcTally(buf[:0])
	for _, t := range targets {
		alive = alive.add(t.DC, 1)
	}
	return alive.satisfies(required)
}

// available returns nil when targets could meet required, and otherwise the unavailable
// error of level cl that says how many of them are alive per DC.
func available(cl consistency.Level, required consistency.Requirement, targets []target) error {
	if satisfiable(targets, required) {
		return nil
	}
	return &UnavailableError{Level: cl, Required: required, Alive: dcCounts(targets)}
}

func dcCounts(targets []target) map[string]int {
	counts := map[string]int{}
	for _, t := range targets {
		counts[t.DC]++
	}
	return counts
}

// dcCount is one datacenter's count in a dcTally.
type dcCount struct {
	dc string
	n  int
}

// dcTally counts per datacenter as a short list rather than a map: a replica set spans
// a few DCs, and a gathering counts its requests and answers without allocating.
type dcTally []dcCount

// add returns the tally with n added to dc's count.
func (t dcTally) add(dc string, n int) dcTally {
	for i := range t {
		if t[i].dc == dc {
			t[i].n += n
			return t
		}
	}
	return append(t, dcCount{dc: dc, n: n})
}

// get returns dc's count.
func (t dcTally) get(dc string) int {
	for _, c := range t {
		if c.dc == dc {
			return c.n
		}
	}
	return 0
}

// total returns the sum of the counts.
func (t dcTally) total() int {
	sum := 0
	for _, c := range t {
		sum += c.n
	}
	return sum
}

// counts returns the tally as a map, each DC counted once (an UnavailableError's Alive).
func (t dcTally) counts() map[string]int {
	out := make(map[string]int, len(t))
	for _, c := range t {
		out[c.dc] = c.n
	}
	return out
}

// satisfies reports whether the counts meet r, as r.Satisfied does for the same counts
// in a map.
func (t dcTally) satisfies(r consistency.Requirement) bool {
	if t.total() < r.Total {
		return false
	}
	for dc, need := range r.PerDC {
		if t.get(dc) < need {
			return false
		}
	}
	return true
}
