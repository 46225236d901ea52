package storage

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
)

// cached reports whether the row cache holds key of keyspace ks.
func cached(e *Engine, ks, key string) bool {
	encoded := encodeKey(ks, []byte(key))
	_, hit, _ := e.rows.get(e.stripeOf(encoded), encoded)
	return hit
}

// TestRowCacheEveryWritePathInvalidates reads a key into the row cache, changes it by
// each of the engine's write paths, and reads it again: the read must see the change.
// The node's replica writes, hints, read repair, anti-entropy repair and streaming all
// write through Apply and ApplyBatch; expiry, garbage collection and truncation through
// CollectGarbage and Truncate; DropKeyspace removes by range.
func TestRowCacheEveryWritePathInvalidates(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	ts := func(d time.Duration) hlc.Timestamp { return hlc.FromTime(now.Add(d)) }
	grace := time.Hour
	paths := []struct {
		name   string
		before lww.Record
		change func(*Engine) error
		want   string // describe of the record read after, "" when not found
	}{
		{"Apply", put("k", "old", ts(-time.Second)), func(e *Engine) error {
			_, err := e.Apply("ks", put("k", "new", ts(0)))
			return err
		}, describe(put("k", "new", ts(0)))},
		{"Apply of a tombstone", put("k", "old", ts(-time.Second)), func(e *Engine) error {
			_, err := e.Apply("ks", del("k", ts(0)))
			return err
		}, describe(del("k", ts(0)))},
		{"ApplyBatch, the key twice", put("k", "old", ts(-time.Second)), func(e *Engine) error {
			_, err := e.ApplyBatch("ks", []lww.Record{put("k", "mid", ts(0)), put("other", "x", ts(0)), put("k", "new", ts(time.Millisecond))})
			return err
		}, describe(put("k", "new", ts(time.Millisecond)))},
		{"ApplyClientBatch, the key twice", put("k", "old", ts(-time.Second)), func(e *Engine) error {
			_, err := e.ApplyClientBatch("ks", []lww.Record{put("k", "mid", ts(0)), put("other", "x", ts(0)), put("k", "new", ts(time.Millisecond))})
			return err
		}, describe(put("k", "new", ts(time.Millisecond)))},
		{"ApplyClientBatch of an older version", put("k", "old", ts(0)), func(e *Engine) error {
			_, err := e.ApplyClientBatch("ks", []lww.Record{put("k", "older", ts(-time.Second)), put("other", "x", ts(0))})
			return err
		}, describe(put("k", "old", ts(0)))},
		{"Remove", put("k", "old", ts(-time.Second)), func(e *Engine) error {
			return e.Remove("ks", []byte("k"))
		}, ""},
		{"Truncate", put("k", "old", ts(-time.Second)), func(e *Engine) error {
			_, err := e.Truncate("ks", ts(0))
			return err
		}, ""},
		{"CollectGarbage, an expired value becomes a tombstone", expiring("k", "old", ts(-time.Minute), ts(-time.Second)), func(e *Engine) error {
			_, err := e.CollectGarbage(now, nil)
			return err
		}, describe(lww.Record{Key: []byte("k"), Timestamp: ts(-time.Minute), Tombstone: true, ExpiresAt: ts(-time.Second)})},
		{"CollectGarbage, an old tombstone is removed", del("k", ts(-2*grace)), func(e *Engine) error {
			_, err := e.CollectGarbage(now, nil)
			return err
		}, ""},
		{"CollectGarbage of a truncation", put("k", "old", ts(-time.Second)), func(e *Engine) error {
			_, err := e.CollectGarbage(now, map[string]hlc.Timestamp{"ks": ts(0)})
			return err
		}, ""},
		{"DropKeyspace", put("k", "old", ts(-time.Second)), func(e *Engine) error {
			return e.DropKeyspace("ks")
		}, ""},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			e := openMem(t, Options{TombstoneGrace: grace})
			mustApply(t, e, "ks", p.before)
			if r, found := mustGet(t, e, "ks", "k"); !found || describe(r) != describe(p.before) {
				t.Fatalf("before: read %s (found %t), want %s", describe(r), found, describe(p.before))
			}
			if !cached(e, "ks", "k") {
				t.Fatal("the read did not fill the row cache")
			}
			if err := p.change(e); err != nil {
				t.Fatal(err)
			}
			r, found := mustGet(t, e, "ks", "k")
			got := ""
			if found {
				got = describe(r)
			}
			if got != p.want {
				t.Errorf("after %s: read %q, want %q", p.name, got, p.want)
			}
		})
	}
}

// TestRowCacheKeepsWrittenRecord checks that a write leaves its record in the cache, so
// the read after it costs no Pebble read, and that the cache's copy is not the caller's.
func TestRowCacheKeepsWrittenRecord(t *testing.T) {
	e := openMem(t, Options{})
	r := put("k", "v1", 10)
	mustApply(t, e, "ks", r)
	if !cached(e, "ks", "k") {
		t.Fatal("a write did not leave its record in the row cache")
	}
	r.Value[0] = 'X' // the caller reuses its buffer
	got, _ := mustGet(t, e, "ks", "k")
	got.Value[1] = 'Y' // and so does a reader
	if again, _ := mustGet(t, e, "ks", "k"); string(again.Value) != "v1" {
		t.Errorf("read %q, want v1: the cache shares bytes with a caller", again.Value)
	}
}

// TestGetEachAnswersAsGet reads keys of every kind through GetEach (a value in the row
// cache, one only in Pebble, one too large to cache, a tombstone, an expiring value, a
// key never written) and checks each answer against Get's. Values GetEach shares with
// the cache stay apart all the same: appending to each answer of a key read twice (a
// miss that fills the cache, then a hit) gives each reader its own bytes and leaves the
// cache's as they were.
func TestGetEachAnswersAsGet(t *testing.T) {
	e := openMem(t, Options{})
	large := string(make([]byte, rowCacheEntryMax+1))
	mustApply(t, e, "ks", put("cached", "c", 10), del("gone", 10), expiring("expiring", "x", 10, 20))
	if _, err := e.ApplyBatch("ks", []lww.Record{put("stored", "s", 10), put("large", large, 10)}); err != nil {
		t.Fatal(err)
	}
	keys := [][]byte{[]byte("cached"), []byte("stored"), []byte("large"), []byte("gone"), []byte("expiring"), []byte("absent"), []byte("stored")}
	var appended []string
	var extended [][]byte
	err := e.GetEach("ks", keys, func(i int, r lww.Record, found bool) bool {
		want, wantFound, err := e.Get("ks", keys[i])
		if err != nil {
			t.Fatal(err)
		}
		if found != wantFound || describe(r) != describe(want) {
			t.Errorf("key %q: GetEach read %s (found %t), Get %s (found %t)", keys[i], describe(r), found, describe(want), wantFound)
		}
		suffix := fmt.Sprint(i)
		appended = append(appended, string(want.Value)+suffix)
		extended = append(extended, append(r.Value, suffix...))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(extended) != len(keys) {
		t.Fatalf("visited %d keys, want every one of %d", len(extended), len(keys))
	}
	for i, got := range extended {
		if string(got) != appended[i] {
			t.Errorf("key %q: a reader's appended value became %q, want %q: readers share bytes", keys[i], got, appended[i])
		}
	}
	if r, _ := mustGet(t, e, "ks", "stored"); string(r.Value) != "s" {
		t.Errorf("after appending to values GetEach gave, Get read %q, want s", r.Value)
	}

	visited := 0
	if err := e.GetEach("ks", keys, func(int, lww.Record, bool) bool { visited++; return visited < 2 }); err != nil {
		t.Fatal(err)
	}
	if visited != 2 {
		t.Errorf("visit returned false at the second key, but was called %d times", visited)
	}
	if err := e.GetEach("", keys, func(int, lww.Record, bool) bool { return true }); err == nil {
		t.Error("GetEach of an empty keyspace name: no error")
	}
}

// TestClientBatchesStayInTheRowCache: a client's batch leaves its records in the cache,
// as a single write does, while a batch of streaming or repair only takes its keys out.
func TestClientBatchesStayInTheRowCache(t *testing.T) {
	for _, tt := range []struct {
		name   string
		apply  func(e *Engine, ks string, rs []lww.Record) (int, error)
		cached bool
	}{
		{"ApplyClientBatch", (*Engine).ApplyClientBatch, true},
		{"ApplyBatch", (*Engine).ApplyBatch, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := openMem(t, Options{})
			mustApply(t, e, "ks", put("a", "old", 5))
			if _, err := tt.apply(e, "ks", []lww.Record{put("a", "new", 10), put("b", "v", 10)}); err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"a", "b"} {
				if got := cached(e, "ks", key); got != tt.cached {
					t.Errorf("%s cached after the batch: %t, want %t", key, got, tt.cached)
				}
			}
			if r, _ := mustGet(t, e, "ks", "a"); string(r.Value) != "new" {
				t.Errorf("read %q after the batch, want new", r.Value)
			}
		})
	}
}

// TestRowCacheFillLosesToARacingWrite plays a read that misses, reads the old record
// from Pebble, and fills the cache only after a write of the key committed: the fill must
// be refused, or the cache would serve the old record from then on.
func TestRowCacheFillLosesToARacingWrite(t *testing.T) {
	e := openMem(t, Options{RowCacheBytes: 1 << 20})
	mustApply(t, e, "ks", put("k", "old", 10))
	encoded := encodeKey("ks", []byte("k"))
	stripe := e.stripeOf(encoded)
	e.rows.invalidate(stripe, encoded) // start from a miss

	_, hit, gen := e.rows.get(stripe, encoded)
	if hit {
		t.Fatal("hit after invalidate")
	}
	old, closer, err := e.db.Get(encoded)
	if err != nil {
		t.Fatal(err)
	}
	staleBytes := append([]byte(nil), old...)
	closer.Close()
	mustApply(t, e, "ks", put("k", "new", 20)) // the write commits while the read is out
	e.rows.fill(stripe, encoded, rowEntry{value: staleBytes, found: true}, gen)

	if r, _ := mustGet(t, e, "ks", "k"); string(r.Value) != "new" {
		t.Errorf("read %s after a racing fill, want new", describe(r))
	}
}

// TestRowCacheConcurrentReadersAndWriters runs writers of rising timestamps beside
// readers filling the cache; once the writers are done every key reads as its last
// write. Run with -race, it also checks the cache's locking.
func TestRowCacheConcurrentReadersAndWriters(t *testing.T) {
	e := openMem(t, Options{RowCacheBytes: 4 << 10}) // small: eviction runs too
	const keys, writes = 8, 200
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= writes; i++ {
				mustApply(t, e, "ks", put(fmt.Sprintf("k%d", w), fmt.Sprint(i), hlc.Timestamp(i)))
			}
		}()
	}
	var readers sync.WaitGroup
	for range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, _, err := e.Get("ks", fmt.Appendf(nil, "k%d", i%keys)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	for w := range keys {
		if r, _ := mustGet(t, e, "ks", fmt.Sprintf("k%d", w)); string(r.Value) != fmt.Sprint(writes) {
			t.Errorf("k%d reads %s, want its last write %d", w, describe(r), writes)
		}
	}
}

// TestRowCacheStaysWithinItsBytes fills the cache past its size: it evicts to stay
// within it, and a value too large to cache is not kept.
func TestRowCacheStaysWithinItsBytes(t *testing.T) {
	const size = 64 << 10
	c := newRowCache(size)
	value := make([]byte, 100)
	for i := range 10_000 {
		key := fmt.Appendf(nil, "key%05d", i)
		c.fill(i%lockStripes, key, rowEntry{value: value, found: true}, 0)
	}
	total := 0
	for i := range c.shards {
		if c.shards[i].bytes > c.shards[i].maxBytes {
			t.Errorf("shard %d holds %d bytes, more than its %d", i, c.shards[i].bytes, c.shards[i].maxBytes)
		}
		total += len(c.shards[i].index)
	}
	if total == 0 {
		t.Error("the cache kept nothing")
	}
	big := []byte("big")
	c.fill(0, big, rowEntry{value: make([]byte, rowCacheEntryMax+1), found: true}, 0)
	if _, hit, _ := c.get(0, big); hit {
		t.Error("a value larger than rowCacheEntryMax was cached")
	}
	if _, hit, _ := (*rowCache)(nil).get(0, big); hit {
		t.Error("a nil cache hit")
	}
}

// TestRowCacheSparesMarkedEntries fills a shard, reads some of its keys, and adds more:
// the keys read since the hand last passed stay, the others make room.
func TestRowCacheSparesMarkedEntries(t *testing.T) {
	value := make([]byte, 100)
	size := entrySize(len("key00"), rowEntry{value: value})
	c := newRowCache(int64(10 * size * rowCacheShards)) // ten entries a shard
	const stripe = 0
	for i := range 10 {
		c.fill(stripe, fmt.Appendf(nil, "key%02d", i), rowEntry{value: value, found: true}, 0)
	}
	for _, i := range []int{1, 4, 7} {
		if _, hit, _ := c.get(stripe, fmt.Appendf(nil, "key%02d", i)); !hit {
			t.Fatalf("key%02d missed in a shard not yet full", i)
		}
	}
	for i := 10; i < 17; i++ {
		c.fill(stripe, fmt.Appendf(nil, "key%02d", i), rowEntry{value: value, found: true}, 0)
	}
	for i := range 17 {
		_, hit, _ := c.get(stripe, fmt.Appendf(nil, "key%02d", i))
		want := i == 1 || i == 4 || i == 7 || i >= 10
		if hit != want {
			t.Errorf("key%02d cached: %t, want %t", i, hit, want)
		}
	}
}

// TestRowCacheRandomOperationsKeepItsBooks runs random fills, replacements,
// invalidations, reads and clears on a small cache and checks after each that its index
// and slots agree, its bytes are the sum of its entries' and within its size, and that
// every hit returns the bytes last stored for the key.
func TestRowCacheRandomOperationsKeepItsBooks(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	c := newRowCache(16 << 10)
	want := map[string]string{} // the bytes last stored per key, absent when dropped
	for op := range 20_000 {
		key := fmt.Appendf(nil, "k%03d", r.IntN(300))
		stripe := int(key[1]+key[2]+key[3]) % lockStripes
		value := fmt.Appendf(nil, "%d-%s", op, make([]byte, r.IntN(200)))
		switch r.IntN(5) {
		case 0:
			_, _, gen := c.get(stripe, key)
			c.fill(stripe, key, rowEntry{value: value, found: true}, gen)
			want[string(key)] = string(value)
		case 1:
			c.replace(stripe, key, rowEntry{value: value, found: true})
			want[string(key)] = string(value)
		case 2:
			c.invalidate(stripe, key)
			delete(want, string(key))
		case 3:
			if e, hit, _ := c.get(stripe, key); hit && string(e.value) != want[string(key)] {
				t.Fatalf("op %d: %s read %.12q, want %.12q", op, key, e.value, want[string(key)])
			}
		default:
			if r.IntN(500) == 0 {
				c.clear()
				clear(want)
			}
		}
		checkRowCache(t, c)
	}
}

// checkRowCache fails t unless every shard's index, slots and bytes agree.
func checkRowCache(t *testing.T, c *rowCache) {
	t.Helper()
	for i := range c.shards {
		s := &c.shards[i]
		if len(s.index)+len(s.free) != len(s.slots) {
			t.Fatalf("shard %d: %d keys indexed and %d slots free, of %d", i, len(s.index), len(s.free), len(s.slots))
		}
		bytes := 0
		for j, slot := range s.slots {
			if !slot.used {
				continue
			}
			if got, ok := s.index[slot.key]; !ok || got != j {
				t.Fatalf("shard %d: %s in slot %d, indexed at %d (%t)", i, slot.key, j, got, ok)
			}
			bytes += entrySize(len(slot.key), slot.entry)
		}
		if bytes != s.bytes || bytes > s.maxBytes {
			t.Fatalf("shard %d: entries of %d bytes, counted %d, size %d", i, bytes, s.bytes, s.maxBytes)
		}
	}
}

// TestEngineStatsCountRowCacheHitsAndMisses: the first read of a key misses, the next
// hits, and a write leaves its record to be hit.
func TestEngineStatsCountRowCacheHitsAndMisses(t *testing.T) {
	e := openMem(t, Options{})
	mustApply(t, e, "ks", put("written", "v", 10)) // a miss: the write reads what it replaces
	mustGet(t, e, "ks", "written")                 // a hit
	mustGet(t, e, "ks", "absent")                  // a miss, cached as absent
	mustGet(t, e, "ks", "absent")                  // a hit
	st := e.Stats().RowCache
	if st.Hits != 2 || st.Misses != 2 || st.Entries != 2 || st.Bytes <= 0 {
		t.Errorf("row cache stats %+v, want 2 hits, 2 misses, 2 entries and their bytes", st)
	}
}
