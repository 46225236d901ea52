package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/base/racedetector"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
)

// countLiveByRecords is what CountLive did before the index's entries held record
// headers, kept as the tests' oracle: a walk of every record of ks in key order, values
// included, counting those Live at now and written after truncatedAt, element records
// left out.
func countLiveByRecords(e *Engine, ks string, now, truncatedAt hlc.Timestamp) (int64, error) {
	if !indexed(ks) {
		return 0, validateKeyspace(ks)
	}
	var live int64
	prefixLen := len(ks) + 1
	err := e.walkStored(ks, func(iter *pebble.Iterator) error {
		userKey := iter.Key()[prefixLen:]
		if element.IsKey(userKey) {
			return nil
		}
		r, _, err := decodeHeader(userKey, iter.Value())
		if err != nil {
			return err
		}
		if r.Live(now) && r.Timestamp > truncatedAt {
			live++
		}
		return nil
	})
	return live, err
}

// walkKeys calls visit with each key and value of e's database in [lower, upper).
func walkKeys(t *testing.T, e *Engine, lower, upper []byte, visit func(key, value []byte)) {
	t.Helper()
	iter, err := e.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		t.Fatal(err)
	}
	for valid := iter.First(); valid; valid = iter.Next() {
		visit(iter.Key(), iter.Value())
	}
	if err := errors.Join(iter.Error(), iter.Close()); err != nil {
		t.Fatal(err)
	}
}

// liveEntries returns ks's live-key index as "key: deadline, type" lines, in key order,
// and what it should be: a line for each stored record of ks that is not a tombstone nor
// an element record. It fails the test if an entry's timestamp is after its record's.
func liveEntries(t *testing.T, e *Engine, ks string) (got, want []string) {
	t.Helper()
	line := func(key []byte, r lww.Record) string {
		return fmt.Sprintf("%q: expires %d, %v", key, r.ExpiresAt, r.Type)
	}
	stamps := map[string]hlc.Timestamp{}
	lower, upper := liveIndexBounds(ks)
	walkKeys(t, e, lower, upper, func(key, value []byte) {
		userKey := key[len(lower)+positionBytes:]
		r, _, err := decodeHeader(userKey, value)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, line(userKey, r))
		stamps[string(userKey)] = r.Timestamp
	})
	lower, upper = keyspaceBounds(ks)
	walkKeys(t, e, lower, upper, func(key, value []byte) {
		userKey := key[len(lower):]
		r, _, err := decodeHeader(userKey, value)
		if err != nil {
			t.Fatal(err)
		}
		if !indexedKey(ks, userKey) || r.Tombstone {
			return
		}
		want = append(want, line(userKey, r))
		if at, ok := stamps[string(userKey)]; ok && at > r.Timestamp {
			t.Errorf("keyspace %s: the entry of %q is stamped %d, after its record's %d", ks, userKey, at, r.Timestamp)
		}
	})
	slices.Sort(got)
	slices.Sort(want)
	return got, want
}

// countRun is one run of TestCountLiveMatchesTheRecordsWalk: an engine on a strict
// in-memory filesystem, random steps on it, and the truncation of each keyspace as a
// node's catalog would know it.
type countRun struct {
	t     *testing.T
	rng   *rand.Rand
	fs    *vfs.MemFS
	e     *Engine
	clock time.Time // the wall time writes are stamped around
	// truncatedAt is each keyspace's truncation, which the counts are asked about
	// whether or not Truncate has removed its records yet.
	truncatedAt map[string]hlc.Timestamp
	steps       []string // what was done, for a failure's message
}

// The keyspaces and keys of a run: an indexed keyspace, one whose name has the first's
// as a prefix, a node-local one; string keys, a hash with its element records, and a
// key that only starts like an element key.
var (
	countKeyspaces = []string{"ks", "ksx", "system.hints"}
	countKeys      = append(strings.Split("abcdefghijklmnop", ""), field("h", "f"), field("h", "g"), notElement)
)

// countGrace is a run's tombstone grace: short, so that collections remove records.
const countGrace = 40 * time.Millisecond

// open opens the engine on c.fs.
func (c *countRun) open() {
	e, err := Open(Options{Dir: "db", FS: c.fs, TombstoneGrace: countGrace, CompactionBytesPerSecond: -1})
	if err != nil {
		c.t.Fatal(err)
	}
	c.e = e
}

// crash loses what was not synced and opens the engine again on what is left.
func (c *countRun) crash() {
	crashed := c.fs.CrashClone(vfs.CrashCloneCfg{})
	if err := c.e.Close(); err != nil {
		c.t.Fatal(err)
	}
	c.fs = crashed
	c.open()
}

// at returns the timestamp ms milliseconds from the clock.
func (c *countRun) at(ms int) hlc.Timestamp {
	return hlc.FromTime(c.clock.Add(time.Duration(ms) * time.Millisecond))
}

// record returns a random valid record: a value (of any type, with or without a deadline,
// which may be before its write) or a tombstone (with or without one), stamped up to
// 30 ms before the clock so that some lose to what is stored.
func (c *countRun) record() lww.Record {
	key := countKeys[c.rng.IntN(len(countKeys))]
	ts := c.at(-c.rng.IntN(30))
	var r lww.Record
	switch c.rng.IntN(6) {
	case 0:
		r = del(key, ts)
	case 1:
		r = del(key, ts)
		r.ExpiresAt = c.at(c.rng.IntN(60) - 20)
	case 2:
		r = expiring(key, fmt.Sprint(c.rng.IntN(100)), ts, c.at(c.rng.IntN(60)-10))
	default:
		r = put(key, strings.Repeat("v", c.rng.IntN(40)), ts)
	}
	if !r.Tombstone {
		r.Type = lww.Type(c.rng.IntN(int(lww.TypeMax) + 1))
	}
	return r
}

// step does one random thing to the engine, or to the truncations the counts are asked
// about, and says what it did.
func (c *countRun) step() string {
	ks := countKeyspaces[c.rng.IntN(len(countKeyspaces))]
	switch op := c.rng.IntN(100); {
	case op < 50:
		rs := make([]lww.Record, 1+c.rng.IntN(4))
		for i := range rs {
			rs[i] = c.record()
		}
		apply := []func(string, []lww.Record) (int, error){c.e.ApplyBatch, c.e.ApplyClientBatch}[c.rng.IntN(2)]
		if _, err := apply(ks, rs); err != nil {
			c.t.Fatal(err)
		}
		c.clock = c.clock.Add(time.Duration(c.rng.IntN(5)) * time.Millisecond)
		return fmt.Sprintf("apply %s %s", ks, describe(rs...))
	case op < 58:
		now := c.clock.Add(time.Duration(c.rng.IntN(60)) * time.Millisecond)
		collected, err := c.e.CollectGarbage(now, maps.Clone(c.truncatedAt))
		if err != nil {
			c.t.Fatal(err)
		}
		return fmt.Sprintf("collect at %d: %+v", hlc.FromTime(now), collected)
	case op < 62:
		at := max(c.truncatedAt[ks], c.at(-c.rng.IntN(20)))
		c.truncatedAt[ks] = at
		return fmt.Sprintf("learn %s truncated at %d", ks, at)
	case op < 66:
		removed, err := c.e.Truncate(ks, c.truncatedAt[ks])
		if err != nil {
			c.t.Fatal(err)
		}
		return fmt.Sprintf("truncate %s at %d: %d removed", ks, c.truncatedAt[ks], removed)
	case op < 71:
		key := countKeys[c.rng.IntN(len(countKeys))]
		if err := c.e.Remove(ks, []byte(key)); err != nil {
			c.t.Fatal(err)
		}
		return fmt.Sprintf("remove %s/%q", ks, key)
	case op < 76:
		if err := c.e.db.Compact(context.Background(), []byte{internalKeyPrefix}, []byte{0xff}, false); err != nil {
			c.t.Fatal(err)
		}
		return "compact"
	case op < 82:
		c.crash()
		return "crash and reopen"
	case op < 85:
		c.downgrade()
		c.crash()
		return "index of version 2, then reopen"
	case op < 87:
		if err := c.e.DropKeyspace("ksx"); err != nil {
			c.t.Fatal(err)
		}
		return "drop ksx"
	default:
		c.clock = c.clock.Add(time.Duration(c.rng.IntN(50)) * time.Millisecond)
		return "time passes"
	}
}

// downgrade leaves the index as version 2 wrote it: its entries with empty values, and
// its marker.
func (c *countRun) downgrade() {
	var entries [][]byte
	walkKeys(c.t, c.e, liveIndexLower, liveIndexUpper, func(key, _ []byte) {
		entries = append(entries, bytes.Clone(key))
	})
	for _, entry := range entries {
		if err := c.e.db.Set(entry, nil, pebble.NoSync); err != nil {
			c.t.Fatal(err)
		}
	}
	if err := c.e.db.Set(liveIndexMarker, []byte{2}, pebble.Sync); err != nil {
		c.t.Fatal(err)
	}
}

// check compares, in every keyspace, the index with the records, and CountLive and
// ScanLive's count with the walk of the records, at times around the clock and at
// truncations before, at and after the keyspace's.
func (c *countRun) check() {
	c.t.Helper()
	for _, ks := range countKeyspaces {
		if got, want := liveEntries(c.t, c.e, ks); !slices.Equal(got, want) {
			c.fail("keyspace %s: index %q, want %q", ks, got, want)
		}
		for _, now := range []hlc.Timestamp{c.at(-20), c.at(0), c.at(30)} {
			for _, truncatedAt := range []hlc.Timestamp{0, c.truncatedAt[ks], c.at(-c.rng.IntN(30))} {
				want, err := countLiveByRecords(c.e, ks, now, truncatedAt)
				if err != nil {
					c.t.Fatal(err)
				}
				got, err := c.e.CountLive(ks, now, truncatedAt)
				if err != nil || got != want {
					c.fail("keyspace %s at %d truncated at %d: CountLive %d, %v; the records walk counts %d", ks, now, truncatedAt, got, err, want)
				}
				page, err := c.e.ScanLive(ks, LiveScan{Spans: []Span{{0, math.MaxUint64}}, CountOnly: true, Now: now, TruncatedAt: truncatedAt})
				if err != nil || int64(page.Live) != want {
					c.fail("keyspace %s at %d truncated at %d: ScanLive counts %d, %v; the records walk %d", ks, now, truncatedAt, page.Live, err, want)
				}
			}
		}
	}
}

// fail fails the test with the last steps done.
func (c *countRun) fail(format string, args ...any) {
	c.t.Helper()
	last := c.steps[max(0, len(c.steps)-10):]
	c.t.Fatalf("after %d steps (the last: %s): %s", len(c.steps), strings.Join(last, "; "), fmt.Sprintf(format, args...))
}

// TestCountLiveMatchesTheRecordsWalk takes engines through random writes (values of
// every type, deletes, deadlines, older writes that lose), collections, truncations
// learned and applied, removals, compactions, crashes on the strict in-memory filesystem,
// indexes left by version 2 and a dropped keyspace, and after each step checks that the
// live-key index has, for each live record and for nothing else, an entry of the
// record's deadline and type stamped at or before it, and that CountLive counts what the
// walk of every record counts, for times and truncations around the step's.
func TestCountLiveMatchesTheRecordsWalk(t *testing.T) {
	// Two seeds under the race detector, which makes each step twenty times slower and
	// has only Pebble's own goroutines to watch here: eight took 95 s.
	seeds := uint64(8)
	if racedetector.Enabled {
		seeds = 2
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			c := &countRun{
				t:           t,
				rng:         rand.New(rand.NewPCG(seed, 60)),
				fs:          vfs.NewCrashableMem(),
				clock:       time.UnixMilli(1_700_000_000_000),
				truncatedAt: map[string]hlc.Timestamp{},
			}
			c.open()
			defer func() { c.e.Close() }()
			for range 400 {
				c.steps = append(c.steps, c.step())
				c.check()
			}
		})
	}
}

// TestCountLiveRefusesABadEntry: an entry that holds no live record's header is an
// error naming it, not a count.
func TestCountLiveRefusesABadEntry(t *testing.T) {
	for _, tt := range []struct {
		name  string
		value []byte
	}{
		{"empty", nil},
		{"a tombstone's header", encodeValue(del("a", 1))},
		{"a whole value", encodeValue(put("a", "v", 1))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := openMem(t, Options{})
			mustApply(t, e, "ks", put("a", "v", 1))
			if err := e.db.Set(liveIndexKey("ks", []byte("a")), tt.value, pebble.Sync); err != nil {
				t.Fatal(err)
			}
			if n, err := e.CountLive("ks", 10, 0); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `"ks"`) {
				t.Errorf("CountLive = %d, %v; want ErrCorrupt naming the keyspace", n, err)
			}
		})
	}
}

// BenchmarkCountLive counts a keyspace of 100,000 live records of 1 KiB on disk: by
// CountLive, from the live-key index's entries, and by the walk of every record that
// CountLive did before (countLiveByRecords).
func BenchmarkCountLive(b *testing.B) {
	const records, valueBytes, batchRecords = 100_000, 1 << 10, 1000
	e, err := Open(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	value := make([]byte, valueBytes)
	batch := make([]lww.Record, 0, batchRecords)
	for i := range records {
		batch = append(batch, lww.Record{Key: benchKey(i), Value: value, Timestamp: hlc.Timestamp(i + 1)})
		if len(batch) == cap(batch) {
			if _, err := e.ApplyBatch("ks", batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := e.db.Flush(); err != nil {
		b.Fatal(err)
	}
	for _, count := range []struct {
		name  string
		count func(ks string, now, truncatedAt hlc.Timestamp) (int64, error)
	}{
		{"index", e.CountLive},
		{"records", func(ks string, now, truncatedAt hlc.Timestamp) (int64, error) {
			return countLiveByRecords(e, ks, now, truncatedAt)
		}},
	} {
		b.Run(count.name, func(b *testing.B) {
			for b.Loop() {
				if n, err := count.count("ks", records+1, 0); err != nil || n != records {
					b.Fatalf("counted %d, %v; want %d", n, err, records)
				}
			}
		})
	}
}
