package antientropy

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica"
)

// listing is a replica that only lists: its Scan pages through records in key order, a
// page ending at Limit records or at the key that brings its keys' bytes to PageBytes.
type listing struct {
	replica.Replica // every other method is unused: calling one panics
	records         []lww.Record
	ignoreStart     bool // a broken replica: every page starts at the first key
	scans           int
}

func (l *listing) Scan(_ context.Context, req replica.ScanRequest) ([]lww.Record, error) {
	l.scans++
	var out []lww.Record
	keyBytes := 0
	for _, r := range l.records {
		if (l.ignoreStart || bytes.Compare(r.Key, req.Start) >= 0) && len(out) < req.Limit && keyBytes < req.PageBytes {
			out = append(out, r)
			keyBytes += len(r.Key)
		}
	}
	return out, nil
}

type oneReplica struct{ r replica.Replica }

func (o oneReplica) Replica(cluster.Node) replica.Replica { return o.r }

func TestListChunksGroupsChunksByKeyAcrossPages(t *testing.T) {
	// 300 keys of one chunk each, but k254 has 5, its newest a tombstone: a page of 256
	// chunk keys (the least a listing asks for) ends inside k254.
	var recs []lww.Record
	var want []string
	for i := range 300 {
		key := fmt.Sprintf("k%03d", i)
		chunks, newest := 1, lww.Record{Timestamp: 5}
		if i == 254 {
			chunks, newest = 5, lww.Record{Timestamp: 9, Tombstone: true}
		}
		for index := range chunks {
			rec := lww.Record{Key: coord.ChunkKey([]byte(key), index), Timestamp: 5}
			if index == chunks-1 {
				rec.Timestamp, rec.Tombstone = newest.Timestamp, newest.Tombstone
			}
			recs = append(recs, rec)
		}
		want = append(want, describeNewest([]byte(key), newest))
	}
	sort.Slice(recs, func(i, j int) bool { return bytes.Compare(recs[i].Key, recs[j].Key) < 0 })
	tests := []struct {
		name      string
		records   []lww.Record
		want      []string
		pageBytes int
		wantScans int
		wantErr   string
	}{
		{"a key across two pages", recs, want, 0, 2, ""},
		{"one page", recs[:200], want[:200], 0, 1, ""},
		// Pages of four chunk keys finish three keys each, up to k254's five chunks: that
		// page is asked again with eight keys' bytes, which the rest keep (seven each).
		{"pages cut by bytes, one inside a key's chunks", recs, want, 4 * len(recs[0].Key), 94, ""},
		{"a replica that ignores the cursor", nil, nil, 0, 0, "more chunks of one key than a code has"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &listing{records: tt.records}
			if tt.records == nil {
				src = &listing{records: recs, ignoreStart: true}
			}
			dir := cluster.NewDirectory(cluster.Node{ID: "self", DC: "a"})
			dir.Upsert(cluster.Node{ID: "src", DC: "a"})
			r := New(Config{PageRecords: 10, PageBytes: tt.pageBytes, Logger: slog.New(slog.DiscardHandler)}, Parts{View: dir, Replicas: oneReplica{src}})
			var got []string
			var st Stats
			err := r.listChunks(context.Background(), schema.Keyspace{Name: "ks"}, placement.Member{ID: "src"}, func(key []byte, newest lww.Record) {
				got = append(got, describeNewest(key, newest))
			}, &st)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) || src.scans != tt.wantScans {
				t.Fatalf("listed %d keys in %d scans, want %d in %d; first difference at %d", len(got), src.scans, len(tt.want), tt.wantScans, firstDifference(got, tt.want))
			}
			if st.ChunkKeysListed < len(tt.records) || st.ListingBytes == 0 {
				t.Fatalf("stats %+v count fewer than the %d chunk keys", st, len(tt.records))
			}
		})
	}
}

func describeNewest(key []byte, newest lww.Record) string {
	return fmt.Sprintf("%s@%d deleted=%t", key, newest.Timestamp, newest.Tombstone)
}

func firstDifference(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
