// Package gcfloor keeps the Go garbage collector from running every few megabytes of
// allocation when the live heap is small.
//
// The collector's default (GOGC=100) lets the heap grow by as much as is live before
// the next cycle. A kura node's live Go heap is small, tens of MiB, since Pebble keeps
// its block cache and memtables outside it, yet a node serving scans allocates
// hundreds of MiB a second: cycles ran more than ten times a second, and marking,
// write barriers and assists took a tenth of the node's CPU. A floor makes each cycle
// wait for at least floor bytes of new allocation, whatever is live, at the price of
// at most that much more memory; once the live heap is larger than the floor, the
// collector's own default rules again. This is GOGC tuned after every cycle, as
// GOMEMLIMIT cannot do: a limit bounds the heap from above, a floor from below.
package gcfloor

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// DefaultPercent is the collector's own default, GOGC=100: the least a floor ever sets.
const DefaultPercent = 100

// liveMetric is the heap the last cycle found live, in bytes.
const liveMetric = "/gc/heap/live:bytes"

// Percent is the GOGC percent that lets the heap grow by at least floorBytes past
// liveBytes before the next cycle, and never less than DefaultPercent.
func Percent(liveBytes, floorBytes uint64) int {
	// Below the runtime's own 4 MiB minimum heap (and before the first cycle, when
	// nothing is known live) a percent of the live heap means little: a near-zero live
	// heap would disable collection in effect, and the floor would bound nothing.
	liveBytes = max(liveBytes, liveBytesMin)
	// In floating point, so that no floor overflows; rounded up, never under it.
	percent := math.Ceil(float64(floorBytes) * 100 / float64(liveBytes))
	return int(max(min(percent, math.MaxInt32), DefaultPercent))
}

// liveBytesMin is the Go runtime's minimum heap at GOGC=100.
const liveBytesMin = 4 << 20

// Set keeps the heap's growth between cycles at least floorBytes, adjusting GOGC
// after every cycle, until the returned stop is called, which restores the percent
// in force before. It does nothing (and stop nothing) when floorBytes is 0 or the
// operator set GOGC in the environment: their choice stands.
func Set(floorBytes uint64) (stop func()) {
	if floorBytes == 0 || os.Getenv("GOGC") != "" {
		return func() {}
	}
	t := &tuner{floorBytes: floorBytes, sample: []metrics.Sample{{Name: liveMetric}}}
	t.current = t.percent()
	t.previous = debug.SetGCPercent(t.current)
	t.arm()
	return t.stop
}

// A tuner sets GOGC from the live heap each time a cycle has run.
type tuner struct {
	floorBytes uint64

	mu       sync.Mutex // held by onCycle and stop, so no cycle's setting outlives stop
	sample   []metrics.Sample
	previous int // the percent before Set, restored by stop
	current  int
	stopped  bool
}

// cycleMark is allocated unreachable so that the next cycle runs its cleanup. It is
// larger than the runtime's tiny allocations, whose cleanups may wait for a neighbour.
type cycleMark [64]byte

func (t *tuner) arm() {
	runtime.AddCleanup(new(cycleMark), (*tuner).onCycle, t)
}

func (t *tuner) onCycle() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	if percent := t.percent(); percent != t.current {
		t.current = percent
		debug.SetGCPercent(percent)
	}
	t.arm()
}

func (t *tuner) percent() int {
	metrics.Read(t.sample)
	live := uint64(0)
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	return Percent(live, t.floorBytes)
}

func (t *tuner) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stopped {
		t.stopped = true
		debug.SetGCPercent(t.previous)
	}
}
