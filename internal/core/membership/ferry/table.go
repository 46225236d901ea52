package ferry

import (
	"slices"

	"github.com/kuradb/kura/internal/core/membership"
)

// member is what stays fixed about a node while the cluster runs: its ID,
// its place on its DC's ring, and its number, the index of its entry in
// every core's table of entries.
type member struct {
	id   string
	ring uint64
	num  int
}

// version is one immutable state of a member, with what the cores derive
// from it. Cores that share a Table refer to one copy of each version; a
// simulated cluster of n nodes would otherwise hold n copies of each.
type version struct {
	state      membership.EndpointState
	maxVersion uint64
	member     *member
	// hashes is the entry's contribution to its DC's summary, alive ([0])
	// and declared dead ([1]).
	hashes [2]uint64
	// isLeft and isShutdown read the gossiped status.
	isLeft, isShutdown bool
	// dc is the member's DC as the state says (hasDC: it says one), and
	// wireSize the state's encoded size: read once, not at every core that
	// learns the version or sends it.
	dc       string
	hasDC    bool
	wireSize int
}

// versionKey finds the candidates for interning a state; sameApp then
// tells them apart.
type versionKey struct {
	num                               int
	generation, heartbeat, maxVersion uint64
	apps                              int
}

// Table numbers the members a core knows and holds their versions, which
// entries refer to by index (so that an entry holds no pointer, and the
// garbage collector never scans the n² entries of a simulated cluster).
//
// When shared between the cores of a simulated cluster (Protocol.NewShared),
// it interns the versions: every core that knows the same version of a
// member refers to one copy. A shared table keeps every version it has seen,
// so its size grows with the changes made during a run, not with the number
// of cores. Only one goroutine may drive the cores that share it, as the
// simulator does.
//
// A real node has a table of its own, which interns nothing: each version
// belongs to one entry, and its index is reused once the entry moves on.
type Table struct {
	members map[string]*member
	// byNum lists the members by number, and rings their places on their
	// rings: a search of a DC's ring reads this dense array rather than
	// a member scattered in the heap at each step.
	byNum []*member
	rings []uint64
	// versions holds the versions by index; index 0 is no version (see
	// entry.ver).
	versions []*version
	// digests holds each version's digest (Dead false) by the same index:
	// anti-entropy sends the digests of whole buckets, and one read of
	// this dense array costs one cache miss where the version behind its
	// pointer costs two.
	digests []Digest
	// interned indexes the versions of a shared table; nil when the table
	// is a core's own.
	interned map[versionKey][]uint32
	// free lists the indices a core's own table may reuse.
	free []uint32
	// saved is the last starting view the cores sharing the table were
	// given, made ready (see savedView); nil in a core's own table.
	saved *savedView
	// lists holds the digest lists of buckets that cores sharing the table
	// sent lately (see sharedDigests); nil in a core's own table.
	lists map[bucketKey]*[listWays]digestList
	// events holds the events of the last call to a core sharing the
	// table (see Core.ready): a Ready's Events are valid until the next
	// call to any of them, and the simulator is done with them by then.
	events []membership.Event
	// digestAt, digestNums and digestCurrent are onDigests' index of
	// the digests it was sent (see indexDigests), bucketOrder,
	// bucketStart and bucketNext dcView.byBucket's groups, and newcomers
	// dcView.order's: scratch space kept from one message to the next, for
	// all the cores that share the table.
	digestAt                             []int32
	digestNums                           []int32
	digestCurrent                        []bool
	bucketOrder, bucketStart, bucketNext []int32
	newcomers                            []newcomer
}

// NewTable returns a table to share between the cores of one simulated
// cluster, passed to each as membership.Config.Shared.
func NewTable() *Table {
	t := ownTable()
	t.interned = make(map[versionKey][]uint32)
	t.lists = make(map[bucketKey]*[listWays]digestList)
	return t
}

// listWays is how many digest lists sharedDigests keeps per bucket: the
// states of a bucket that most of a DC's cores hold while a change spreads
// (before it, after it, and a few between).
const listWays = 4

// bucketKey names one bucket of one DC.
type bucketKey struct {
	dc     string
	bucket int
}

// digestList is the digests of one bucket's entries in ring order, as
// onBuckets sends them, and the bucket's hash, check and size when it held
// them.
type digestList struct {
	hash, check uint64
	size        int32
	digests     []Digest
}

// sharedDigests returns the digests of v's bucket b as another core sharing
// the table sent them, when that core's bucket held the same entries (the
// same hash, check and size), or nil. During a burst of joins most of a
// DC's cores compare the same few states of each bucket: the list costs a
// copy where building it costs two cache misses per entry.
func (t *Table) sharedDigests(v *dcView, b int) []Digest {
	ways := t.lists[bucketKey{v.name, b}]
	if ways == nil || v.sizes[b] == 0 {
		return nil
	}
	for i := range ways {
		if l := &ways[i]; l.digests != nil && l.hash == v.buckets[b] && l.check == v.checks[b] && l.size == v.sizes[b] {
			return l.digests
		}
	}
	return nil
}

// shareDigests keeps digests, the list of v's bucket b, for sharedDigests,
// in place of the bucket's oldest.
func (t *Table) shareDigests(v *dcView, b int, digests []Digest) {
	if t.lists == nil || len(digests) == 0 {
		return
	}
	key := bucketKey{v.name, b}
	ways := t.lists[key]
	if ways == nil {
		ways = new([listWays]digestList)
		t.lists[key] = ways
	}
	copy(ways[1:], ways[:listWays-1])
	ways[0] = digestList{hash: v.buckets[b], check: v.checks[b], size: v.sizes[b], digests: slices.Clone(digests)}
}

// ownTable returns the table of a core that shares nothing.
func ownTable() *Table {
	return &Table{members: make(map[string]*member), versions: []*version{nil}, digests: []Digest{{}}}
}

// indexDigests indexes digests by member: it returns the member number of
// each digest (-1 for an ID the table does not know), the index of each
// member's digest plus one (0 for none; the last digest of a member wins)
// by member number, and a flag per digest, all false, for onDigests to mark
// those it found the entry as new as; all from the table's scratch space.
// shared reports that every digest came from a core sharing this table
// (see hint), so that their version indices are this table's.
// unindexDigests clears the index once done with it.
func (t *Table) indexDigests(digests []Digest) (nums []int32, at []int32, current []bool, shared bool) {
	if n := len(t.members); len(t.digestAt) < n {
		t.digestAt = append(t.digestAt, make([]int32, n-len(t.digestAt))...)
	}
	shared = t.interned != nil
	nums = t.digestNums[:0]
	for i, d := range digests {
		if d.hint.table != t {
			// Decoded, or from a core with a table of its own.
			shared = false
		}
		num := t.numOf(d.hint, d.ID)
		nums = append(nums, int32(num))
		if num >= 0 {
			t.digestAt[num] = int32(i) + 1
		}
	}
	t.digestNums = nums
	t.digestCurrent = append(t.digestCurrent[:0], make([]bool, len(digests))...)
	return nums, t.digestAt, t.digestCurrent, shared
}

// unindexDigests clears what indexDigests indexed.
func (t *Table) unindexDigests() {
	for _, num := range t.digestNums {
		if num >= 0 {
			t.digestAt[num] = 0
		}
	}
}

// lookup returns the member with this ID, or nil.
func (t *Table) lookup(id string) *member { return t.members[id] }

// numOf returns the number of the member with this ID, or -1: h's when h
// is this table's (see hint), else by looking the ID up.
func (t *Table) numOf(h hint, id string) int {
	if h.table == t {
		return int(h.num)
	}
	if m := t.members[id]; m != nil {
		return m.num
	}
	return -1
}

// member returns the member with this ID, numbering it if it is new.
func (t *Table) member(id string) *member {
	m := t.members[id]
	if m == nil {
		m = &member{id: id, ring: ringHash(id), num: len(t.members)}
		t.members[id] = m
		t.byNum = append(t.byNum, m)
		t.rings = append(t.rings, m.ring)
	}
	return m
}

// version returns the index of the version for state s: the shared copy
// when the table is shared and has one, a new one otherwise.
func (t *Table) version(s membership.EndpointState) uint32 {
	return t.versionOf(t.member(s.ID), s)
}

// versionOf is version for a state of member m, already found.
func (t *Table) versionOf(m *member, s membership.EndpointState) uint32 {
	maxVersion := s.MaxVersion()
	if t.interned == nil {
		return t.add(newVersion(m, s, maxVersion))
	}
	key := versionKey{num: m.num, generation: s.Generation, heartbeat: s.Heartbeat, maxVersion: maxVersion, apps: len(s.App)}
	for _, i := range t.interned[key] {
		if sameApp(t.versions[i].state.App, s.App) {
			return i
		}
	}
	i := t.add(newVersion(m, s, maxVersion))
	t.interned[key] = append(t.interned[key], i)
	return i
}

// versionOfDelta is versionOf for d's state: the version its hint names when that is
// this shared table's, which interning d's state would find (a shared table holds one
// copy of each state), else versionOf's.
func (t *Table) versionOfDelta(m *member, d Delta) uint32 {
	if d.hint.table == t && d.hint.version() != nil {
		return d.hint.ver
	}
	return t.versionOf(m, d.State)
}

// set gives e version ver and deadAt, and derives its flags. A core's own
// table reuses the index of the version e leaves.
func (t *Table) set(e *entry, ver uint32, deadAt uint64) {
	if e.ver != ver {
		t.release(e.ver)
	}
	v := t.versions[ver]
	e.ver, e.deadAt = ver, deadAt
	e.flags &= flagForward | flagDetached | flagBurst
	if deadAt >= v.maxVersion {
		e.flags |= flagDead
	}
	if v.isLeft {
		e.flags |= flagLeft
	}
	if v.isShutdown {
		e.flags |= flagShutdown
	}
}

// add stores a new version and returns its index. (A run would need
// hundreds of gigabytes of versions to outgrow a uint32.)
func (t *Table) add(v *version) uint32 {
	if n := len(t.free); n > 0 {
		i := t.free[n-1]
		t.free = t.free[:n-1]
		t.versions[i] = v
		t.digests[i] = v.digest(t, i)
		return i
	}
	t.versions = append(t.versions, v)
	i := uint32(len(t.versions) - 1)
	t.digests = append(t.digests, v.digest(t, i))
	return i
}

// release says that no entry refers to version i any more: a core's own
// table reuses its index. A shared table keeps it, for other cores.
func (t *Table) release(i uint32) {
	if t.interned == nil && i != 0 {
		t.versions[i] = nil
		t.digests[i] = Digest{}
		t.free = append(t.free, i)
	}
}

// digest is the digest of v, at index i, for an entry not declared dead.
func (v *version) digest(t *Table, i uint32) Digest {
	return Digest{ID: v.state.ID, Generation: v.state.Generation, MaxVersion: v.maxVersion,
		hint: hint{table: t, num: int32(v.member.num), ver: i}}
}

func newVersion(m *member, s membership.EndpointState, maxVersion uint64) *version {
	v := &version{state: s, maxVersion: maxVersion, member: m}
	v.hashes[0] = entryHash(m.ring, s.Generation, maxVersion, false)
	v.hashes[1] = entryHash(m.ring, s.Generation, maxVersion, true)
	status, _ := s.Value(membership.KeyStatus)
	v.isLeft = status == string(membership.StatusLeft)
	v.isShutdown = status == string(membership.StatusShutdown)
	v.dc, v.hasDC = s.Value(membership.KeyDC)
	v.wireSize = s.WireSize()
	return v
}

// version is the version h names, when h is a shared table's and names
// one (a whole-state delta's, see Core.delta), else nil. A shared table
// never reuses an index, so the hint holds however long the message waits.
func (h hint) version() *version {
	if h.table == nil || h.table.interned == nil || h.ver == 0 {
		return nil
	}
	return h.table.versions[h.ver]
}

// stateSize is the encoded size of s, a delta's state that h hints.
func (h hint) stateSize(s *membership.EndpointState) int {
	if v := h.version(); v != nil {
		return v.wireSize
	}
	return s.WireSize()
}

// sameApp reports whether two application state lists are equal; lists
// copied from one message share their array, which is the quick case.
func sameApp(a, b []membership.AppValue) bool {
	if len(a) > 0 && len(b) > 0 && &a[0] == &b[0] {
		return len(a) == len(b)
	}
	return slices.Equal(a, b)
}
