package local_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/replica"
	"github.com/kuradb/kura/replica/replicatest"
	"github.com/kuradb/kura/ring"
	"github.com/kuradb/kura/sched"
	"github.com/kuradb/kura/storage"
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
