package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
)

// TestCompactionPacerIsATokenBucket walks a pacer of 1 MiB/s on a fake clock.
func TestCompactionPacerIsATokenBucket(t *testing.T) {
	const mib = 1 << 20
	type step struct {
		advance time.Duration // the clock moves this much before the write
		behind  bool          // what Pebble says of L0 at the write
		bytes   int
		wait    time.Duration
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"a burst is written unpaced", []step{{bytes: compactionBurstBytes}}},
		{"past the burst each MiB waits a second", []step{
			{bytes: compactionBurstBytes}, {bytes: mib, wait: time.Second}, {bytes: mib / 2, wait: 1500 * time.Millisecond},
		}},
		{"idle time refills the bucket", []step{
			{bytes: compactionBurstBytes + mib, wait: time.Second},
			{advance: time.Second + compactionBurstBytes*time.Second/mib, bytes: compactionBurstBytes},
			{bytes: mib, wait: time.Second},
		}},
		{"the bucket holds no more than a burst", []step{
			{advance: time.Hour, bytes: compactionBurstBytes + mib, wait: time.Second},
		}},
		{"an engine behind compacts unpaced", []step{
			{bytes: compactionBurstBytes}, {behind: true, advance: behindCheckInterval, bytes: 10 * mib},
			// 200 ms of refill since the unpaced write, which took no tokens.
			{advance: behindCheckInterval, bytes: mib, wait: 800 * time.Millisecond},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newCompactionPacer(mib)
			now := time.Now()
			var waited time.Duration
			behind := false
			p.now = func() time.Time { return now }
			p.behind = func() bool { return behind }
			p.sleep = func(d time.Duration, _ <-chan struct{}) { waited = d }
			for i, s := range tt.steps {
				now = now.Add(s.advance)
				behind = s.behind
				waited = 0
				p.pace(s.bytes)
				if waited != s.wait {
					t.Fatalf("step %d (%d bytes): waited %v, want %v", i, s.bytes, waited, s.wait)
				}
			}
		})
	}
}

// TestCompactionsArePacedAndFlushesAreNot writes a few MiB to an on-disk engine,
// flushes and compacts them, and checks that the waits match the compactions' bytes
// alone.
func TestCompactionsArePacedAndFlushesAreNot(t *testing.T) {
	const bytesPerSecond = 1 << 20
	e, err := Open(Options{Dir: t.TempDir(), CompactionBytesPerSecond: bytesPerSecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// The pacer's clock moves only when it sleeps, which it does at once.
	var mu sync.Mutex
	var waited time.Duration
	e.pacer.mu.Lock()
	e.pacer.sleep = func(d time.Duration, _ <-chan struct{}) {
		mu.Lock()
		waited += d
		mu.Unlock()
	}
	start := time.Now()
	e.pacer.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return start.Add(waited)
	}
	e.pacer.behind = func() bool { return false }
	e.pacer.mu.Unlock()
	waitedSoFar := func() time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return waited
	}

	// 8 MiB of values that do not compress, in two flushed tables that overlap, so the
	// compaction rewrites both.
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 2 {
		records := make([]lww.Record, 0, 4096)
		for i := range 4096 {
			value := make([]byte, 1024)
			for j := range value {
				value[j] = byte(rng.Uint32())
			}
			records = append(records, lww.Record{Key: fmt.Appendf(nil, "key-%05d", i), Value: value, Timestamp: hlc.Timestamp(round + 1)})
		}
		if _, err := e.ApplyBatch("ks", records); err != nil {
			t.Fatal(err)
		}
		if err := e.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.db.Compact(context.Background(), []byte{0x00}, []byte{0xff}, true); err != nil {
		t.Fatal(err)
	}
	// The compactions (the manual one, and any Pebble started on its own) waited for
	// every byte they wrote past the burst, and the flushes for none of theirs.
	var compacted int64
	for _, level := range e.db.Metrics().Levels {
		compacted += int64(level.TableBytesCompacted)
	}
	want := time.Duration(float64(compacted-compactionBurstBytes) / bytesPerSecond * float64(time.Second))
	if got := waitedSoFar(); got < want-time.Millisecond || got > want+time.Millisecond {
		t.Fatalf("compactions wrote %d bytes and waited %v, want %v", compacted, got, want)
	}
	if got := e.Stats().CompactionPaced; got != waitedSoFar() {
		t.Fatalf("Stats().CompactionPaced = %v, want the %v waited", got, waitedSoFar())
	}
}

// TestClosingEndsAPacedWait paces a write at 1 byte per second past the burst: closing
// the pacer, as Engine.Close does, ends the wait.
func TestClosingEndsAPacedWait(t *testing.T) {
	p := newCompactionPacer(1)
	done := make(chan struct{})
	go func() {
		p.pace(compactionBurstBytes + 1<<20)
		close(done)
	}()
	p.close()
	<-done
}
