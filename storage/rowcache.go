package storage

import (
	"sync"
)

// The row cache keeps the stored bytes of recently read and written records in front of
// Pebble. A point read of a record in Pebble's memtable or block cache still builds an
// iterator over every level, finds the file, and seeks its index and data blocks: the
// largest share of a single node's CPU per GET, and of a SET's, whose last-writer-wins
// comparison reads the stored record first (docs/performance.md). A hit costs one map
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
// or a marker for a key Pebble does not hold. Eviction is random (Go's map order), which
// for skewed key popularity keeps the hot keys most of the time at no bookkeeping cost.

const (
	// DefaultRowCacheBytes is the row cache of an engine that names none: about 64,000
	// records of 256 bytes, a little of a small node's memory.
	DefaultRowCacheBytes = 16 << 20
	// rowCacheShards spreads the cache's locking; a divisor of lockStripes, so that a
	// stripe's keys are in one shard.
	rowCacheShards = 16
	// rowCacheEntryMax is the largest value cached: a larger one would evict many small
	// ones for a read whose cost is dominated by copying it anyway.
	rowCacheEntryMax = 16 << 10
	// rowEntryOverhead approximates the memory of an entry beyond its key and value bytes
	// (the map slot, the string and slice headers).
	rowEntryOverhead = 64
)

// rowCache is the cache; the zero value is not usable, see newRowCache. A nil *rowCache
// caches nothing.
type rowCache struct {
	shards [rowCacheShards]rowShard
}

type rowShard struct {
	mu       sync.Mutex
	entries  map[string]rowEntry
	bytes    int
	maxBytes int
	// gen counts the invalidations of each stripe of this shard, indexed by stripe /
	// rowCacheShards.
	gen [lockStripes / rowCacheShards]uint64
}

// rowEntry is a cached record: its stored bytes, or found false for a key with none.
type rowEntry struct {
	value []byte
	found bool
}

// newRowCache returns a cache of about maxBytes, or nil (no cache) for maxBytes < 0.
func newRowCache(maxBytes int64) *rowCache {
	if maxBytes < 0 {
		return nil
	}
	c := &rowCache{}
	for i := range c.shards {
		c.shards[i].entries = map[string]rowEntry{}
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
	e, hit = s.entries[string(key)]
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
	if old, ok := s.entries[string(key)]; ok {
		s.bytes -= entrySize(key, old)
	}
	s.store(key, e)
}

// store adds e under key, whose old entry the caller has accounted for, and evicts
// entries at random until the shard is within its bytes. The caller holds s.mu.
func (s *rowShard) store(key []byte, e rowEntry) {
	s.entries[string(key)] = e
	s.bytes += entrySize(key, e)
	for k, victim := range s.entries {
		if s.bytes <= s.maxBytes {
			break
		}
		delete(s.entries, k)
		s.bytes -= entrySize([]byte(k), victim)
	}
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
	if old, ok := s.entries[string(key)]; ok {
		s.bytes -= entrySize(key, old)
		delete(s.entries, string(key))
	}
	if e != nil {
		s.store(key, *e)
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
		clear(s.entries)
		s.bytes = 0
		for j := range s.gen {
			s.gen[j]++
		}
		s.mu.Unlock()
	}
}

func entrySize(key []byte, e rowEntry) int {
	return len(key) + len(e.value) + rowEntryOverhead
}
