package feed

import (
	"cmp"
	"strconv"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/service/membership/driver"
	"github.com/kuradb/kura/internal/service/ringchange"
)

// onChange mirrors one membership event into the directory. Nodes that die or leave stay
// on the ring as down: taking a node off the ring moves data and is an operator's call.
func (f *Feed) onChange(ch driver.Change) {
	m := ch.Member
	if m.ID == f.cfg.ID {
		return
	}
	dir := f.parts.Directory
	if ch.Known {
		tokens, err := parseTokens(m.AppState[membership.KeyTokens])
		if err != nil {
			f.log.Warn("member gossips bad tokens", "member", m.ID, "err", err)
			return
		}
		born, err := strconv.ParseUint(cmp.Or(m.AppState[ringchange.KeyBorn], "0"), 10, 64)
		if err != nil {
			// Unknown, as from a build that gossips none: a removal of the node stands.
			f.log.Warn("member gossips a bad born generation", "member", m.ID, "err", err)
			born = 0
		}
		status, err := cluster.ParseStatus(string(m.Status))
		old, known := dir.Node(m.ID)
		switch {
		case err != nil && !known:
			// A status only liveness cares about (a node shutting down), from a member
			// first heard of now: its place on the ring is unknown (it may have left),
			// so it is not recorded; a ring pull or its next start tells it.
			f.log.Debug("member first heard of with no ring status", "member", m.ID, "status", m.Status)
			return
		case err != nil:
			// A status only liveness cares about (a node shutting down): its place on the
			// ring does not change.
			status = old.Status
		case known && old.Status == cluster.StatusRemoved && sameDataDir(born, old.Generation, status, m.AppState[ringchange.KeyNewData] != ""):
			// A removed node back with the data dir it had: it stays removed, whatever
			// it says (it learns of its removal from the gossiped marks, and stops
			// serving). Only with a data dir begun since does it join again, as a new node.
			status, tokens = cluster.StatusRemoved, old.Tokens
		case status == cluster.StatusBooting && known && old.Status.OnRing():
			// A member back with an empty data dir: it lost its data. It stays on the
			// ring with its tokens, and nobody reads from it until it has rebuilt them
			// (its own ring pull then shows it so, and it starts the rebuild).
			status, tokens = cluster.StatusRebuilding, old.Tokens
		case status == cluster.StatusNormal && m.AppState[ringchange.KeyNewData] != "" && known && old.Status.OnRing() &&
			(old.Generation > 0 && m.Generation > old.Generation || m.Generation == old.Generation && old.Status == cluster.StatusRebuilding):
			// The same, from a member started without seeds, which took itself for the
			// first node of a new cluster until it hears from this one (ringchange.Changer.Join).
			status, tokens = cluster.StatusRebuilding, old.Tokens
		}
		tier, err := strconv.Atoi(cmp.Or(m.AppState[f.cfg.TierKey], "0"))
		if err != nil {
			f.log.Warn("member gossips a bad power tier", "member", m.ID, "err", err)
			return
		}
		f.mu.Lock()
		f.upsertLocked(cluster.Node{ID: m.ID, DC: m.DC, Addr: m.Addr, ClientAddr: m.AppState[KeyClientAddr], Tokens: tokens,
			Status: status, Replaces: m.AppState[ringchange.KeyReplaces], Generation: m.Generation, Born: born, Tier: tier})
		f.applyMarksLocked(m.ID, ringchange.KeyRemoving, m.AppState[ringchange.KeyRemoving])
		f.applyMarksLocked(m.ID, ringchange.KeyRemoved, m.AppState[ringchange.KeyRemoved])
		f.mu.Unlock()
	}
	alive := ch.Known && m.Alive
	if ch.Known {
		f.parts.Observers.Observe(m, alive)
	}
	state := cluster.StateDown
	if alive {
		state = cluster.StateUp
	}
	if dir.SetState(m.ID, state) {
		f.log.Info("peer state", "peer", m.ID, "state", state, "event", ch.Event.Kind)
	}
	if digest := m.AppState[keySchema]; alive && digest != "" && digest != digestString(f.parts.Catalog.Digest()) {
		f.parts.Observers.SchemaDiffers(cluster.Node{ID: m.ID, DC: m.DC, Addr: m.Addr})
	}
}

// upsertLocked records a member's gossiped entry, as leaving while a member removes it;
// f.mu is held.
func (f *Feed) upsertLocked(node cluster.Node) {
	f.heard[node.ID] = node
	if node.Status.OnRing() {
		for _, marks := range f.removingBy {
			if gen, ok := marks[node.ID]; ok && gen >= node.Generation {
				node.Status = cluster.StatusLeaving
			}
		}
	}
	if _, err := f.parts.Directory.Upsert(node); err != nil {
		f.log.Error("record a member", "member", node.ID, "err", err)
	}
}

// applyMarksLocked takes one member's removing or removed list into the directory; f.mu
// is held.
func (f *Feed) applyMarksLocked(from, key, value string) {
	marks := ringchange.ParseMarks(value)
	switch key {
	case ringchange.KeyRemoved:
		for id, gen := range marks {
			if id == f.cfg.ID {
				// A mark of an earlier data dir's life (this node was wiped and started
				// again since) is not about this node.
				if f.parts.Directory.Self().RemovalCovers(gen) {
					f.parts.Observers.RemovedSelf(from)
				}
				continue
			}
			if _, err := f.parts.Directory.Remove(id, gen); err != nil {
				f.log.Debug("apply a removal", "node", id, "err", err)
			}
		}
	case ringchange.KeyRemoving:
		old := f.removingBy[from]
		f.removingBy[from] = marks
		for id := range old {
			if node, ok := f.heard[id]; ok {
				f.upsertLocked(node)
			}
		}
		for id := range marks {
			if node, ok := f.heard[id]; ok {
				f.upsertLocked(node)
			} else if node, ok := f.parts.Directory.Node(id); ok {
				f.upsertLocked(node)
			}
		}
	}
}

// sameDataDir reports whether a member heard of in a life born in generation born (0:
// unknown), with ring status status, still runs on the data dir of the life this node
// holds removed at generation removedAt: its removal covers it (cluster.Node.RemovalCovers).
// A member that gossips no born generation (an older build) is judged as before: only
// one booting, or with an empty data dir (newData), is a new node.
func sameDataDir(born, removedAt uint64, status cluster.Status, newData bool) bool {
	if born != 0 {
		return cluster.Node{Born: born}.RemovalCovers(removedAt)
	}
	return status != cluster.StatusBooting && !newData
}
