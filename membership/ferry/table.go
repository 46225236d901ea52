package ferry

import (
	"slices"

	"github.com/kuradb/kura/membership"
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
// from it. Cores that share a Table point at one copy of each version; a
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
}

// versionKey finds the candidates for interning a state; sameApp then
// tells them apart.
type versionKey struct {
	num                               int
	generation, heartbeat, maxVersion uint64
	apps                              int
}

// Table numbers the members a core knows and, when shared between the cores
// of a simulated cluster (Protocol.NewShared), interns their versions: every
// core that knows the same version of a member points at one copy. A real
// node has a table of its own, which interns nothing.
//
// A shared table keeps every version it has seen, so its size grows with the
// changes made during a run, not with the number of cores. Only one goroutine
// may drive the cores that share it, as the simulator does.
type Table struct {
	members map[string]*member
	// versions is nil when the table is a core's own.
	versions map[versionKey][]*version
	// digests is onDigests' index of the digests it was sent, kept from one
	// message to the next: one map for all the cores that share the table,
	// rather than a new one per message or one per core.
	digests map[string]Digest
}

// NewTable returns a table to share between the cores of one simulated
// cluster, passed to each as membership.Config.Shared.
func NewTable() *Table {
	return &Table{members: make(map[string]*member), versions: make(map[versionKey][]*version), digests: make(map[string]Digest)}
}

// ownTable returns the table of a core that shares nothing.
func ownTable() *Table {
	return &Table{members: make(map[string]*member), digests: make(map[string]Digest)}
}

// indexDigests indexes digests by ID (the last one wins), in a map that is
// valid until the next call.
func (t *Table) indexDigests(digests []Digest) map[string]Digest {
	clear(t.digests)
	for _, d := range digests {
		t.digests[d.ID] = d
	}
	return t.digests
}

// size is how many member numbers the table has handed out.
func (t *Table) size() int { return len(t.members) }

// lookup returns the member with this ID, or nil.
func (t *Table) lookup(id string) *member { return t.members[id] }

// member returns the member with this ID, numbering it if it is new.
func (t *Table) member(id string) *member {
	m := t.members[id]
	if m == nil {
		m = &member{id: id, ring: ringHash(id), num: len(t.members)}
		t.members[id] = m
	}
	return m
}

// version returns the version for state s: the shared copy when the table
// is shared and has one, a new one otherwise.
func (t *Table) version(s membership.EndpointState) *version {
	m := t.member(s.ID)
	maxVersion := s.MaxVersion()
	if t.versions == nil {
		return newVersion(m, s, maxVersion)
	}
	key := versionKey{num: m.num, generation: s.Generation, heartbeat: s.Heartbeat, maxVersion: maxVersion, apps: len(s.App)}
	for _, v := range t.versions[key] {
		if sameApp(v.state.App, s.App) {
			return v
		}
	}
	v := newVersion(m, s, maxVersion)
	t.versions[key] = append(t.versions[key], v)
	return v
}

func newVersion(m *member, s membership.EndpointState, maxVersion uint64) *version {
	v := &version{state: s, maxVersion: maxVersion, member: m}
	v.hashes[0] = entryHash(m.ring, s.Generation, maxVersion, false)
	v.hashes[1] = entryHash(m.ring, s.Generation, maxVersion, true)
	status, _ := s.Value(membership.KeyStatus)
	v.isLeft = status == string(membership.StatusLeft)
	v.isShutdown = status == string(membership.StatusShutdown)
	return v
}

// sameApp reports whether two application state lists are equal; lists
// copied from one message share their array, which is the quick case.
func sameApp(a, b []membership.AppValue) bool {
	if len(a) > 0 && len(b) > 0 && &a[0] == &b[0] {
		return len(a) == len(b)
	}
	return slices.Equal(a, b)
}
