package antientropy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/merkle"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/data/replica/replicatest"
	"github.com/kuradb/kura/internal/io/transport"
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

// byID hands out the replicas of a test's nodes by name.
type byID map[string]replica.Replica

func (b byID) Replica(n cluster.Node) replica.Replica { return b[n.ID] }

// TestSyncRecordsKeepsLargeValuesWithinAFrame: four replicas and 40 values of 10 KB,
// over frames of 64 KiB. a, b and d each hold a third of the keys (b also a newer
// version of one of a's), c none. The repair reads pages of PageBytes and writes in
// batches of PageBytes, each within a frame (c is given seven values, 70 KB, in the
// first round), and leaves every replica with the newest version of every key. Pages
// bounded by records alone would not fit one frame, and the repair would fail.
func TestSyncRecordsKeepsLargeValuesWithinAFrame(t *testing.T) {
	const frameBytes = 64 << 10
	for _, tt := range []struct {
		name      string
		pageBytes int
		wantErr   error
	}{
		{"pages of 30,000 bytes", 30_000, nil},
		{"pages bounded by records alone", 1 << 30, transport.ErrFrameTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ids := []string{"a", "b", "d", "c"}
			stored := map[string][]lww.Record{}
			var newest []lww.Record
			for i := range 40 {
				rec := lww.Record{Key: fmt.Appendf(nil, "k%02d", i), Value: make([]byte, 10_000), Timestamp: 5}
				stored[ids[i%3]] = append(stored[ids[i%3]], rec)
				newest = append(newest, rec)
			}
			newer := lww.Record{Key: newest[0].Key, Value: []byte("b's newer version"), Timestamp: 7}
			stored["b"], newest[0] = append(stored["b"], newer), newer

			dir := cluster.NewDirectory(cluster.Node{ID: "a", DC: "dc1"})
			replicas := byID{}
			var members []placement.Member
			for _, id := range ids {
				dir.Upsert(cluster.Node{ID: id, DC: "dc1"})
				members = append(members, placement.Member{ID: id, DC: "dc1"})
				local, engine := replicatest.NewLocal(t, "ks")
				replicas[id] = replicatest.Framed{Replica: local, FrameBytes: frameBytes}
				if _, err := engine.ApplyBatch("ks", stored[id]); err != nil {
					t.Fatal(err)
				}
			}
			r := New(Config{PageBytes: tt.pageBytes, Logger: slog.New(slog.DiscardHandler)}, Parts{View: dir, Replicas: replicas})
			var st Stats
			err := r.syncRecords(context.Background(), schema.Keyspace{Name: "ks"}, members, make([]hlc.Timestamp, len(members)), []ring.Range{{}}, &st)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("repair: %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				for _, want := range newest {
					got, found, err := replicas[id].Get(context.Background(), "ks", want.Key)
					if err != nil || !found || got.Timestamp != want.Timestamp || len(got.Value) != len(want.Value) {
						t.Fatalf("%s holds %s at %d (found %v, %v) after the repair, want the version at %d", id, want.Key, got.Timestamp, found, err, want.Timestamp)
					}
				}
			}
		})
	}
}
