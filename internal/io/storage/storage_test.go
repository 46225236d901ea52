package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
)

// openMem opens an in-memory engine closed at the end of the test.
func openMem(t *testing.T, opts Options) *Engine {
	t.Helper()
	opts.InMemory = true
	e, err := Open(opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func put(key, value string, ts hlc.Timestamp) lww.Record {
	return lww.Record{Key: []byte(key), Value: []byte(value), Timestamp: ts}
}

func del(key string, ts hlc.Timestamp) lww.Record {
	return lww.Record{Key: []byte(key), Timestamp: ts, Tombstone: true}
}

// describe renders records compactly for comparison in failure messages.
func describe(rs ...lww.Record) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		if r.Tombstone {
			parts[i] = fmt.Sprintf("%s@%d:deleted", r.Key, r.Timestamp)
		} else {
			parts[i] = fmt.Sprintf("%s@%d=%s", r.Key, r.Timestamp, r.Value)
		}
		if r.ExpiresAt != 0 {
			parts[i] += fmt.Sprintf("(expires %d)", r.ExpiresAt)
		}
		if r.Type != lww.String {
			parts[i] += fmt.Sprintf("(%v)", r.Type)
		}
	}
	return strings.Join(parts, " ")
}

// mustApply applies rs one by one to ks and fails the test on error.
func mustApply(t *testing.T, e *Engine, ks string, rs ...lww.Record) {
	t.Helper()
	for _, r := range rs {
		if _, err := e.Apply(ks, r); err != nil {
			t.Fatalf("Apply(%q, %s): %v", ks, describe(r), err)
		}
	}
}

// mustGet returns the record of key in ks, or fails the test.
// crashAndReopen crashes e now on fs, a crashable in-memory filesystem: whatever was not
// synced is forgotten, and the engine is opened again from what remains, on the disk it
// returns (fs.CrashClone; what e writes as it closes goes to fs, which is dropped).
func crashAndReopen(t *testing.T, e *Engine, fs *vfs.MemFS) (*Engine, *vfs.MemFS) {
	t.Helper()
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	return reopenOn(t, e, crashed), crashed
}

// reopenOn closes e and opens the engine again on crashed, the disk as a crash left it
// (a CrashClone of e's disk taken then).
func reopenOn(t *testing.T, e *Engine, crashed *vfs.MemFS) *Engine {
	t.Helper()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err := Open(Options{Dir: "db", FS: crashed})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustGet(t *testing.T, e *Engine, ks, key string) (lww.Record, bool) {
	t.Helper()
	r, found, err := e.Get(ks, []byte(key))
	if err != nil {
		t.Fatalf("Get(%q, %q): %v", ks, key, err)
	}
	return r, found
}

func TestApplyLastWriterWins(t *testing.T) {
	tests := []struct {
		name        string
		writes      []lww.Record
		wantApplied []bool
		want        lww.Record
	}{
		{"first write", []lww.Record{put("k", "a", 1)}, []bool{true}, put("k", "a", 1)},
		{"newer replaces", []lww.Record{put("k", "a", 1), put("k", "b", 2)}, []bool{true, true}, put("k", "b", 2)},
		{"older after newer is not applied", []lww.Record{put("k", "b", 2), put("k", "a", 1)}, []bool{true, false}, put("k", "b", 2)},
		{"duplicate is not applied", []lww.Record{put("k", "a", 1), put("k", "a", 1)}, []bool{true, false}, put("k", "a", 1)},
		{"equal timestamp, larger value wins", []lww.Record{put("k", "a", 5), put("k", "b", 5)}, []bool{true, true}, put("k", "b", 5)},
		{"equal timestamp, smaller value loses", []lww.Record{put("k", "b", 5), put("k", "a", 5)}, []bool{true, false}, put("k", "b", 5)},
		{"tombstone replaces older value", []lww.Record{put("k", "a", 1), del("k", 2)}, []bool{true, true}, del("k", 2)},
		{"tombstone beats value at equal timestamp", []lww.Record{put("k", "a", 5), del("k", 5)}, []bool{true, true}, del("k", 5)},
		{"value loses to tombstone at equal timestamp", []lww.Record{del("k", 5), put("k", "a", 5)}, []bool{true, false}, del("k", 5)},
		{"older value does not resurrect", []lww.Record{del("k", 5), put("k", "a", 4)}, []bool{true, false}, del("k", 5)},
		{"newer value after tombstone", []lww.Record{del("k", 5), put("k", "a", 6)}, []bool{true, true}, put("k", "a", 6)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := openMem(t, Options{})
			for i, r := range tt.writes {
				applied, err := e.Apply("ks", r)
				if err != nil {
					t.Fatalf("Apply(%s): %v", describe(r), err)
				}
				if applied != tt.wantApplied[i] {
					t.Errorf("Apply(%s) applied = %t, want %t", describe(r), applied, tt.wantApplied[i])
				}
			}
			got, found := mustGet(t, e, "ks", "k")
			if !found || describe(got) != describe(tt.want) {
				t.Errorf("Get = %s (found %t), want %s", describe(got), found, describe(tt.want))
			}
		})
	}
}

func TestApplyBatch(t *testing.T) {
	tests := []struct {
		name        string
		stored      []lww.Record
		batch       []lww.Record
		wantApplied int
		wantScan    string
	}{
		{"empty batch", nil, nil, 0, ""},
		{"new keys", nil, []lww.Record{put("a", "1", 1), put("b", "2", 1)}, 2, "a@1=1 b@1=2"},
		{"mix of newer and older", []lww.Record{put("a", "old", 5), put("b", "old", 5)},
			[]lww.Record{put("a", "new", 6), put("b", "stale", 4)}, 1, "a@6=new b@5=old"},
		{"repeated key: newest wins in either order", nil,
			[]lww.Record{put("a", "x", 2), put("a", "y", 1), put("b", "y", 1), put("b", "x", 2)}, 3, "a@2=x b@2=x"},
		{"tombstone in batch", []lww.Record{put("a", "1", 1)}, []lww.Record{del("a", 2)}, 1, "a@2:deleted"},
	}
	// A client's batch (through the row cache) must apply exactly as any other.
	for _, apply := range []struct {
		name string
		fn   func(e *Engine, ks string, rs []lww.Record) (int, error)
	}{{"ApplyBatch", (*Engine).ApplyBatch}, {"ApplyClientBatch", (*Engine).ApplyClientBatch}} {
		for _, tt := range tests {
			t.Run(apply.name+"/"+tt.name, func(t *testing.T) {
				e := openMem(t, Options{})
				mustApply(t, e, "ks", tt.stored...)
				for _, r := range tt.stored {
					mustGet(t, e, "ks", string(r.Key)) // in the row cache, as a client's read leaves it
				}
				applied, err := apply.fn(e, "ks", tt.batch)
				if err != nil {
					t.Fatalf("%s: %v", apply.name, err)
				}
				if applied != tt.wantApplied {
					t.Errorf("applied = %d, want %d", applied, tt.wantApplied)
				}
				got, err := e.Scan("ks", nil, nil, 0, true, nil)
				if err != nil {
					t.Fatalf("Scan: %v", err)
				}
				if describe(got...) != tt.wantScan {
					t.Errorf("Scan = %q, want %q", describe(got...), tt.wantScan)
				}
			})
		}
	}
}

func TestApplyBatchInvalidRecordWritesNothing(t *testing.T) {
	e := openMem(t, Options{})
	batch := []lww.Record{put("a", "1", 1), put("b", "2", 0)}
	if _, err := e.ApplyBatch("ks", batch); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("ApplyBatch error = %v, want ErrInvalidRecord", err)
	}
	if _, found := mustGet(t, e, "ks", "a"); found {
		t.Errorf("valid record of a failed batch was written")
	}
}

func TestGetReturnsTombstoneAndScanHidesIt(t *testing.T) {
	e := openMem(t, Options{})
	mustApply(t, e, "ks", put("a", "1", 1), put("b", "2", 1), del("b", 2), del("c", 3))
	tests := []struct {
		key           string
		wantFound     bool
		wantTombstone bool
	}{
		{"a", true, false},
		{"b", true, true},
		{"c", true, true},
		{"d", false, false},
	}
	for _, tt := range tests {
		r, found := mustGet(t, e, "ks", tt.key)
		if found != tt.wantFound || r.Tombstone != tt.wantTombstone {
			t.Errorf("Get(%q) = %s found %t, want found %t tombstone %t", tt.key, describe(r), found, tt.wantFound, tt.wantTombstone)
		}
		if r.Tombstone && len(r.Value) > 0 {
			t.Errorf("Get(%q) tombstone carries value %q", tt.key, r.Value)
		}
	}
	for _, withTombstones := range []bool{false, true} {
		got, err := e.Scan("ks", nil, nil, 0, withTombstones, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: "a@1=1", true: "a@1=1 b@2:deleted c@3:deleted"}[withTombstones]
		if describe(got...) != want {
			t.Errorf("Scan(withTombstones=%t) = %q, want %q", withTombstones, describe(got...), want)
		}
	}
}

func TestScan(t *testing.T) {
	e := openMem(t, Options{})
	mustApply(t, e, "ks",
		put("a", "1", 1), put("b", "2", 1), del("c", 1), put("d", "4", 1),
		put("e", "5", 1), put("e\x00", "nul", 1), put("\xff", "ff", 1))
	notD := func(key []byte) bool { return string(key) != "d" }
	tests := []struct {
		name           string
		start, end     []byte
		limit          int
		withTombstones bool
		filter         func([]byte) bool
		want           string
	}{
		{"all", nil, nil, 0, false, nil, "a@1=1 b@1=2 d@1=4 e@1=5 e\x00@1=nul \xff@1=ff"},
		{"start inclusive", []byte("b"), nil, 0, false, nil, "b@1=2 d@1=4 e@1=5 e\x00@1=nul \xff@1=ff"},
		{"end exclusive", nil, []byte("d"), 0, false, nil, "a@1=1 b@1=2"},
		{"start and end", []byte("b"), []byte("e"), 0, false, nil, "b@1=2 d@1=4"},
		{"start between keys", []byte("bb"), []byte("e\x00"), 0, true, nil, "c@1:deleted d@1=4 e@1=5"},
		{"limit", nil, nil, 2, false, nil, "a@1=1 b@1=2"},
		{"limit skips hidden tombstones", []byte("b"), nil, 2, false, nil, "b@1=2 d@1=4"},
		{"limit counts shown tombstones", []byte("b"), nil, 2, true, nil, "b@1=2 c@1:deleted"},
		{"negative limit is unlimited", []byte("e"), nil, -1, false, nil, "e@1=5 e\x00@1=nul \xff@1=ff"},
		{"limit above count", []byte("e"), nil, 10, false, nil, "e@1=5 e\x00@1=nul \xff@1=ff"},
		{"filter", nil, []byte("e"), 0, false, notD, "a@1=1 b@1=2"},
		{"filter counts toward limit", []byte("b"), nil, 2, false, notD, "b@1=2 e@1=5"},
		{"empty range", []byte("b"), []byte("b"), 0, false, nil, ""},
		{"inverted range", []byte("d"), []byte("b"), 0, false, nil, ""},
		{"empty end", nil, []byte{}, 0, true, nil, ""},
		{"empty start is the beginning", []byte{}, []byte("b"), 0, false, nil, "a@1=1"},
		{"range past the end", []byte("\xff\xff"), nil, 0, false, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.Scan("ks", tt.start, tt.end, tt.limit, tt.withTombstones, tt.filter)
			if err != nil {
				t.Fatalf("Scan: %v", err)
			}
			if describe(got...) != tt.want {
				t.Errorf("Scan = %q, want %q", describe(got...), tt.want)
			}
		})
	}
}

func TestScanRecordsOutliveIteration(t *testing.T) {
	e := openMem(t, Options{})
	mustApply(t, e, "ks", put("a", "1", 1), put("b", "2", 1))
	got, err := e.Scan("ks", nil, nil, 0, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, e, "ks", put("a", "changed", 2), put("b", "changed", 2))
	if describe(got...) != "a@1=1 b@1=2" {
		t.Errorf("scanned records changed after later writes: %q", describe(got...))
	}
}

// TestScanRecordsDoNotShareBytes: a scan copies its records into chunks sized from the
// record that starts each chunk, so a larger record after it starts a new one; however
// they were laid out, appending to one record's key or value (or digest, from
// ScanPageDigests) leaves the others as read.
func TestScanRecordsDoNotShareBytes(t *testing.T) {
	e := openMem(t, Options{})
	sizes := []int{1, 0, 300, 5, scanArenaBytes + 1, 2, 40 << 10, 7}
	var keys, values []string
	for i, n := range sizes {
		keys = append(keys, fmt.Sprintf("k%d", i))
		values = append(values, strings.Repeat(string(rune('a'+i)), n))
		mustApply(t, e, "ks", put(keys[i], values[i], 1))
	}
	// A value's digest here is its first and last bytes repeated, longer than the room
	// set aside for one (digestBytesMax) for the largest values.
	digest := func(dst, value []byte) []byte {
		if len(value) == 0 {
			return dst
		}
		n := min(len(value)/256+1, 3*digestBytesMax)
		return append(append(dst, bytes.Repeat(value[:1], n)...), value[len(value)-1])
	}
	scans := []struct {
		name  string
		scan  func(limit int) ([]lww.Record, error)
		value func(value string) string // what a record read of value holds
	}{
		{"Scan", func(limit int) ([]lww.Record, error) {
			return e.Scan("ks", nil, nil, limit, false, nil)
		}, func(value string) string { return value }},
		{"ScanPageDigests", func(limit int) ([]lww.Record, error) {
			recs, _, err := e.ScanPageDigests("ks", nil, nil, limit, 0, nil, digest)
			return recs, err
		}, func(value string) string { return string(digest(nil, []byte(value))) }},
	}
	for _, sc := range scans {
		for _, limit := range []int{0, 2, 3, len(sizes)} {
			recs, err := sc.scan(limit)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				_ = append(r.Key, "!!!!"...)
				_ = append(r.Value, "????"...)
			}
			for i, r := range recs {
				if string(r.Key) != keys[i] || string(r.Value) != sc.value(values[i]) {
					t.Errorf("%s, limit %d: record %d reads %.40q=%.40q after appends to the others, want %.40q=%.40q",
						sc.name, limit, i, r.Key, r.Value, keys[i], sc.value(values[i]))
				}
			}
		}
	}
}

func TestArenaChunkBytes(t *testing.T) {
	tests := []struct {
		name                                           string
		copiedBytes, readBytes, recordsLeft, bytesLeft int
		want                                           int
	}{
		{"no limits: a full chunk", 100, 100, 0, 0, scanArenaBytes},
		{"a few records left", 100, 100, 3, 0, 300},
		{"more records than a chunk holds", 100, 100, 1000, 0, scanArenaBytes},
		{"the page's bytes end first", 100, 100, 50, 150, 200},
		{"the page's bytes end at this record", 500, 500, 10, 100, 500},
		{"digests: fewer bytes copied than read", 80, 300, 10, 900, 240},
		{"a record larger than a chunk", scanArenaBytes + 1, scanArenaBytes + 1, 10, 0, scanArenaBytes + 1},
		{"an empty record", 0, 0, 5, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := arenaChunkBytes(tt.copiedBytes, tt.readBytes, tt.recordsLeft, tt.bytesLeft); got != tt.want {
				t.Errorf("arenaChunkBytes(%d, %d, %d, %d) = %d, want %d", tt.copiedBytes, tt.readBytes, tt.recordsLeft, tt.bytesLeft, got, tt.want)
			}
		})
	}
}

func TestKeyspacesIsolated(t *testing.T) {
	e := openMem(t, Options{})
	// "a" is a prefix of "ab"; "a\x01" sorts right after "a"'s range.
	mustApply(t, e, "a", put("k", "in a", 1))
	mustApply(t, e, "ab", put("k", "in ab", 1), put("", "empty key in ab", 1))
	mustApply(t, e, "a\x01", put("k", "in a\\x01", 1))
	mustApply(t, e, "b", put("k", "in b", 1))
	tests := []struct {
		ks   string
		want string
	}{
		{"a", "k@1=in a"},
		{"ab", "@1=empty key in ab k@1=in ab"},
		{"a\x01", "k@1=in a\\x01"},
		{"b", "k@1=in b"},
		{"c", ""},
	}
	for _, tt := range tests {
		got, err := e.Scan(tt.ks, nil, nil, 0, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		if describe(got...) != tt.want {
			t.Errorf("Scan(%q) = %q, want %q", tt.ks, describe(got...), tt.want)
		}
	}
	if _, found := mustGet(t, e, "a", ""); found {
		t.Errorf("empty key of keyspace \"ab\" visible in \"a\"")
	}

	if err := e.DropKeyspace("a"); err != nil {
		t.Fatalf("DropKeyspace: %v", err)
	}
	for _, tt := range tests {
		got, err := e.Scan(tt.ks, nil, nil, 0, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := tt.want
		if tt.ks == "a" {
			want = ""
		}
		if describe(got...) != want {
			t.Errorf("after dropping \"a\": Scan(%q) = %q, want %q", tt.ks, describe(got...), want)
		}
	}
}

func TestRemoveLeavesNoTombstone(t *testing.T) {
	e := openMem(t, Options{})
	mustApply(t, e, "hints", put("h1", "x", 5), put("h2", "y", 5))
	if err := e.Remove("hints", []byte("h1")); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if err := e.Remove("hints", []byte("absent")); err != nil {
		t.Fatalf("Remove of an absent key: %v", err)
	}
	got, err := e.Scan("hints", nil, nil, 0, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if describe(got...) != "h2@5=y" {
		t.Errorf("Scan after Remove = %q, want %q", describe(got...), "h2@5=y")
	}
	// With no tombstone left, even an older write lands again.
	if applied, err := e.Apply("hints", put("h1", "older", 1)); err != nil || !applied {
		t.Errorf("Apply after Remove = %t, %v; want applied", applied, err)
	}
}

func TestCollectGarbage(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	grace := time.Hour
	age := func(d time.Duration) hlc.Timestamp { return hlc.FromTime(now.Add(-d)) }
	e := openMem(t, Options{TombstoneGrace: grace})
	mustApply(t, e, "x",
		del("old-tombstone", age(grace+time.Millisecond)),
		del("young-tombstone", age(grace-time.Millisecond)),
		del("tombstone-at-cutoff", age(grace)),
		put("old-value", "v", age(100*grace)))
	mustApply(t, e, "y", del("old-tombstone", age(2*grace)))
	// Enough expired tombstones to span several collection chunks.
	var many []lww.Record
	for i := range 2*gcChunkKeys + 1 {
		many = append(many, del(fmt.Sprintf("k%05d", i), age(2*grace)))
	}
	if _, err := e.ApplyBatch("z", many); err != nil {
		t.Fatal(err)
	}

	collected, err := e.CollectGarbage(now, nil)
	if err != nil {
		t.Fatalf("CollectGarbage: %v", err)
	}
	if want := (Collected{Removed: 2 + len(many)}); collected != want {
		t.Errorf("collected = %+v, want %+v", collected, want)
	}
	tests := []struct {
		ks, key   string
		wantFound bool
	}{
		{"x", "old-tombstone", false},
		{"x", "young-tombstone", true},
		{"x", "tombstone-at-cutoff", true},
		{"x", "old-value", true},
		{"y", "old-tombstone", false},
		{"z", "k00000", false},
		{"z", fmt.Sprintf("k%05d", 2*gcChunkKeys), false},
	}
	for _, tt := range tests {
		if _, found := mustGet(t, e, tt.ks, tt.key); found != tt.wantFound {
			t.Errorf("after CollectGarbage: %s/%s found = %t, want %t", tt.ks, tt.key, found, tt.wantFound)
		}
	}
	if collected, err := e.CollectGarbage(now, nil); err != nil || collected != (Collected{}) {
		t.Errorf("second CollectGarbage = %+v, %v; want nothing, nil", collected, err)
	}
}

// TestCollectGarbageRemovesResetElements: the collection removes the element records of
// a collection written at or before its reset point once that point is older than the
// grace, of every kind but the reset record itself, and leaves alone the elements written
// after it, those of a collection whose reset is younger, or without a reset point, or
// whose reset record holds none, and the collection's own record.
func TestCollectGarbageRemovesResetElements(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	grace := time.Hour
	age := func(d time.Duration) hlc.Timestamp { return hlc.FromTime(now.Add(-d)) }
	field := func(collection, f string, ts hlc.Timestamp) lww.Record {
		return put(string(element.Key([]byte(collection), element.HashField, []byte(f))), "v", ts)
	}
	reset := func(collection string, at, ts hlc.Timestamp) lww.Record {
		return lww.Record{Key: element.Key([]byte(collection), element.Reset, nil), Value: element.ResetValue(at), Timestamp: ts}
	}
	resetAt := age(3 * grace)
	tests := []struct {
		name    string
		records []lww.Record
		gone    []int // indexes into records of those removed
	}{
		{"elements at or before an old reset point", []lww.Record{
			put("h", "", age(time.Minute)),
			reset("h", resetAt, resetAt),
			field("h", "before", age(4*grace)),
			field("h", "at", resetAt),
			field("h", "after", resetAt+1),
			put(string(element.Key([]byte("h"), element.CounterShard, []byte("\x01fdc1"))), "v", age(5*grace)),
			del(string(element.Key([]byte("h"), element.HashField, []byte("deleted"))), age(4*grace)),
		}, []int{2, 3, 5, 6}},
		{"a reset point younger than the grace", []lww.Record{
			reset("h", age(grace-time.Millisecond), age(grace-time.Millisecond)),
			field("h", "before", age(4*grace)),
		}, nil},
		{"a reset point at the cutoff", []lww.Record{
			reset("h", age(grace), age(grace)),
			field("h", "before", age(4*grace)),
		}, nil},
		{"no reset record", []lww.Record{field("h", "old", age(4*grace))}, nil},
		{"a reset record that holds no point", []lww.Record{
			put(string(element.Key([]byte("h"), element.Reset, nil)), "short", resetAt),
			field("h", "old", age(4*grace)),
		}, nil},
		{"another collection's reset point", []lww.Record{
			reset("h", resetAt, resetAt),
			field("h2", "old", age(4*grace)),
			field("g", "old", age(4*grace)),
		}, nil},
		{"a newer reset point counts", []lww.Record{
			reset("h", age(10*grace), age(10*grace)),
			reset("h", resetAt, resetAt),
			field("h", "between", age(5*grace)),
		}, []int{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := openMem(t, Options{TombstoneGrace: grace})
			mustApply(t, e, "ks", tt.records...)
			collected, err := e.CollectGarbage(now, nil)
			if err != nil {
				t.Fatal(err)
			}
			if collected.Removed != len(tt.gone) {
				t.Errorf("collected %+v, want %d removed", collected, len(tt.gone))
			}
			for i, r := range tt.records {
				// An overwritten record's key holds the newer one, which is never gone here.
				_, found := mustGet(t, e, "ks", string(r.Key))
				if wantFound := !slices.Contains(tt.gone, i); found != wantFound {
					t.Errorf("record %d (%s): found %t, want %t", i, describe(r), found, wantFound)
				}
			}
		})
	}
}

func TestCollectGarbageDefaultGrace(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	e := openMem(t, Options{})
	mustApply(t, e, "ks",
		del("eleven-days", hlc.FromTime(now.Add(-11*24*time.Hour))),
		del("nine-days", hlc.FromTime(now.Add(-9*24*time.Hour))))
	if collected, err := e.CollectGarbage(now, nil); err != nil || collected.Removed != 1 {
		t.Fatalf("CollectGarbage = %+v, %v; want 1 removed, nil", collected, err)
	}
	if _, found := mustGet(t, e, "ks", "nine-days"); !found {
		t.Errorf("tombstone within the default grace was collected")
	}
}

func TestInvalidInputIsRefused(t *testing.T) {
	e := openMem(t, Options{})
	valid := put("k", "v", 1)
	calls := []struct {
		name string
		call func(ks string) error
	}{
		{"Apply", func(ks string) error { _, err := e.Apply(ks, valid); return err }},
		{"ApplyBatch", func(ks string) error { _, err := e.ApplyBatch(ks, []lww.Record{valid}); return err }},
		{"Get", func(ks string) error { _, _, err := e.Get(ks, []byte("k")); return err }},
		{"Scan", func(ks string) error { _, err := e.Scan(ks, nil, nil, 0, true, nil); return err }},
		{"Remove", func(ks string) error { return e.Remove(ks, []byte("k")) }},
		{"DropKeyspace", func(ks string) error { return e.DropKeyspace(ks) }},
	}
	for _, c := range calls {
		for _, ks := range []string{"", "\x00", "a\x00b"} {
			if err := c.call(ks); !errors.Is(err, ErrInvalidKeyspace) {
				t.Errorf("%s(%q) error = %v, want ErrInvalidKeyspace", c.name, ks, err)
			}
		}
	}
	for _, r := range []lww.Record{put("k", "v", 0), {Key: []byte("k"), Value: []byte("v"), Timestamp: 1, Tombstone: true}} {
		if _, err := e.Apply("ks", r); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("Apply(%+v) error = %v, want ErrInvalidRecord", r, err)
		}
	}
	// A nil key and a nil value are legal.
	if applied, err := e.Apply("ks", lww.Record{Timestamp: 1}); err != nil || !applied {
		t.Errorf("Apply of nil key = %t, %v; want applied", applied, err)
	}
}

func TestOpenRefusesBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"no directory", Options{}},
		{"negative grace", Options{InMemory: true, TombstoneGrace: -time.Second}},
	}
	for _, tt := range tests {
		if e, err := Open(tt.opts); err == nil {
			_ = e.Close()
			t.Errorf("%s: Open succeeded, want an error", tt.name)
		}
	}
}

func TestCorruptValueIsAnErrorNamingTheKey(t *testing.T) {
	e := openMem(t, Options{})
	if err := e.db.Set(encodeKey("ks", []byte("bad-key")), []byte{valueVersion, 0}, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"Get", func() error { _, _, err := e.Get("ks", []byte("bad-key")); return err }},
		{"Scan", func() error { _, err := e.Scan("ks", nil, nil, 0, false, nil); return err }},
		{"Apply", func() error { _, err := e.Apply("ks", put("bad-key", "v", 9)); return err }},
		{"CollectGarbage", func() error { _, err := e.CollectGarbage(time.Now(), nil); return err }},
	}
	for _, c := range calls {
		err := c.call()
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "bad-key") {
			t.Errorf("%s error = %v, want ErrCorrupt naming bad-key", c.name, err)
		}
	}
}

func TestClosedEngineReturnsErrClosed(t *testing.T) {
	e, err := Open(Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"Close", e.Close},
		{"Apply", func() error { _, err := e.Apply("ks", put("k", "v", 1)); return err }},
		{"Get", func() error { _, _, err := e.Get("ks", []byte("k")); return err }},
		{"GetEach", func() error {
			return e.GetEach("ks", [][]byte{[]byte("k")}, func(int, lww.Record, bool) bool { return true })
		}},
		{"Scan", func() error { _, err := e.Scan("ks", nil, nil, 0, false, nil); return err }},
		{"Remove", func() error { return e.Remove("ks", []byte("k")) }},
		{"CollectGarbage", func() error { _, err := e.CollectGarbage(time.Now(), nil); return err }},
		{"DropKeyspace", func() error { return e.DropKeyspace("ks") }},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close error = %v, want ErrClosed", c.name, err)
		}
	}
	if got := e.Stats(); got != (Stats{}) {
		t.Errorf("Stats after Close = %+v, want zero", got)
	}
}

// TestConcurrentApplyIsAtomicPerKey has writers race to apply the same records; for
// each key exactly one Apply may report it applied. Without the per-key lock two
// writers both read "absent" and both claim the write.
func TestConcurrentApplyIsAtomicPerKey(t *testing.T) {
	const writers, keys = 4, 300
	e := openMem(t, Options{})
	var appliedTotal atomic.Int64
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for i := range keys {
				applied, err := e.Apply("ks", put(fmt.Sprint(i), "v", 1))
				if err != nil {
					t.Errorf("Apply: %v", err)
					return
				}
				if applied {
					appliedTotal.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := appliedTotal.Load(); got != keys {
		t.Errorf("concurrent Applies of %d keys reported %d applied, want exactly %d", keys, got, keys)
	}
}

func TestStatsReportsDiskBytes(t *testing.T) {
	e := openMem(t, Options{})
	before := e.Stats().DiskBytes
	if _, err := e.Apply("ks", put("k", strings.Repeat("v", 4096), 1)); err != nil {
		t.Fatal(err)
	}
	if after := e.Stats().DiskBytes; after <= before {
		t.Errorf("DiskBytes after a 4 KiB write = %d, want more than %d", after, before)
	}
}

func TestReopenKeepsRecords(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, e, "ks", put("a", "1", 1), del("b", 2))
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got, err := e.Scan("ks", nil, nil, 0, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "a@1=1 b@2:deleted"; describe(got...) != want {
		t.Errorf("after reopen Scan = %q, want %q", describe(got...), want)
	}
}

// TestSyncedWritesSurviveLosingUnsyncedData simulates a machine crash with Pebble's
// strict in-memory filesystem, which forgets everything not synced, including a
// directory whose parent was not synced. Writes through the engine must survive; a raw
// unsynced Pebble write, the control, must not.
func TestSyncedWritesSurviveLosingUnsyncedData(t *testing.T) {
	tests := []struct {
		name      string
		write     func(e *Engine) error
		wantFound bool
	}{
		{"Apply", func(e *Engine) error { _, err := e.Apply("ks", put("k", "v", 1)); return err }, true},
		{"ApplyBatch", func(e *Engine) error { _, err := e.ApplyBatch("ks", []lww.Record{put("k", "v", 1)}); return err }, true},
		{"ApplyBatch of two", func(e *Engine) error {
			_, err := e.ApplyBatch("ks", []lww.Record{put("k", "v", 1), put("j", "w", 1)})
			return err
		}, true},
		{"ApplyClientBatch of two", func(e *Engine) error {
			_, err := e.ApplyClientBatch("ks", []lww.Record{put("k", "v", 1), put("j", "w", 1)})
			return err
		}, true},
		{"unsynced control", func(e *Engine) error {
			return e.db.Set(encodeKey("ks", []byte("k")), encodeValue(put("k", "v", 1)), pebble.NoSync)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			e, err := Open(Options{Dir: "db", FS: fs})
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.write(e); err != nil {
				t.Fatalf("write: %v", err)
			}
			e, _ = crashAndReopen(t, e, fs)
			defer e.Close()
			if _, found := mustGet(t, e, "ks", "k"); found != tt.wantFound {
				t.Errorf("after crash found = %t, want %t", found, tt.wantFound)
			}
		})
	}
}

// TestTypedRecordsSurviveCrash: typed records (collection headers) written through the
// engine come back with their types after a crash on the strict filesystem; a string
// record in the bytes a build from before types wrote reads as a string; and two versions
// of one timestamp and value that differ only in type keep the larger type, as
// lww.Newer orders them.
func TestTypedRecordsSurviveCrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	e, err := Open(Options{Dir: "db", FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	hash := lww.Record{Key: []byte("h"), Value: []byte("hdr"), Timestamp: 5, Type: lww.Hash}
	list := lww.Record{Key: []byte("l"), Timestamp: 6, ExpiresAt: 1 << 60, Type: lww.List}
	mustApply(t, e, "ks", hash)
	if _, err := e.ApplyBatch("ks", []lww.Record{list, put("s", "v", 7)}); err != nil {
		t.Fatal(err)
	}
	// A string of the same timestamp and value loses to the hash; a set wins over it.
	if applied, err := e.Apply("ks", put("h", "hdr", 5)); err != nil || applied {
		t.Fatalf("Apply of a string tying with the hash = %t, %v; want not applied", applied, err)
	}
	set := lww.Record{Key: []byte("h"), Value: []byte("hdr"), Timestamp: 5, Type: lww.Set}
	if applied, err := e.Apply("ks", set); err != nil || !applied {
		t.Fatalf("Apply of a set tying with the hash = %t, %v; want applied", applied, err)
	}
	// Version 1 bytes of a string record, as every build has written them.
	old := []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 8, 'o', 'l', 'd'}
	if err := e.db.Set(encodeKey("ks", []byte("old")), old, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	e, _ = crashAndReopen(t, e, fs)
	defer e.Close()
	got, err := e.Scan("ks", nil, nil, 0, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "h@5=hdr(set) l@6=(expires 1152921504606846976)(list) old@8=old s@7=v"; describe(got...) != want {
		t.Errorf("after crash Scan = %q, want %q", describe(got...), want)
	}
}

// crashChildDirEnv, when set, turns TestApplySurvivesKill into the child process that
// writes into the named directory and then kills itself.
const crashChildDirEnv = "KURA_STORAGE_CRASH_CHILD_DIR"

// crashRecords are what the child applies before it is killed.
var crashRecords = []lww.Record{put("single", "applied", 7), put("batch-1", "x", 8), del("batch-2", 9)}

// TestApplySurvivesKill runs a child process that applies records and is killed with
// SIGKILL the moment Apply returns, with no Close; the parent then reopens the
// directory and must find every acknowledged record.
func TestApplySurvivesKill(t *testing.T) {
	if dir := os.Getenv(crashChildDirEnv); dir != "" {
		applyThenDie(dir)
		return
	}
	dir := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestApplySurvivesKill$", "-test.count=1")
	child.Env = append(os.Environ(), crashChildDirEnv+"="+dir)
	output, err := child.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("child exited with %v, want killed by SIGKILL; output:\n%s", err, output)
	}
	if status, ok := exitErr.Sys().(syscall.WaitStatus); !ok || !status.Signaled() || status.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, want killed by SIGKILL; output:\n%s", err, output)
	}

	e, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got, err := e.Scan("ks", nil, nil, 0, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(crashRecords)
	slices.SortFunc(want, func(a, b lww.Record) int { return bytes.Compare(a.Key, b.Key) })
	if describe(got...) != describe(want...) {
		t.Errorf("after SIGKILL Scan = %q, want %q", describe(got...), describe(want...))
	}
}

// applyThenDie is the child side of TestApplySurvivesKill. It reports failures by exit
// code, which the parent sees as "not killed by SIGKILL".
func applyThenDie(dir string) {
	e, err := Open(Options{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(2)
	}
	if applied, err := e.Apply("ks", crashRecords[0]); err != nil || !applied {
		fmt.Fprintln(os.Stderr, "apply:", applied, err)
		os.Exit(3)
	}
	if applied, err := e.ApplyBatch("ks", crashRecords[1:]); err != nil || applied != len(crashRecords)-1 {
		fmt.Fprintln(os.Stderr, "apply batch:", applied, err)
		os.Exit(4)
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL cannot be caught; wait for it to land
}

// TestScanPageStopsAtItsBytes: a page ends at its row limit or once its records hold
// maxBytes of keys and values, the record that reaches the bound included.
func TestScanPageStopsAtItsBytes(t *testing.T) {
	e := openMem(t, Options{})
	for i := range 10 {
		// 2-byte key, 8-byte value: 10 bytes a record.
		if _, err := e.Apply("ks", lww.Record{Key: fmt.Appendf(nil, "k%d", i), Value: []byte("12345678"), Timestamp: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		rows, maxBytes, want int
	}{
		{0, 0, 10},
		{4, 0, 4},
		{0, 25, 3},
		{0, 30, 3},
		{0, 31, 4},
		{2, 25, 2},
	} {
		recs, err := e.ScanPage("ks", nil, nil, tt.rows, tt.maxBytes, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != tt.want {
			t.Errorf("ScanPage(rows %d, bytes %d): %d records, want %d", tt.rows, tt.maxBytes, len(recs), tt.want)
		}
	}
}

// TestEachVisitsLargeValuesOncePageByPage: Each pages by bytes as well as records (ten
// values of 1 MiB take three pages of at most 4 MiB and one record), and across its
// pages visits every record once, in order.
func TestEachVisitsLargeValuesOncePageByPage(t *testing.T) {
	e := openMem(t, Options{})
	var want []string
	for i := range 10 {
		key := fmt.Sprintf("k%d", i)
		mustApply(t, e, "ks", lww.Record{Key: []byte(key), Value: make([]byte, 1<<20), Timestamp: 1})
		want = append(want, key)
	}
	var got []string
	if err := e.Each("ks", false, func(r lww.Record) error {
		got = append(got, string(r.Key))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Each visited %q, want %q", got, want)
	}
}

// lockChildDirEnv, when set, turns TestOpenRefusesADirectoryInUse into the child process
// that holds the named directory open until its standard input closes.
const lockChildDirEnv = "KURA_STORAGE_LOCK_CHILD_DIR"

// TestOpenRefusesADirectoryInUse: a second process opening a directory another holds
// gets ErrDirInUse, whose message says what to do, not the system's "resource
// temporarily unavailable".
func TestOpenRefusesADirectoryInUse(t *testing.T) {
	if dir := os.Getenv(lockChildDirEnv); dir != "" {
		holdOpen(dir)
		return
	}
	dir := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestOpenRefusesADirectoryInUse$", "-test.count=1")
	child.Env = append(os.Environ(), lockChildDirEnv+"="+dir)
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	defer stdin.Close()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if line != "open\n" {
		t.Fatalf("child said %q (%v), want it to hold the directory open", line, err)
	}
	e, err := Open(Options{Dir: dir})
	if err == nil {
		e.Close()
		t.Fatal("Open of a directory another process holds succeeded")
	}
	if !errors.Is(err, ErrDirInUse) || !strings.Contains(err.Error(), "--data-dir") {
		t.Errorf("Open error = %v, want ErrDirInUse naming --data-dir", err)
	}
}

// holdOpen is the child side of TestOpenRefusesADirectoryInUse.
func holdOpen(dir string) {
	e, err := Open(Options{Dir: dir})
	if err != nil {
		fmt.Println("open failed:", err)
		os.Exit(2)
	}
	fmt.Println("open")
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = e.Close()
	os.Exit(0)
}
