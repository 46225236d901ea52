package chord

import (
	"cmp"
	"slices"
	"time"
)

// Ring maintenance: Chord's stabilize, notify, fix_fingers and check_predecessor on each
// ring, graceful leave, and the handling of failed peers. Successor lists are never
// changed in place, only replaced, because messages in flight may share them.

// request sends a GetNeighbors or Ping that expects an answer within RequestTimeout.
func (n *Node) request(now time.Duration, to Peer, kind requestKind, layer Layer, t MsgType) {
	n.nextSeq++
	n.requests[n.nextSeq] = pendingRequest{kind: kind, layer: layer, to: to, deadline: now + n.cfg.RequestTimeout}
	n.send(to, Message{Type: t, Layer: layer, Seq: n.nextSeq})
}

// stabilize asks the successor on a ring for its predecessor and successor list.
func (n *Node) stabilize(now time.Duration, layer Layer) {
	r := &n.rings[layer]
	r.succs = n.trimSuccessors(layer, r.succs) // drops peers suspected since
	if len(r.succs) > 0 {
		n.request(now, r.succs[0], requestStabilize, layer, MsgGetNeighbors)
	}
}

// handleNeighbors takes a successor's answer to stabilize, or one page of a gap walk.
func (n *Node) handleNeighbors(now time.Duration, m Message) {
	req, ok := n.requests[m.Seq]
	if !ok || req.to.Name != m.From.Name {
		return
	}
	delete(n.requests, m.Seq)
	r := &n.rings[m.Layer]
	switch req.kind {
	case requestStabilize:
		if len(r.succs) == 0 || r.succs[0].Name != m.From.Name {
			return // the successor changed while the answer was on its way
		}
		if x := m.Pred; n.acceptable(x, m.Layer) && inOpen(x.ID, n.self.ID, m.From.ID) {
			// A node joined between us and our successor: it is our successor now. Ask it
			// at once rather than at the next round: after many simultaneous joins the true
			// successor may lie several predecessors back, and a walk of one step per round
			// would take as many rounds.
			r.succs = n.trimSuccessors(m.Layer, append([]Peer{x}, r.succs...))
			n.send(x, Message{Type: MsgNotify, Layer: m.Layer})
			n.request(now, x, requestStabilize, m.Layer, MsgGetNeighbors)
		} else {
			r.succs = n.trimSuccessors(m.Layer, append([]Peer{m.From}, m.Peers...))
			n.send(r.succs[0], Message{Type: MsgNotify, Layer: m.Layer})
			if m.Layer == LayerGlobal && n.cfg.KeepGateways {
				n.takeGateways(m.From, m.Gateways)
			}
		}
	case requestWalk:
		if len(r.succs) == 0 || r.succs[len(r.succs)-1].Name != m.From.Name {
			return // the list changed under the walk; the next stabilize starts afresh
		}
		longer := n.trimSuccessors(m.Layer, append(slices.Clone(r.succs), m.Peers...))
		if len(longer) == len(r.succs) {
			return // the ring ends here (it wrapped round to us)
		}
		r.succs = longer
	}
	if m.Layer == LayerGlobal && n.cfg.Protocol == ProtocolMLChord {
		n.afterGapListChange(now)
	}
}

// afterGapListChange keeps mlchord's global successor list running to the own DC, paging
// along the ring when the successor's list stops short of it, and lets the local ring
// learn its successor from it: the first own-DC node on the global ring is by definition
// the local successor, so a local ring split by a join through the wrong bootstrap heals.
func (n *Node) afterGapListChange(now time.Duration) {
	global, local := &n.rings[LayerGlobal], &n.rings[LayerLocal]
	own := n.ownDC(global.succs)
	if len(own) == 0 {
		if len(global.succs) > 0 && len(global.succs) < n.cfg.GapListMax {
			n.request(now, global.succs[len(global.succs)-1], requestWalk, LayerGlobal, MsgGetNeighbors)
		}
		return
	}
	s := own[0]
	if len(local.succs) == 0 || inOpen(s.ID, n.self.ID, local.succs[0].ID) {
		local.succs = n.trimSuccessors(LayerLocal, append([]Peer{s}, local.succs...))
		n.send(s, Message{Type: MsgNotify, Layer: LayerLocal})
	}
}

// trimSuccessors turns candidates into a successor list for a ring: peers in strictly
// increasing distance from this node (which drops duplicates, the node itself and entries
// out of order), none suspected, on the local ring only peers of the own DC. It keeps
// SuccessorListLen peers; mlchord's global list goes on to the first own-DC peer, up to
// GapListMax.
func (n *Node) trimSuccessors(layer Layer, candidates []Peer) []Peer {
	gapList := layer == LayerGlobal && n.cfg.Protocol == ProtocolMLChord
	out := make([]Peer, 0, min(len(candidates), n.cfg.SuccessorListLen))
	var last ID
	reachedOwnDC := false
	for _, p := range candidates {
		if len(out) >= n.cfg.SuccessorListLen && (!gapList || reachedOwnDC || len(out) >= n.cfg.GapListMax) {
			break
		}
		d := n.distance(p.ID)
		if d <= last || !n.acceptable(p, layer) {
			continue
		}
		out = append(out, p)
		last = d
		reachedOwnDC = reachedOwnDC || p.DC == n.self.DC
	}
	return out
}

// acceptable reports whether p may enter this node's tables on a ring.
func (n *Node) acceptable(p Peer, layer Layer) bool {
	return !p.IsZero() && p.Name != n.self.Name && !n.isSuspect(p) &&
		(layer == LayerGlobal || p.DC == n.self.DC)
}

// handleNotify is Chord's notify: the sender, or the node a forwarded Notify names in
// Pred, thinks it may be our predecessor. A node alone on the ring also takes it as its
// successor, which is how the ring's first node learns of the second.
//
// Chord keeps only the nearest of the nodes that notify it, so when many nodes join at once
// through one node, each round of stabilize places one of them and the ring needs as many
// rounds as there were joins. kura forwards the node it does not keep (the notifier, or the
// predecessor it displaced) to its predecessor, which is nearer to it: the notice travels
// back until it reaches the node it precedes, so every predecessor is right within a few
// round trips, and the walk in handleNeighbors then finds every successor as fast.
func (n *Node) handleNotify(m Message) {
	r := &n.rings[m.Layer]
	p := m.From
	if !m.Pred.IsZero() {
		p = m.Pred
	}
	if !n.acceptable(p, m.Layer) {
		return
	}
	var passOn Message
	switch {
	case r.pred.IsZero() || n.isSuspect(r.pred) || inOpen(p.ID, r.pred.ID, n.self.ID):
		if n.acceptable(r.pred, m.Layer) && r.pred.Name != p.Name {
			passOn = Message{Type: MsgNotify, Layer: m.Layer, Pred: r.pred}
		}
		r.pred = p
	case p.Name != r.pred.Name:
		passOn = Message{Type: MsgNotify, Layer: m.Layer, Pred: p}
	}
	if len(r.succs) == 0 {
		r.succs = []Peer{p}
	}
	// Each forward goes to a node nearer the named one, or follows a predecessor that got
	// nearer, so a chain ends; the cap guards it against tables in flux all the same.
	if !passOn.Pred.IsZero() && m.Hops < maxHops {
		passOn.Hops = m.Hops + 1
		n.send(r.pred, passOn)
	}
}

// fixNextFinger is one round of fix_fingers on a ring. Slots whose start lies within
// (self, successor] are the successor and need no message; the round goes on to the next
// slot that needs a lookup and starts it, so a round costs at most one lookup.
func (n *Node) fixNextFinger(now time.Duration, layer Layer) {
	r := &n.rings[layer]
	if len(r.succs) == 0 {
		clear(r.fingers)
		return
	}
	for range r.fingers {
		i := r.nextFinger
		r.nextFinger = (i + 1) % len(r.fingers)
		start := fingerStart(n.self.ID, i, n.cfg.IDBits)
		if inHalfOpen(start, n.self.ID, r.succs[0].ID) {
			r.fingers[i] = r.succs[0]
			continue
		}
		n.startLookup(now, &pendingLookup{key: start, layer: layer, purpose: PurposeFinger, finger: uint8(i)})
		return
	}
}

// handleLeave takes a departing neighbour's hand-over on one ring: its predecessor
// replaces it as ours, or its successor list is spliced into ours where it stood.
func (n *Node) handleLeave(now time.Duration, m Message) {
	r := &n.rings[m.Layer]
	leaver := m.From
	if r.pred.Name == leaver.Name {
		r.pred = Peer{}
		if n.acceptable(m.Pred, m.Layer) {
			r.pred = m.Pred
		}
	}
	if i := slices.IndexFunc(r.succs, func(p Peer) bool { return p.Name == leaver.Name }); i >= 0 {
		r.succs = append(append(slices.Clone(r.succs[:i]), m.Peers...), r.succs[i+1:]...)
	}
	n.markFailed(now, leaver) // also trims the spliced list, dropping the leaver
	n.suspects[leaver.Name] = suspicion{until: now + n.cfg.SuspectFor, left: true}
	if m.Layer == LayerGlobal && n.cfg.Protocol == ProtocolMLChord {
		n.afterGapListChange(now)
	}
}

// markFailed takes p out of every table and routes around it the lookups this node had
// forwarded to it. p stays suspected for SuspectFor, so neighbours' stale lists do not
// bring it back, unless p itself speaks to us first (see heardFrom). A node that loses its
// whole successor list falls back on its nearest finger, as Chord does.
func (n *Node) markFailed(now time.Duration, p Peer) {
	if !n.joined {
		n.bootstrapFailed(now, p)
		return
	}
	n.suspects[p.Name] = suspicion{until: now + n.cfg.SuspectFor}
	for l := range n.rings {
		r := &n.rings[l]
		if r.pred.Name == p.Name {
			r.pred = Peer{}
		}
		for i, f := range r.fingers {
			if f.Name == p.Name {
				r.fingers[i] = Peer{}
			}
		}
		r.succs = n.trimSuccessors(Layer(l), r.succs)
		if len(r.succs) == 0 {
			r.succs = n.trimSuccessors(Layer(l), n.fingersByDistance(r.fingers))
		}
	}
	for dc, g := range n.gateways {
		if g.Name == p.Name {
			delete(n.gateways, dc) // the successor's next answer names another
		}
	}
	var orphans []hopKey
	for k, f := range n.forwards {
		if f.to.Name == p.Name {
			orphans = append(orphans, k)
		}
	}
	sortHopKeys(orphans)
	for _, k := range orphans {
		f := n.forwards[k]
		delete(n.forwards, k)
		n.handleFind(now, f.before)
	}
}

// bootstrapFailed handles a bootstrap that did not acknowledge a join request in time,
// before the node is on a ring: the join tries the next bootstrap at once. The bootstrap
// is not suspected: the node has no tables to keep it out of, and a bootstrap that was
// merely not listening yet, as when a cluster starts, would otherwise stay out of them
// for SuspectFor once the ring exists.
func (n *Node) bootstrapFailed(now time.Duration, p Peer) {
	var retry []uint64
	for k, f := range n.forwards {
		if f.to.Name != p.Name {
			continue
		}
		delete(n.forwards, k)
		if k.origin == n.self.Name {
			retry = append(retry, k.seq)
		}
	}
	slices.Sort(retry)
	for _, seq := range retry {
		if _, ok := n.lookups[seq]; ok {
			n.retryLookup(now, seq)
		}
	}
}

// heardFrom clears the suspicion of a peer that sends us a message: it is alive, and was
// only slow (an answer that missed its deadline) or has restarted. Without this, one late
// answer, as under load or while connections are still being set up, would keep a live
// node out of every table for SuspectFor, and lookups would find wrong owners meanwhile. A
// peer that left gracefully is cleared only by its joining again.
func (n *Node) heardFrom(m Message) {
	s, ok := n.suspects[m.From.Name]
	if !ok {
		return
	}
	rejoining := m.Type == MsgFindSuccessor && m.Purpose == PurposeJoin && m.Origin.Name == m.From.Name
	if !s.left || rejoining {
		delete(n.suspects, m.From.Name)
	}
}

// fingersByDistance returns the non-empty fingers, nearest first.
func (n *Node) fingersByDistance(fingers []Peer) []Peer {
	var out []Peer
	for _, f := range fingers {
		if !f.IsZero() {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b Peer) int {
		return cmp.Compare(n.distance(a.ID), n.distance(b.ID))
	})
	return out
}
