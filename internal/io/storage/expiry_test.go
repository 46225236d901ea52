package storage

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
)

// expiring returns a value of key written at ts that expires at expiresAt.
func expiring(key, value string, ts, expiresAt hlc.Timestamp) lww.Record {
	r := put(key, value, ts)
	r.ExpiresAt = expiresAt
	return r
}

// indexEntries lists the expiry index as "due ks/key expiresAt", in index order.
func indexEntries(t *testing.T, e *Engine) []string {
	t.Helper()
	iter, err := e.db.NewIter(&pebble.IterOptions{LowerBound: expiryIndexPrefix, UpperBound: []byte{internalKeyPrefix, expiryIndexTag + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer iter.Close()
	var out []string
	for valid := iter.First(); valid; valid = iter.Next() {
		entry, err := parseExpiryEntry(iter.Key(), iter.Value())
		if err != nil {
			t.Fatal(err)
		}
		ks, key, err := splitKey(entry.recordKey)
		if err != nil {
			t.Fatal(err)
		}
		due := hlc.Timestamp(0)
		for _, b := range iter.Key()[len(expiryIndexPrefix) : len(expiryIndexPrefix)+8] {
			due = due<<8 | hlc.Timestamp(b)
		}
		out = append(out, fmt.Sprintf("%d %s/%s %d", due, ks, key, entry.expiresAt))
	}
	return out
}

func TestExpiryIndexIsWrittenWithTheRecord(t *testing.T) {
	tests := []struct {
		name   string
		writes []lww.Record
		want   []string
	}{
		{"no expiry, no entry", []lww.Record{put("k", "v", 1)}, nil},
		{"expiring value", []lww.Record{expiring("k", "v", 1, 50)}, []string{"50 ks/k 50"}},
		{"expiring tombstone", []lww.Record{{Key: []byte("k"), Timestamp: 1, Tombstone: true, ExpiresAt: 50}}, []string{"50 ks/k 50"}},
		{"an older write is not indexed", []lww.Record{put("k", "v", 2), expiring("k", "old", 1, 50)}, nil},
		{"overwriting leaves the old entry, stale", []lww.Record{expiring("k", "a", 1, 50), expiring("k", "b", 2, 60)},
			[]string{"50 ks/k 50", "60 ks/k 60"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := openMem(t, Options{})
			mustApply(t, e, "ks", tt.writes...)
			if got := indexEntries(t, e); !slices.Equal(got, tt.want) {
				t.Errorf("index = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCollectGarbageExpires follows expiring records through two collections: the first
// rewrites expired values as tombstones (same timestamp, no value) and re-files their
// index entries for removal, the second, a grace later, removes them.
func TestCollectGarbageExpires(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	grace := time.Hour
	at := func(d time.Duration) hlc.Timestamp { return hlc.FromTime(now.Add(d)) }
	e := openMem(t, Options{TombstoneGrace: grace})
	mustApply(t, e, "x",
		expiring("expired", "v", at(-2*time.Minute), at(-time.Minute)),
		expiring("expires-now", "v", at(-2*time.Minute), at(0)),
		expiring("future", "v", at(-2*time.Minute), at(time.Minute)),
		put("no-expiry", "v", at(-2*time.Minute)),
		expiring("overwritten", "v", at(-2*time.Minute), at(-time.Minute)),
		put("overwritten", "newer", at(-time.Minute)),
		expiring("long-gone", "v", at(-3*time.Hour), at(-2*time.Hour)),
		lww.Record{Key: []byte("expired-elsewhere"), Timestamp: at(-2 * time.Hour), Tombstone: true, ExpiresAt: at(-30 * time.Minute)})
	ghost := time.Second // a deadline in the past makes the write a delete at its timestamp
	mustApply(t, e, "x", expiring("born-expired", "v", at(-ghost), at(-time.Hour)))

	collected, err := e.CollectGarbage(now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Collected{Expired: 3, Removed: 1}); collected != want {
		t.Errorf("first collection = %+v, want %+v", collected, want)
	}
	got, err := e.Scan("x", nil, nil, 0, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		fmt.Sprintf("born-expired@%d:deleted(expires %d)", at(-ghost), at(-time.Hour)),
		fmt.Sprintf("expired@%d:deleted(expires %d)", at(-2*time.Minute), at(-time.Minute)),
		fmt.Sprintf("expired-elsewhere@%d:deleted(expires %d)", at(-2*time.Hour), at(-30*time.Minute)),
		fmt.Sprintf("expires-now@%d:deleted(expires %d)", at(-2*time.Minute), at(0)),
		fmt.Sprintf("future@%d=v(expires %d)", at(-2*time.Minute), at(time.Minute)),
		fmt.Sprintf("no-expiry@%d=v", at(-2*time.Minute)),
		fmt.Sprintf("overwritten@%d=newer", at(-time.Minute)),
	}, " ")
	if describe(got...) != want {
		t.Errorf("after the first collection:\n got %s\nwant %s", describe(got...), want)
	}
	graceTicks := hlc.FromTime(time.UnixMilli(grace.Milliseconds()))
	wantIndex := []string{
		fmt.Sprintf("%d x/future %d", at(time.Minute), at(time.Minute)),
		fmt.Sprintf("%d x/expired-elsewhere %d", at(-30*time.Minute)+graceTicks+1, at(-30*time.Minute)),
		fmt.Sprintf("%d x/expired %d", at(-time.Minute)+graceTicks+1, at(-time.Minute)),
		fmt.Sprintf("%d x/born-expired %d", at(-ghost)+graceTicks+1, at(-time.Hour)),
		fmt.Sprintf("%d x/expires-now %d", at(0)+graceTicks+1, at(0)),
	}
	if got := indexEntries(t, e); !slices.Equal(got, wantIndex) {
		t.Errorf("index after the first collection:\n got %q\nwant %q", got, wantIndex)
	}
	if collected, err := e.CollectGarbage(now, nil); err != nil || collected != (Collected{}) {
		t.Errorf("second collection at the same time = %+v, %v; want nothing", collected, err)
	}

	later := now.Add(grace + 2*time.Minute)
	collected, err = e.CollectGarbage(later, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Collected{Removed: 5}); collected != want {
		t.Errorf("collection a grace later = %+v, want %+v", collected, want)
	}
	got, err = e.Scan("x", nil, nil, 0, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	want = fmt.Sprintf("no-expiry@%d=v overwritten@%d=newer", at(-2*time.Minute), at(-time.Minute))
	if describe(got...) != want {
		t.Errorf("a grace later:\n got %s\nwant %s", describe(got...), want)
	}
	if got := indexEntries(t, e); len(got) != 0 {
		t.Errorf("index a grace later = %q, want empty", got)
	}
}

// TestWatermarkCoversPurgedExpiredRecords removes the only record of a keyspace through
// the expiry index: the keyspace's watermark must still rise past the record's
// timestamp, or a repair would give this node back the older value it replaced.
func TestWatermarkCoversPurgedExpiredRecords(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	grace := time.Hour
	e := openMem(t, Options{TombstoneGrace: grace})
	written := hlc.FromTime(now)
	mustApply(t, e, "only", expiring("k", "v", written, hlc.FromTime(now.Add(time.Minute))))
	collected, err := e.CollectGarbage(now.Add(grace+2*time.Minute), nil)
	if err != nil || collected.Removed != 1 {
		t.Fatalf("CollectGarbage = %+v, %v; want 1 removed", collected, err)
	}
	watermark, err := e.TombstoneWatermark("only")
	if err != nil {
		t.Fatal(err)
	}
	if watermark < written {
		t.Errorf("watermark %s is below the removed record's timestamp %s", watermark, written)
	}
}

// TestCollectGarbageWalksRecordsOnly puts an entry of another internal index (0x00 's',
// the live-key index) beside the records: the walk starts past 0x00 and never decodes it.
func TestCollectGarbageWalksRecordsOnly(t *testing.T) {
	e := openMem(t, Options{})
	if err := e.db.Set([]byte{internalKeyPrefix, 's', 'k', 's', 0, 'k'}, []byte("not a record"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	mustApply(t, e, "ks", del("k", 1))
	collected, err := e.CollectGarbage(time.UnixMilli(1_700_000_000_000), nil)
	if err != nil || collected.Removed != 1 {
		t.Errorf("CollectGarbage = %+v, %v; want 1 removed, nil", collected, err)
	}
}

func TestTruncate(t *testing.T) {
	// d expires long after the collection's now (1 ms after the epoch).
	records := []lww.Record{put("a", "1", 1), del("b", 2), put("c", "3", 3), expiring("d", "4", 4, 1<<40), put("e", "5", 5)}
	tests := []struct {
		name        string
		truncatedAt hlc.Timestamp
		want        string
	}{
		{"before every record", 0, "a@1=1 b@2:deleted c@3=3 d@4=4(expires 1099511627776) e@5=5"},
		{"values and tombstones at or before", 3, "d@4=4(expires 1099511627776) e@5=5"},
		{"after every record", 9, ""},
	}
	for _, tt := range tests {
		for _, via := range []string{"Truncate", "CollectGarbage"} {
			t.Run(tt.name+" via "+via, func(t *testing.T) {
				e := openMem(t, Options{})
				mustApply(t, e, "ks", records...)
				mustApply(t, e, "other", records...)
				var err error
				if via == "Truncate" {
					_, err = e.Truncate("ks", tt.truncatedAt)
				} else {
					_, err = e.CollectGarbage(time.UnixMilli(1), map[string]hlc.Timestamp{"ks": tt.truncatedAt})
				}
				if err != nil {
					t.Fatal(err)
				}
				for ks, want := range map[string]string{"ks": tt.want, "other": describe(records...)} {
					got, err := e.Scan(ks, nil, nil, 0, true, nil)
					if err != nil {
						t.Fatal(err)
					}
					if describe(got...) != want {
						t.Errorf("keyspace %s = %q, want %q", ks, describe(got...), want)
					}
				}
			})
		}
	}
}

// TestExpiryCollectionNeverUndoesANewerWrite races collections that rewrite expired
// values as tombstones against writers that overwrite the same keys with newer values:
// every newer value must survive, as the rewrite re-reads each record under its lock.
func TestExpiryCollectionNeverUndoesANewerWrite(t *testing.T) {
	const keys = 500
	now := time.UnixMilli(1_700_000_000_000)
	e := openMem(t, Options{})
	for i := range keys {
		mustApply(t, e, "ks", expiring(fmt.Sprint(i), "old", 1, 2))
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range keys {
			if _, err := e.Apply("ks", put(fmt.Sprint(i), "newer", 3)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() {
		for range 4 {
			if _, err := e.CollectGarbage(now, nil); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	for i := range keys {
		if r, _ := mustGet(t, e, "ks", fmt.Sprint(i)); describe(r) != fmt.Sprintf("%d@3=newer", i) {
			t.Fatalf("key %d = %s, want the newer value", i, describe(r))
		}
	}
}

// TestExpiryIndexSurvivesACrash applies an expiring record and crashes (the strict
// in-memory filesystem forgets what was not synced): the index entry, written in the
// record's batch, must survive with it, so a collection after the restart still rewrites
// the expired value; that rewrite must survive the next crash too.
func TestExpiryIndexSurvivesACrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	open := func() *Engine {
		t.Helper()
		e, err := Open(Options{Dir: "db", FS: fs})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	now := time.UnixMilli(1_700_000_000_000)
	e := open()
	mustApply(t, e, "ks", expiring("k", "v", 1, hlc.FromTime(now)))
	e, fs = crashAndReopen(t, e, fs)
	if collected, err := e.CollectGarbage(now, nil); err != nil || collected.Expired != 1 {
		t.Fatalf("CollectGarbage after a crash = %+v, %v; want 1 expired", collected, err)
	}
	e, _ = crashAndReopen(t, e, fs)
	defer e.Close()
	if r, found := mustGet(t, e, "ks", "k"); !found || !r.Tombstone || r.ExpiresAt != hlc.FromTime(now) {
		t.Errorf("after the second crash = %s (found %t), want the tombstone the collection wrote", describe(r), found)
	}
	if got := indexEntries(t, e); len(got) != 1 {
		t.Errorf("index after the second crash = %q, want the entry due for removal", got)
	}
}

// TestExpiredRecordsAreReadAsTheyAre: the engine judges no deadline on reads. Get and
// Scan return an expired record with its expiry, for the coordinator to reconcile (it
// shadows older values) and to report absent.
func TestExpiredRecordsAreReadAsTheyAre(t *testing.T) {
	e := openMem(t, Options{})
	mustApply(t, e, "ks", expiring("k", "v", 2, 3))
	want := "k@2=v(expires 3)"
	if r, found := mustGet(t, e, "ks", "k"); !found || describe(r) != want {
		t.Errorf("Get = %s (found %t), want %s", describe(r), found, want)
	}
	got, err := e.Scan("ks", nil, nil, 0, false, nil)
	if err != nil || describe(got...) != want {
		t.Errorf("Scan = %s, %v; want %s", describe(got...), err, want)
	}
	if applied, err := e.Apply("ks", put("k", "older", 1)); err != nil || applied {
		t.Errorf("Apply of an older value over an expired one = %t, %v; want not applied", applied, err)
	}
}
