package coord

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
)

// Conflict-free counters (docs/redis-types.md "Counters", internal/core/collection/counter): a header
// of type lww.Counter and element records, a shard and an offset per writer. Unlike the
// other collections a counter needs its header's history, not only whether it is live:
// an increment that finds the key dead removes the shards of the earlier life up to the
// moment it died, and no later.

// CounterRead is what a read of a counter key finds.
type CounterRead struct {
	// Header is the newest version of the key's own record, a tombstone or an expired
	// one included; Found is false when there is none (or a truncation hides it).
	Header lww.Record
	Found  bool
	// Live reports whether Header is a value a client sees now.
	Live bool
	// Elements are the key's live element records newer than its reset point (left by
	// a hash or another collection the key was before), in key order.
	Elements []lww.Record
	// CollectedBy bounds, when no header is found, when an earlier life's could have
	// died: the read's time less the tombstone grace, since storage removes a tombstone
	// (or an expired header) only that long after it (see DiedAt).
	CollectedBy hlc.Timestamp
}

// DiedAt is when the key's previous life ended, for an increment that finds it dead: the
// tombstone's timestamp, the expired header's deadline, or, with no header, CollectedBy.
//
// No header is not "every element is an earlier life's": the header and the shard are
// separate records of one write (writeTogether), so the replicas read may hold a live
// counter's shard without its header yet, when the header's copy is late or lost (a
// hint owed, a cut between DCs). Offsetting that shard would remove its acknowledged
// increments for good. A header that is gone for good was removed by garbage collection,
// at least the tombstone grace after the death, so the earlier life's shards are older
// than CollectedBy, and a shard newer than it is the live counter's.
func (r CounterRead) DiedAt() hlc.Timestamp {
	switch {
	case !r.Found:
		return r.CollectedBy
	case r.Header.Tombstone:
		return r.Header.Timestamp
	}
	return r.Header.ExpiresAt
}

// ReadCounter reads counter key's own record, dead or alive, and its element records at
// level cl: two scans of the key's partition, concurrent, on the replicas the level asks.
func (c *Coordinator) ReadCounter(ctx context.Context, keyspace string, key []byte, cl consistency.Level) (CounterRead, error) {
	ks, err := c.collectionKeyspace(keyspace, key)
	if err != nil {
		return CounterRead{}, err
	}
	var (
		wg         sync.WaitGroup
		headers    []lww.Record
		headersErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		headers, headersErr = c.scanPartition(ctx, ks, key, key, append(bytes.Clone(key), 0), cl)
	}()
	recs, err := c.scanPartition(ctx, ks, key, element.Prefix(key), element.PrefixEnd(key), cl)
	wg.Wait()
	if err == nil {
		err = headersErr
	}
	if err != nil {
		return CounterRead{}, err
	}
	now := c.clock.Now()
	out := CounterRead{CollectedBy: collectedBy(now, c.cfg.TombstoneGrace)}
	for _, rec := range headers {
		if bytes.Equal(rec.Key, key) && rec.Timestamp > ks.TruncatedAt {
			out.Header, out.Found, out.Live = rec, true, visible(ks, rec, now)
		}
	}
	resetKey := element.Key(key, element.Reset, nil)
	var reset hlc.Timestamp
	for _, rec := range recs {
		if bytes.Equal(rec.Key, resetKey) {
			reset = resetPoint(ks, rec, true)
		}
	}
	for _, rec := range recs {
		if rec.Timestamp > reset && !bytes.Equal(rec.Key, resetKey) && visible(ks, rec, now) {
			out.Elements = append(out.Elements, rec)
		}
	}
	return out, nil
}

// collectedBy is the newest death a garbage collection at now can have removed the
// header of: now less grace, and at least the first timestamp, as Reset takes zero for
// "no bound".
func collectedBy(now hlc.Timestamp, grace time.Duration) hlc.Timestamp {
	return max(hlc.FromTime(now.WallTime().Add(-grace)), 1)
}

// CounterWrite is a write of a counter's records.
type CounterWrite struct {
	// Header is the key's own record to write (its Type and ExpiresAt), stamped with the
	// write's timestamp; nil writes none.
	Header *lww.Record
	// Elements are element records of the key stamped with the write's timestamp: the
	// writer's shard.
	Elements []lww.Record
	// Stamped are element records of the key written with the timestamps they carry:
	// offsets, stamped as the shard versions they remove.
	Stamped []lww.Record
}

// WriteCounter writes w's records of counter key at level cl, all at once: the header
// and the elements stamped with one timestamp t, which it returns, and the stamped
// records as they are. The write fails if one of them does. The header is not held back
// until the elements are written, as a collection's is: a header without the new shard
// is the counter at its earlier value.
func (c *Coordinator) WriteCounter(ctx context.Context, keyspace string, key []byte, w CounterWrite, cl consistency.Level) (hlc.Timestamp, error) {
	if _, err := c.collectionKeyspace(keyspace, key); err != nil {
		return 0, err
	}
	if cl.IsSerial() {
		return 0, invalid("%v is the level of lightweight transactions; a counter's write takes ANY to ALL", cl)
	}
	if w.Header != nil {
		if err := c.checkType(w.Header.Type); err != nil {
			return 0, err
		}
	}
	for _, e := range append(append([]lww.Record(nil), w.Elements...), w.Stamped...) {
		if coll, _, _, ok := element.Parse(e.Key); !ok || !bytes.Equal(coll, key) {
			return 0, invalid("key %q is not an element record of counter %q", e.Key, key)
		}
		if err := c.checkValue(e.Value); err != nil {
			return 0, err
		}
	}
	for _, e := range w.Stamped {
		if e.Timestamp == 0 {
			return 0, invalid("element %q is to keep its timestamp, and has none", e.Key)
		}
	}
	t, err := c.stampWrite(ctx)
	if err != nil {
		return 0, err
	}
	defer c.gate.exit()
	recs := make([]lww.Record, 0, len(w.Elements)+len(w.Stamped)+1)
	for _, e := range w.Elements {
		recs = append(recs, lww.Record{Key: e.Key, Value: e.Value, Tombstone: e.Tombstone, Timestamp: t})
	}
	for _, e := range w.Stamped {
		recs = append(recs, lww.Record{Key: e.Key, Value: e.Value, Tombstone: e.Tombstone, Timestamp: e.Timestamp})
	}
	if w.Header != nil {
		recs = append(recs, lww.Record{Key: key, Value: w.Header.Value, Type: w.Header.Type, ExpiresAt: w.Header.ExpiresAt, Timestamp: t})
	}
	return t, c.writeTogether(ctx, keyspace, recs, cl)
}
