package ferry

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/core/membership"
)

// testState is a member's state at generation 1 whose highest version is
// version.
func testState(id string, version uint64) membership.EndpointState {
	return membership.EndpointState{ID: id, Generation: 1, Heartbeat: version}
}

// testView is an empty view of DC "a" with this many buckets, over a table
// of its own.
func testView(buckets int) *dcView {
	return newDCView("a", ownTable(), new(entrySlots), 0, buckets)
}

// testEntry is the entry of a new member of v's table at version.
func testEntry(v *dcView, id string, version uint64) *entry {
	ver := v.table.version(testState(id, version))
	e := v.entries.make(v.table.versions[ver].member.num)
	v.table.set(e, ver, 0)
	return e
}

// recomputed is the summary and counts computed from scratch.
func recomputed(v *dcView) (root uint64, buckets, checks []uint64, live, convicted int) {
	buckets, checks = make([]uint64, len(v.buckets)), make([]uint64, len(v.buckets))
	for e := range v.all() {
		ev := v.table.versions[e.ver]
		h := entryHash(ev.member.ring, ev.state.Generation, ev.maxVersion, e.dead())
		root ^= h
		buckets[v.bucketOf(e)] ^= h
		checks[v.bucketOf(e)] ^= checkHash(h)
		if e.live() {
			live++
		}
		if e.unreachable() {
			convicted++
		}
	}
	return root, buckets, checks, live, convicted
}

func TestDCViewKeepsSummariesIncrementally(t *testing.T) {
	v := testView(8)
	table := v.table
	var entries []*entry
	for i := range 50 {
		e := testEntry(v, fmt.Sprintf("n%d", i), 1)
		entries = append(entries, e)
		v.add(e)
	}
	v.unlink(entries[7])
	table.set(entries[7], table.version(testState("n7", 9)), 0)
	v.link(entries[7])
	v.unlink(entries[8])
	table.set(entries[8], entries[8].ver, 1)
	v.link(entries[8])
	v.remove(entries[3])
	v.remove(entries[3]) // removing twice is harmless
	root, buckets, checks, live, convicted := recomputed(v)
	if v.hash != root || !slices.Equal(v.buckets, buckets) || !slices.Equal(v.checks, checks) {
		t.Fatal("incremental summary differs from a recomputation")
	}
	if v.live != live || v.unreachable != convicted || live != 48 || convicted != 1 {
		t.Fatalf("counts live %d unreachable %d, recomputed %d and %d, want 48 and 1", v.live, v.unreachable, live, convicted)
	}
	if got := v.sum().Count; got != 49 {
		t.Fatalf("count %d, want 49", got)
	}
	for i := 1; i < len(v.members); i++ {
		if a, b := v.member(v.at(i-1)), v.member(v.at(i)); a.ring > b.ring || a.ring == b.ring && a.id >= b.id {
			t.Fatal("members out of ring order")
		}
	}
	for i := range v.members {
		e := v.at(i)
		if int(v.bucketAt[i]) != v.bucketOf(e) {
			t.Fatalf("member %d (%s): bucketAt says %d, its bucket is %d", i, v.member(e).id, v.bucketAt[i], v.bucketOf(e))
		}
	}
}

// TestOrderIsTheSameWheneverItIsRead: members added out of ring order are put in
// their places when the order is read, and the view is the same whether it is
// read after every add, at some of them, or once at the end, removals among them.
func TestOrderIsTheSameWheneverItIsRead(t *testing.T) {
	for _, readEvery := range []int{1, 7, 1000} {
		t.Run(fmt.Sprintf("read every %d", readEvery), func(t *testing.T) {
			want, got := testView(8), testView(8)
			got.table, got.entries = want.table, want.entries
			var entries []*entry
			for i := range 100 {
				e := testEntry(want, fmt.Sprintf("n%d", (i*37)%100), 1)
				entries = append(entries, e)
				want.add(e)
				want.order()
				got.add(e)
				if i%readEvery == 0 {
					got.order()
				}
				if i%10 == 9 {
					gone := entries[i-5]
					want.remove(gone)
					got.remove(gone)
				}
			}
			got.order()
			if !slices.Equal(want.members, got.members) || !slices.Equal(want.bucketAt, got.bucketAt) ||
				!slices.Equal(want.sizes, got.sizes) || !slices.Equal(want.buckets, got.buckets) ||
				!slices.Equal(want.checks, got.checks) || want.hash != got.hash || want.changes != got.changes {
				t.Fatal("reading the order at other times leaves another view")
			}
			if len(got.members) != 90 {
				t.Fatalf("%d members, want 90", len(got.members))
			}
			for i := 1; i < len(got.members); i++ {
				if a, b := got.member(got.at(i-1)), got.member(got.at(i)); a.ring > b.ring || a.ring == b.ring && a.id >= b.id {
					t.Fatal("members out of ring order")
				}
			}
		})
	}
}

// TestSharedDigestsNeedTheSameBucket: a core gets another core's digest list of a
// bucket only when its own bucket has the same hash, check and size.
func TestSharedDigestsNeedTheSameBucket(t *testing.T) {
	table := NewTable()
	core := func(versions map[string]uint64) *dcView {
		v := newDCView("a", table, new(entrySlots), 0, 1)
		for id, version := range versions {
			ver := table.version(testState(id, version))
			e := v.entries.make(table.versions[ver].member.num)
			table.set(e, ver, 0)
			v.add(e)
		}
		return v
	}
	sender := core(map[string]uint64{"n1": 1, "n2": 1, "n3": 1})
	list := []Digest{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}}
	table.shareDigests(sender, 0, list)
	if got := table.sharedDigests(core(map[string]uint64{"n1": 1, "n2": 1, "n3": 1}), 0); !slices.Equal(got, list) {
		t.Fatalf("a core with the same bucket gets %v, want the list", got)
	}
	if got := table.sharedDigests(core(map[string]uint64{"n1": 1, "n2": 2, "n3": 1}), 0); got != nil {
		t.Fatalf("a core whose bucket holds another version gets %v", got)
	}
	// A bucket whose hash collides with the list's, but whose check does not.
	collides := core(map[string]uint64{"n1": 1, "n2": 1, "n4": 1})
	collides.buckets[0] = sender.buckets[0]
	if got := table.sharedDigests(collides, 0); got != nil {
		t.Fatalf("a bucket whose hash alone matches gets %v", got)
	}
	// The same hash and check but another size (a bucket that differs by a member in
	// both) is not the same bucket either.
	bigger := core(map[string]uint64{"n1": 1, "n2": 1, "n3": 1})
	bigger.sizes[0]++
	if got := table.sharedDigests(bigger, 0); got != nil {
		t.Fatalf("a bucket of another size gets %v", got)
	}
	if got := ownTable(); got.lists != nil {
		t.Fatal("a core's own table keeps digest lists: nobody shares them")
	}
}

func TestSummaryChangesWithEveryField(t *testing.T) {
	ring := ringHash("n1")
	base := entryHash(ring, 1, 5, false)
	for name, h := range map[string]uint64{
		"generation": entryHash(ring, 2, 5, false),
		"version":    entryHash(ring, 1, 6, false),
		"dead":       entryHash(ring, 1, 5, true),
		"member":     entryHash(ringHash("n2"), 1, 5, false),
	} {
		if h == base {
			t.Fatalf("changing the %s does not change the hash", name)
		}
	}
}

func TestGatewaysMatchTheRing(t *testing.T) {
	v := testView(4)
	table := v.table
	var ids []string
	for i := range 20 {
		id := fmt.Sprintf("n%d", i)
		ids = append(ids, id)
		v.add(testEntry(v, id, 1))
	}
	var fromView []string
	for _, e := range v.firstLive(3, nil) {
		fromView = append(fromView, v.member(e).id)
	}
	if got := Gateways(ids, 3); !slices.Equal(got, fromView) {
		t.Fatalf("Gateways = %v, view elects %v", got, fromView)
	}
	// A dead gateway is replaced by the next on the ring.
	first := v.at(0)
	table.set(first, first.ver, table.versions[first.ver].maxVersion)
	if slices.Contains(v.firstLive(3, nil), first) {
		t.Fatal("dead member still a gateway")
	}
	if got := Gateways(ids[:2], 5); len(got) != 2 {
		t.Fatalf("Gateways of 2 live members = %v", got)
	}
}

func TestSuccessorsWrapAndSkipDead(t *testing.T) {
	v := testView(4)
	table := v.table
	for i := range 5 {
		v.add(testEntry(v, fmt.Sprintf("n%d", i), 1))
	}
	last := v.at(4)
	table.set(v.at(0), v.at(0).ver, 1)
	got := v.successors(last, 2)
	if len(got) != 2 || got[0] != v.at(1) || got[1] != v.at(2) {
		t.Fatal("successors of the last member must wrap and skip the dead first one")
	}
}
