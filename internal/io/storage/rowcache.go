package storage

import (
	"sync"
)

// The row cache keeps the stored bytes of recently read and written records in front of
// Pebble. A point read of a record in Pebble's memtable or block cache still builds an
// iterator over every level, finds the file, and seeks its index and data blocks: the
// largest share of a single node's CPU per GET, and of a SET's, whose last-writer-wins
// comparison reads the stored record first (docs/performance-log.md). A hit costs one map
// look-up under a shard's mutex.
//
// Correctness rests on two rules:
//   - every commit that changes a record key calls invalidate for the key (or clear, for a
//     range deletion) after Pebble has made the change visible and while the writer still
//     holds the key's stripe lock, so no read that starts after the write returns can find
//     the old bytes;
//   - a read that missed fills the cache only if no invalidation of its stripe happened
//     since it began (the stripe's generation is unchanged), so a read that raced with a
//     write cannot put back the bytes the write replaced.
//
// Entries are the encoded values as Pebble stores them (decodeValue copies out of them),
// or a marker for a key Pebble does not hold. Eviction is CLOCK (second chance): a hit
// marks its entry, and the hand sweeping the entries for a victim spares a marked one
// once, unmarking it. Replaying the peers bench's zipfian keys (100,000 records of 256
// bytes, the default cache holding 45 % of them), it missed 9.0 % of the reads against
// random eviction's 12.1 %, for one flag written under the lock a hit already takes.

const (
	// DefaultRowCacheBytes is the row cache of an engine that names none: about 45,000
	// records of 256 bytes, a little of a small node's memory.
	DefaultRowCacheBytes = 16 << 20
	// rowCacheShards spreads the cache's locking; a divisor of lockStripes, so that a
	// stripe's keys are in one shard.
	rowCacheShards = 16
	// rowCacheEntryMax is the largest value cached: a larger one would evict many small
	// ones for a read whose cost is dominated by copying it anyway.
	rowCacheEntryMax = 16 << 10
	// rowEntryOverhead approximates the memory of an entry beyond its key and value bytes
	// (the index's map slot, the slot's string and slice headers).
	rowEntryOverhead = 80
)

// rowCache is the cache; the zero value is not usable, see newRowCache. A nil *rowCache
// caches nothing.
type rowCache struct {
	shards [rowCacheShards]rowShard
}

type rowShard struct {
	mu       sync.Mutex
	index    map[string]int // key -> its slot in slots
	slots    []rowSlot      // the entries, in the order the hand sweeps them
	free     []int          // the slots of removed entries, the latest last
	hand     int            // the next slot the sweep looks at
	bytes    int
	maxBytes int
	// hits and misses count the lookups of get since the cache was made.
	hits, misses uint64
	// gen counts the invalidations of each stripe of this shard, indexed by stripe /
	// rowCacheShards.
	gen [lockStripes / rowCacheShards]uint64
}

// rowSlot is one cached key and its entry, or a free slot (used false), and whether a
// hit marked it since the hand last passed.
type rowSlot struct {
	key    string
	entry  rowEntry
	used   bool
	marked bool
}

// rowEntry is a cached record: its stored bytes, or found false for a key with none.
type rowEntry struct {
	value []byte
	found bool
}

// RowCacheStats are a row cache's figures (Engine.Stats).
type RowCacheStats struct {
	// Hits and Misses count the reads that found their key in the cache and those that
	// read Pebble, since the engine opened.
	Hits, Misses uint64
	// Bytes is about the memory the entries take; Entries how many there are.
	Bytes   int64
	Entries int
}

// newRowCache returns a cache of about maxBytes, or nil (no cache) for maxBytes < 0.
func newRowCache(maxBytes int64) *rowCache {
	if maxBytes < 0 {
		return nil
	}
	c := &rowCache{}
	for i := range c.shards {
		c.shards[i].index = map[string]int{}
		c.shards[i].maxBytes = int(maxBytes / rowCacheShards)
	}
	return c
}

func (c *rowCache) shard(stripe int) (*rowShard, int) {
	return &c.shards[stripe%rowCacheShards], stripe / rowCacheShards
}

// get returns the cached entry of the encoded key in stripe, and the stripe's generation
// to pass to fill after a miss.
func (c *rowCache) get(stripe int, key []byte) (e rowEntry, hit bool, gen uint64) {
	if c == nil {
		return rowEntry{}, false, 0
	}
	s, i := c.shard(stripe)
	s.mu.Lock()
	slot, hit := s.index[string(key)]
	if hit {
		s.slots[slot].marked = true
		e = s.slots[slot].entry
		s.hits++
	} else {
		s.misses++
	}
	gen = s.gen[i]
	s.mu.Unlock()
	return e, hit, gen
}

// fill caches what a read found for the encoded key, unless the stripe was invalidated
// since get returned gen.
func (c *rowCache) fill(stripe int, key []byte, e rowEntry, gen uint64) {
	if c == nil || len(e.value) > rowCacheEntryMax {
		return
	}
	s, i := c.shard(stripe)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen[i] != gen {
		return
	}
	s.store(key, e)
}

// store caches e under key, in place of the key's old entry if it has one (whose mark
// it keeps), evicting other entries until the shard has room for it. A new entry takes
// the slot of the last one evicted for it, which the hand has just passed: as in CLOCK,
// it waits a whole sweep before the hand comes back to it. The caller holds s.mu.
func (s *rowShard) store(key []byte, e rowEntry) {
	marked := false
	if slot, ok := s.index[string(key)]; ok {
		marked = s.slots[slot].marked
		s.remove(slot)
	}
	size := entrySize(len(key), e)
	if size > s.maxBytes {
		return
	}
	for s.bytes+size > s.maxBytes {
		s.remove(s.victim())
		s.hand++
	}
	k := string(key)
	slot := len(s.slots)
	if n := len(s.free); n > 0 {
		slot, s.free = s.free[n-1], s.free[:n-1]
		s.slots[slot] = rowSlot{key: k, entry: e, used: true, marked: marked}
	} else {
		s.slots = append(s.slots, rowSlot{key: k, entry: e, used: true, marked: marked})
	}
	s.index[k] = slot
	s.bytes += size
}

// victim sweeps the hand to the first unmarked entry, unmarking the marked ones it
// passes, and returns its slot. The shard holds at least one entry.
func (s *rowShard) victim() int {
	for {
		if s.hand >= len(s.slots) {
			s.hand = 0
		}
		slot := &s.slots[s.hand]
		if slot.used && !slot.marked {
			return s.hand
		}
		slot.marked = false
		s.hand++
	}
}

// remove drops the entry of slot i, freeing the slot.
func (s *rowShard) remove(i int) {
	gone := &s.slots[i]
	delete(s.index, gone.key)
	s.bytes -= entrySize(len(gone.key), gone.entry)
	*gone = rowSlot{} // let the bytes go
	s.free = append(s.free, i)
}

// invalidate drops the encoded key of stripe and moves the stripe's generation on. The
// caller has committed a change to the key and holds the stripe's lock.
func (c *rowCache) invalidate(stripe int, key []byte) { c.set(stripe, key, nil) }

// replace is invalidate that then caches e, the key's bytes as the caller committed
// them: the read that follows a write finds them.
func (c *rowCache) replace(stripe int, key []byte, e rowEntry) {
	if len(e.value) > rowCacheEntryMax {
		c.set(stripe, key, nil)
		return
	}
	c.set(stripe, key, &e)
}

// set is invalidate (e nil) and replace.
func (c *rowCache) set(stripe int, key []byte, e *rowEntry) {
	if c == nil {
		return
	}
	s, i := c.shard(stripe)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen[i]++
	if e != nil {
		s.store(key, *e)
		return
	}
	if slot, ok := s.index[string(key)]; ok {
		s.remove(slot)
	}
}

// clear drops every entry and moves every generation on: after a commit that changed
// records by range.
func (c *rowCache) clear() {
	if c == nil {
		return
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		clear(s.index)
		clear(s.slots)
		s.slots, s.free = s.slots[:0], s.free[:0]
		s.hand, s.bytes = 0, 0
		for j := range s.gen {
			s.gen[j]++
		}
		s.mu.Unlock()
	}
}

// stats sums the shards' figures.
func (c *rowCache) stats() RowCacheStats {
	var st RowCacheStats
	if c == nil {
		return st
	}
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		st.Hits += s.hits
		st.Misses += s.misses
		st.Bytes += int64(s.bytes)
		st.Entries += len(s.index)
		s.mu.Unlock()
	}
	return st
}

func entrySize(keyBytes int, e rowEntry) int {
	return keyBytes + len(e.value) + rowEntryOverhead
}
