package ringchange

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/kuradb/kura/internal/base/ctxtime"
	"github.com/kuradb/kura/internal/core/cluster"
)

// A join whose node dies mid-join would leave its ranges' pending replica dead for good:
// reads during a move ask the pending replica on top of the level, so the ranges stay
// unreadable at the levels that need it until someone ends the move. The join's arbiter
// ends it by itself once the joiner has been dead in gossip without a break for
// Config.AbortJoinAfter, by the same removal kura node remove makes. The joiner names
// its arbiter when it announces itself, and turns normal only once its arbiter has
// promised never to abort it: the arbiter decides once, promise or abort, so no node can
// count the joiner an owner while another dropped its pending ranges (which would serve
// stale reads from it, and let cleanup drop the only copies of writes acknowledged
// meanwhile). A joiner that learns its join was aborted stops, as Cassandra drains a
// node that hears of its own removal; an operator wipes it to join again.

// Application states of a join's arbitration.
const (
	// KeyJoinArbiter names the node that decides on this node's join (JoinArbiter): it
	// promises it, or aborts it if the joiner stays dead.
	KeyJoinArbiter = "join_arbiter"
	// KeyJoinStreamed says the joining node has streamed every range it gains, and asks
	// its arbiter's promise to turn normal.
	KeyJoinStreamed = "join_streamed"
	// KeyJoinPromised lists the joins this node arbitrates and promised, as
	// id@generation: each may turn normal, and this node will never abort it.
	KeyJoinPromised = "join_promised"
	// KeyJoinArbitration is where a node announces that it arbitrates joins (value
	// "1"). A build from before arbiters announces nothing and would never promise, so
	// a joiner names only a node that announces it, and with none (a cluster of older
	// builds in an upgrade) joins as before: unarbitrated, ended only by kura node remove.
	KeyJoinArbitration = "join_arbitration"
)

// DefaultAbortJoinAfter is how long a joining node stays dead before its arbiter aborts
// its join. Long enough that a joiner whose process or machine restarts, or that a short
// partition or a long pause cuts off, resumes its join instead of losing its streams;
// short enough that the ranges it would gain do not stay unreadable at the levels that
// need their pending replica for long.
const DefaultAbortJoinAfter = 5 * time.Minute

// NeverAbortJoin in Config.AbortJoinAfter turns the automatic abort off: only kura node
// remove ends the join of a dead joiner.
const NeverAbortJoin time.Duration = -1

// abortJoinMinRingDelays is the shortest AbortJoinAfter, in ring delays: the time after
// which a dead booting node is forgotten. A shorter bound would abort the joins of nodes
// that a restart, or gossip's verdicts flapping, keeps away for a few rounds.
const abortJoinMinRingDelays = forgetBootingRingDelays

// ErrJoinAborted: this node's join was aborted (its arbiter, or kura node remove,
// removed it); it never turns normal with these tokens.
var ErrJoinAborted = errors.New("this node's join was aborted")

// JoinArbiter picks the node that decides on self's join: the smallest id among the
// nodes gossip holds alive and normal in self's DC, else in any DC, that arbitrates
// (announces KeyJoinArbitration); "" when none is (nobody then aborts the join by
// itself). One in the joiner's own DC stays with it through a partition between DCs, so
// the join completes there rather than being aborted from the other side.
func JoinArbiter(v View, self string, arbitrates func(id string) bool) string {
	dc, local, any := "", "", ""
	for _, n := range v.Nodes() {
		if n.ID == self {
			dc = n.DC
		}
	}
	for _, n := range v.Nodes() { // sorted by id: the first found is the smallest
		if n.ID == self || n.Status != cluster.StatusNormal || !v.Alive(n.ID) || !arbitrates(n.ID) {
			continue
		}
		if any == "" {
			any = n.ID
		}
		if local == "" && n.DC == dc {
			local = n.ID
		}
	}
	if local != "" {
		return local
	}
	return any
}

// JoinClaim is what a joining node gossips about its join, as its arbiter reads it.
type JoinClaim struct {
	// Arbiter is the node it named to decide on its join (KeyJoinArbiter).
	Arbiter string
	// Streamed says it streamed every range it gains and asks for the promise
	// (KeyJoinStreamed).
	Streamed bool
}

// JoinWatch is an arbiter's memory of the joins it decides on: which it promised, and
// how long each joiner has been dead. It does no I/O: the node saves its Marks and
// restores them with NewJoinWatch, so that a restart keeps the promises.
type JoinWatch struct {
	down downWatch
	// promised holds the generation of each join promised, while its node is joining in
	// that generation.
	promised map[string]uint64
}

// NewJoinWatch returns the memory of an arbiter that promised the joins of marks (node
// id to generation, as Marks returned them before a restart). The joiners have been
// dead for no time yet.
func NewJoinWatch(marks map[string]uint64) JoinWatch {
	w := JoinWatch{}
	if len(marks) > 0 {
		w.promised = maps.Clone(marks)
	}
	return w
}

// promiseSpent reports whether a promise of n's join in generation gen is no longer
// needed: n turned normal (or anything but joining) in that generation, left or was
// removed, or is known under a newer generation, which must be promised anew. A node
// unknown, or known only under an older generation (a view not caught up after a
// restart), keeps its promise: a wrong drop could abort a node that owns its ranges.
func promiseSpent(n cluster.Node, gen uint64) bool {
	switch {
	case n.Status == cluster.StatusLeft || n.Status == cluster.StatusRemoved:
		return true
	case n.Generation != gen:
		return n.Generation > gen
	}
	return n.Status != cluster.StatusJoining
}

// Arbitrate decides, on node self, about the joins of v that name self their arbiter in
// claims: it promises each joiner that gossip holds alive and that has streamed, and
// aborts each that gossip has held dead without a break for at least after and that it
// has not promised (after <= 0: none). A join is promised or aborted, never both, since
// one node decides both: the joiner turns normal only once it sees the promise, and an
// aborted joiner is removed, for good in that generation. A joiner heard of again under
// a newer generation (restarted) must be promised again; a promise is forgotten once
// spent (promiseSpent).
func (w *JoinWatch) Arbitrate(v View, self string, claims map[string]JoinClaim, now time.Time, after time.Duration) (promise, abort []cluster.Node) {
	mine := func(n cluster.Node) bool {
		return n.ID != self && n.Status == cluster.StatusJoining && claims[n.ID].Arbiter == self
	}
	for id, gen := range w.promised {
		if n, ok := nodeOf(v, id); ok && promiseSpent(n, gen) {
			delete(w.promised, id)
		}
	}
	for _, n := range v.Nodes() {
		if mine(n) && v.Alive(n.ID) && claims[n.ID].Streamed && !w.Promised(n) {
			if w.promised == nil {
				w.promised = map[string]uint64{}
			}
			w.promised[n.ID] = n.Generation
			promise = append(promise, n)
		}
	}
	gone := w.down.over(v, now, after, func(n cluster.Node) bool { return mine(n) && !w.Promised(n) })
	if after > 0 {
		abort = gone
	}
	return promise, abort
}

// Promised reports whether this arbiter promised n's join in n's generation.
func (w *JoinWatch) Promised(n cluster.Node) bool {
	gen, ok := w.promised[n.ID]
	return ok && gen == n.Generation
}

// Marks returns the joins promised, node id to generation: what KeyJoinPromised
// gossips and what the node saves for NewJoinWatch.
func (w *JoinWatch) Marks() map[string]uint64 { return maps.Clone(w.promised) }

// nodeOf looks a node up in v.
func nodeOf(v View, id string) (cluster.Node, bool) {
	for _, n := range v.Nodes() {
		if n.ID == id {
			return n, true
		}
	}
	return cluster.Node{}, false
}

// ArbitrateJoins decides about the joins that name this node their arbiter (JoinWatch):
// it gossips its promises, and aborts the joins of joiners dead for
// Config.AbortJoinAfter as kura node remove does. The node calls it once a gossip round.
func (c *Changer) ArbitrateJoins(context.Context) {
	dir := c.parts.Directory
	if st := dir.Self().Status; st == cluster.StatusLeft || st == cluster.StatusRemoved {
		return // no member any more: its joiners name another arbiter (awaitPromise)
	}
	claims := map[string]JoinClaim{}
	for _, n := range dir.Nodes() {
		if n.Status != cluster.StatusJoining {
			continue
		}
		if m, ok := c.parts.Gossip.Member(n.ID); ok && m.Generation == n.Generation {
			claims[n.ID] = JoinClaim{Arbiter: m.AppState[KeyJoinArbiter], Streamed: m.AppState[KeyJoinStreamed] != ""}
		}
	}
	c.joinsMu.Lock()
	defer c.joinsMu.Unlock()
	promise, abort := c.joins.Arbitrate(dir, c.cfg.ID, claims, time.Now(), c.cfg.AbortJoinAfter)
	// A promise is saved before it is gossiped, since the joiner turns normal on the
	// gossip: a restart must not forget it. One not saved is not gossiped, and saved
	// again next round; this node holds it promised meanwhile.
	if marks := c.joins.Marks(); FormatMarks(marks) != c.savedMarks {
		if err := c.parts.Promises.SavePromises(marks); err != nil {
			c.log.Error("save the joins promised: not gossiped until saved", "promised", FormatMarks(marks), "err", err)
			promise = nil
		} else {
			c.savedMarks = FormatMarks(marks)
		}
	}
	if c.savedMarks != c.gossipedMarks {
		c.parts.Gossip.SetAppState(KeyJoinPromised, c.savedMarks)
		c.gossipedMarks = c.savedMarks
	}
	for _, n := range promise {
		c.log.Info("promised a join: it may turn normal, and this node will never abort it", "node", n.ID, "generation", n.Generation)
	}
	for _, n := range abort {
		c.abortJoin(n, fmt.Sprintf("it has been down %v while joining", c.cfg.AbortJoinAfter))
	}
}

// JoinsPromised returns the joins this node gossips as promised (KeyJoinPromised), node
// id to generation.
func (c *Changer) JoinsPromised() map[string]uint64 {
	c.joinsMu.Lock()
	defer c.joinsMu.Unlock()
	return ParseMarks(c.gossipedMarks)
}

// arbitrates reports whether gossip holds node id announcing that it arbitrates joins.
func (c *Changer) arbitrates(id string) bool {
	m, ok := c.parts.Gossip.Member(id)
	return ok && m.AppState[KeyJoinArbitration] == "1"
}

// JoinArbitration is what a node knows of the arbitration of a dead joiner's join, in
// the joiner's generation, when an operator asks it to abort the join (MayAbort).
type JoinArbitration struct {
	// Claim is what the joiner gossips about its join; Heard says this node has it.
	Claim JoinClaim
	Heard bool
	// Promised says its arbiter promised the join: as it gossips (KeyJoinPromised), or,
	// when this node is the arbiter, as it holds.
	Promised bool
	// ArbiterMember says the arbiter may be a member: not known to have left or been
	// removed. ArbiterUp says gossip holds it reachable.
	ArbiterMember, ArbiterUp bool
}

// MayAbort decides whether node self may abort the join of dead joiner id (kura node
// remove), given what it knows of its arbitration. A joiner turns normal only with its
// arbiter's promise, and the arbiter decides once, promise or abort: so a promised join
// is never aborted (the joiner may own its ranges by now, and the old owners may have
// dropped them), and only the arbiter aborts one, unless it is no member any more, or,
// with force, down (the operator accepts that it may have promised out of this node's
// sight, cut off rather than dead). A join that names no arbiter (older builds) is
// aborted by any node, as before.
func MayAbort(self, id string, a JoinArbitration, force bool) error {
	arbiter := a.Claim.Arbiter
	switch {
	case !a.Heard:
		return fmt.Errorf("%w: this node has not heard yet which node arbitrates the join of %s: run node remove again shortly, or through another node", ErrBadMove, id)
	case arbiter == "":
		return nil
	case a.Promised:
		return fmt.Errorf("%w: node %s's arbiter %s promised its join, so it may have turned normal and own its ranges: a promised join is never aborted. Start %s again to complete its join, then decommission it; once the cluster shows it normal, node remove streams its ranges as for any dead node",
			ErrBadMove, id, arbiter, id)
	case arbiter == self || !a.ArbiterMember:
		return nil
	case a.ArbiterUp:
		return fmt.Errorf("%w: the join of %s is decided by its arbiter %s alone, so that a join it promised is never aborted: run node remove %s through %s (kura status shows its client address); %s also aborts it by itself once %s has been down --abort-join-after",
			ErrBadMove, id, arbiter, id, arbiter, arbiter, id)
	case !force:
		return fmt.Errorf("%w: the join of %s is decided by its arbiter %s alone, which is down or cut off from this node (it may have promised the join out of this node's sight): start %s again, or, if %s is dead for good, run node remove --force %s",
			ErrBadMove, id, arbiter, arbiter, arbiter, id)
	}
	return nil
}

// abortByOperator aborts the join of dead, a dead joiner, for kura node remove, if
// MayAbort lets it. It decides under joinsMu, so that this node, as the join's arbiter,
// never promises it after deciding to abort it, nor aborts one it just promised.
func (c *Changer) abortByOperator(dead cluster.Node, force bool) error {
	c.joinsMu.Lock()
	defer c.joinsMu.Unlock()
	var a JoinArbitration
	if m, ok := c.parts.Gossip.Member(dead.ID); ok && m.Generation == dead.Generation {
		a.Claim = JoinClaim{Arbiter: m.AppState[KeyJoinArbiter], Streamed: m.AppState[KeyJoinStreamed] != ""}
		a.Heard = true
	}
	if arbiter := a.Claim.Arbiter; arbiter == c.cfg.ID {
		a.Promised = c.joins.Promised(dead)
	} else if arbiter != "" {
		if m, ok := c.parts.Gossip.Member(arbiter); ok {
			g, ok := ParseMarks(m.AppState[KeyJoinPromised])[dead.ID]
			a.Promised = ok && g == dead.Generation
		}
		n, ok := c.parts.Directory.Node(arbiter)
		// An arbiter this node does not know may be a member it has not heard of: only
		// one it holds departed decides nothing any more.
		a.ArbiterMember = !ok || n.Status != cluster.StatusLeft && n.Status != cluster.StatusRemoved
		a.ArbiterUp = c.parts.Directory.State(arbiter).Reachable()
	}
	if err := MayAbort(c.cfg.ID, dead.ID, a, force); err != nil {
		return err
	}
	c.abortJoin(dead, "kura node remove")
	return nil
}

// abortJoin ends the join of dead, a joiner that owned nothing yet: it is removed at once
// (its join is aborted, nothing streams), and every node, itself included, learns it
// from the gossiped removal.
func (c *Changer) abortJoin(dead cluster.Node, why string) {
	c.log.Warn("aborting the join of a dead node: it owned no ranges yet", "node", dead.ID, "generation", dead.Generation, "why", why)
	c.parts.Gossip.MarkRemoved(dead)
}

// awaitPromise holds a joiner that has streamed its gains until its arbiter promises its
// join (KeyJoinPromised), so that it never turns normal while its arbiter may abort it.
// It returns ErrJoinAborted once the node learns its join was aborted, and ctx's error
// when ctx ends first.
// An arbiter that left or was removed meanwhile decides nothing any more
// (ArbitrateJoins), so the joiner names another.
func (c *Changer) awaitPromise(ctx context.Context) error {
	if c.arbiter == "" {
		return nil // nobody aborts this join by itself
	}
	c.parts.Gossip.SetAppState(KeyJoinStreamed, "1")
	defer c.parts.Gossip.SetAppState(KeyJoinStreamed, "")
	wait := c.newProgress("streamed; waiting for the join's arbiter to promise it before turning normal", c.cfg.RingDelay)
	gen := c.parts.Gossip.Generation()
	dir := c.parts.Directory
	for {
		if dir.Self().Status == cluster.StatusRemoved {
			return ErrJoinAborted
		}
		if a, ok := dir.Node(c.arbiter); !ok || a.Status == cluster.StatusLeft || a.Status == cluster.StatusRemoved {
			next := JoinArbiter(dir, c.cfg.ID, c.arbitrates)
			c.log.Info("the join's arbiter is no member any more: naming another", "arbiter_before", c.arbiter, "arbiter", next)
			c.arbiter = next
			c.parts.Gossip.SetAppState(KeyJoinArbiter, next)
			if next == "" {
				return nil
			}
		}
		arbiter := c.arbiter
		if m, ok := c.parts.Gossip.Member(arbiter); ok {
			if g, ok := ParseMarks(m.AppState[KeyJoinPromised])[c.cfg.ID]; ok && g == gen {
				return nil
			}
		}
		wait.still(fmt.Sprintf("node %s has not promised this join yet (it must be up and reachable)", arbiter), "arbiter", arbiter)
		if !ctxtime.Sleep(ctx, c.cfg.GossipInterval) {
			return ctx.Err()
		}
	}
}
