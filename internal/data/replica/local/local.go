// Package local is the Replica (package replica) of this node's data: its storage
// engine, every read through the node's read stage (package sched). The assemblies (node,
// the simulator) build it; the coordinator sees it only as a replica.Replica.
package local

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/io/storage"
)

// Keyspaces looks keyspace definitions up; *schema.Catalog is one.
type Keyspaces interface {
	Get(name string) (schema.Keyspace, error)
}

// Local is this node's replica: its storage engine. Writes go straight to the engine;
// every read passes through the node's read stage (package sched), so that every read
// the node serves, for itself or for another coordinator, shares one bounded pool and
// one queue ordered by the node's read policy.
type Local struct {
	engine    *storage.Engine
	keyspaces Keyspaces
	offloads  OffloadLog // nil: the node holds no offloaded writes
	stage     *sched.Stage
}

// NewLocal returns the replica over engine; keyspaces gives scans their partitioner,
// offloads keeps the writes this node holds for sleeping replicas, and stage runs its
// reads.
func NewLocal(engine *storage.Engine, keyspaces Keyspaces, offloads OffloadLog, stage *sched.Stage) *Local {
	return &Local{engine: engine, keyspaces: keyspaces, offloads: offloads, stage: stage}
}

// staged runs read, one read of the engine, on l's read stage as task t. read returns
// its result and how many bytes it read (the emulated device time depends on them).
func staged[T any](ctx context.Context, l *Local, t sched.Task, read func() (T, int, error)) (T, error) {
	var out T
	var err error
	if doErr := l.stage.Do(ctx, t, func() int {
		var n int
		out, n, err = read()
		return n
	}); doErr != nil {
		return out, doErr
	}
	return out, err
}

// getClass is a point read's class in the read stage: a remote coordinator's, when the
// Server marked ctx, or this node's own.
func getClass(ctx context.Context) sched.Class {
	if replica.ServedRemotely(ctx) {
		return sched.RemoteGet
	}
	return sched.LocalGet
}

// Apply stores records durably (the engine syncs its WAL before it returns).
func (l *Local) Apply(_ context.Context, keyspace string, records []lww.Record) error {
	_, err := l.engine.ApplyBatch(keyspace, records)
	return err
}

// ApplyClientBatch stores a client's records durably, as Apply, and leaves them in the
// engine's row cache for the reads that follow (storage.Engine.ApplyClientBatch).
func (l *Local) ApplyClientBatch(_ context.Context, keyspace string, records []lww.Record) error {
	_, err := l.engine.ApplyClientBatch(keyspace, records)
	return err
}

// Get reads key from the engine.
func (l *Local) Get(ctx context.Context, keyspace string, key []byte) (lww.Record, bool, error) {
	type found struct {
		rec lww.Record
		ok  bool
	}
	f, err := staged(ctx, l, sched.Task{Class: getClass(ctx)}, func() (found, int, error) {
		rec, ok, err := l.engine.Get(keyspace, key)
		return found{rec, ok}, len(rec.Key) + len(rec.Value), err
	})
	return f.rec, f.ok, err
}

// GetMany reads keys from the engine in one task of the read stage, so that a batch of
// point reads (a pipeline's GETs, an MGET) costs one hand-off to the stage, not one each.
func (l *Local) GetMany(ctx context.Context, keyspace string, keys [][]byte, valueBytesMax int) ([]lww.Record, []bool, error) {
	records, found := make([]lww.Record, 0, len(keys)), make([]bool, 0, len(keys))
	_, err := staged(ctx, l, sched.Task{Class: getClass(ctx)}, func() (struct{}, int, error) {
		n, values := 0, 0
		err := l.engine.GetEach(keyspace, keys, func(_ int, rec lww.Record, ok bool) bool {
			records, found = append(records, rec), append(found, ok)
			n += len(rec.Key) + len(rec.Value)
			values += len(rec.Value)
			return values < valueBytesMax
		})
		return struct{}{}, n, err
	})
	return records, found, err
}

// ReadChunk reads a chunk key from the engine.
func (l *Local) ReadChunk(ctx context.Context, keyspace string, chunkKey []byte) (lww.Record, bool, error) {
	return l.Get(ctx, keyspace, chunkKey)
}

// Scan reads the engine's records of the requested ranges, a page at a time on the
// read stage.
func (l *Local) Scan(ctx context.Context, req replica.ScanRequest) ([]lww.Record, error) {
	ks, err := l.keyspaces.Get(req.Keyspace)
	if err != nil {
		return nil, err
	}
	filter := inRanges(ks.Partition(), req.Ranges)
	if next := ks.NextPartition(); next != nil {
		// While the keyspace moves to new split keys, the coordinator may plan its scan
		// under either definition: answer the keys in the ranges under both, and let
		// it keep those in its own (a superset, in key order, so a cut-off still holds).
		if current, inNext := filter, inRanges(next, req.Ranges); current != nil && inNext != nil {
			filter = func(key []byte) bool { return current(key) || inNext(key) }
		} else {
			filter = nil
		}
	}
	task := sched.Task{Class: sched.ScanPage, Scan: req.Scan, Nodes: req.Nodes, Limit: req.Limit, Since: time.Now()}
	if req.ScanLimit > 0 {
		task.Limit = req.ScanLimit // RaS orders a scan alike at all its nodes
	}
	var out []lww.Record
	answered := 0 // key and value bytes of out
	paged := 0    // the same, less the values a KeysOnly answer drops: what PageBytes bounds
	start := req.Start
	// Each page holds a worker for at most sched.PageRows rows or sched.PageBytes bytes:
	// a long scan goes back to the queue between pages, so that reads queued behind it
	// wait for one page, not for the whole scan.
	for req.Limit <= 0 || len(out) < req.Limit {
		page := sched.PageRows
		if req.Limit > 0 {
			page = min(page, req.Limit-len(out))
		}
		var read int // the bytes read, which tell whether the range goes on
		recs, err := staged(ctx, l, task, func() (recs []lww.Record, _ int, err error) {
			if req.Digest && !req.KeysOnly {
				recs, read, err = l.engine.ScanPageDigests(ks.Name, start, req.End, page, sched.PageBytes, filter, replica.AppendDigest)
			} else {
				recs, err = l.engine.ScanPage(ks.Name, start, req.End, page, sched.PageBytes, true, filter)
				read = replica.RecordBytes(recs)
			}
			return recs, read, err
		})
		if err != nil {
			return nil, err
		}
		size := replica.RecordBytes(recs) // the answer's bytes, digests for values: what the bounds count
		if req.PageBytes > 0 {
			// Cut the answer at the record that reaches PageBytes, as CutShort expects.
			for i, r := range recs {
				if paged += len(r.Key); !req.KeysOnly {
					paged += len(r.Value)
				}
				if paged >= req.PageBytes {
					recs = recs[:i+1]
					size = replica.RecordBytes(recs)
					break
				}
			}
		}
		if out == nil {
			out = recs // the answer of a scan of one page, as most are: not copied
		} else {
			out = append(out, recs...)
		}
		if answered += size; req.BytesMax > 0 && answered > req.BytesMax {
			return nil, fmt.Errorf("%w: over %d bytes of keys and values after %d records", replica.ErrScanTooLarge, req.BytesMax, len(out))
		}
		if (len(recs) < page && read < sched.PageBytes) || (req.PageBytes > 0 && paged >= req.PageBytes) {
			break // the range is exhausted, or the page full
		}
		start = append(bytes.Clone(recs[len(recs)-1].Key), 0)
	}
	if req.KeysOnly {
		for i := range out {
			out[i].Value = nil
		}
	}
	return out, nil
}

// StoredBytes returns how many records this node stores for keyspace (tombstones
// included) and their key and value bytes: with the other nodes' figures, the storage a
// keyspace costs, which experiments compare with the raw data.
func (l *Local) StoredBytes(keyspace string) (records int, total int64, err error) {
	err = l.engine.Each(keyspace, true, func(r lww.Record) error {
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
	err = l.engine.Each(keyspace, true, func(r lww.Record) error {
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

// inRanges returns a key filter that accepts keys whose token lies in one of ranges, or
// nil, which accepts every key, when they cover the whole ring: a node that holds every
// range (a cluster no larger than its replication) is asked for all of them, and then
// hashing each key it reads and looking its token up in every range is work for nothing.
func inRanges(p ring.Partitioner, ranges []ring.Range) func([]byte) bool {
	if ring.Covers(ranges) {
		return nil
	}
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
