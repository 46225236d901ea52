package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
)

// The live-key index lets a client walk a keyspace's keys (Redis's SCAN, KEYS, DBSIZE)
// without meeting its tombstones. Each replicated keyspace has one entry per key whose
// record exists and is not a tombstone, ordered by the key's position: the hash
// partitioner's token of the key (ring.HashPartitioner), whatever the keyspace's own
// partitioner, so that a walk's cursor is one 64-bit number that any node understands.
//
//	entry key    0x00 's' <keyspace> 0x00 <position, 8 bytes big-endian> <user key>
//	entry value  a record header (see record.go): the stored value, without its value
//	             bytes, of the write that set the entry
//
// applyBatch keeps the entries in the same batch as the records, under the same stripe
// locks: a live record written over none, a tombstone, or a live record of another
// deadline or type sets the entry to its header; a tombstone written over a live record
// deletes it. A live record written over one of the same deadline and type, the common
// overwrite, leaves the entry as it is, so that it costs no second key. An entry's
// deadline and type are therefore its record's, and its timestamp is at or before the
// record's (lww.Newer never lets a write of a smaller timestamp win). A deleted key has
// no entry, and a walk never steps on it, except on the deletions Pebble has not
// compacted away yet: the engine compacts an index span once enough of its entries were
// deleted (see liveCompactor). Expired records keep their entry until garbage collection
// turns them into tombstones (which must call unindexLive); ScanLive reads each entry's
// record and skips those not Live at its time, CountLive reads the record only when the
// entry's header cannot tell (see there).
//
// Node-local keyspaces (schema's "system" prefix: hints, the ring, the catalog,
// watermarks) are never scanned by clients and are not indexed. Nor are the element
// records of collections (keys element.IsKey accepts: a hash's fields, a set's members):
// a walk counts keys, and a collection is listed once, by its own record
// (docs/redis-types.md).

const (
	// liveIndexTag follows internalKeyPrefix in the live-key index's keys.
	liveIndexTag = 's'
	// liveIndexVersion is the index's format, stored in its marker. Open (re)builds the
	// index when the marker is absent or names another version. Version 2 leaves element
	// records out, so a node opening data indexed by version 1 drops their entries;
	// version 3 keeps a record header in each entry, for CountLive. A build of
	// version 2 opening an index of version 3 rebuilds it too, so each may follow the
	// other.
	liveIndexVersion = 3
	// nodeLocalPrefix starts the names of node-local keyspaces (schema.SystemPrefix,
	// which storage cannot import); users cannot create keyspaces with it in any case.
	nodeLocalPrefix = "system"
	// positionBytes is the size of an entry's position.
	positionBytes = 8
)

var (
	// liveIndexMarker records that the index is complete: 0x00 's' 0x00 sorts before
	// every keyspace's entries, since keyspace names are never empty.
	liveIndexMarker = []byte{internalKeyPrefix, liveIndexTag, 0x00}
	// liveIndexLower and liveIndexUpper bound every keyspace's entries, the marker
	// excluded.
	liveIndexLower = []byte{internalKeyPrefix, liveIndexTag, 0x01}
	liveIndexUpper = []byte{internalKeyPrefix, liveIndexTag + 1}
)

// indexed reports whether keyspace ks has a live-key index.
func indexed(ks string) bool {
	return !strings.HasPrefix(strings.ToLower(ks), nodeLocalPrefix)
}

// indexedKey reports whether key of keyspace ks has an entry in the index when its record
// is live: a key of an indexed keyspace that is not an element record's.
func indexedKey(ks string, key []byte) bool {
	return indexed(ks) && !element.IsKey(key)
}

// KeyPosition returns a key's position in the live-key index: the hash partitioner's
// token of the key. A walk of the index (ScanLive) runs in position order.
func KeyPosition(key []byte) uint64 {
	return uint64(ring.HashPartitioner().Token(key))
}

// liveIndexPrefix returns the prefix of every entry of keyspace ks, with room for a
// position.
func liveIndexPrefix(ks string) []byte {
	return appendLiveIndexPrefix(make([]byte, 0, 3+len(ks)+positionBytes), ks)
}

// appendLiveIndexPrefix appends the prefix of every entry of keyspace ks to dst.
func appendLiveIndexPrefix(dst []byte, ks string) []byte {
	dst = append(dst, internalKeyPrefix, liveIndexTag)
	dst = append(dst, ks...)
	return append(dst, keySeparator)
}

// liveIndexBounds returns the Pebble key range holding exactly the entries of ks.
func liveIndexBounds(ks string) (lower, upper []byte) {
	lower = liveIndexPrefix(ks)
	upper = bytes.Clone(lower)
	upper[len(upper)-1] = keySeparator + 1
	return lower, upper
}

// liveIndexKey returns the entry key of userKey in keyspace ks, in one allocation: the
// write of a new key makes one.
func liveIndexKey(ks string, userKey []byte) []byte {
	key := appendLiveIndexPrefix(make([]byte, 0, 3+len(ks)+positionBytes+len(userKey)), ks)
	key = binary.BigEndian.AppendUint64(key, KeyPosition(userKey))
	return append(key, userKey...)
}

// reindex keeps ks's index in step with record r, whose stored form is encoded, written
// to b over current, the record stored before it (found says whether there was one).
func (e *Engine) reindex(b *pebble.Batch, ks string, r lww.Record, encoded []byte, current lww.Record, found bool) error {
	wasLive := found && !current.Tombstone
	switch {
	case r.Tombstone && !wasLive,
		!r.Tombstone && wasLive && r.ExpiresAt == current.ExpiresAt && r.Type == current.Type,
		!indexedKey(ks, r.Key):
		return nil
	case r.Tombstone:
		return e.unindexLive(b, ks, r.Key)
	}
	return b.Set(liveIndexKey(ks, r.Key), encoded[:len(encoded)-len(r.Value)], nil)
}

// unindexLive deletes key's entry from keyspace ks's live-key index in batch b. Every
// write that removes a non-tombstone record, or turns one into a tombstone, outside
// applyBatch must call it in the batch that does so: garbage collection of expired
// records, physical removals. Deleting an entry that does not exist is harmless.
func (e *Engine) unindexLive(b *pebble.Batch, ks string, key []byte) error {
	if !indexedKey(ks, key) {
		return nil
	}
	entry := liveIndexKey(ks, key)
	if err := b.Delete(entry, nil); err != nil {
		return err
	}
	e.compactor.owe(e, ks, int64(len(entry)+valueHeaderSize)) // its key and (about) its header
	return nil
}

// Span is the positions From..To, both included.
type Span struct {
	From, To uint64
}

// LiveScan is one walk of a keyspace's live-key index (ScanLive).
type LiveScan struct {
	// Spans are the positions to walk, in ascending order, disjoint.
	Spans []Span
	// Filter, when set, skips the keys it rejects (a scan of some token ranges of a
	// keyspace with the ordered partitioner); the key passed to it is valid only during
	// the call. Skipped keys count as visited.
	Filter func(key []byte) bool
	// Limit bounds the live records returned; CountOnly ignores it.
	Limit int
	// VisitMax bounds the entries visited, live or not, so that one walk's work stays
	// bounded even where many records have expired; <= 0 means no bound.
	VisitMax int
	// CountOnly counts the live records (Live, Expiring) without returning them.
	CountOnly bool
	// Now is the time records must be Live at.
	Now hlc.Timestamp
	// TruncatedAt is the keyspace's truncation: a record written at or before it is not
	// live, though collection may not have removed it yet.
	TruncatedAt hlc.Timestamp
}

// LivePage is what one walk found.
type LivePage struct {
	// Records are the live records met, in position order (keys of equal position in
	// key order), without their values; none with CountOnly.
	Records []lww.Record
	// Live counts the live records met, and Expiring those of them with an expiry.
	Live, Expiring int
	// Visited counts the entries visited.
	Visited int
	// Done reports that the walk reached the end of its last span. Otherwise it stopped
	// before position Next, an entry's: it visited every entry of its spans before Next,
	// and none at or after it. A walk never stops between two entries of one position,
	// so Next can resume it.
	Done bool
	Next uint64
}

// ScanLive walks keyspace ks's live-key index through req.Spans, reading each visited
// entry's record and keeping those Live at req.Now, until it has req.Limit live records
// or has visited req.VisitMax entries (and finished the position it is at), or reaches
// the end of its spans. A walk always visits at least one position. Tombstoned keys have
// no entry, so they cost nothing; a keyspace that is not indexed (node-local) yields
// nothing.
func (e *Engine) ScanLive(ks string, req LiveScan) (LivePage, error) {
	if err := validateKeyspace(ks); err != nil {
		return LivePage{}, err
	}
	if err := validateSpans(req.Spans); err != nil {
		return LivePage{}, fmt.Errorf("storage: scan live keys of keyspace %q: %w", ks, err)
	}
	if !req.CountOnly && req.Limit <= 0 {
		return LivePage{}, fmt.Errorf("storage: scan live keys of keyspace %q: limit %d, want at least 1", ks, req.Limit)
	}
	if err := e.enter(); err != nil {
		return LivePage{}, err
	}
	defer e.closeMu.RUnlock()
	if !indexed(ks) || len(req.Spans) == 0 {
		return LivePage{Done: true}, nil
	}

	prefix, _ := liveIndexBounds(ks)
	lower := positionKey(prefix, req.Spans[0].From)
	upper := spanEnd(prefix, req.Spans[len(req.Spans)-1].To)
	iter, err := e.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return LivePage{}, fmt.Errorf("storage: scan live keys of keyspace %q: %w", ks, err)
	}
	walk := liveWalk{e: e, ks: ks, iter: iter, prefixLen: len(prefix), req: req}
	page, err := walk.run(prefix)
	stepped := iter.Stats().InternalStats.PointCount
	if err = errors.Join(err, iter.Error(), iter.Close()); err != nil {
		return LivePage{}, fmt.Errorf("storage: scan live keys of keyspace %q: %w", ks, err)
	}
	e.liveStats.walks.Add(1)
	e.liveStats.visited.Add(int64(page.Visited))
	e.liveStats.stepped.Add(int64(stepped))
	if int64(stepped)-int64(page.Visited) >= compactAfterSteps {
		e.compactor.stepped(e, ks)
	}
	return page, nil
}

// CountLive counts the records of keyspace ks Live at now and written after truncatedAt:
// what ScanLive counts with CountOnly over every position, from the index's entries
// rather than the records. An entry's header holds its record's deadline, which says
// whether the record is Live at now, and a timestamp at or before the record's: one
// after truncatedAt says the record was written after it too. Only an entry whose
// timestamp is at or before truncatedAt has its record read, whose own timestamp may be
// later: after a truncation, until this node's Truncate has removed the records it
// hides, and then for the keys written again since without a change of deadline or type.
// A count is otherwise a walk of the keys of the live records and a header each, a few
// dozen bytes whatever the size of their values. It is what a node's periodic counts of
// its rows run.
func (e *Engine) CountLive(ks string, now, truncatedAt hlc.Timestamp) (int64, error) {
	if err := validateKeyspace(ks); err != nil || !indexed(ks) {
		return 0, err // as ScanLive: a node-local keyspace has no live keys to count
	}
	if err := e.enter(); err != nil {
		return 0, err
	}
	defer e.closeMu.RUnlock()
	// The entries, and the records read behind some of them, as of one moment.
	snap := e.db.NewSnapshot()
	defer snap.Close()
	lower, upper := liveIndexBounds(ks)
	iter, err := snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return 0, fmt.Errorf("storage: count live keys of keyspace %q: %w", ks, err)
	}
	var live int64
	for valid := iter.First(); valid && err == nil; valid = iter.Next() {
		var counted bool
		counted, err = countEntry(snap, ks, iter.Key()[len(lower):], iter.Value(), now, truncatedAt)
		if counted {
			live++
		}
	}
	if err = errors.Join(err, iter.Error(), iter.Close()); err != nil {
		return 0, fmt.Errorf("storage: count live keys of keyspace %q: %w", ks, err)
	}
	return live, nil
}

// countEntry reports whether the record behind an entry of ks's index (its key after the
// keyspace's prefix, and its header) is Live at now and written after truncatedAt, from
// the header, and from the record as snap holds it when the header's timestamp is at or
// before truncatedAt.
func countEntry(snap *pebble.Snapshot, ks string, entry, header []byte, now, truncatedAt hlc.Timestamp) (bool, error) {
	if len(entry) < positionBytes {
		return false, fmt.Errorf("%w: live-key index entry %q is too short", ErrCorrupt, entry)
	}
	userKey := entry[positionBytes:]
	r, value, err := decodeHeader(userKey, header)
	switch {
	case err != nil:
		return false, err
	case r.Tombstone || len(value) > 0:
		return false, fmt.Errorf("%w: live-key index entry of key %q holds no live record's header", ErrCorrupt, userKey)
	case !r.Live(now):
		return false, nil
	case r.Timestamp > truncatedAt:
		return true, nil
	}
	r, found, err := readRecord(snap, userKey, encodeKey(ks, userKey))
	return found && r.Live(now) && r.Timestamp > truncatedAt, err
}

// Count counts the records stored in keyspace ks, tombstones included, from their keys
// alone: no value is read out or decoded, so counting a keyspace of large values (a
// node's hints for a target down for hours) costs no memory.
func (e *Engine) Count(ks string) (int64, error) {
	var n int64
	if err := e.walkStored(ks, func(*pebble.Iterator) error { n++; return nil }); err != nil {
		return 0, fmt.Errorf("storage: count the records of keyspace %q: %w", ks, err)
	}
	return n, nil
}

// walkStored calls visit with an iterator on each record stored in keyspace ks, in key
// order, until visit fails.
func (e *Engine) walkStored(ks string, visit func(iter *pebble.Iterator) error) error {
	if err := validateKeyspace(ks); err != nil {
		return err
	}
	if err := e.enter(); err != nil {
		return err
	}
	defer e.closeMu.RUnlock()
	lower, upper := keyspaceBounds(ks)
	iter, err := e.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	for valid := iter.First(); valid; valid = iter.Next() {
		if err := visit(iter); err != nil {
			_ = iter.Close() // visit's error is the one worth reporting
			return err
		}
	}
	return errors.Join(iter.Error(), iter.Close())
}

// validateSpans refuses spans out of order, overlapping or upside down.
func validateSpans(spans []Span) error {
	for i, sp := range spans {
		if sp.From > sp.To {
			return fmt.Errorf("span %d: position %d after %d", i, sp.From, sp.To)
		}
		if i > 0 && sp.From <= spans[i-1].To {
			return fmt.Errorf("span %d starts at %d, not after the previous one's end %d", i, sp.From, spans[i-1].To)
		}
	}
	return nil
}

// positionKey returns the first index key at position in the keyspace of prefix.
func positionKey(prefix []byte, position uint64) []byte {
	return binary.BigEndian.AppendUint64(bytes.Clone(prefix), position)
}

// spanEnd returns the index key after every entry at or before position to.
func spanEnd(prefix []byte, to uint64) []byte {
	if to == math.MaxUint64 {
		end := bytes.Clone(prefix)
		end[len(end)-1] = keySeparator + 1
		return end
	}
	return positionKey(prefix, to+1)
}

// liveWalk is one ScanLive's walk.
type liveWalk struct {
	e         *Engine
	ks        string
	iter      *pebble.Iterator
	prefixLen int
	req       LiveScan
	page      LivePage
}

// run walks the spans in order: a seek to each span's start, then entry by entry to its
// end.
func (w *liveWalk) run(prefix []byte) (LivePage, error) {
	stop := false
	var at uint64 // the position of the last entry visited
	for _, sp := range w.req.Spans {
		for valid := w.iter.SeekGE(positionKey(prefix, sp.From)); valid; valid = w.iter.Next() {
			entry := w.iter.Key()
			if len(entry) < w.prefixLen+positionBytes {
				return w.page, fmt.Errorf("%w: live-key index entry %q is too short", ErrCorrupt, entry)
			}
			position := binary.BigEndian.Uint64(entry[w.prefixLen:])
			if position > sp.To {
				break
			}
			if stop && position != at {
				w.page.Next = position
				return w.page, nil
			}
			at = position
			if err := w.visit(entry[w.prefixLen+positionBytes:]); err != nil {
				return w.page, err
			}
			stop = (!w.req.CountOnly && len(w.page.Records) >= w.req.Limit) ||
				(w.req.VisitMax > 0 && w.page.Visited >= w.req.VisitMax)
		}
	}
	w.page.Done = true
	return w.page, nil
}

// visit counts one entry, and keeps its record if it passes the filter and is live.
func (w *liveWalk) visit(userKey []byte) error {
	w.page.Visited++
	if w.req.Filter != nil && !w.req.Filter(userKey) {
		return nil
	}
	r, found, err := readRecord(w.e.db, userKey, encodeKey(w.ks, userKey))
	if err != nil || !found || !r.Live(w.req.Now) || r.Timestamp <= w.req.TruncatedAt {
		return err
	}
	w.page.Live++
	if r.ExpiresAt != 0 {
		w.page.Expiring++
	}
	if !w.req.CountOnly {
		r.Value = nil
		w.page.Records = append(w.page.Records, r)
	}
	return nil
}

// buildLiveIndex builds the live-key index of the records written before it existed,
// once: when the marker is absent (a database from an earlier version, or a build cut
// short by a crash) or names another version. It first clears whatever entries a build
// cut short left, then writes an entry for every live record, and the marker last, in a
// synced batch: the write-ahead log keeps batches in order, so a marker that survives a
// crash vouches for every entry before it. Open runs it before any write.
func buildLiveIndex(db *pebble.DB, logger *slog.Logger) error {
	marker, closer, err := db.Get(liveIndexMarker)
	switch {
	case err == nil:
		current := len(marker) == 1 && marker[0] == liveIndexVersion
		closer.Close()
		if current {
			return nil
		}
	case !errors.Is(err, pebble.ErrNotFound):
		return fmt.Errorf("read the live-key index marker: %w", err)
	}
	began := time.Now()
	if err := db.DeleteRange(liveIndexLower, liveIndexUpper, pebble.NoSync); err != nil {
		return fmt.Errorf("clear the live-key index: %w", err)
	}
	iter, err := db.NewIter(&pebble.IterOptions{LowerBound: firstRecordKey})
	if err != nil {
		return fmt.Errorf("build the live-key index: %w", err)
	}
	entries, err := writeLiveEntries(db, iter)
	if err = errors.Join(err, iter.Error(), iter.Close()); err != nil {
		return fmt.Errorf("build the live-key index: %w", err)
	}
	if err := db.Set(liveIndexMarker, []byte{liveIndexVersion}, pebble.Sync); err != nil {
		return fmt.Errorf("build the live-key index: %w", err)
	}
	logger.Info("storage: built the live-key index", "entries", entries, "took", time.Since(began))
	return nil
}

// backfillBatchBytes bounds a batch of the index build; a variable so that tests can
// build in many batches.
var backfillBatchBytes = 1 << 20

// backfillCommitted, when set by a test, is called after each batch of the index build
// is committed; an error stops the build, as a crash would.
var backfillCommitted func(db *pebble.DB) error

// writeLiveEntries writes an index entry for every live record iter walks, in unsynced
// batches, and returns how many it wrote.
func writeLiveEntries(db *pebble.DB, iter *pebble.Iterator) (entries int, err error) {
	batch := db.NewBatch()
	defer func() { batch.Close() }()
	commit := func() error {
		if err := batch.Commit(pebble.NoSync); err != nil {
			return err
		}
		batch.Close()
		batch = db.NewBatch()
		if backfillCommitted != nil {
			return backfillCommitted(db)
		}
		return nil
	}
	for valid := iter.First(); valid; {
		ks, userKey, err := splitKey(iter.Key())
		if err != nil {
			return entries, err
		}
		if !indexed(ks) {
			_, upper := keyspaceBounds(ks)
			valid = iter.SeekGE(upper)
			continue
		}
		encoded := iter.Value()
		r, value, err := decodeHeader(userKey, encoded)
		if err != nil {
			return entries, fmt.Errorf("keyspace %q: %w", ks, err)
		}
		if !r.Tombstone && !element.IsKey(userKey) {
			if err := batch.Set(liveIndexKey(ks, userKey), encoded[:len(encoded)-len(value)], nil); err != nil {
				return entries, err
			}
			entries++
		}
		if batch.Len() >= backfillBatchBytes {
			if err := commit(); err != nil {
				return entries, err
			}
		}
		valid = iter.Next()
	}
	return entries, commit()
}
