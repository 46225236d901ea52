package replica

import (
	"context"
	"fmt"

	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/ring"
	"github.com/kuradb/kura/schema"
	"github.com/kuradb/kura/storage"
)

// Keyspaces looks keyspace definitions up; *schema.Catalog is one.
type Keyspaces interface {
	Get(name string) (schema.Keyspace, error)
}

// Local is this node's replica: its storage engine. Writes go straight to the engine;
// reads will pass through the read stage here once it exists, so that every read the
// node serves, for itself or for another coordinator, shares one queue.
type Local struct {
	engine    *storage.Engine
	keyspaces Keyspaces
	offloads  OffloadLog // nil: the node holds no offloaded writes
}

// NewLocal returns the replica over engine; keyspaces gives scans their partitioner, and
// offloads keeps the writes this node holds for sleeping replicas.
func NewLocal(engine *storage.Engine, keyspaces Keyspaces, offloads OffloadLog) *Local {
	return &Local{engine: engine, keyspaces: keyspaces, offloads: offloads}
}

// Apply stores records durably (the engine syncs its WAL before it returns).
func (l *Local) Apply(_ context.Context, keyspace string, records []lww.Record) error {
	_, err := l.engine.ApplyBatch(keyspace, records)
	return err
}

// Get reads key from the engine.
func (l *Local) Get(_ context.Context, keyspace string, key []byte) (lww.Record, bool, error) {
	return l.engine.Get(keyspace, key)
}

// ReadChunk reads a chunk key from the engine.
func (l *Local) ReadChunk(ctx context.Context, keyspace string, chunkKey []byte) (lww.Record, bool, error) {
	return l.Get(ctx, keyspace, chunkKey)
}

// Scan reads the engine's records of the requested ranges.
func (l *Local) Scan(_ context.Context, req ScanRequest) ([]lww.Record, error) {
	ks, err := l.keyspaces.Get(req.Keyspace)
	if err != nil {
		return nil, err
	}
	recs, err := l.engine.Scan(ks.Name, req.Start, req.End, req.Limit, true, inRanges(ks, req.Ranges))
	if req.KeysOnly {
		for i := range recs {
			recs[i].Value = nil
		}
	}
	return recs, err
}

// StoredBytes returns how many records this node stores for keyspace (tombstones
// included) and their key and value bytes: with the other nodes' figures, the storage a
// keyspace costs, which experiments compare with the raw data.
func (l *Local) StoredBytes(keyspace string) (records int, total int64, err error) {
	err = l.each(keyspace, func(r lww.Record) error {
		records++
		total += int64(len(r.Key) + len(r.Value))
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("measure keyspace %s: %w", keyspace, err)
	}
	return records, total, nil
}

// DropUnless removes the records of keyspace whose key keep rejects (the data a node no
// longer owns after a move) and returns how many it removed and their bytes.
func (l *Local) DropUnless(keyspace string, keep func(key []byte) bool) (removed int64, bytes int64, err error) {
	err = l.each(keyspace, func(r lww.Record) error {
		if keep(r.Key) {
			return nil
		}
		if err := l.engine.Remove(keyspace, r.Key); err != nil {
			return err
		}
		removed++
		bytes += int64(len(r.Key) + len(r.Value))
		return nil
	})
	if err != nil {
		return removed, bytes, fmt.Errorf("clean up keyspace %s: %w", keyspace, err)
	}
	return removed, bytes, nil
}

// each calls fn for every record of keyspace, tombstones included, in key order, a page
// at a time so a large keyspace is never held in memory whole.
func (l *Local) each(keyspace string, fn func(lww.Record) error) error {
	const page = 1024
	var start []byte
	for {
		recs, err := l.engine.Scan(keyspace, start, nil, page, true, nil)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
		}
		if len(recs) < page {
			return nil
		}
		start = append(recs[len(recs)-1].Key, 0)
	}
}

// inRanges returns a key filter that accepts keys whose token lies in one of ranges.
// During a rebalance (ks.Moving) a key's token under the next split keys counts too:
// the coordinator that planned the ranges may already read with the splits this node
// holds as next, or not yet with those it holds as current, for as long as the
// definition takes to reach every node; the extra keys are ones this replica holds, and
// the coordinator reconciles them like any other answer.
func inRanges(ks schema.Keyspace, ranges []ring.Range) func([]byte) bool {
	current := tokenIn(ks.Partition(), ranges)
	next := ks.NextPartition()
	if next == nil {
		return current
	}
	alsoNext := tokenIn(next, ranges)
	return func(key []byte) bool { return current(key) || alsoNext(key) }
}

// tokenIn returns a key filter that accepts keys whose token under p lies in one of
// ranges.
func tokenIn(p ring.Partitioner, ranges []ring.Range) func([]byte) bool {
	return func(key []byte) bool {
		t := p.Token(key)
		for _, rg := range ranges {
			if rg.Contains(t) {
				return true
			}
		}
		return false
	}
}
