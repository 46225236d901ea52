package local_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/data/replica/replicatest"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/io/storage"
)

// TestScanPagesLetGetsThrough checks that a long scan yields its worker between pages:
// with one worker, FIFO order and an emulated device time of 1 ms per read, a get that
// arrives while a 10-page scan runs waits for the page being read, not for the scan. In
// virtual time, so the instants are exact.
func TestScanPagesLetGetsThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		device := sched.Device{Access: time.Millisecond}
		local, engine := replicatest.NewLocalWith(t, "ks", storage.Options{}, sched.Config{Workers: 1, Device: device})
		const rows = 10 * sched.PageRows
		records := make([]lww.Record, rows)
		for i := range records {
			records[i] = lww.Record{Key: fmt.Appendf(nil, "k%05d", i), Value: []byte("v"), Timestamp: 1}
		}
		if _, err := engine.ApplyBatch("ks", records); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		start := time.Now()
		scanned := make(chan time.Duration)
		go func() {
			recs, err := local.Scan(ctx, replica.ScanRequest{Keyspace: "ks", Ranges: []ring.Range{{}}})
			if err != nil || len(recs) != rows {
				t.Errorf("scan: %d records, %v; want %d", len(recs), err, rows)
			}
			scanned <- time.Since(start)
		}()
		time.Sleep(2500 * time.Microsecond) // the scan is reading its third page
		if _, found, err := local.Get(ctx, "ks", []byte("k00042")); err != nil || !found {
			t.Fatalf("get: found %v, %v", found, err)
		}
		got := time.Since(start)
		took := <-scanned
		// The get queues behind the third page (done at 3 ms), then reads for 1 ms; the
		// scan's fourth page waits for it.
		if want := 4 * time.Millisecond; got != want {
			t.Errorf("the get answered at %v, want %v: after the page in progress", got, want)
		}
		if want := (10 + 1 + 1) * time.Millisecond; took != want {
			t.Errorf("the scan took %v, want %v: ten pages, the empty one that finds the end, and the get", took, want)
		}
	})
}

// TestScanOrderedByTheScansLimit checks that RaS orders a scan request by the scan's
// limit (ScanLimit) where it has one, not by the rows this node is asked for: a
// parallel round asks its nodes for different limits, and RaS must order a scan alike
// at each of them. With one worker held by a get, two requests of scans of as many
// nodes queue: the one of the smaller scan goes first though it asks this node for more.
func TestScanOrderedByTheScansLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		policy := sched.Policy{Queue: sched.ReS, Parallel: true, RaS: true}
		local, engine := replicatest.NewLocalWith(t, "ks", storage.Options{}, sched.Config{Workers: 1, Policy: policy, Device: sched.Device{Access: time.Millisecond}})
		if _, err := engine.ApplyBatch("ks", []lww.Record{{Key: []byte("k"), Value: []byte("v"), Timestamp: 1}}); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		go func() {
			if _, _, err := local.Get(ctx, "ks", []byte("k")); err != nil {
				t.Error(err)
			}
		}()
		synctest.Wait() // the get holds the worker
		done := make(chan string, 2)
		for _, r := range []struct {
			name             string
			limit, scanLimit int
		}{{"large scan", 5, 400}, {"small scan", 300, 300}} {
			go func() {
				req := replica.ScanRequest{Keyspace: "ks", Ranges: []ring.Range{{}}, Scan: sched.ScanID(r.scanLimit), Nodes: 2, Limit: r.limit, ScanLimit: r.scanLimit}
				if _, err := local.Scan(ctx, req); err != nil {
					t.Error(err)
				}
				done <- r.name
			}()
			synctest.Wait() // queued
		}
		if first, second := <-done, <-done; first != "small scan" || second != "large scan" {
			t.Errorf("served %s, then %s; want the small scan first", first, second)
		}
	})
}
