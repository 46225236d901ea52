package node

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/cluster"
	"github.com/kuradb/kura/membership"
	"github.com/kuradb/kura/ring"
	"github.com/kuradb/kura/ringchange"
	"github.com/kuradb/kura/stream"
	"github.com/kuradb/kura/transport"
)

// Application states of the ring's life cycle, besides the core's status.
const (
	// keyReplaces names the dead node a new node replaces (kura server --replace).
	keyReplaces = "replaces"
	// keyRemoving lists the dead nodes this node is removing, as id@generation: every
	// node treats them as leaving, so their ranges are streamed to their new owners.
	keyRemoving = "removing"
	// keyRemoved lists the nodes this node removed, as id@generation, for good.
	keyRemoved = "removed"
	// keyNewData says the node started this life with an empty data dir and has not
	// streamed into it yet. A member that holds it on the ring under an older generation
	// then knows it lost its data, even while it calls itself normal (it was started
	// without seeds, as the first node of a new cluster would be), and reads nothing from
	// it until it has rebuilt.
	keyNewData = "new_data"
)

// Message kinds of the ring's life cycle.
var (
	// kindStreamGains asks a node to pull the ranges it gains from a leaving or removed
	// node.
	kindStreamGains = transport.RegisterKind(14, "stream_gains")
	// kindRingPull asks a node for its ring, every entry with its liveness: how a new node
	// learns the whole ring, dead nodes included, before it trusts its view.
	kindRingPull = transport.RegisterKind(15, "ring_pull")
)

// ringDelayRounds is how many gossip rounds a node waits after announcing a ring change
// before it streams: time for every coordinator to learn the change, so that no write
// misses both the stream and the pending replica (Cassandra's RING_DELAY, 30 s).
const ringDelayRounds = 5

// joinRing takes the node to normal: it learns the ring, and a node that joins a cluster
// holding data streams the ranges it gains first. It runs in the background from Start.
func (n *Node) joinRing(ctx context.Context, fresh bool) {
	if err := n.waitForRing(ctx); err != nil {
		return
	}
	if n.firstOfNewCluster() {
		n.checkMembership(ctx)
		return
	}
	self := n.directory.Self()
	switch self.Status {
	case cluster.StatusNormal:
		if !fresh {
			n.reconcileRing(ctx)
		}
		return
	case cluster.StatusRebuilding:
		n.gainThenNormal(ctx, "rebuilt", "")
		return
	case cluster.StatusLeaving:
		// Restarted mid-decommission: the ranges are still ours; the operator runs it again.
		n.log.Warn("restarted while leaving; back to normal: run the decommission again")
		n.setStatus(cluster.StatusNormal, self.Tokens)
		return
	}
	tokens := self.Tokens
	if n.cfg.Replace != "" {
		// Gossip brings dead members after the live ones; give it a few rounds.
		dead, ok := n.directory.Node(n.cfg.Replace)
		for i := 0; !ok; i++ {
			if i == 4*ringDelayRounds || !sleepCtx(ctx, n.gossip.interval()) {
				n.log.Error("cannot replace: the node is not in the cluster", "replace", n.cfg.Replace)
				return
			}
			dead, ok = n.directory.Node(n.cfg.Replace)
		}
		// A node first heard of is presumed up until gossip's verdict on it arrives; that
		// can take rounds when this node learned the ring from a member restarted since
		// the death, so it waits several ring delays before it refuses.
		for i := 0; n.directory.State(dead.ID).Reachable(); i++ {
			if i == 4*ringDelayRounds || !sleepCtx(ctx, n.gossip.interval()) {
				n.log.Error("cannot replace a node that is up; decommission it instead", "replace", dead.ID)
				return
			}
		}
		tokens = nil
		vnodes := n.cfg.Vnodes
		if vnodes <= 0 {
			vnodes = ring.DefaultVnodes
		}
		for _, t := range dead.RingTokens(vnodes) {
			tokens = append(tokens, uint64(t))
		}
	}
	if !fresh && self.Status != cluster.StatusJoining && self.Status != cluster.StatusBooting {
		return
	}
	if n.cfg.Replace == "" && !n.othersOnRing() {
		n.log.Info("first node of the cluster: normal without streaming")
		n.setStatus(cluster.StatusNormal, tokens)
		return
	}
	for yielded := false; ; {
		// One range movement at a time, as Cassandra's consistent range movement: a
		// gainer streaming from a holder still receiving the range would miss what that
		// holder has not received yet.
		if n.directory.Self().Status == cluster.StatusJoining && n.checkNoMoves(n.cfg.ID) != nil {
			// Restarted mid-join while another node joins: it waits as booting, or the
			// other, which goes first by id, would wait for it to yield for ever.
			n.setStatus(cluster.StatusBooting, tokens)
		}
		if !n.awaitNoMoves(ctx) || yielded && !n.awaitTurn(ctx) {
			return
		}
		n.setStatus(cluster.StatusJoining, tokens)
		normal, err := n.gainThenNormal(ctx, "joined", n.cfg.Replace)
		if errors.Is(err, ringchange.ErrOverlap) {
			n.log.Warn("another node started a ring change at the same time: this join waits for it, then starts again", "err", err)
			n.setStatus(cluster.StatusBooting, tokens)
			yielded = true
			continue
		}
		if !normal {
			return
		}
		break
	}
	if n.cfg.Replace != "" {
		if dead, ok := n.directory.Node(n.cfg.Replace); ok {
			n.gossip.markRemoved(dead)
		}
	}
}

// removedSelf takes the news that another member removed this node (kura node remove,
// or a replacement): it is no member any more, so it stops coordinating (its coordinator
// refuses what it is asked) and, persisted, refuses to start again with this data dir.
func (n *Node) removedSelf(by string) {
	self := n.directory.Self()
	if self.Status == cluster.StatusRemoved {
		return
	}
	n.log.Error("this node was removed from the cluster; it serves nothing now: wipe its data dir to join again", "by", by, "status_before", self.Status)
	if err := n.directory.SetSelf(cluster.StatusRemoved, self.Tokens); err != nil {
		n.log.Error("persist the removal", "err", err)
	}
}

// firstOfNewCluster reports whether the node started with an empty data dir and nobody
// to ask (no seeds, no peers, not replacing): the first node of a new cluster, or a
// member of an old one whose disk was wiped and that was started without seeds. Only
// another member can tell the two apart (checkMembership).
func (n *Node) firstOfNewCluster() bool {
	return n.fresh && !n.cfg.Founding && n.cfg.Replace == "" && !n.hasSeeds()
}

// checkMembership runs on a node that took itself for the first of a new cluster: as
// soon as it hears of another member (which calls on it because it holds this node in its
// ring: gossip calls on down members now and then), it asks that member whether this
// node owned ranges before, and if so rebuilds them before it serves reads. Until then,
// it pulls no keyspace from its peers, so it serves nothing of theirs from an empty disk;
// the peers themselves read nothing from it meanwhile (keyNewData).
func (n *Node) checkMembership(ctx context.Context) {
	self, known, _, err := n.pullRingFromAMember(ctx)
	if err != nil {
		return
	}
	wasMember := known && n.lostData(self)
	if wasMember {
		n.startRebuild(self)
	}
	close(n.askedMembership)
	if wasMember {
		n.gainThenNormal(ctx, "rebuilt", "")
	} else {
		n.markDataComplete()
	}
}

// lostDataCheckTimeout bounds how long a founding node with an empty data dir asks its
// peers whether it was a member before.
const lostDataCheckTimeout = 3 * time.Second

// checkLostData asks the founding node's peers, before it serves anything, whether it
// owned ranges in an earlier life, and if so starts a rebuild: a founding node trusts
// its ring without asking anyone, so an empty data dir would otherwise pass for a new
// cluster's. With no peer answering (the first node of a new cluster, or every peer
// down), it cannot tell and starts as founded.
func (n *Node) checkLostData() {
	ctx, cancel := context.WithTimeout(context.Background(), lostDataCheckTimeout)
	defer cancel()
	for _, p := range n.cfg.Peers {
		self, known, err := n.pullRing(ctx, p)
		if err != nil {
			n.log.Debug("ask a peer whether this node was a member", "peer", p.ID, "err", err)
			continue
		}
		if known && n.lostData(self) {
			n.startRebuild(self)
		}
		return
	}
}

// startRebuild puts a node that lost its data back on the ring as rebuilding, with the
// tokens it had, before it serves anything: it takes writes, serves no reads, and pulls
// its ranges back (gainThenNormal).
func (n *Node) startRebuild(prior cluster.RingEntry) {
	n.log.Warn("this node was a member and its data dir is empty: rebuilding its ranges from the other replicas before it serves reads",
		"status_before", prior.Status, "generation_before", prior.Generation)
	n.setStatus(cluster.StatusRebuilding, prior.Tokens)
}

// gainThenNormal takes a joining or rebuilding node to normal: it waits a ring delay, so
// every coordinator has learned its status (it serves no reads, and takes writes), pulls
// every range it gains (all it holds, when rebuilding), never from exclude, and logs what
// it streamed as done. It reports whether the node is normal.
// A joining node yields to a move that overlaps its own (ringchange.ErrOverlap): it goes back to
// booting, waits for the other move, and joins again.
func (n *Node) gainThenNormal(ctx context.Context, done, exclude string) (normal bool, err error) {
	self := n.directory.Self()
	for {
		n.log.Info("waiting for the ring to learn this node's status", "status", self.Status, "ring_delay", n.ringDelay())
		if !sleepCtx(ctx, n.ringDelay()) {
			return false, ctx.Err()
		}
		if self.Status == cluster.StatusJoining {
			// The ring this node learned when it started may predate a departure that
			// gossip no longer carries (it was learned from a member that was down
			// then): its gains must not count on a holder that is gone.
			n.pullRingsOfMembers(ctx)
		}
		if self.Status != cluster.StatusJoining || n.checkNoMoves(self.ID) == nil {
			break
		}
		if err := ringchange.Overlap(n.directory, self.ID, n.cfg.ID); err != nil {
			return false, err
		}
		// This join goes first: the others yield. Once they have, the ranges it gains
		// are those of its move alone, and every coordinator must learn that (a ring
		// delay) before it streams, or a write would miss both it and the stream.
		if !n.awaitNoMoves(ctx) {
			return false, ctx.Err()
		}
	}
	start := time.Now()
	st, err := n.streamer.Gain(ctx, exclude)
	if err != nil {
		n.log.Error("streaming stopped; it resumes at the next start", "status", n.directory.Self().Status, "err", err)
		return false, err
	}
	n.log.Info(done, "ranges", st.Ranges, "records", st.Records, "bytes", st.Bytes, "bytes_cross_dc", st.BytesCrossDC, "took", time.Since(start).Round(time.Millisecond))
	n.markDataComplete()
	n.setStatus(cluster.StatusNormal, n.directory.Self().Tokens)
	return true, nil
}

// awaitTurn spaces out joiners that yielded together, so that they do not announce
// themselves at once again: each waits two gossip rounds for every booting node of a
// smaller id, then until no move is in progress. It reports false when ctx ends first.
func (n *Node) awaitTurn(ctx context.Context) bool {
	for {
		ahead := ringchange.Ahead(n.directory, n.cfg.ID)
		if ahead > 0 && !sleepCtx(ctx, time.Duration(2*ahead)*n.gossip.interval()) {
			return false
		}
		if n.checkNoMoves(n.cfg.ID) == nil {
			return true
		}
		if !n.awaitNoMoves(ctx) {
			return false
		}
	}
}

// awaitNoMoves waits until no other node is joining or leaving, saying once why it waits;
// it reports false when ctx ends first.
func (n *Node) awaitNoMoves(ctx context.Context) bool {
	said := ""
	for {
		err := n.checkNoMoves(n.cfg.ID)
		if err == nil {
			return true
		}
		if err.Error() != said {
			n.log.Warn("waiting to join until a ring change in progress completes", "reason", err)
			said = err.Error()
		}
		if !sleepCtx(ctx, n.gossip.interval()) {
			return false
		}
	}
}

// markDataComplete stops gossiping keyNewData: the node holds what it should.
func (n *Node) markDataComplete() {
	n.gossip.current().SetAppState(keyNewData, "")
}

// waitForRing returns once the directory can be trusted: at once when it was persisted,
// founding or seedless (open trusts those), else once a member has handed over its ring.
func (n *Node) waitForRing(ctx context.Context) error {
	if n.directory.Trusted() {
		return nil
	}
	self, known, from, err := n.pullRingFromAMember(ctx)
	if err != nil {
		return err
	}
	if known && n.lostData(self) {
		n.startRebuild(self)
	}
	n.directory.SetTrusted()
	n.log.Info("learned the ring", "from", from, "nodes", len(n.directory.Nodes()))
	return nil
}

// pullRingFromAMember pulls the ring from the first member gossip finds up that answers,
// trying again each gossip round until one does or ctx ends. It returns that member's
// entry for this node, if it has one (pullRing), and the member's id.
func (n *Node) pullRingFromAMember(ctx context.Context) (self cluster.RingEntry, known bool, from string, err error) {
	for {
		for _, other := range n.directory.Nodes() {
			if other.ID == n.cfg.ID || !n.directory.State(other.ID).Reachable() {
				continue
			}
			self, known, err := n.pullRing(ctx, other)
			if err != nil {
				n.log.Debug("pull the ring", "peer", other.ID, "err", err)
				continue
			}
			return self, known, other.ID, nil
		}
		if !sleepCtx(ctx, n.gossip.interval()) {
			return cluster.RingEntry{}, false, "", ctx.Err()
		}
	}
}

// pullRing learns the ring of another node. It also returns that node's entry for this
// node, if it has one: how a node whose data dir was wiped finds out that it was a member.
func (n *Node) pullRing(ctx context.Context, from cluster.Node) (self cluster.RingEntry, known bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	raw, err := n.transport.Call(ctx, toPeer(from), kindRingPull, nil)
	if err != nil {
		return cluster.RingEntry{}, false, err
	}
	entries, err := cluster.DecodeRing(raw)
	if err != nil {
		return cluster.RingEntry{}, false, err
	}
	for _, e := range entries {
		if e.ID == n.cfg.ID {
			self, known = e, true
			continue
		}
		if _, err := n.directory.Learn(e); err != nil {
			return cluster.RingEntry{}, false, err
		}
		if learned, err := n.directory.LearnDeparture(e); err != nil {
			return cluster.RingEntry{}, false, err
		} else if learned {
			n.log.Info("learned a departure missed while down", "node", e.ID, "status", e.Status, "from", from.ID)
		}
	}
	return self, known, nil
}

// reconcileRing pulls, a ring delay after a restart, the rings of a few members gossip
// finds up: a node that was down while another left, was removed or joined learns it
// there, since gossip may no longer carry a departed member's last status.
func (n *Node) reconcileRing(ctx context.Context) {
	if sleepCtx(ctx, n.ringDelay()) {
		n.pullRingsOfMembers(ctx)
	}
}

// reconcileMembers is how many members' rings a node reconciles its own with: more than
// one, since a member may itself have been down when a node departed (it learns it a
// ring delay after its restart), few enough that a node's pull stays small at scale.
const reconcileMembers = 3

// pullRingsOfMembers pulls the rings of up to reconcileMembers members that are up,
// taking from each the nodes and departures this node missed (pullRing).
func (n *Node) pullRingsOfMembers(ctx context.Context) {
	pulled := 0
	for _, other := range n.directory.Nodes() {
		if pulled == reconcileMembers || ctx.Err() != nil {
			return
		}
		if other.ID == n.cfg.ID || !n.directory.State(other.ID).Reachable() {
			continue
		}
		if _, _, err := n.pullRing(ctx, other); err != nil {
			n.log.Debug("pull the ring", "peer", other.ID, "err", err)
			continue
		}
		pulled++
	}
}

// lostData reports whether another member's ring entry for this node shows that it
// owned ranges in an earlier life (ringchange.LostData).
func (n *Node) lostData(self cluster.RingEntry) bool {
	return ringchange.LostData(self, n.gossip.generation())
}

// handleRingPull answers pullRing.
func (n *Node) handleRingPull() ([]byte, error) {
	nodes := n.directory.Nodes()
	entries := make([]cluster.RingEntry, len(nodes))
	for i, node := range nodes {
		entries[i] = cluster.RingEntry{Node: node, Up: n.directory.State(node.ID).Reachable()}
	}
	return cluster.EncodeRing(entries)
}

// hasSeeds reports whether the node was given seeds other than itself.
func (n *Node) hasSeeds() bool {
	self := n.transport.Addr()
	for _, s := range n.cfg.Seeds {
		if s != self && s != n.cfg.Listen {
			return true
		}
	}
	return len(n.cfg.Peers) > 0
}

// othersOnRing reports whether another node owns ranges already.
func (n *Node) othersOnRing() bool {
	for _, other := range n.directory.Nodes() {
		if other.ID != n.cfg.ID && other.Status.OnRing() {
			return true
		}
	}
	return false
}

// setStatus persists and gossips the node's ring status. A node that left or was
// removed stays so: a join or rebuild still running then must not put it back.
func (n *Node) setStatus(status cluster.Status, tokens []uint64) {
	if cur := n.directory.Self().Status; (cur == cluster.StatusLeft || cur == cluster.StatusRemoved) && status != cur {
		n.log.Warn("not a member any more: the ring status stays", "status", cur, "refused", status)
		return
	}
	if err := n.directory.SetSelf(status, tokens); err != nil {
		n.log.Error("persist the ring status", "status", status, "err", err)
	}
	if len(tokens) > 0 {
		n.gossip.current().SetAppState(membership.KeyTokens, formatTokens(tokens))
	}
	n.gossip.current().SetAppState(membership.KeyStatus, status.String())
	n.log.Info("ring status", "status", status)
}

func (n *Node) ringDelay() time.Duration {
	if n.cfg.RingDelay > 0 {
		return n.cfg.RingDelay
	}
	return ringDelayRounds * n.gossip.interval()
}

// MoveStats is what a decommission or removal streamed.
type MoveStats struct {
	Gainers []string
	stream.Stats
	Took time.Duration
}

// Decommission hands this node's ranges to the nodes that take them over, then leaves the
// ring. Writes keep reaching both sides until it has left.
func (n *Node) Decommission(ctx context.Context) (MoveStats, error) {
	self := n.directory.Self()
	if self.Status != cluster.StatusNormal {
		return MoveStats{}, fmt.Errorf("%w: node %s is %s, not normal", errBadMove, self.ID, self.Status)
	}
	if err := n.checkNoMoves(); err != nil {
		return MoveStats{}, err
	}
	start := time.Now()
	n.setStatus(cluster.StatusLeaving, self.Tokens)
	st, err := n.streamGains(ctx, self.ID, false)
	if err != nil {
		n.setStatus(cluster.StatusNormal, self.Tokens)
		return st, fmt.Errorf("decommission aborted, the node stays normal: %w", err)
	}
	n.setStatus(cluster.StatusLeft, self.Tokens)
	// Stay up a ring delay so every node learns "left" before this one stops: gossip
	// carries only a node's latest status, and a shutdown announced sooner would leave
	// the others holding it as leaving.
	sleepCtx(ctx, n.ringDelay())
	st.Took = time.Since(start)
	n.log.Info("decommissioned: left the ring", "gainers", st.Gainers, "bytes", st.Bytes, "took", st.Took.Round(time.Millisecond))
	return st, nil
}

// RemoveNode takes a dead node off the ring: its ranges are streamed from the surviving
// replicas to their new owners first. A dead node that was joining owned nothing yet: its
// join is aborted, with nothing to stream (the writes it was sent as a pending replica
// were counted on top of the level's, so the owners hold them). A dead node that was
// leaving is removed as a normal one is, its ranges streamed from the other replicas.
func (n *Node) RemoveNode(ctx context.Context, id string) (MoveStats, error) {
	how, err := ringchange.Removal(n.directory, n.cfg.ID, id)
	if err != nil {
		return MoveStats{}, err
	}
	dead, _ := n.directory.Node(id)
	if how == ringchange.Abort {
		n.log.Warn("aborting the join of a dead node: it owned no ranges yet", "node", id)
		n.gossip.markRemoved(dead)
		return MoveStats{}, nil
	}
	start := time.Now()
	ctx, stop := n.whileDown(ctx, id)
	defer stop()
	n.gossip.markRemoving(dead, true)
	st, err := n.streamGains(ctx, id, true)
	n.gossip.markRemoving(dead, false)
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	if err != nil {
		return st, fmt.Errorf("removal of %s aborted, it stays on the ring: %w", id, err)
	}
	n.gossip.markRemoved(dead)
	st.Took = time.Since(start)
	return st, nil
}

// errBadMove: a ring change refused (ringchange.ErrBadMove).
var errBadMove = ringchange.ErrBadMove

// whileDown returns a context that ends, with the reason as its cause, if node id comes
// back up: a removal streams from the other replicas only while the node is dead, and
// one that came back is a member again (its newer generation outranks the removal).
func (n *Node) whileDown(ctx context.Context, id string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		for sleepCtx(ctx, n.gossip.interval()) {
			if n.directory.State(id).Reachable() {
				cancel(fmt.Errorf("%w: node %s is up again; decommission it instead", errBadMove, id))
				return
			}
		}
	}()
	return ctx, func() { cancel(nil) }
}

// checkNoMoves refuses a ring change while another is in progress, but for those of the
// nodes named (ringchange.NoMoves).
func (n *Node) checkNoMoves(except ...string) error {
	return ringchange.NoMoves(n.directory, except...)
}

// streamGains waits for the cluster to learn that moving is leaving, then asks every node
// that gains one of its ranges to pull them, and waits for all.
func (n *Node) streamGains(ctx context.Context, moving string, exclude bool) (MoveStats, error) {
	if !sleepCtx(ctx, n.ringDelay()) {
		return MoveStats{}, ctx.Err()
	}
	if err := n.checkNoMoves(moving); err != nil {
		// Another move was announced at the same time: the operator's move gives way.
		return MoveStats{}, fmt.Errorf("%w: %w; run it again once that one completes", ringchange.ErrOverlap, err)
	}
	gainers := map[string]bool{}
	for _, ks := range n.catalog.List() {
		moves, err := n.ring.Moves(ks)
		if err != nil {
			return MoveStats{}, err
		}
		for _, m := range moves {
			for _, g := range m.Gainers {
				gainers[g.ID] = true
			}
		}
	}
	var st MoveStats
	for id := range gainers {
		st.Gainers = append(st.Gainers, id)
	}
	sort.Strings(st.Gainers)
	req, err := proto.Marshal(&kurav1.StreamGainsRequest{Moving: moving, Exclude: exclude})
	if err != nil {
		return st, err
	}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, id := range st.Gainers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := n.askToStream(ctx, id, req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", id, err))
				return
			}
			st.Ranges += got.Ranges
			st.Records += got.Records
			st.Bytes += got.Bytes
			st.BytesCrossDC += got.BytesCrossDC
		}()
	}
	wg.Wait()
	return st, errors.Join(errs...)
}

// askToStream has node id pull its gains, retrying while it has not learned the move yet.
func (n *Node) askToStream(ctx context.Context, id string, req []byte) (stream.Stats, error) {
	for {
		var raw []byte
		var err error
		if id == n.cfg.ID {
			raw, err = n.handleStreamGains(ctx, req)
		} else if node, ok := n.directory.Node(id); !ok {
			return stream.Stats{}, fmt.Errorf("node %s is not in the directory", id)
		} else {
			raw, err = n.transport.Call(ctx, toPeer(node), kindStreamGains, req)
		}
		if err == nil {
			var resp kurav1.StreamGainsResponse
			if err := proto.Unmarshal(raw, &resp); err != nil {
				return stream.Stats{}, err
			}
			return stream.Stats{Ranges: int(resp.GetRanges()), Records: resp.GetRecords(), Bytes: resp.GetBytes(), BytesCrossDC: resp.GetBytesCrossDc()}, nil
		}
		n.log.Warn("a gainer could not stream yet; retrying", "gainer", id, "err", err)
		if !sleepCtx(ctx, n.ringDelay()) {
			return stream.Stats{}, fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		}
	}
}

// handleStreamGains pulls the ranges this node gains from a moving node, once its own
// view shows the move (else the gains it computes would miss them).
func (n *Node) handleStreamGains(ctx context.Context, payload []byte) ([]byte, error) {
	var req kurav1.StreamGainsRequest
	if err := proto.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("decode stream_gains: %w", err)
	}
	if m, ok := n.directory.Node(req.GetMoving()); !ok || m.Status != cluster.StatusLeaving {
		return nil, fmt.Errorf("node %s does not see %s leaving yet", n.cfg.ID, req.GetMoving())
	}
	exclude := ""
	if req.GetExclude() {
		exclude = req.GetMoving()
	}
	st, err := n.streamer.Gain(ctx, exclude)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(&kurav1.StreamGainsResponse{Ranges: int64(st.Ranges), Records: st.Records, Bytes: st.Bytes, BytesCrossDc: st.BytesCrossDC})
}

// Cleanup drops the records of keyspace (every keyspace when empty) that this node no
// longer holds on the current ring. It refuses while a move is in progress: the data may
// still be needed.
func (n *Node) Cleanup(_ context.Context, keyspace string) (records int64, bytes int64, err error) {
	if err := n.checkNoMoves(); err != nil {
		return 0, 0, err
	}
	for _, ks := range n.catalog.List() {
		if keyspace != "" && ks.Name != keyspace || ks.Erasure.Enabled() {
			continue // chunk ownership follows chunk keys, not the keyspace's ring ranges
		}
		// During a rebalance the records of the next split keys' replicas are needed too.
		owned, err := n.balancer.Keeps(ks)
		if err != nil {
			return records, bytes, err
		}
		removed, size, err := n.local.DropUnless(ks.Name, owned)
		records += removed
		bytes += size
		if err != nil {
			return records, bytes, err
		}
	}
	return records, bytes, nil
}

// markRemoving and markRemoved keep the ring's removals in this node's gossip, where the
// other nodes learn them.
func (g *gossip) markRemoving(dead cluster.Node, on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if on {
		g.removing[dead.ID] = dead.Generation
	} else {
		delete(g.removing, dead.ID)
	}
	g.current().SetAppState(keyRemoving, formatMarks(g.removing))
	g.applyMarksLocked(g.n.cfg.ID, keyRemoving, formatMarks(g.removing))
}

func (g *gossip) markRemoved(dead cluster.Node) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removed[dead.ID] = dead.Generation
	g.current().SetAppState(keyRemoved, formatMarks(g.removed))
	g.applyMarksLocked(g.n.cfg.ID, keyRemoved, formatMarks(g.removed))
}

// formatMarks writes id@generation, sorted by id.
func formatMarks(marks map[string]uint64) string {
	parts := make([]string, 0, len(marks))
	for id, gen := range marks {
		parts = append(parts, id+"@"+strconv.FormatUint(gen, 10))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// parseMarks reads what formatMarks wrote, skipping malformed entries.
func parseMarks(s string) map[string]uint64 {
	out := map[string]uint64{}
	for _, part := range strings.Split(s, ",") {
		id, gen, ok := strings.Cut(part, "@")
		if !ok {
			continue
		}
		g, err := strconv.ParseUint(gen, 10, 64)
		if err == nil {
			out[id] = g
		}
	}
	return out
}

// sleepCtx waits d, or less when ctx ends first; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
