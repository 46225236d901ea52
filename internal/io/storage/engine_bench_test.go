package storage

import (
	"fmt"
	"testing"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
)

// benchKeys is the number of records the read benchmarks load: with 1 MiB memtables
// and 100-byte values most of them are in Pebble's tables, not its memtable, so the
// reads measure the tables' path (blocks, bloom filters, the block cache).
const benchKeys = 50_000

// benchEngine opens an on-disk engine without the row cache (so every point read
// reaches Pebble) and with small memtables, loaded with benchKeys records of keyspace
// "ks" written in batches of 100.
func benchEngine(b *testing.B) *Engine {
	b.Helper()
	e, err := Open(Options{Dir: b.TempDir(), RowCacheBytes: -1, MemTableBytes: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	value := make([]byte, 100)
	batch := make([]lww.Record, 0, 100)
	for i := range benchKeys {
		batch = append(batch, lww.Record{Key: benchKey(i), Value: value, Timestamp: hlc.Timestamp(i + 1)})
		if len(batch) == cap(batch) {
			if _, err := e.ApplyBatch("ks", batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return e
}

func benchKey(i int) []byte { return fmt.Appendf(nil, "key%08d", i) }

// BenchmarkGet measures point reads of stored keys through Pebble (no row cache).
func BenchmarkGet(b *testing.B) {
	e := benchEngine(b)
	i := 0
	for b.Loop() {
		// A stride coprime with benchKeys visits every key, not neighbours in turn.
		i = (i + 7919) % benchKeys
		if _, found, err := e.Get("ks", benchKey(i)); err != nil || !found {
			b.Fatalf("get %d: found %t, %v", i, found, err)
		}
	}
}

// BenchmarkScanPage measures pages of 100 records read from a random start.
func BenchmarkScanPage(b *testing.B) {
	e := benchEngine(b)
	i := 0
	for b.Loop() {
		i = (i + 7919) % (benchKeys - 100)
		recs, err := e.ScanPage("ks", benchKey(i), nil, 100, 0, false, nil)
		if err != nil || len(recs) != 100 {
			b.Fatalf("scan from %d: %d records, %v", i, len(recs), err)
		}
	}
}

// BenchmarkApplyBatch measures synced batches of 100 new records on disk, each read
// first as every write is (last writer wins).
func BenchmarkApplyBatch(b *testing.B) {
	e, err := Open(Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	value := make([]byte, 100)
	batch := make([]lww.Record, 100)
	n := 0
	for b.Loop() {
		for j := range batch {
			n++
			batch[j] = lww.Record{Key: benchKey(n), Value: value, Timestamp: hlc.Timestamp(n)}
		}
		if applied, err := e.ApplyBatch("ks", batch); err != nil || applied != len(batch) {
			b.Fatalf("apply batch: %d applied, %v", applied, err)
		}
	}
}

// BenchmarkApplyBatchOverwrite measures synced batches of 100 records written over live
// ones on disk, each read first: a write over a live record also sets the record's
// live-key index entry to its new header.
func BenchmarkApplyBatchOverwrite(b *testing.B) {
	e := benchEngine(b)
	value := make([]byte, 100)
	batch := make([]lww.Record, 100)
	i, ts := 0, hlc.Timestamp(benchKeys)
	for b.Loop() {
		for j := range batch {
			// A stride coprime with benchKeys: no key twice in a batch.
			i = (i + 7919) % benchKeys
			ts++
			batch[j] = lww.Record{Key: benchKey(i), Value: value, Timestamp: ts}
		}
		if applied, err := e.ApplyBatch("ks", batch); err != nil || applied != len(batch) {
			b.Fatalf("apply batch: %d applied, %v", applied, err)
		}
	}
}
