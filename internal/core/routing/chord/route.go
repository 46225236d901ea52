package chord

// route decides what this node does with lookup m: it returns the zero Peer when the node
// owns m.Key, or the next hop and whether that hop is believed to be the owner.
//
// Every protocol first checks ownership against its predecessor, then picks a next hop:
//
//   - chord: the successor when the key lies in (self, successor], else the closest
//     preceding global finger.
//   - mlchord-paper (Fig. 4 as printed): the successor when the key lies in (self,
//     successor]; else the closest preceding local finger; else the closest preceding
//     global finger. A local finger past the key is never taken, since only fingers in
//     (self, key) qualify.
//   - mlchord (kura): the owner straight away when the key falls inside the global
//     successor list, which always runs to the next node of the own DC; else the closest
//     preceding node of the own DC. A request thus stays in its DC until it reaches the
//     last local node before the key, which knows the owner, and crosses at most once.
//
// A lookup on the local ring is plain Chord over the own DC's nodes.
func (n *Node) route(m Message) (next Peer, final bool) {
	r := &n.rings[m.Layer]
	if owner, ok := n.ownerCheck(m); ok {
		return owner, true
	}
	if len(r.succs) == 0 {
		return Peer{}, false // alone on this ring: every key is ours
	}
	if m.Layer == LayerLocal {
		return n.routeChord(m.Key, r, nil)
	}
	switch n.cfg.Protocol {
	case ProtocolMLChordPaper:
		return n.routeChord(m.Key, r, n.rings[LayerLocal].fingers)
	case ProtocolMLChord:
		return n.routeGapList(m.Key)
	}
	return n.routeChord(m.Key, r, nil)
}

// ownerCheck settles a lookup by this node's predecessor. It returns (zero, true) when
// the node owns the key. A request sent here as final but for a key behind the
// predecessor (a node joined in between since the sender's tables were built) walks back
// to the predecessor, (pred, true), which is nearer the key from above.
func (n *Node) ownerCheck(m Message) (Peer, bool) {
	pred := n.rings[m.Layer].pred
	if pred.IsZero() || n.isSuspect(pred) {
		return Peer{}, m.Final
	}
	if inHalfOpen(m.Key, pred.ID, n.self.ID) {
		return Peer{}, true
	}
	if m.Final && inHalfOpen(pred.ID, m.Key-1, n.self.ID) {
		return pred, true
	}
	return Peer{}, false
}

// routeChord is Chord's step: the successor if it owns the key, else the closest
// preceding finger, trying preferred (the local fingers, for mlchord-paper) first.
func (n *Node) routeChord(key ID, r *ringState, preferred []Peer) (Peer, bool) {
	succ := n.firstLive(r.succs)
	if succ.IsZero() {
		return Peer{}, false
	}
	if inHalfOpen(key, n.self.ID, succ.ID) {
		return succ, true
	}
	if p := n.closestPreceding(key, preferred); !p.IsZero() {
		return p, false
	}
	if p := n.closestPreceding(key, r.fingers); !p.IsZero() {
		return p, false
	}
	return succ, false
}

// routeGapList is kura's mlchord step. The global successor list covers (self, s] where s
// is the next node of the own DC, so a key inside it has a known owner: send the request
// there (one hop, at most one inter-DC). A key beyond it has s, a local node, in (self,
// key): move to the closest preceding local node without leaving the DC.
func (n *Node) routeGapList(key ID) (Peer, bool) {
	global, local := &n.rings[LayerGlobal], &n.rings[LayerLocal]
	prev := n.self.ID
	for _, s := range global.succs {
		if n.isSuspect(s) {
			continue
		}
		if inHalfOpen(key, prev, s.ID) {
			return s, true
		}
		prev = s.ID
	}
	if p := n.closestPreceding(key, local.fingers, local.succs, n.ownDC(global.succs)); !p.IsZero() {
		return p, false
	}
	// Only when the list is cut short by GapListMax or by failures: fall back on Chord.
	return n.routeChord(key, global, nil)
}

// closestPreceding returns the live peer of the lists that lies in (self, key) and is
// nearest to key; zero when none does.
func (n *Node) closestPreceding(key ID, lists ...[]Peer) Peer {
	var best Peer
	var bestDistance ID
	limit := n.distance(key)
	for _, list := range lists {
		for _, p := range list {
			if p.IsZero() {
				continue
			}
			d := n.distance(p.ID)
			if d == 0 || d >= limit || d <= bestDistance || n.isSuspect(p) {
				continue
			}
			best, bestDistance = p, d
		}
	}
	return best
}

// distance returns how far clockwise id lies from this node on the circle.
func (n *Node) distance(id ID) ID {
	d := id - n.self.ID
	if n.cfg.IDBits < Bits {
		d &= ID(1)<<uint(n.cfg.IDBits) - 1
	}
	return d
}

// ownDC returns the peers of the list that sit in this node's DC.
func (n *Node) ownDC(peers []Peer) []Peer {
	var local []Peer
	for _, p := range peers {
		if p.DC == n.self.DC {
			local = append(local, p)
		}
	}
	return local
}

// firstLive returns the first peer of the list not suspected of failure.
func (n *Node) firstLive(peers []Peer) Peer {
	for _, p := range peers {
		if !n.isSuspect(p) {
			return p
		}
	}
	return Peer{}
}

func (n *Node) isSuspect(p Peer) bool {
	_, ok := n.suspects[p.Name]
	return ok
}
