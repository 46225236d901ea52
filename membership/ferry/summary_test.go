package ferry

import (
	"fmt"
	"slices"
	"testing"
)

func testEntry(id string, version uint64) *entry {
	e := &entry{ring: ringHash(id), maxVersion: version}
	e.state.ID, e.state.Generation = id, 1
	e.hash = entryHash(e.ring, 1, version, false)
	return e
}

// recomputed is the XOR summary computed from scratch.
func recomputed(v *dcView) (root uint64, buckets []uint64) {
	buckets = make([]uint64, len(v.buckets))
	for _, e := range v.members {
		root ^= e.hash
		buckets[v.bucketOf(e)] ^= e.hash
	}
	return root, buckets
}

func TestDCViewKeepsSummariesIncrementally(t *testing.T) {
	v := newDCView("a", 8)
	var entries []*entry
	for i := range 50 {
		e := testEntry(fmt.Sprintf("n%d", i), 1)
		entries = append(entries, e)
		v.add(e)
	}
	entries[7].maxVersion = 9
	v.rehash(entries[7])
	v.remove(entries[3])
	v.remove(entries[3]) // removing twice is harmless
	root, buckets := recomputed(v)
	if v.hash != root || !slices.Equal(v.buckets, buckets) {
		t.Fatal("incremental summary differs from a recomputation")
	}
	if got := v.sum().Count; got != 49 {
		t.Fatalf("count %d, want 49", got)
	}
	for i := 1; i < len(v.members); i++ {
		if !less(v.members[i-1], v.members[i]) {
			t.Fatal("members out of ring order")
		}
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
	v := newDCView("a", 4)
	var ids []string
	for i := range 20 {
		id := fmt.Sprintf("n%d", i)
		ids = append(ids, id)
		v.add(testEntry(id, 1))
	}
	var fromView []string
	for _, e := range v.firstLive(3, nil) {
		fromView = append(fromView, e.state.ID)
	}
	if got := Gateways(ids, 3); !slices.Equal(got, fromView) {
		t.Fatalf("Gateways = %v, view elects %v", got, fromView)
	}
	// A dead gateway is replaced by the next on the ring.
	first := v.members[0]
	first.deadAt = first.maxVersion
	if slices.Contains(v.firstLive(3, nil), first) {
		t.Fatal("dead member still a gateway")
	}
	if got := Gateways(ids[:2], 5); len(got) != 2 {
		t.Fatalf("Gateways of 2 live members = %v", got)
	}
}

func TestSuccessorsWrapAndSkipDead(t *testing.T) {
	v := newDCView("a", 4)
	for i := range 5 {
		v.add(testEntry(fmt.Sprintf("n%d", i), 1))
	}
	last := v.members[4]
	v.members[0].deadAt = 1
	got := v.successors(last, 2)
	if len(got) != 2 || got[0] != v.members[1] || got[1] != v.members[2] {
		t.Fatal("successors of the last member must wrap and skip the dead first one")
	}
}
