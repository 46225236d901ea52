package ferry

import (
	"cmp"
	"iter"
	"slices"
	"sort"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// mix64 is the splitmix64 finaliser: a cheap, well-spread 64-bit mix.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// ringHash places a member on its DC's ring. The same order ranks gateways
// (lowest first) and picks monitors (next on the ring), so every node with
// the same view picks the same ones.
func ringHash(id string) uint64 { return xxhash.Sum64String(id) }

// entryHash is an entry's contribution to its DC's summary: it changes
// whenever the generation, the highest version or the dead flag does.
func entryHash(ring, generation, maxVersion uint64, dead bool) uint64 {
	v := maxVersion << 1
	if dead {
		v |= 1
	}
	return mix64(ring ^ mix64(generation^mix64(v)))
}

// checkHash is an entry's contribution to its bucket's check (dcView.checks):
// its hash mixed again, so that a set of entries whose hashes XOR to another
// set's has, but for a chance of 2⁻⁶⁴, checks that do not.
func checkHash(h uint64) uint64 { return mix64(h ^ 0x9e3779b97f4a7c15) }

// dcView is what a node knows about one DC: its members in ring order and
// the XOR summaries over them, kept up to date entry by entry.
type dcView struct {
	name string
	// table holds the members' versions, and entries the node's entries.
	table   *Table
	entries *entrySlots
	// index is the view's place in Core.views, which entries keep.
	index int
	// members are the member numbers of the DC's members (see at), in ring
	// order, ties by ID, the first ordered of them (see order); the rest
	// were added since and are put in their places when the order is read.
	members []uint32
	ordered int
	// bucketAt[i] is the bucket of members[i], and sizes[b] how many
	// members bucket b holds: byBucket groups the members by bucket from
	// these rather than from each member's entry.
	bucketAt []uint16
	sizes    []int32
	hash     uint64
	buckets  []uint64
	// checks[b] is a second hash of bucket b, over other mixes of the same
	// entry hashes: two buckets whose hashes and checks are equal hold the
	// same entries (see Table.bucketDigests).
	checks []uint64
	// live counts the live members; unreachable those convicted or shut down
	// that did not leave.
	live, unreachable int
	// changes counts the changes folded in (see fold): a core's answer to
	// whether it is a gateway holds while its DC's count stays the same.
	changes uint64
}

func newDCView(name string, table *Table, entries *entrySlots, index, buckets int) *dcView {
	return &dcView{name: name, table: table, entries: entries, index: index, buckets: make([]uint64, buckets), checks: make([]uint64, buckets),
		sizes: make([]int32, buckets)}
}

// member is e's member.
func (v *dcView) member(e *entry) *member { return v.table.versions[e.ver].member }

// at is the entry of the ith member in ring order.
func (v *dcView) at(i int) *entry {
	v.order()
	return v.entries.of(v.members[i])
}

// all yields the members' entries in ring order.
func (v *dcView) all() iter.Seq[*entry] {
	v.order()
	return func(yield func(*entry) bool) {
		for _, num := range v.members {
			if !yield(v.entries.of(num)) {
				return
			}
		}
	}
}

// bucketOf is the bucket of a member.
func (v *dcView) bucketOf(e *entry) int { return int(v.member(e).ring % uint64(len(v.buckets))) }

// position is where e is, or would go, in members: in ring order, ties by
// ID.
func (v *dcView) position(e *entry) int {
	v.order()
	m := v.member(e)
	rings := v.table.rings
	return sort.Search(len(v.members), func(i int) bool {
		num := v.members[i]
		return rings[num] > m.ring || rings[num] == m.ring && v.table.byNum[num].id >= m.id
	})
}

// add adds a member at the end of members, out of ring order until the
// next read of the order (see order), and folds in its hash.
func (v *dcView) add(e *entry) {
	b := v.bucketOf(e)
	v.members = append(v.members, uint32(v.member(e).num))
	v.bucketAt = append(v.bucketAt, uint16(b))
	v.sizes[b]++
	v.link(e)
}

// order puts the members added since the order was last read in their
// places: ring order, ties by ID. A node learning a burst of joins adds
// hundreds of members between two reads of a ring, and inserting each in
// turn moved half a ring each time (issue 48's cold start); sorting the
// newcomers and moving the ring's stretches between them once moves it once.
func (v *dcView) order() {
	n := len(v.members)
	if v.ordered == n {
		return
	}
	t := v.table
	// The newcomers carry their places on the ring, so that sorting them
	// reads no other array; IDs break ties.
	added := t.newcomers[:0]
	for _, num := range v.members[v.ordered:] {
		added = append(added, newcomer{ring: t.rings[num], num: num})
	}
	slices.SortFunc(added, func(a, b newcomer) int {
		if c := cmp.Compare(a.ring, b.ring); c != 0 {
			return c
		}
		return strings.Compare(t.byNum[a.num].id, t.byNum[b.num].id)
	})
	after := func(num uint32, a newcomer) int {
		if c := cmp.Compare(t.rings[num], a.ring); c != 0 {
			return c
		}
		return strings.Compare(t.byNum[num].id, t.byNum[a.num].id)
	}
	// From the last newcomer back: the members after its place move up by
	// the newcomers still to place, in one copy per stretch.
	hi, k := v.ordered, n
	for j := len(added) - 1; j >= 0; j-- {
		p, _ := slices.BinarySearchFunc(v.members[:hi], added[j], after)
		k -= hi - p
		copy(v.members[k:], v.members[p:hi])
		copy(v.bucketAt[k:], v.bucketAt[p:hi])
		k--
		v.members[k] = added[j].num
		v.bucketAt[k] = uint16(added[j].ring % uint64(len(v.buckets)))
		hi = p
	}
	t.newcomers = added
	v.ordered = n
}

// newcomer is a member added to a view and not yet in its place (see
// dcView.order), with its place on the ring.
type newcomer struct {
	ring uint64
	num  uint32
}

// remove takes a member out and its hash with it.
func (v *dcView) remove(e *entry) {
	i := v.position(e)
	if i < len(v.members) && v.members[i] == uint32(v.member(e).num) {
		v.sizes[v.bucketAt[i]]--
		v.members = slices.Delete(v.members, i, i+1)
		v.bucketAt = slices.Delete(v.bucketAt, i, i+1)
		v.ordered = len(v.members)
		v.unlink(e)
	}
}

// link folds e into the summaries and counts; unlink takes it out. A change
// to an entry is made between the two: its hash and counts derive from it.
func (v *dcView) link(e *entry)   { v.fold(e, 1) }
func (v *dcView) unlink(e *entry) { v.fold(e, -1) }

func (v *dcView) fold(e *entry, sign int) {
	v.changes++
	h := v.table.versions[e.ver].hashes[0]
	if e.dead() {
		h = v.table.versions[e.ver].hashes[1]
	}
	v.hash ^= h
	b := v.bucketOf(e)
	v.buckets[b] ^= h
	v.checks[b] ^= checkHash(h)
	if e.live() {
		v.live += sign
	}
	if e.unreachable() {
		v.unreachable += sign
	}
}

// sum is the constant-size summary of the DC.
func (v *dcView) sum() DCSum { return DCSum{DC: v.name, Count: uint64(len(v.members)), Hash: v.hash} }

// firstLive returns up to k live members in ring order, skipping except.
func (v *dcView) firstLive(k int, except *entry) []*entry {
	var out []*entry
	for e := range v.all() {
		if len(out) == k {
			break
		}
		if e != except && e.live() {
			out = append(out, e)
		}
	}
	return out
}

// anyLive reports whether the DC has a live member.
func (v *dcView) anyLive() bool { return v.live > 0 }

// successors returns the next k live members after e on the ring.
func (v *dcView) successors(e *entry, k int) []*entry {
	var out []*entry
	start := v.position(e)
	for step := 1; step < len(v.members) && len(out) < k; step++ {
		m := v.at((start + step) % len(v.members))
		if m != e && m.live() {
			out = append(out, m)
		}
	}
	return out
}

// predecessors returns the previous k live members before e on the ring:
// the nodes that e, as their monitor, should hear from.
func (v *dcView) predecessors(e *entry, k int) []*entry {
	var out []*entry
	start := v.position(e)
	n := len(v.members)
	for step := 1; step < n && len(out) < k; step++ {
		m := v.at((start - step + n) % n)
		if m != e && m.live() {
			out = append(out, m)
		}
	}
	return out
}

// bucketHash is the hash of bucket b (0 when v is nil: a DC this node
// does not know).
func (v *dcView) bucketHash(b int) uint64 {
	if v == nil {
		return 0
	}
	return v.buckets[b]
}

// byBucket groups the members by bucket, in ring order within each: the
// positions in members of bucket b's are order[start[b]:start[b+1]]. One
// pass over bucketAt serves every bucket that anti-entropy compares, where
// a scan per bucket would make a comparison of all of them cost Buckets
// passes. Both slices are the table's, valid until its next byBucket.
func (v *dcView) byBucket() (order, start []int32) {
	v.order()
	t := v.table
	start = append(t.bucketStart[:0], 0)
	for _, n := range v.sizes {
		start = append(start, start[len(start)-1]+n)
	}
	order = slices.Grow(t.bucketOrder[:0], len(v.members))[:len(v.members)]
	// next[b] is where bucket b's next member goes; it ends at start[b+1].
	next := append(t.bucketNext[:0], start[:len(v.sizes)]...)
	for i, b := range v.bucketAt {
		order[next[b]] = int32(i)
		next[b]++
	}
	t.bucketStart, t.bucketOrder, t.bucketNext = start, order, next
	return order, start
}

// Gateways returns which of the given live members of one DC are its
// gateways: the k lowest on the ring, as every node with the same view
// computes them. Cores keep this incrementally; this is for tools and tests.
func Gateways(liveIDs []string, k int) []string {
	ids := slices.Clone(liveIDs)
	slices.SortFunc(ids, func(a, b string) int {
		ha, hb := ringHash(a), ringHash(b)
		switch {
		case ha < hb:
			return -1
		case ha > hb:
			return 1
		}
		return strings.Compare(a, b)
	})
	return ids[:min(k, len(ids))]
}
