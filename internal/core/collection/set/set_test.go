package set

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
)

var key = []byte("{t}:s")

// add is the add record of member written at ts by node, as the coordinator tags it.
func add(member string, ts hlc.Timestamp, node string) lww.Record {
	return lww.Record{Key: slices.Concat(AddPrefix(key, []byte(member)), element.Tag(ts, node)), Timestamp: ts}
}

func names(bs [][]byte) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = string(b)
	}
	return strings.Join(s, ",")
}

func bytesOf(s string) [][]byte {
	if s == "" {
		return nil
	}
	var out [][]byte
	for _, part := range strings.Split(s, ",") {
		out = append(out, []byte(part))
	}
	return out
}

func TestParseAdd(t *testing.T) {
	tag := element.Tag(7, "a1")
	tests := []struct {
		name   string
		key    []byte
		member string
		ok     bool
	}{
		{"an add", slices.Concat(AddPrefix(key, []byte("m")), tag), "m", true},
		{"an empty member", slices.Concat(AddPrefix(key, nil), tag), "", true},
		{"a member that looks like a tag", slices.Concat(AddPrefix(key, tag), tag), string(tag), true},
		{"no tag", AddPrefix(key, []byte("m")), "", false},
		{"a short tag", slices.Concat(AddPrefix(key, []byte("m")), tag[:11]), "", false},
		{"a hash field", element.Key(key, element.HashField, []byte("m")), "", false},
		{"not an element key", []byte("m"), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			member, gotTag, ok := ParseAdd(tt.key)
			if ok != tt.ok || string(member) != tt.member || (ok && !bytes.Equal(gotTag, tag)) {
				t.Fatalf("ParseAdd = %q, %x, %v; want %q, %x, %v", member, gotTag, ok, tt.member, tag, tt.ok)
			}
		})
	}
}

// TestAddWinsOverAConcurrentRemove is the merge rule: the adds and removes of two
// datacenters that did not see each other's, and the set every replica reads once both
// sides' records have met (last writer wins per record).
func TestAddWinsOverAConcurrentRemove(t *testing.T) {
	before := []lww.Record{add("m", 10, "a1"), add("x", 11, "a1")}
	tests := []struct {
		name string
		// a and b are what each side writes, from what it read of before and of its own
		// writes: removes of the named members, then adds of others.
		aRemove, aAdd, bRemove, bAdd string
		want                         string
	}{
		{"an add concurrent with a remove of an absent member wins", "", "", "", "n", "m,n,x"},
		{"a remove of the member seen, an add of it after a remove elsewhere", "m", "", "m", "m", "m,x"},
		{"both remove", "m", "", "m", "", "x"},
		{"a remove of what one side saw, an add of a fresh member on the other", "m,x", "", "", "y", "y"},
		{"an add of a member seen present writes nothing: the remove wins", "m", "", "", "m", "x"},
		{"an add on each side and a remove on one keeps the other's add", "", "n", "", "n", "m,n,x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := map[string]lww.Record{}
			apply := func(recs []lww.Record) {
				for _, r := range recs {
					if cur, ok := store[string(r.Key)]; !ok || lww.Newer(r, cur) {
						store[string(r.Key)] = r
					}
				}
			}
			apply(before)
			// side writes one side's records on its own copy of the store, as a DC cut off
			// would, stamping them from ts on; it returns what it wrote.
			side := func(remove, addNames, node string, ts hlc.Timestamp) []lww.Record {
				local := map[string]lww.Record{}
				for k, v := range store {
					local[k] = v
				}
				read := func() Set { return Fold(live(local)) }
				var wrote []lww.Record
				tombs, _ := read().Remove(bytesOf(remove))
				for _, tomb := range tombs {
					tomb.Timestamp = ts
					local[string(tomb.Key)] = tomb
					wrote = append(wrote, tomb)
				}
				for _, a := range read().Add(key, bytesOf(addNames)) {
					ts++
					a.Key, a.Timestamp = slices.Concat(a.Key, element.Tag(ts, node)), ts
					local[string(a.Key)] = a
					wrote = append(wrote, a)
				}
				return wrote
			}
			// a's clock is ahead of b's: add wins whatever the timestamps say.
			wroteA := side(tt.aRemove, tt.aAdd, "a1", 100)
			wroteB := side(tt.bRemove, tt.bAdd, "b1", 50)
			apply(wroteB)
			apply(wroteA)
			if got := names(Fold(live(store)).Names()); got != tt.want {
				t.Fatalf("merged set = %s, want %s", got, tt.want)
			}
		})
	}
}

// live returns the store's records in key order, as a collection read answers them.
func live(store map[string]lww.Record) []lww.Record {
	var out []lww.Record
	for _, r := range store {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b lww.Record) int { return bytes.Compare(a.Key, b.Key) })
	return out
}

func TestFoldAddRemove(t *testing.T) {
	recs := []lww.Record{add("b", 1, "a1"), add("a", 2, "a1"), add("b", 3, "b1"), {Key: slices.Concat(AddPrefix(key, []byte("c")), element.Tag(4, "a1")), Tombstone: true},
		{Key: element.Key(key, element.HashField, []byte("h"))}}
	s := Fold(recs)
	if got := names(s.Names()); got != "a,b" {
		t.Fatalf("members = %s, want a,b", got)
	}
	tests := []struct {
		name, named  string
		adds         int
		tombstones   int
		removedCount int
	}{
		{"new members, named twice", "c,c,d", 2, 0, 0},
		{"members present", "a,b", 0, 3, 2},
		{"a member named twice removes once", "b,b", 0, 2, 1},
		{"a mix", "a,z", 1, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if adds := s.Add(key, bytesOf(tt.named)); len(adds) != tt.adds {
				t.Fatalf("Add wrote %d records, want %d", len(adds), tt.adds)
			}
			tombs, removed := s.Remove(bytesOf(tt.named))
			if len(tombs) != tt.tombstones || removed != tt.removedCount {
				t.Fatalf("Remove = %d tombstones, %d removed; want %d, %d", len(tombs), removed, tt.tombstones, tt.removedCount)
			}
			for _, tomb := range tombs {
				if !tomb.Tombstone {
					t.Fatalf("Remove wrote a live record %q", tomb.Key)
				}
			}
		})
	}
}

func TestAlgebra(t *testing.T) {
	set := func(members string) Set {
		var recs []lww.Record
		for i, m := range bytesOf(members) {
			recs = append(recs, add(string(m), hlc.Timestamp(i+1), "a1"))
		}
		return Fold(recs)
	}
	tests := []struct {
		name               string
		sets               []string
		inter, union, diff string
	}{
		{"none", nil, "", "", ""},
		{"one", []string{"b,a"}, "a,b", "a,b", "a,b"},
		{"overlapping", []string{"a,b,c", "b,c,d", "c,e"}, "c", "a,b,c,d,e", "a"},
		{"an empty one", []string{"a,b", ""}, "", "a,b", "a,b"},
		{"the first empty", []string{"", "a"}, "", "a", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sets []Set
			for _, s := range tt.sets {
				sets = append(sets, set(s))
			}
			if got := names(Inter(sets)); got != tt.inter {
				t.Errorf("Inter = %s, want %s", got, tt.inter)
			}
			if got := names(Union(sets)); got != tt.union {
				t.Errorf("Union = %s, want %s", got, tt.union)
			}
			if got := names(Diff(sets)); got != tt.diff {
				t.Errorf("Diff = %s, want %s", got, tt.diff)
			}
		})
	}
}

func TestSample(t *testing.T) {
	all := bytesOf("a,b,c,d")
	// first always draws the lowest choice: the order is the list's.
	first := func(int) int { return 0 }
	last := func(n int) int { return n - 1 }
	tests := []struct {
		name  string
		names [][]byte
		count int64
		intN  func(int) int
		want  string
	}{
		{"distinct, fewer than the set", all, 2, first, "a,b"},
		{"distinct, more than the set", all, 9, first, "a,b,c,d"},
		{"distinct, drawn from the end", all, 2, last, "d,a"},
		{"zero", all, 0, first, ""},
		{"repeats", all, -3, last, "d,d,d"},
		{"repeats from an empty set", nil, -3, first, ""},
		{"distinct from an empty set", nil, 3, first, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names(Sample(tt.names, tt.count, tt.intN)); got != tt.want {
				t.Fatalf("Sample = %s, want %s", got, tt.want)
			}
			if names(all) != "a,b,c,d" {
				t.Fatalf("Sample reordered its argument: %s", names(all))
			}
		})
	}
}
