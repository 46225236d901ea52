package storage

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/time/rate"
)

// Compactions are paced, as Cassandra's compaction_throughput paces them. Unpaced, a
// compaction rewrites a small database's whole last level in one burst that holds a
// core and the disk for a fraction of a second, and the synced writes waiting meanwhile
// make the tail of the write latency: on the 2-core bench machine a SET's p99 at
// pipeline 1 fell from 3.4-3.9 ms to 2.1-2.4 ms with the pace below (docs/performance-log.md).
// Flushes are never paced: a slow flush fills the memtables and stalls every write. Nor
// is a compaction paced while the engine falls behind (L0 grows), since writes stall
// once it has too many files: pacing trades the burst for a longer, gentler compaction,
// never for a stall.

const (
	// DefaultCompactionBytesPerSecond is the pace of compactions on an engine that names
	// none. Cassandra's default is 64 MiB/s; on the bench machine 16 MiB/s cut the write
	// tail a little more than 32, 8 no more than 16, and none of them slowed a
	// write-only load at pipeline 16.
	DefaultCompactionBytesPerSecond = 16 << 20
	// compactionBurstBytes are written unpaced after an idle spell: a small compaction
	// is never slowed. A larger burst (4 MiB) kept most of the tail.
	compactionBurstBytes = 1 << 20
	// l0SublevelsBehind is the read amplification of L0 at which the engine counts as
	// behind and compactions run unpaced: twice Pebble's L0CompactionThreshold (4),
	// below its L0StopWritesThreshold (12), where writes stall.
	l0SublevelsBehind = 8
	// behindCheckInterval is how often a paced compaction asks Pebble for L0's state.
	behindCheckInterval = 100 * time.Millisecond
)

// compactionPacer paces the bytes compactions write with a token bucket (rate.Limiter)
// filled at bytesPerSecond up to compactionBurstBytes. Its FS hands it the writes of the
// tables its listener learnt are compaction outputs.
type compactionPacer struct {
	// stop is closed when the engine closes: Pebble's Close waits for the compaction
	// under way, which then runs unpaced.
	stop chan struct{}

	// outputs holds the paths of tables being written by compactions.
	outputs sync.Map
	// paced counts the nanoseconds compactions were made to wait (Engine.Stats).
	paced atomic.Int64

	mu sync.Mutex
	// bucket is consulted with the pacer's own clock, never the wall clock, so that tests
	// drive it.
	bucket *rate.Limiter
	// behind reports whether compactions fall behind; nil until the database is open.
	behind func() bool
	// sleep waits d, or less once stop is closed; now is the clock. Tests replace both.
	sleep     func(d time.Duration, stop <-chan struct{})
	now       func() time.Time
	checkedAt time.Time
	lifted    bool
}

// newCompactionPacer returns a pacer of bytesPerSecond with a full bucket.
func newCompactionPacer(bytesPerSecond int64) *compactionPacer {
	return &compactionPacer{
		bucket: rate.NewLimiter(rate.Limit(bytesPerSecond), compactionBurstBytes),
		sleep:  sleepUnlessStopped,
		now:    time.Now,
		stop:   make(chan struct{}),
	}
}

// sleepUnlessStopped waits d or until stop is closed.
func sleepUnlessStopped(d time.Duration, stop <-chan struct{}) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-stop:
	}
}

// tableCreated is Pebble's TableCreated event: it names each new table and who writes it.
func (p *compactionPacer) tableCreated(info pebble.TableCreateInfo) {
	if info.Reason == "compacting" {
		p.outputs.Store(info.Path, struct{}{})
	}
}

// pace waits, before a compaction writes n bytes, until the bucket holds them. A write
// larger than the bucket reserves it in bucket-sized parts, each queued behind the last,
// so that it waits for all its bytes.
func (p *compactionPacer) pace(n int) {
	p.mu.Lock()
	now := p.now()
	if p.behind != nil && now.Sub(p.checkedAt) >= behindCheckInterval {
		p.checkedAt = now
		p.lifted = p.behind()
	}
	if p.lifted {
		p.mu.Unlock()
		return
	}
	var wait time.Duration
	for left := n; left > 0; left -= compactionBurstBytes {
		wait = p.bucket.ReserveN(now, min(left, compactionBurstBytes)).DelayFrom(now)
	}
	sleep := p.sleep
	p.mu.Unlock()
	if wait > 0 {
		p.paced.Add(int64(wait))
		sleep(wait, p.stop)
	}
}

// watch has p ask db whether compactions fall behind.
func (p *compactionPacer) watch(db *pebble.DB) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.behind = func() bool { return db.Metrics().Levels[0].Sublevels >= l0SublevelsBehind }
}

// close lets a compaction under way finish unpaced; a nil pacer has nothing to close.
func (p *compactionPacer) close() {
	if p != nil {
		close(p.stop)
	}
}

// pacedFS paces the writes of compaction outputs created through it.
type pacedFS struct {
	vfs.FS
	pacer *compactionPacer
}

// Create is vfs.FS's Create; Pebble announces a table as a compaction's output after
// creating it and before writing it, so the file asks at its first write.
func (fs pacedFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil {
		return nil, err
	}
	return &pacedFile{File: f, name: name, pacer: fs.pacer}, nil
}

// pacedFile is a file created through pacedFS.
type pacedFile struct {
	vfs.File
	name  string
	pacer *compactionPacer
	// asked is set at the first write, when paced says whether the file is a
	// compaction's output. Pebble writes a table from one goroutine.
	asked, paced bool
}

// Write paces a compaction output's bytes, then writes them.
func (f *pacedFile) Write(p []byte) (int, error) {
	if !f.asked {
		f.asked = true
		_, f.paced = f.pacer.outputs.LoadAndDelete(f.name)
	}
	if f.paced {
		f.pacer.pace(len(p))
	}
	return f.File.Write(p)
}

// Close forgets a compaction output never written.
func (f *pacedFile) Close() error {
	if !f.asked {
		f.pacer.outputs.Delete(f.name)
	}
	return f.File.Close()
}
