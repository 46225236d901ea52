package ferry

import (
	"fmt"
	"math"
	"slices"

	"github.com/kuradb/kura/internal/core/membership"
)

// savedView is a starting view (membership.Config.View) made ready for the
// cores that start from it: checked, its states interned in the table, each
// DC's members sorted into ring order with the DC's summaries, and the
// entries a core starts with laid out by member number. A core copies these
// arrays: n cores that each start knowing n members cost n copies, not n²
// insertions into rings and n² lookups of versions.
type savedView struct {
	// states is the view this was made from, buckets the number of buckets
	// of its summaries: together they say whether a core can use it (see
	// Table.savedView).
	states  []membership.EndpointState
	buckets int
	// err is why the view cannot be used; nothing else is set then.
	err error
	// entries holds the starting entries by member number, and views the
	// DCs in the order their first members come in the view: an entry's dc
	// indexes views, as it will index a starting core's views.
	entries entrySlots
	views   []*dcView
	// down lists the members that left or shut down: a core holds them for
	// removal as it holds any member that goes down.
	down  []uint32
	known int
}

// savedView returns view made ready for a core with this many buckets. The
// cores that share a table and start from the same view (one slice, as a
// simulated cluster passes to all of them) make it ready once: the table
// keeps the last one it made, and knows it again by the slice's array and
// length, so a caller must not change a view's states in place between
// the cores it starts from it. A core's own table keeps nothing, as it
// starts one core.
func (t *Table) savedView(view []membership.EndpointState, buckets int) *savedView {
	if s := t.saved; s != nil && s.buckets == buckets && len(s.states) == len(view) && &s.states[0] == &view[0] {
		return s
	}
	s := t.prepare(view, buckets)
	if t.interned != nil {
		t.saved = s
	}
	return s
}

// prepare makes a non-empty view ready (see savedView).
func (t *Table) prepare(view []membership.EndpointState, buckets int) *savedView {
	s := &savedView{states: view, buckets: buckets}
	if s.err = checkView(view); s.err != nil {
		return s
	}
	byName := make(map[string]*dcView)
	for _, st := range view {
		dc, _ := st.Value(membership.KeyDC)
		v := byName[dc]
		if v == nil {
			v = newDCView(dc, t, &s.entries, len(s.views), buckets)
			byName[dc] = v
			s.views = append(s.views, v)
		}
		m := t.member(st.ID)
		e := s.entries.make(m.num)
		t.set(e, t.versionOf(m, st), 0)
		e.dc = uint16(v.index)
		v.members = append(v.members, uint32(m.num))
		if e.isLeft() || e.shutdown() {
			s.down = append(s.down, uint32(m.num))
		}
	}
	for _, v := range s.views {
		v.bucketAt = make([]uint16, len(v.members))
		v.order()
		for i, num := range v.members {
			v.sizes[v.bucketAt[i]]++
			v.link(s.entries.of(num))
		}
	}
	s.known = len(view)
	return s
}

// checkView says what makes a starting view unusable: a member with no ID,
// generation 0, no version, or no DC, one listed twice, or more DCs than an
// entry can index.
func checkView(view []membership.EndpointState) error {
	seen := make(map[string]bool, len(view))
	dcs := make(map[string]bool)
	for i, s := range view {
		dc, _ := s.Value(membership.KeyDC)
		switch {
		case s.ID == "":
			return fmt.Errorf("ferry: %w: view: member %d has no ID", membership.ErrBadConfig, i)
		case s.Generation == 0:
			return fmt.Errorf("ferry: %w: view: member %s has generation 0", membership.ErrBadConfig, s.ID)
		case s.MaxVersion() == 0:
			return fmt.Errorf("ferry: %w: view: member %s has no version", membership.ErrBadConfig, s.ID)
		case dc == "":
			return fmt.Errorf("ferry: %w: view: member %s has no DC (application state %q)", membership.ErrBadConfig, s.ID, membership.KeyDC)
		case seen[s.ID]:
			return fmt.Errorf("ferry: %w: view: member %s is listed twice", membership.ErrBadConfig, s.ID)
		}
		seen[s.ID] = true
		dcs[dc] = true
	}
	if len(dcs) > math.MaxUint16+1 {
		return fmt.Errorf("ferry: %w: view: %d DCs, at most %d", membership.ErrBadConfig, len(dcs), math.MaxUint16+1)
	}
	return nil
}

// load gives a core that knows nothing yet the entries and DC views of a
// view made ready.
func (c *Core) load(s *savedView) error {
	if s.err != nil {
		return s.err
	}
	for _, sv := range s.views {
		// c has no view yet, so each gets the index it has in s.views,
		// which the copied entries hold.
		v := c.view(sv.name)
		v.members, v.bucketAt, v.ordered = slices.Clone(sv.members), slices.Clone(sv.bucketAt), sv.ordered
		copy(v.sizes, sv.sizes)
		copy(v.buckets, sv.buckets)
		copy(v.checks, sv.checks)
		v.hash, v.live, v.unreachable = sv.hash, sv.live, sv.unreachable
	}
	c.entries.chunks = make([]*[entryChunk]entry, len(s.entries.chunks))
	for i, chunk := range s.entries.chunks {
		c.entries.chunks[i] = new([entryChunk]entry)
		*c.entries.chunks[i] = *chunk
	}
	for _, num := range s.down {
		c.down = append(c.down, downEntry{e: c.entries.of(num)})
	}
	c.known = s.known
	return nil
}
