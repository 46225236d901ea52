package ringchange

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/kuradb/kura/internal/base/ctxtime"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/ring"
)

// Join takes the node to normal: it learns the ring, and a node that joins a cluster
// holding data streams the ranges it gains first. The node runs it in the background
// from its start, until ctx ends. It returns an error only when the node will never
// join: a replacement (Config.Replace) refused for good (ErrReplaceRefused), which the
// node should stop on. Waits that may end (no member answers yet, another ring change
// in progress) go on, and say every progressEvery in the log what they wait for.
func (c *Changer) Join(ctx context.Context) error {
	dir := c.parts.Directory
	if err := c.waitForRing(ctx); err != nil {
		return nil
	}
	if c.firstOfNewCluster() {
		c.checkMembership(ctx)
		return nil
	}
	self := dir.Self()
	switch self.Status {
	case cluster.StatusNormal:
		if !c.cfg.Fresh {
			c.reconcileRing(ctx)
		}
		return nil
	case cluster.StatusRebuilding:
		c.gainThenNormal(ctx, "rebuilt", "")
		return nil
	case cluster.StatusLeaving:
		// Restarted mid-decommission: the ranges are still ours; the operator runs it again.
		c.log.Warn("restarted while leaving; back to normal: run the decommission again")
		c.SetStatus(cluster.StatusNormal, self.Tokens)
		return nil
	}
	tokens := self.Tokens
	if c.cfg.Replace != "" {
		var err error
		if tokens, err = c.replacedTokens(ctx); errors.Is(err, ErrReplaceRefused) {
			c.log.Error("cannot replace", "replace", c.cfg.Replace, "err", err)
			return err
		} else if err != nil {
			return nil
		}
	}
	if !c.cfg.Fresh && self.Status != cluster.StatusJoining && self.Status != cluster.StatusBooting {
		return nil
	}
	if c.cfg.Replace == "" && !c.othersOnRing() {
		c.log.Info("first node of the cluster: normal without streaming")
		c.SetStatus(cluster.StatusNormal, tokens)
		return nil
	}
	for yielded := false; ; {
		// One range movement at a time, as Cassandra's consistent range movement: a
		// gainer streaming from a holder still receiving the range would miss what that
		// holder has not received yet.
		if dir.Self().Status == cluster.StatusJoining && c.checkNoMoves(c.cfg.ID) != nil {
			// Restarted mid-join while another node joins: it waits as booting, or the
			// other, which goes first by id, would wait for it to yield for ever.
			c.SetStatus(cluster.StatusBooting, tokens)
		}
		if !c.awaitReplacements(ctx) || !c.awaitNoMoves(ctx) || yielded && !c.awaitTurn(ctx) {
			return nil
		}
		if c.cfg.Replace != "" {
			// While it waited, the dead node may have been replaced or removed by another.
			if err := c.replaceable(); err != nil {
				c.log.Error("cannot replace", "replace", c.cfg.Replace, "err", err)
				return err
			}
		}
		// The arbiter is named before the status, so that whoever learns this join
		// learns who decides on it; once named, it stays for this life (generation): one
		// named before a yield, cut off since, may still abort the join it knew.
		if c.arbiter == "" {
			c.arbiter = JoinArbiter(dir, c.cfg.ID, c.arbitrates)
		}
		c.parts.Gossip.SetAppState(KeyJoinArbiter, c.arbiter)
		c.SetStatus(cluster.StatusJoining, tokens)
		normal, err := c.gainThenNormal(ctx, "joined", c.cfg.Replace)
		if errors.Is(err, ErrJoinAborted) {
			c.log.Error("this node's join was aborted, so it never turns normal with these tokens: wipe its data dir and start it again to join anew", "arbiter", c.arbiter)
			return fmt.Errorf("%w: it was removed (kura node remove, or its arbiter %s once it had been down too long); wipe its data dir and start it again to join anew", err, c.arbiter)
		}
		if errors.Is(err, ErrOverlap) || errors.Is(err, ErrYield) {
			c.log.Warn("this join gives way to another ring change: it waits for it, then starts again", "err", err)
			c.SetStatus(cluster.StatusBooting, tokens)
			yielded = true
			continue
		}
		if !normal {
			return nil
		}
		break
	}
	if c.cfg.Replace != "" {
		if dead, ok := dir.Node(c.cfg.Replace); ok {
			c.parts.Gossip.MarkRemoved(dead)
		}
	}
	return nil
}

// replacedTokens returns the tokens of the node this one replaces (Config.Replace). It
// refuses for good (ErrReplaceRefused) a node the cluster does not know, one that left
// or was removed, and one that is up, the first and last after waiting as long as
// gossip may take to say otherwise: none of these changes by waiting longer. It returns
// ctx's error when ctx ends first.
func (c *Changer) replacedTokens(ctx context.Context) ([]uint64, error) {
	dir := c.parts.Directory
	id := c.cfg.Replace
	// Gossip brings dead members after the live ones; give it a few rounds.
	dead, ok := dir.Node(id)
	for i := 0; !ok; i++ {
		if i == 4*RingDelayRounds {
			return nil, fmt.Errorf("%w: node %s is not in the cluster: check the id (kura status --all lists every node)", ErrReplaceRefused, id)
		}
		if !ctxtime.Sleep(ctx, c.cfg.GossipInterval) {
			return nil, ctx.Err()
		}
		dead, ok = dir.Node(id)
	}
	if !c.cfg.Fresh {
		// Restarted: its stored ring may predate what became of the dead node and of its
		// other replacements; learn that from the members before judging by it.
		c.reconcileRing(ctx)
	}
	if err := c.replaceable(); err != nil {
		return nil, err
	}
	// A node first heard of is presumed up until gossip's verdict on it arrives; that
	// can take rounds when this node learned the ring from a member restarted since
	// the death, so it waits several ring delays before it refuses.
	for i := 0; dir.State(dead.ID).Reachable(); i++ {
		if i == 4*RingDelayRounds {
			return nil, fmt.Errorf("%w: node %s is up: a replacement takes a dead node's place; stop %s first, or decommission it instead", ErrReplaceRefused, id, id)
		}
		if !ctxtime.Sleep(ctx, c.cfg.GossipInterval) {
			return nil, ctx.Err()
		}
	}
	vnodes := c.cfg.Vnodes
	if vnodes <= 0 {
		vnodes = ring.DefaultVnodes
	}
	var tokens []uint64
	for _, t := range dead.RingTokens(vnodes) {
		tokens = append(tokens, uint64(t))
	}
	return tokens, nil
}

// replaceable refuses for good (ErrReplaceRefused) a replacement of a node that left or
// was removed, or that another node replaces already and goes first (OtherReplacement).
func (c *Changer) replaceable() error {
	dir := c.parts.Directory
	id := c.cfg.Replace
	if dead, ok := dir.Node(id); ok && (dead.Status == cluster.StatusLeft || dead.Status == cluster.StatusRemoved) {
		// Its ranges went to other nodes already: taking its tokens again would be a
		// join under another node's name. A node replaced before is removed too.
		gone := map[cluster.Status]string{cluster.StatusLeft: "was decommissioned", cluster.StatusRemoved: "was removed"}[dead.Status]
		return fmt.Errorf("%w: node %s %s: it has no place left to take over; start this node without --replace to join as a new node", ErrReplaceRefused, id, gone)
	}
	return OtherReplacement(dir, c.cfg.ID, id)
}

// RemovedSelf takes the news that another member, by, removed this node (kura node
// remove, or a replacement): it is no member any more, so it stops coordinating (its
// coordinator refuses what it is asked) and, persisted, refuses to start again with
// this data dir.
func (c *Changer) RemovedSelf(by string) {
	dir := c.parts.Directory
	self := dir.Self()
	if self.Status == cluster.StatusRemoved {
		return
	}
	c.log.Error("this node was removed from the cluster; it serves nothing now: wipe its data dir to join again", "by", by, "status_before", self.Status)
	if err := dir.SetSelf(cluster.StatusRemoved, self.Tokens); err != nil {
		c.log.Error("persist the removal", "err", err)
	}
}

// firstOfNewCluster reports whether the node started with an empty data dir and nobody
// to ask (no seeds, no peers, not replacing): the first node of a new cluster, or a
// member of an old one whose disk was wiped and that was started without seeds. Only
// another member can tell the two apart (checkMembership).
func (c *Changer) firstOfNewCluster() bool {
	return c.cfg.Fresh && !c.cfg.Founding && c.cfg.Replace == "" && !c.cfg.Seeded
}

// checkMembership runs on a node that took itself for the first of a new cluster: as
// soon as it hears of another member (which calls on it because it holds this node in its
// ring: gossip calls on down members now and then), it asks that member whether this
// node owned ranges before, and if so rebuilds them before it serves reads. Until then,
// it pulls no keyspace from its peers, so it serves nothing of theirs from an empty disk;
// the peers themselves read nothing from it meanwhile (KeyNewData).
func (c *Changer) checkMembership(ctx context.Context) {
	self, known, _, err := c.pullRingFromAMember(ctx, true)
	if err != nil {
		return
	}
	wasMember := known && c.lostData(self)
	if wasMember {
		c.startRebuild(self)
	}
	close(c.askedMembership)
	if wasMember {
		c.gainThenNormal(ctx, "rebuilt", "")
	} else {
		c.markDataComplete()
	}
}

// lostDataCheckTimeout bounds how long a founding node with an empty data dir asks its
// peers whether it was a member before.
const lostDataCheckTimeout = 3 * time.Second

// CheckLostData asks the founding node's peers (Config.Named), before it serves
// anything, whether it owned ranges in an earlier life, and if so starts a rebuild: a
// founding node trusts its ring without asking anyone, so an empty data dir would
// otherwise pass for a new cluster's. With no peer answering (the first node of a new
// cluster, or every peer down), it cannot tell and starts as founded.
func (c *Changer) CheckLostData() {
	ctx, cancel := context.WithTimeout(context.Background(), lostDataCheckTimeout)
	defer cancel()
	for _, p := range c.cfg.Named {
		self, known, err := c.pullRing(ctx, p)
		if err != nil {
			c.log.Debug("ask a peer whether this node was a member", "peer", p.ID, "err", err)
			continue
		}
		if known && c.lostData(self) {
			c.startRebuild(self)
		}
		return
	}
}

// startRebuild puts a node that lost its data back on the ring as rebuilding, with the
// tokens it had, before it serves anything: it takes writes, serves no reads, and pulls
// its ranges back (gainThenNormal).
func (c *Changer) startRebuild(prior cluster.RingEntry) {
	c.log.Warn("this node was a member and its data dir is empty: rebuilding its ranges from the other replicas before it serves reads",
		"status_before", prior.Status, "generation_before", prior.Generation)
	c.SetStatus(cluster.StatusRebuilding, prior.Tokens)
}

// gainThenNormal takes a joining or rebuilding node to normal: it waits a ring delay, so
// every coordinator has learned its status (it serves no reads, and takes writes), pulls
// every range it gains (all it holds, when rebuilding), never from exclude, and logs what
// it streamed as done. It reports whether the node is normal.
// A joining node yields to a move that overlaps its own (ErrOverlap): it goes back to
// booting, waits for the other move, and joins again.
func (c *Changer) gainThenNormal(ctx context.Context, done, exclude string) (normal bool, err error) {
	dir := c.parts.Directory
	self := dir.Self()
	for {
		c.log.Info("waiting for the ring to learn this node's status", "status", self.Status, "ring_delay", c.cfg.RingDelay)
		if !ctxtime.Sleep(ctx, c.cfg.RingDelay) {
			return false, ctx.Err()
		}
		if self.Status == cluster.StatusJoining {
			// The ring this node learned when it started may predate a departure that
			// gossip no longer carries (it was learned from a member that was down
			// then): its gains must not count on a holder that is gone.
			c.pullRingsOfMembers(ctx)
		}
		if self.Status != cluster.StatusJoining || c.checkNoMoves(self.ID) == nil {
			break
		}
		if err := Overlap(dir, self.ID, c.cfg.ID); err != nil {
			return false, err
		}
		if err := c.giveWayToKeyspaces(); err != nil {
			return false, err
		}
		// This join goes first: the others yield. Once they have, the ranges it gains
		// are those of its move alone, and every coordinator must learn that (a ring
		// delay) before it streams, or a write would miss both it and the stream.
		if !c.awaitNoMoves(ctx) {
			return false, ctx.Err()
		}
	}
	if self.Status == cluster.StatusRebuilding && !c.awaitNoKeyspaceMoves(ctx) {
		return false, ctx.Err()
	}
	start := time.Now()
	st, err := c.gain(ctx, self.Status, exclude)
	if errors.Is(err, ErrYield) {
		return false, err
	}
	if err != nil {
		c.log.Error("streaming stopped; it resumes at the next start", "status", dir.Self().Status, "err", err)
		return false, err
	}
	if self.Status == cluster.StatusJoining {
		if err := c.awaitPromise(ctx); err != nil {
			return false, err
		}
	}
	c.log.Info(done, "ranges", st.Ranges, "records", st.Records, "bytes", st.Bytes, "cross_dc_bytes", st.CrossDCBytes, "took", time.Since(start).Round(time.Millisecond))
	c.markDataComplete()
	c.SetStatus(cluster.StatusNormal, dir.Self().Tokens)
	return true, nil
}

// gain pulls the ranges the node gains. A join (not a replacement, nor a rebuild, which
// holds its ranges already) that waits for a dead holder gives way, with ErrYield, to a
// node waiting to replace that holder (YieldTo), checked each gossip round: the
// replacement waits for no move to be in progress, so it would otherwise wait for this
// join, which waits for it.
func (c *Changer) gain(ctx context.Context, status cluster.Status, exclude string) (Stats, error) {
	if status != cluster.StatusJoining || c.cfg.Replace != "" {
		return c.parts.Streamer.Gain(ctx, exclude)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		for ctxtime.Sleep(ctx, c.cfg.GossipInterval) {
			if err := YieldTo(c.parts.Directory, c.parts.Streamer.WaitingFor()); err != nil {
				cancel(err)
				return
			}
		}
	}()
	st, err := c.parts.Streamer.Gain(ctx, exclude)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, ErrYield) {
		return st, cause
	}
	return st, err
}

// awaitReplacements holds a join (not a replacement) while a node waits to replace a
// dead one: replacements, which bring a dead node's copies back, go first, and a join
// that would need the dead node's copies would wait for them (YieldTo). It says why
// it waits as awaitNoMoves does, and reports false when ctx ends first.
func (c *Changer) awaitReplacements(ctx context.Context) bool {
	if c.cfg.Replace != "" {
		return true
	}
	wait := c.newProgress("waiting to join until a replacement completes", 0)
	for {
		id, dead := WaitingReplacement(c.parts.Directory, nil)
		if id == "" {
			return true
		}
		wait.still(fmt.Sprintf("node %s waits to replace %s", id, dead))
		if !ctxtime.Sleep(ctx, c.cfg.GossipInterval) {
			return false
		}
	}
}

// awaitTurn spaces out joiners that yielded together, so that they do not announce
// themselves at once again: each waits two gossip rounds for every booting node of a
// smaller id, then until no move is in progress. It reports false when ctx ends first.
func (c *Changer) awaitTurn(ctx context.Context) bool {
	for {
		ahead := Ahead(c.parts.Directory, c.cfg.ID)
		if ahead > 0 && !ctxtime.Sleep(ctx, time.Duration(2*ahead)*c.cfg.GossipInterval) {
			return false
		}
		if c.checkNoMoves(c.cfg.ID) == nil {
			return true
		}
		if !c.awaitNoMoves(ctx) {
			return false
		}
	}
}

// awaitNoMoves waits until no other node is joining or leaving, saying why it waits when
// the reason changes and every progressEvery; it reports false when ctx ends first.
func (c *Changer) awaitNoMoves(ctx context.Context) bool {
	return c.awaitNo(ctx, "waiting to join until a ring change in progress completes", func() error { return c.checkNoMoves(c.cfg.ID) })
}

// awaitNoKeyspaceMoves holds a rebuilding node's streaming while a keyspace moves
// (NoKeyspaceMoves): the move's copy may have reached this node before it lost its data,
// and its streaming follows the current placement only, so it would miss the ranges the
// next placement gives it. It keeps taking writes meanwhile.
func (c *Changer) awaitNoKeyspaceMoves(ctx context.Context) bool {
	return c.awaitNo(ctx, "waiting to rebuild until a keyspace's move completes", func() error {
		return NoKeyspaceMoves(c.parts.Moves.MovingKeyspaces())
	})
}

// awaitNo waits until check passes, saying why it waits (msg, and check's error) when the
// reason changes and every progressEvery; it reports false when ctx ends first.
func (c *Changer) awaitNo(ctx context.Context, msg string, check func() error) bool {
	wait := c.newProgress(msg, 0)
	for {
		err := check()
		if err == nil {
			return true
		}
		wait.still(err.Error())
		if !ctxtime.Sleep(ctx, c.cfg.GossipInterval) {
			return false
		}
	}
}

// progressEvery is how often a wait that may last long says in the log that it still
// waits, and for what: a node that seems stuck tells the operator why.
const progressEvery = 30 * time.Second

// progress logs a wait, once it has lasted quiet: its reason when that changes, and
// again every progressEvery.
type progress struct {
	log     *slog.Logger
	msg     string
	quiet   time.Duration
	started time.Time
	said    string
	saidAt  time.Time
}

// newProgress starts a wait that logs msg once it has lasted quiet.
func (c *Changer) newProgress(msg string, quiet time.Duration) *progress {
	return &progress{log: c.log, msg: msg, quiet: quiet, started: time.Now()}
}

// still says the wait goes on for reason, with the details in args, if it is time to:
// details that change do not make it log sooner. A nil progress is a wait not said.
func (p *progress) still(reason string, args ...any) {
	if p == nil {
		return
	}
	now := time.Now()
	if now.Sub(p.started) < p.quiet || reason == p.said && now.Sub(p.saidAt) < progressEvery {
		return
	}
	p.said, p.saidAt = reason, now
	p.log.Warn(p.msg, append([]any{"reason", reason, "waited", now.Sub(p.started).Round(time.Second)}, args...)...)
}

// markDataComplete stops gossiping KeyNewData: the node holds what it should.
func (c *Changer) markDataComplete() {
	c.parts.Gossip.SetAppState(KeyNewData, "")
}

// waitForRing returns once the directory can be trusted: at once when it was persisted,
// founding or seedless (the node trusts those when it opens), else once a member has
// handed over its ring.
func (c *Changer) waitForRing(ctx context.Context) error {
	dir := c.parts.Directory
	if dir.Trusted() {
		return nil
	}
	self, known, from, err := c.pullRingFromAMember(ctx, false)
	if err != nil {
		return err
	}
	if known && c.lostData(self) {
		c.startRebuild(self)
	}
	dir.SetTrusted()
	c.log.Info("learned the ring", "from", from, "nodes", len(dir.Nodes()))
	return nil
}

// pullRingFromAMember pulls the ring from the first member gossip finds up that answers,
// trying again each gossip round until one does or ctx ends. It returns that member's
// entry for this node, if it has one (pullRing), and the member's id. With settled, only
// a member whose own ring status is normal or leaving counts: a node asking whether it
// was a member must not take the word of one that is itself joining or rebuilding,
// which may have learned its whole ring, this node's entry included, from this very
// node (two nodes wiped at once, the second seeded with the first).
func (c *Changer) pullRingFromAMember(ctx context.Context, settled bool) (self cluster.RingEntry, known bool, from string, err error) {
	dir := c.parts.Directory
	// A few rounds are how long gossip takes to find the first member: said only if longer.
	// A node asking whether it was a member (settled) may well be the only one, the first
	// of a new cluster: its wait is normal and not said.
	var wait *progress
	if !settled {
		wait = c.newProgress("waiting to learn the ring from a member", progressEvery)
	}
	for {
		reason := "no member is up: are the seeds (--seeds) other nodes' internode addresses, and are they running?"
		var last []any
		for _, other := range dir.Nodes() {
			if other.ID == c.cfg.ID || !dir.State(other.ID).Reachable() {
				continue
			}
			self, known, err := c.pullRing(ctx, other)
			if err != nil {
				c.log.Debug("pull the ring", "peer", other.ID, "err", err)
				reason, last = "no member that is up answered a ring pull", []any{"last_peer", other.ID, "last_err", err}
				continue
			}
			if settled {
				if now, ok := dir.Node(other.ID); !ok || now.Status != cluster.StatusNormal && now.Status != cluster.StatusLeaving {
					c.log.Debug("a member that is not settled cannot say whether this node was a member", "peer", other.ID, "status", now.Status)
					continue
				}
			}
			return self, known, other.ID, nil
		}
		wait.still(reason, last...)
		if !ctxtime.Sleep(ctx, c.cfg.GossipInterval) {
			return cluster.RingEntry{}, false, "", ctx.Err()
		}
	}
}

// ringPullTimeout bounds one ring pull.
const ringPullTimeout = 5 * time.Second

// pullRing learns the ring of another node. It also returns that node's entry for this
// node, if it has one: how a node whose data dir was wiped finds out that it was a member.
func (c *Changer) pullRing(ctx context.Context, from cluster.Node) (self cluster.RingEntry, known bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, ringPullTimeout)
	defer cancel()
	raw, err := c.parts.Peers.PullRing(ctx, from)
	if err != nil {
		return cluster.RingEntry{}, false, err
	}
	entries, err := cluster.DecodeRing(raw)
	if err != nil {
		return cluster.RingEntry{}, false, err
	}
	dir := c.parts.Directory
	for _, e := range entries {
		if e.ID == c.cfg.ID {
			self, known = e, true
			continue
		}
		if _, err := dir.Learn(e); err != nil {
			return cluster.RingEntry{}, false, err
		}
		if learned, err := dir.LearnDeparture(e); err != nil {
			return cluster.RingEntry{}, false, err
		} else if learned {
			c.log.Info("learned a departure missed while down", "node", e.ID, "status", e.Status, "from", from.ID)
		}
	}
	return self, known, nil
}

// reconcileRing pulls, a ring delay after a restart, the rings of a few members gossip
// finds up: a node that was down while another left, was removed or joined learns it
// there, since gossip may no longer carry a departed member's last status.
func (c *Changer) reconcileRing(ctx context.Context) {
	if ctxtime.Sleep(ctx, c.cfg.RingDelay) {
		c.pullRingsOfMembers(ctx)
	}
}

// reconcileMembers is how many members' rings a node reconciles its own with: more than
// one, since a member may itself have been down when a node departed (it learns it a
// ring delay after its restart), few enough that a node's pull stays small at scale.
const reconcileMembers = 3

// pullRingsOfMembers pulls the rings of up to reconcileMembers members that are up,
// taking from each the nodes and departures this node missed (pullRing).
func (c *Changer) pullRingsOfMembers(ctx context.Context) {
	dir := c.parts.Directory
	pulled := 0
	for _, other := range dir.Nodes() {
		if pulled == reconcileMembers || ctx.Err() != nil {
			return
		}
		if other.ID == c.cfg.ID || !dir.State(other.ID).Reachable() {
			continue
		}
		if _, _, err := c.pullRing(ctx, other); err != nil {
			c.log.Debug("pull the ring", "peer", other.ID, "err", err)
			continue
		}
		pulled++
	}
}

// lostData reports whether another member's ring entry for this node shows that it
// owned ranges in an earlier life (LostData).
func (c *Changer) lostData(self cluster.RingEntry) bool {
	return LostData(self, c.parts.Gossip.Generation())
}

// HandleRingPull answers another node's ring pull (Peers.PullRing): every entry of the
// directory, with its liveness.
func (c *Changer) HandleRingPull() ([]byte, error) {
	dir := c.parts.Directory
	nodes := dir.Nodes()
	entries := make([]cluster.RingEntry, len(nodes))
	for i, node := range nodes {
		entries[i] = cluster.RingEntry{Node: node, Up: dir.State(node.ID).Reachable()}
	}
	return cluster.EncodeRing(entries)
}

// othersOnRing reports whether another node owns ranges already.
func (c *Changer) othersOnRing() bool {
	for _, other := range c.parts.Directory.Nodes() {
		if other.ID != c.cfg.ID && other.Status.OnRing() {
			return true
		}
	}
	return false
}
