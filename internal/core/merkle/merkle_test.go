package merkle

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
)

var partitioner = ring.HashPartitioner()

func record(key, value string, ts hlc.Timestamp) lww.Record {
	return lww.Record{Key: []byte(key), Value: []byte(value), Timestamp: ts}
}

// records returns n records keyed k0 ... k(n-1).
func records(n int) []lww.Record {
	out := make([]lww.Record, n)
	for i := range out {
		out[i] = record(fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i), hlc.Timestamp(100+i))
	}
	return out
}

func mustTree(t *testing.T, rg ring.Range, depth int, recs []lww.Record) *Tree {
	t.Helper()
	b, err := NewBuilder(rg, depth)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		b.Add(partitioner.Token(r.Key), r)
	}
	return b.Tree()
}

var ranges = []struct {
	name string
	rg   ring.Range
}{
	{"whole ring", ring.Range{Start: 77, End: 77}},
	{"plain", ring.Range{Start: 1 << 40, End: 1 << 62}},
	{"wrapping past the top", ring.Range{Start: math.MaxUint64 - 1<<60, End: 1 << 61}},
	{"as narrow as its leaves", ring.Range{Start: 1000, End: 1016}},
}

// TestLeavesPartitionTheRange checks that the sub-ranges of the leaves tile the range in
// token order, and that every token falls in the leaf whose sub-range contains it.
func TestLeavesPartitionTheRange(t *testing.T) {
	for _, tt := range ranges {
		for _, depth := range []int{0, 1, 3, 4} {
			t.Run(fmt.Sprintf("%s/depth %d", tt.name, depth), func(t *testing.T) {
				tree := mustTree(t, tt.rg, depth, nil)
				leaves := 1 << depth
				if first, last := tree.SubRange(0), tree.SubRange(leaves-1); first.Start != tt.rg.Start || last.End != tt.rg.End {
					t.Fatalf("leaves span (%d, %d], want (%d, %d]", first.Start, last.End, tt.rg.Start, tt.rg.End)
				}
				for i := range leaves {
					sub := tree.SubRange(i)
					if i > 0 && tree.SubRange(i-1).End != sub.Start {
						t.Fatalf("leaf %d starts at %d, leaf %d ends at %d", i, sub.Start, i-1, tree.SubRange(i-1).End)
					}
					// The first and last tokens of the sub-range, and one past its end.
					for _, probe := range []struct {
						token ring.Token
						leaf  int
					}{{sub.Start + 1, i}, {sub.End, i}, {sub.End + 1, i + 1}} {
						leaf, ok := leafOf(tt.rg, depth, probe.token)
						if probe.leaf == leaves {
							if ok && tt.rg.Start != tt.rg.End {
								t.Errorf("token %d past the range fell in leaf %d", probe.token, leaf)
							}
							continue
						}
						if !ok || leaf != probe.leaf {
							t.Errorf("token %d: leaf %d (in range %t), want %d", probe.token, leaf, ok, probe.leaf)
						}
						if !sub.Contains(probe.token) && probe.leaf == i {
							t.Errorf("sub-range (%d, %d] of leaf %d misses token %d", sub.Start, sub.End, i, probe.token)
						}
					}
				}
			})
		}
	}
}

func TestTreeIsDeterministicAndOrderFree(t *testing.T) {
	recs := records(200)
	rg := ring.Range{Start: 5, End: 5}
	forward := mustTree(t, rg, 6, recs)
	reversed := slices.Clone(recs)
	slices.Reverse(reversed)
	backward := mustTree(t, rg, 6, reversed)
	if forward.Root() != backward.Root() || forward.Records() != 200 {
		t.Fatalf("roots %x and %x of the same 200 records in two orders (records %d)", forward.Root(), backward.Root(), forward.Records())
	}
	again := mustTree(t, rg, 6, records(200))
	if !slices.Equal(again.Leaves(), forward.Leaves()) {
		t.Fatal("two builds of equal records gave different leaves")
	}
}

func TestBuilderLeavesOutRecordsOutsideTheRange(t *testing.T) {
	rg := ring.Range{Start: 1 << 62, End: 1 << 63}
	b, err := NewBuilder(rg, 2)
	if err != nil {
		t.Fatal(err)
	}
	if b.Add(1<<62, record("k", "v", 1)) || !b.Add(1<<63, record("k", "v", 1)) {
		t.Fatal("the range (start, end] includes its end and excludes its start")
	}
	if got := b.Tree().Records(); got != 1 {
		t.Fatalf("%d records, want 1", got)
	}
}

// TestDiff changes one replica's copy of a record and checks that Diff names exactly
// the leaf of its token, whatever the change.
func TestDiff(t *testing.T) {
	base := records(100)
	changed := base[37]
	rg := ring.Range{Start: 1 << 63, End: 1 << 63}
	const depth = 5
	wantLeaf, _ := leafOf(rg, depth, partitioner.Token(changed.Key))
	with := func(edit func([]lww.Record) []lww.Record) []lww.Record { return edit(slices.Clone(base)) }
	tests := []struct {
		name  string
		other []lww.Record
		want  []int
	}{
		{"identical", with(func(r []lww.Record) []lww.Record { return r }), nil},
		{"newer value", with(func(r []lww.Record) []lww.Record {
			r[37] = record(string(changed.Key), "new", changed.Timestamp+1)
			return r
		}), []int{wantLeaf}},
		{"same timestamp, other value", with(func(r []lww.Record) []lww.Record {
			r[37] = record(string(changed.Key), "other", changed.Timestamp)
			return r
		}), []int{wantLeaf}},
		{"tombstone", with(func(r []lww.Record) []lww.Record {
			r[37] = lww.Record{Key: changed.Key, Timestamp: changed.Timestamp, Tombstone: true}
			return r
		}), []int{wantLeaf}},
		{"same value, an expiry", with(func(r []lww.Record) []lww.Record {
			r[37].ExpiresAt = changed.Timestamp + 1
			return r
		}), []int{wantLeaf}},
		{"same value, another type", with(func(r []lww.Record) []lww.Record {
			r[37].Type = lww.Hash
			return r
		}), []int{wantLeaf}},
		{"record missing", with(func(r []lww.Record) []lww.Record { return slices.Delete(r, 37, 38) }), []int{wantLeaf}},
		{"record extra", with(func(r []lww.Record) []lww.Record { return append(r, changed) }), []int{wantLeaf}},
	}
	a := mustTree(t, rg, depth, base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustTree(t, rg, depth, tt.other)
			got, err := Diff(a, b)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("Diff = %v, %v; want %v", got, err, tt.want)
			}
			if (a.Root() == b.Root()) != (len(tt.want) == 0) {
				t.Fatalf("roots equal %t with %d leaves differing", a.Root() == b.Root(), len(tt.want))
			}
		})
	}
	if _, err := Diff(a, mustTree(t, rg, depth-1, base)); err == nil {
		t.Fatal("Diff compared trees of different depths")
	}
}

func TestFoldEqualsBuildingShallower(t *testing.T) {
	recs := records(500)
	for _, tt := range ranges[:3] {
		deep := mustTree(t, tt.rg, 8, recs)
		for _, depth := range []int{0, 3, 8} {
			folded, err := deep.Fold(depth)
			if err != nil {
				t.Fatal(err)
			}
			if built := mustTree(t, tt.rg, depth, recs); !slices.Equal(folded.nodes, built.nodes) || folded.Records() != built.Records() {
				t.Errorf("%s: the tree folded to depth %d differs from the one built there", tt.name, depth)
			}
		}
	}
	if _, err := mustTree(t, ranges[0].rg, 2, nil).Fold(3); err == nil {
		t.Fatal("Fold deepened a tree")
	}
}

func TestFromLeaves(t *testing.T) {
	rg := ring.Range{Start: 10, End: 1 << 63}
	sent := mustTree(t, rg, 4, records(50))
	got, err := FromLeaves(rg, 4, sent.Records(), sent.Leaves())
	if err != nil || !slices.Equal(got.nodes, sent.nodes) || got.Records() != sent.Records() || sent.Records() == 0 {
		t.Fatalf("FromLeaves did not rebuild the tree sent: %v", err)
	}
	tests := []struct {
		name   string
		rg     ring.Range
		depth  int
		leaves int
	}{
		{"too few leaves", rg, 4, 15},
		{"negative depth", rg, -1, 1},
		{"past MaxDepth", rg, MaxDepth + 1, 1 << (MaxDepth + 1)},
		{"more leaves than tokens", ring.Range{Start: 0, End: 7}, 3, 8},
	}
	for _, tt := range tests {
		if _, err := FromLeaves(tt.rg, tt.depth, 0, make([]uint64, tt.leaves)); err == nil {
			t.Errorf("%s: FromLeaves accepted it", tt.name)
		}
	}
}

func TestDepthFor(t *testing.T) {
	whole := ring.Range{}
	tests := []struct {
		name                       string
		rg                         ring.Range
		records, perLeaf, maxDepth int
		want                       int
	}{
		{"empty range", whole, 0, 16, 10, 0},
		{"one leaf's worth", whole, 16, 16, 10, 0},
		{"just over", whole, 17, 16, 10, 1},
		{"a thousand records", whole, 1000, 16, 10, 6},
		{"capped by maxDepth", whole, 1 << 30, 16, 10, 10},
		{"capped by the width", ring.Range{Start: 0, End: 8}, 1000, 1, 10, 3},
	}
	for _, tt := range tests {
		if got := DepthFor(tt.rg, tt.records, tt.perLeaf, tt.maxDepth); got != tt.want {
			t.Errorf("%s: DepthFor(%d records, %d per leaf, max %d) = %d, want %d", tt.name, tt.records, tt.perLeaf, tt.maxDepth, got, tt.want)
		}
	}
}
