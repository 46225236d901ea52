package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
)

// indexedKeys returns the user keys of ks's live-key index entries, in key order, and
// fails the test if an entry's position is not its key's.
func indexedKeys(t *testing.T, e *Engine, ks string) []string {
	t.Helper()
	lower, upper := liveIndexBounds(ks)
	iter, err := e.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		t.Fatal(err)
	}
	defer iter.Close()
	var keys []string
	for valid := iter.First(); valid; valid = iter.Next() {
		entry := iter.Key()[len(lower):]
		key := entry[positionBytes:]
		if position := binary.BigEndian.Uint64(entry); position != KeyPosition(key) {
			t.Fatalf("entry of %q at position %d, want %d", key, position, KeyPosition(key))
		}
		keys = append(keys, string(key))
	}
	sort.Strings(keys)
	return keys
}

// scanAllLive walks ks's whole index in pages of limit and returns the keys in the order
// met.
func scanAllLive(t *testing.T, e *Engine, ks string, limit int) []string {
	t.Helper()
	var keys []string
	from := uint64(0)
	for {
		page, err := e.ScanLive(ks, LiveScan{Spans: []Span{{from, math.MaxUint64}}, Limit: limit, Now: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			keys = append(keys, string(r.Key))
		}
		if page.Done {
			return keys
		}
		if page.Next <= from {
			t.Fatalf("a page from %d resumes at %d", from, page.Next)
		}
		from = page.Next
	}
}

// field is the key of hash h's field f, an element record.
func field(h, f string) string { return string(element.Key([]byte(h), element.HashField, []byte(f))) }

// notElement starts as element keys do but does not decode as one (its length runs past
// its end): an ordinary key, indexed as any other.
const notElement = "\x00\x01\x7fh"

func TestLiveIndexFollowsWrites(t *testing.T) {
	tests := []struct {
		name   string
		writes [][]lww.Record // each a batch
		want   []string
	}{
		{"put", [][]lww.Record{{put("a", "1", 1), put("b", "2", 1)}}, []string{"a", "b"}},
		{"overwrite keeps one entry", [][]lww.Record{{put("a", "1", 1)}, {put("a", "2", 2)}}, []string{"a"}},
		{"delete removes it", [][]lww.Record{{put("a", "1", 1), put("b", "1", 1)}, {del("a", 2)}}, []string{"b"}},
		{"put after delete", [][]lww.Record{{put("a", "1", 1)}, {del("a", 2)}, {put("a", "3", 3)}}, []string{"a"}},
		{"an older delete loses", [][]lww.Record{{put("a", "1", 5)}, {del("a", 2)}}, []string{"a"}},
		{"an older put loses to a delete", [][]lww.Record{{del("a", 5)}, {put("a", "1", 2)}}, nil},
		{"a delete of nothing", [][]lww.Record{{del("a", 1)}}, nil},
		{"put and delete in one batch", [][]lww.Record{{put("a", "1", 1), del("a", 2), put("b", "1", 1)}}, []string{"b"}},
		{"delete and put in one batch", [][]lww.Record{{put("a", "1", 1)}, {del("a", 2), put("a", "2", 3)}}, []string{"a"}},
		{"an empty value is live", [][]lww.Record{{put("a", "", 1)}}, []string{"a"}},
		{"element records are not indexed", [][]lww.Record{{put("h", "", 1), put(field("h", "f"), "v", 1), put(notElement, "v", 1)}, {put(field("h", "g"), "v", 2)}},
			[]string{notElement, "h"}},
		{"an element's delete leaves the index alone", [][]lww.Record{{put("h", "", 1), put(field("h", "f"), "v", 1)}, {del(field("h", "f"), 2)}}, []string{"h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := openMem(t, Options{})
			for _, batch := range tt.writes {
				if _, err := e.ApplyBatch("ks", batch); err != nil {
					t.Fatal(err)
				}
			}
			if got := indexedKeys(t, e, "ks"); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("index holds %q, want %q", got, tt.want)
			}
			got := scanAllLive(t, e, "ks", 1)
			sort.Strings(got)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ScanLive finds %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLiveIndexOnRemoveDropAndSystemKeyspaces(t *testing.T) {
	e := openMem(t, Options{})
	mustApply(t, e, "ks", put("a", "1", 1), put("b", "1", 1))
	mustApply(t, e, "other", put("a", "1", 1))
	mustApply(t, e, "system_hints", put("h", "1", 1))
	if err := e.Remove("ks", []byte("a")); err != nil {
		t.Fatal(err)
	}
	if got := indexedKeys(t, e, "ks"); !reflect.DeepEqual(got, []string{"b"}) {
		t.Errorf("after Remove the index holds %q", got)
	}
	if got := indexedKeys(t, e, "system_hints"); got != nil {
		t.Errorf("a node-local keyspace is indexed: %q", got)
	}
	if page, err := e.ScanLive("system_hints", LiveScan{Spans: []Span{{0, math.MaxUint64}}, Limit: 10}); err != nil || !page.Done || page.Visited != 0 {
		t.Errorf("ScanLive of a node-local keyspace = %+v, %v", page, err)
	}
	if err := e.DropKeyspace("ks"); err != nil {
		t.Fatal(err)
	}
	if got := indexedKeys(t, e, "ks"); got != nil {
		t.Errorf("after DropKeyspace the index holds %q", got)
	}
	if got := indexedKeys(t, e, "other"); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("dropping ks changed other's index: %q", got)
	}
	mustApply(t, e, "ks", put("a", "1", 1))
	if got := scanAllLive(t, e, "ks", 10); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("after recreating ks: %q", got)
	}
}

func TestScanLivePagesInPositionOrder(t *testing.T) {
	e := openMem(t, Options{})
	var want []string
	var batch []lww.Record
	for i := range 500 {
		key := fmt.Sprintf("key-%03d", i)
		if i%3 == 0 {
			batch = append(batch, put(key, "v", 1), del(key, 2)) // deleted
			continue
		}
		batch = append(batch, put(key, "value", 1))
		want = append(want, key)
	}
	if _, err := e.ApplyBatch("ks", batch); err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int{1, 7, 1000} {
		got := scanAllLive(t, e, "ks", limit)
		if !slices.IsSortedFunc(got, func(a, b string) int {
			return compareUint(KeyPosition([]byte(a)), KeyPosition([]byte(b)))
		}) {
			t.Errorf("limit %d: keys not in position order", limit)
		}
		sort.Strings(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("limit %d: %d keys, want %d", limit, len(got), len(want))
		}
	}
	// Bounds are inclusive, and records come without their values.
	target := []byte("key-001")
	at := KeyPosition(target)
	page, err := e.ScanLive("ks", LiveScan{Spans: []Span{{at, at}}, Limit: 10})
	if err != nil || !page.Done || len(page.Records) != 1 || string(page.Records[0].Key) != "key-001" || page.Records[0].Value != nil {
		t.Errorf("a walk of [%d, %d] = %+v, %v; want key-001 alone, without its value", at, at, page, err)
	}
	for _, bad := range []LiveScan{
		{Spans: []Span{{2, 1}}, Limit: 1},
		{Spans: []Span{{0, 5}, {5, 9}}, Limit: 1},
		{Spans: []Span{{6, 9}, {0, 5}}, Limit: 1},
		{Spans: []Span{{0, 1}}},
	} {
		if _, err := e.ScanLive("ks", bad); err == nil {
			t.Errorf("ScanLive(%+v) succeeded", bad)
		}
	}
}

func compareUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// setRawEntry writes an index entry of key at position, whatever the key's own.
func setRawEntry(t *testing.T, e *Engine, ks string, position uint64, key string) {
	t.Helper()
	entry := binary.BigEndian.AppendUint64(liveIndexPrefix(ks), position)
	if err := e.db.Set(append(entry, key...), nil, pebble.Sync); err != nil {
		t.Fatal(err)
	}
}

func TestScanLiveStopsOnlyBetweenPositions(t *testing.T) {
	e := openMem(t, Options{})
	// Three live keys share position 100 (a collision xxhash would hardly ever make), and
	// entries whose record is missing or deleted are visited but not returned.
	for _, k := range []string{"x", "y", "z", "w"} {
		mustApply(t, e, "ks", put(k, "v", 1))
	}
	mustApply(t, e, "ks", del("gone", 1))
	for _, k := range []string{"x", "y", "z"} {
		setRawEntry(t, e, "ks", 100, k)
	}
	setRawEntry(t, e, "ks", 50, "missing")
	setRawEntry(t, e, "ks", 60, "gone")
	setRawEntry(t, e, "ks", 200, "w")

	tests := []struct {
		name     string
		req      LiveScan
		keys     []string
		visited  int
		done     bool
		next     uint64
		liveSeen int
	}{
		{"a limit inside a position finishes it", LiveScan{Spans: []Span{{100, 300}}, Limit: 1}, []string{"x", "y", "z"}, 3, false, 200, 3},
		{"dead entries are visited, not returned", LiveScan{Spans: []Span{{0, 99}}, Limit: 5}, nil, 2, true, 0, 0},
		{"the visit bound stops the walk", LiveScan{Spans: []Span{{0, 300}}, Limit: 5, VisitMax: 1}, nil, 1, false, 60, 0},
		{"count only", LiveScan{Spans: []Span{{0, 300}}, CountOnly: true}, nil, 6, true, 0, 4},
		{"a filter skips keys", LiveScan{Spans: []Span{{0, 300}}, Limit: 5, Filter: func(k []byte) bool { return string(k) != "y" }}, []string{"x", "z", "w"}, 6, true, 0, 3},
		{"several spans", LiveScan{Spans: []Span{{0, 55}, {100, 100}, {150, 250}}, Limit: 5}, []string{"x", "y", "z", "w"}, 5, true, 0, 4},
		{"a stop at a span's end resumes in a later span", LiveScan{Spans: []Span{{0, 55}, {70, 80}, {100, 300}}, Limit: 5, VisitMax: 1}, nil, 1, false, 100, 0},
		{"no span", LiveScan{Limit: 5}, nil, 0, true, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Now = 10
			page, err := e.ScanLive("ks", tt.req)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, r := range page.Records {
				keys = append(keys, string(r.Key))
			}
			if !reflect.DeepEqual(keys, tt.keys) || page.Visited != tt.visited || page.Done != tt.done || page.Live != tt.liveSeen || (!page.Done && page.Next != tt.next) {
				t.Errorf("got keys %q visited %d done %v next %d live %d; want %q %d %v %d %d",
					keys, page.Visited, page.Done, page.Next, page.Live, tt.keys, tt.visited, tt.done, tt.next, tt.liveSeen)
			}
		})
	}
}

// TestScanLiveWorkStaysBoundedAfterManyDeletes deletes tens of thousands of keys around
// ten live ones: once the compactions the deletions owe have run, a walk for ten keys
// steps over at most compactAfterBytes' worth of deletions, however many keys were
// deleted; without them it would step over every deleted key twice (its entry and the
// entry's deletion).
func TestScanLiveWorkStaysBoundedAfterManyDeletes(t *testing.T) {
	for _, deleted := range []int{20_000, 40_000} {
		t.Run(fmt.Sprint(deleted), func(t *testing.T) {
			e := openMem(t, Options{})
			var live []string
			for i := range 10 {
				live = append(live, fmt.Sprintf("live-%d", i))
				mustApply(t, e, "ks", put(live[i], "v", 1))
			}
			const batchKeys = 1000
			for start := 0; start < deleted; start += batchKeys {
				var puts, dels []lww.Record
				for i := start; i < start+batchKeys; i++ {
					key := fmt.Sprintf("del-%06d", i)
					puts = append(puts, put(key, "v", 1))
					dels = append(dels, del(key, 2))
				}
				if _, err := e.ApplyBatch("ks", puts); err != nil {
					t.Fatal(err)
				}
				if _, err := e.ApplyBatch("ks", dels); err != nil {
					t.Fatal(err)
				}
			}
			e.compactor.running.Wait()
			before := e.IndexStats()
			page, err := e.ScanLive("ks", LiveScan{Spans: []Span{{0, math.MaxUint64}}, Limit: 10, Now: 10})
			if err != nil {
				t.Fatal(err)
			}
			after := e.IndexStats()
			var got []string
			for _, r := range page.Records {
				got = append(got, string(r.Key))
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, live) || !page.Done {
				t.Fatalf("the walk found %q (done %v), want %q", got, page.Done, live)
			}
			if page.Visited != len(live) || after.Visited-before.Visited != int64(len(live)) {
				t.Errorf("visited %d entries, want %d", page.Visited, len(live))
			}
			entryBytes := len(liveIndexKey("ks", []byte("del-000000")))
			bound := int64(len(live) + 2*compactAfterBytes/entryBytes)
			stepped := after.Stepped - before.Stepped
			t.Logf("%d keys deleted: the walk stepped over %d points after %d compactions", deleted, stepped, after.Compactions)
			if stepped > bound {
				t.Errorf("the walk stepped over %d points, want at most %d (%d keys deleted)", stepped, bound, deleted)
			}
			if after.Compactions == 0 {
				t.Error("no index span was compacted")
			}
		})
	}
}

func TestLiveIndexIsBuiltForEarlierData(t *testing.T) {
	e := openMem(t, Options{})
	// An earlier version's records: written without index, and no marker.
	for _, r := range []lww.Record{put("a", "1", 1), del("b", 2), put("c", "", 3)} {
		if err := e.db.Set(encodeKey("ks", r.Key), encodeValue(r), pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.db.Set(encodeKey("system_hints", []byte("h")), encodeValue(put("h", "1", 1)), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	setRawEntry(t, e, "ks", KeyPosition([]byte("b")), "b") // a stale entry, from a build cut short
	if err := e.db.Delete(liveIndexMarker, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := buildLiveIndex(e.db, e.logger); err != nil {
		t.Fatal(err)
	}
	if got := indexedKeys(t, e, "ks"); !reflect.DeepEqual(got, []string{"a", "c"}) {
		t.Errorf("built index holds %q, want a and c", got)
	}
	if got := indexedKeys(t, e, "system_hints"); got != nil {
		t.Errorf("built index holds node-local keys %q", got)
	}
	// With the marker present, Open does not build again: a stale entry stays.
	setRawEntry(t, e, "ks", KeyPosition([]byte("b")), "b")
	if err := buildLiveIndex(e.db, e.logger); err != nil {
		t.Fatal(err)
	}
	if got := indexedKeys(t, e, "ks"); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Errorf("a second build ran: the index holds %q", got)
	}
}

// TestLiveIndexVersion1IsRebuiltWithoutElements: an index built by version 1, which
// indexed element records, is rebuilt when the engine opens, without them; string keys,
// one that only starts like an element key included, keep their entries.
func TestLiveIndexVersion1IsRebuiltWithoutElements(t *testing.T) {
	fs := vfs.NewCrashableMem()
	e, err := Open(Options{Dir: "db", FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, e, "ks", put("a", "1", 1), put("h", "", 1), put(field("h", "f"), "v", 1), put(notElement, "v", 1), del("b", 1))
	// What version 1 left: an entry for the element record, and its marker.
	setRawEntry(t, e, "ks", KeyPosition([]byte(field("h", "f"))), field("h", "f"))
	if err := e.db.Set(liveIndexMarker, []byte{1}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	e, _ = crashAndReopen(t, e, fs)
	defer e.Close()
	want := []string{notElement, "a", "h"}
	if got := indexedKeys(t, e, "ks"); !reflect.DeepEqual(got, want) {
		t.Errorf("after reopening the index holds %q, want %q", got, want)
	}
	marker, closer, err := e.db.Get(liveIndexMarker)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if !reflect.DeepEqual(marker, []byte{liveIndexVersion}) {
		t.Errorf("marker %v after the rebuild, want version %d", marker, liveIndexVersion)
	}
	if n, err := e.CountLive("ks", 100, 0); err != nil || n != 3 {
		t.Errorf("CountLive = %d, %v; want 3, as the index", n, err)
	}
}

// TestLiveIndexBuildSurvivesACrash cuts an index build short after its first batch
// (with that batch synced or not), loses what was not synced, and opens again: the
// build starts over and the index is complete and exact.
func TestLiveIndexBuildSurvivesACrash(t *testing.T) {
	defer func(bytes int) { backfillBatchBytes, backfillCommitted = bytes, nil }(backfillBatchBytes)
	backfillBatchBytes = 256
	for _, syncFirstBatch := range []bool{false, true} {
		t.Run(fmt.Sprintf("first batch synced %v", syncFirstBatch), func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			e, err := Open(Options{Dir: "db", FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for i := range 200 {
				r := put(fmt.Sprintf("k%03d", i), "v", 1)
				if i%4 == 0 {
					r = del(string(r.Key), 1)
				} else {
					want = append(want, string(r.Key))
				}
				if err := e.db.Set(encodeKey("ks", r.Key), encodeValue(r), pebble.NoSync); err != nil {
					t.Fatal(err)
				}
			}
			if err := e.db.DeleteRange(liveIndexLower, liveIndexUpper, pebble.NoSync); err != nil {
				t.Fatal(err)
			}
			if err := e.db.Delete(liveIndexMarker, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}

			crash := errors.New("crash")
			// The crash comes as the first batch is committed (and synced when
			// syncFirstBatch): the disk is cloned then, keeping only what was synced.
			var crashed *vfs.MemFS
			backfillCommitted = func(db *pebble.DB) error {
				if syncFirstBatch {
					if err := db.LogData(nil, pebble.Sync); err != nil {
						return err
					}
				}
				crashed = fs.CrashClone(vfs.CrashCloneCfg{})
				return crash
			}
			if _, err := Open(Options{Dir: "db", FS: fs}); !errors.Is(err, crash) {
				t.Fatalf("Open with a build cut short: %v", err)
			}
			backfillCommitted = nil

			e, err = Open(Options{Dir: "db", FS: crashed})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if got := indexedKeys(t, e, "ks"); !reflect.DeepEqual(got, want) {
				t.Errorf("after the crash the index holds %d keys, want %d", len(got), len(want))
			}
		})
	}
}

// TestCountLiveMatchesScanLive counts a keyspace of live, overwritten, deleted, expired
// and truncated records both ways: by CountLive's walk of the records and by ScanLive's
// count over every position; and Count counts every record stored.
func TestCountLiveMatchesScanLive(t *testing.T) {
	e := openMem(t, Options{})
	for i := range 50 {
		mustApply(t, e, "ks", put(fmt.Sprintf("k%02d", i), "v", hlc.Timestamp(100+i)))
	}
	mustApply(t, e, "ks",
		put("k00", "again", 1000),          // overwritten: still one
		del("k01", 1000), del("k02", 1000), // deleted
		expiring("k03", "v", 1000, 1500), // expired at 2000
		expiring("k04", "v", 1000, 3000), // not yet
		put("other", "v", 1000))          // another keyspace's name prefix
	mustApply(t, e, "ksx", put("k00", "v", 100))       // another keyspace
	mustApply(t, e, "system.hints", put("h", "v", 10)) // node-local: not counted
	for _, c := range []struct {
		now, truncatedAt hlc.Timestamp
		want             int64
	}{
		{2000, 0, 48},   // 51 keys, less two deleted and one expired
		{1200, 0, 49},   // k03 not expired yet
		{2000, 120, 32}, // k21-k49, and k00, k04 and other rewritten at 1000
	} {
		got, err := e.CountLive("ks", c.now, c.truncatedAt)
		if err != nil {
			t.Fatal(err)
		}
		page, err := e.ScanLive("ks", LiveScan{Spans: []Span{{0, math.MaxUint64}}, CountOnly: true, Now: c.now, TruncatedAt: c.truncatedAt})
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want || int64(page.Live) != c.want {
			t.Errorf("now %d, truncated at %d: CountLive %d, ScanLive %d; want %d", c.now, c.truncatedAt, got, page.Live, c.want)
		}
	}
	if n, err := e.CountLive("system.hints", 2000, 0); err != nil || n != 0 {
		t.Errorf("a node-local keyspace counts %d, %v; want 0 as ScanLive", n, err)
	}

	// Count counts what is stored, whatever its state, in any keyspace.
	for _, c := range []struct {
		ks   string
		want int64
	}{{"ks", 51}, {"ksx", 1}, {"system.hints", 1}, {"empty", 0}} {
		if n, err := e.Count(c.ks); err != nil || n != c.want {
			t.Errorf("Count(%q) = %d, %v; want %d", c.ks, n, err, c.want)
		}
	}
	if _, err := e.Count(""); err == nil {
		t.Error("Count of a keyspace with no name: no error")
	}
}
