package storage

import (
	"context"
	"sync"
	"sync/atomic"
)

// Deleting an index entry leaves a deletion in Pebble that every walk over its position
// steps over until a compaction drops it with the entry it deletes; Pebble compacts by
// size and file count, not by deletions, so 100,000 deleted keys could slow a walk by
// tens of milliseconds for as long as the store stays quiet. The engine therefore
// compacts a keyspace's index span itself once it owes it enough: the bytes of entries
// deleted since the span was last compacted reach an eighth of the span's size on disk
// (and at least compactAfterBytes). A walk then steps over at most about one deletion
// per eight entries, plus compactAfterBytes' worth, and each compaction rewrites about
// eight times the bytes deleted since the last one: the cost of a deletion stays bounded
// and is paid once, in the background. Debts are kept in memory; after a restart, the
// first walk of a keyspace that steps over many deletions compacts it once.

// compactAfterBytes is the smallest debt that compacts an index span: a few thousand
// deletions, which a walk steps over in about a millisecond.
const compactAfterBytes = 128 << 10

// compactAfterSteps is how many more Pebble points than entries a walk must step over
// for it to compact its keyspace's span (once per keyspace and process).
const compactAfterSteps = 4096

// liveCompactor schedules the compactions of index spans, one at a time, in the
// background.
type liveCompactor struct {
	mu sync.Mutex
	// owed is, per keyspace, the bytes of index entries deleted since its span was last
	// compacted (or since Open); checkAt is the debt at which to look at the span's
	// size again.
	owed, checkAt map[string]int64
	// walked lists the keyspaces a walk already had compacted.
	walked  map[string]bool
	queue   []string
	queued  map[string]bool
	running sync.WaitGroup // the worker, while it runs
	busy    bool
}

// owe records that bytes of ks's index entries were deleted, and schedules a compaction
// of its span when the debt is large enough against the span's size.
func (c *liveCompactor) owe(e *Engine, ks string, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owed == nil {
		c.owed, c.checkAt = map[string]int64{}, map[string]int64{}
	}
	c.owed[ks] += bytes
	if c.owed[ks] < max(c.checkAt[ks], compactAfterBytes) {
		return
	}
	lower, upper := liveIndexBounds(ks)
	size, err := e.db.EstimateDiskUsage(lower, upper)
	if err != nil {
		e.logger.Warn("storage: measure a live-key index span", "keyspace", ks, "err", err)
		return
	}
	if eighth := int64(size / 8); c.owed[ks] < eighth {
		c.checkAt[ks] = eighth
		return
	}
	c.enqueue(e, ks)
}

// stepped schedules a compaction of ks's span after a walk stepped over many deletions,
// once per keyspace: the debts of a previous process are not known.
func (c *liveCompactor) stepped(e *Engine, ks string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.walked == nil {
		c.walked = map[string]bool{}
	}
	if !c.walked[ks] {
		c.walked[ks] = true
		c.enqueue(e, ks)
	}
}

// enqueue schedules a compaction of ks's span, starting the worker if needed. c.mu is
// held.
func (c *liveCompactor) enqueue(e *Engine, ks string) {
	delete(c.owed, ks)
	delete(c.checkAt, ks)
	if c.queued == nil {
		c.queued = map[string]bool{}
	}
	if c.queued[ks] {
		return
	}
	c.queued[ks] = true
	c.queue = append(c.queue, ks)
	if !c.busy {
		c.busy = true
		c.running.Add(1)
		go c.work(e)
	}
}

// work compacts the queued spans until none is left or the engine closes.
func (c *liveCompactor) work(e *Engine) {
	defer c.running.Done()
	for {
		c.mu.Lock()
		if len(c.queue) == 0 {
			c.busy = false
			c.mu.Unlock()
			return
		}
		ks := c.queue[0]
		c.queue = c.queue[1:]
		delete(c.queued, ks)
		c.mu.Unlock()
		if err := e.compactLiveIndex(ks); err != nil {
			e.logger.Warn("storage: compact a live-key index span", "keyspace", ks, "err", err)
		}
	}
}

// compactLiveIndex compacts ks's index span, dropping the deletions of its entries. An
// engine that is closed has nothing left to compact.
func (e *Engine) compactLiveIndex(ks string) error {
	if err := e.enter(); err != nil {
		return nil
	}
	defer e.closeMu.RUnlock()
	lower, upper := liveIndexBounds(ks)
	if err := e.db.Compact(context.Background(), lower, upper, false); err != nil {
		return err
	}
	e.liveStats.compactions.Add(1)
	return nil
}

// IndexStats counts the live-key index's work since Open, for metrics and tests.
type IndexStats struct {
	// Walks counts ScanLive calls.
	Walks int64
	// Visited counts the entries the walks visited.
	Visited int64
	// Stepped counts the Pebble points the walks' iterators stepped over: the entries,
	// and the deletions of removed entries that no compaction has dropped yet.
	Stepped int64
	// Compactions counts the compactions of index spans.
	Compactions int64
}

// liveStats are IndexStats' counters.
type liveStats struct {
	walks, visited, stepped, compactions atomic.Int64
}

// IndexStats returns the live-key index's counters.
func (e *Engine) IndexStats() IndexStats {
	return IndexStats{
		Walks:       e.liveStats.walks.Load(),
		Visited:     e.liveStats.visited.Load(),
		Stepped:     e.liveStats.stepped.Load(),
		Compactions: e.liveStats.compactions.Load(),
	}
}
