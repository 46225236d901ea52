package antientropy

import (
	"slices"
	"testing"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/merkle"
	"github.com/kuradb/kura/ring"
)

func TestReconcile(t *testing.T) {
	value := func(ts hlc.Timestamp, v string) *lww.Record {
		return &lww.Record{Key: []byte("k"), Value: []byte(v), Timestamp: ts}
	}
	tombstone := func(ts hlc.Timestamp) *lww.Record {
		return &lww.Record{Key: []byte("k"), Timestamp: ts, Tombstone: true}
	}
	none := []hlc.Timestamp{0, 0, 0}
	tests := []struct {
		name        string
		copies      []*lww.Record
		watermarks  []hlc.Timestamp
		wantNewest  *lww.Record
		wantTo      []int
		wantSkipped int
	}{
		{"all agree", []*lww.Record{value(5, "v"), value(5, "v"), value(5, "v")}, none, value(5, "v"), nil, 0},
		{"one lacks the key", []*lww.Record{value(5, "v"), nil, value(5, "v")}, none, value(5, "v"), []int{1}, 0},
		{"older copies get the newest", []*lww.Record{value(3, "old"), value(5, "new"), nil}, none, value(5, "new"), []int{0, 2}, 0},
		{"a tombstone is newest too", []*lww.Record{tombstone(6), value(5, "v"), nil}, none, tombstone(6), []int{1, 2}, 0},
		{"tie: the tombstone wins", []*lww.Record{value(5, "v"), tombstone(5), value(5, "v")}, none, tombstone(5), []int{0, 2}, 0},
		{"tie: the larger value wins", []*lww.Record{value(5, "a"), value(5, "b"), value(5, "a")}, none, value(5, "b"), []int{0, 2}, 0},
		{"lacking, at the watermark: skipped", []*lww.Record{value(5, "v"), nil, nil}, []hlc.Timestamp{0, 5, 4}, value(5, "v"), []int{2}, 1},
		{"lacking, below the watermark: skipped", []*lww.Record{value(5, "v"), nil, nil}, []hlc.Timestamp{0, 9, 9}, value(5, "v"), nil, 2},
		{"lacking a tombstone below the watermark: skipped", []*lww.Record{tombstone(5), nil, value(4, "v")}, []hlc.Timestamp{0, 9, 9}, tombstone(5), []int{2}, 1},
		{"holding an older copy: repaired whatever the watermark", []*lww.Record{value(5, "v"), value(3, "old"), nil}, []hlc.Timestamp{9, 9, 0}, value(5, "v"), []int{1, 2}, 0},
		{"newer than the watermark: repaired", []*lww.Record{value(10, "v"), nil, nil}, []hlc.Timestamp{0, 9, 0}, value(10, "v"), []int{1, 2}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newest, to, skipped := reconcile(tt.copies, tt.watermarks)
			if newest.Timestamp != tt.wantNewest.Timestamp || newest.Tombstone != tt.wantNewest.Tombstone || string(newest.Value) != string(tt.wantNewest.Value) {
				t.Errorf("newest = %+v, want %+v", newest, *tt.wantNewest)
			}
			if !slices.Equal(to, tt.wantTo) || skipped != tt.wantSkipped {
				t.Errorf("to %v, skipped %d; want %v, %d", to, skipped, tt.wantTo, tt.wantSkipped)
			}
		})
	}
}

func TestSubRangesMergesAdjacentLeaves(t *testing.T) {
	b, err := merkle.NewBuilder(ring.Range{Start: 0, End: 800}, 3) // leaves of 100 tokens
	if err != nil {
		t.Fatal(err)
	}
	tree := b.Tree()
	tests := []struct {
		name   string
		leaves []int
		want   []ring.Range
	}{
		{"one leaf", []int{2}, []ring.Range{{Start: 200, End: 300}}},
		{"adjacent leaves", []int{3, 1, 2}, []ring.Range{{Start: 100, End: 400}}},
		{"two runs", []int{0, 1, 5, 7}, []ring.Range{{Start: 0, End: 200}, {Start: 500, End: 600}, {Start: 700, End: 800}}},
	}
	for _, tt := range tests {
		differing := map[int]bool{}
		for _, leaf := range tt.leaves {
			differing[leaf] = true
		}
		if got := subRanges(tree, differing); !slices.Equal(got, tt.want) {
			t.Errorf("%s: subRanges = %v, want %v", tt.name, got, tt.want)
		}
	}
}
