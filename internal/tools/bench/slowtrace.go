package bench

import (
	"context"
	"fmt"
	"os"
	"runtime/trace"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// slowTracer keeps the Go runtime's execution trace of the last few seconds in a flight
// recorder, and writes it to a file after a request slower than its threshold, so that
// where the slow request's time went (which goroutines it waited on, for what: a lock, a
// channel, the network, a CPU) can be read from the trace around it (go tool trace).
// Each request is a trace task, named by its kind, ending with a log of its latency.
// A nil *slowTracer traces nothing and costs nothing.
type slowTracer struct {
	fr     *trace.FlightRecorder
	over   time.Duration
	prefix string
	// slow wakes the writer with the end of a slow request: the flight recorder's
	// snapshot is written off the client's goroutine, so that writing it delays no
	// request of the client's.
	slow chan time.Time
	done chan struct{}
	// written counts the snapshots written; no more than slowTracesMax are.
	written  atomic.Int32
	progress func(format string, args ...any)

	mu      sync.Mutex
	run     string        // the run under way (startRun)
	started time.Time     // when its timeline starts
	slowest []SlowRequest // every request over the threshold, in the order they ended
}

// startRun names the run whose requests follow, and when its timeline starts.
func (t *slowTracer) startRun(run string, start time.Time) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.run, t.started = run, start
}

// slowRequests returns the requests over the threshold so far.
func (t *slowTracer) slowRequests() []SlowRequest {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.slowest)
}

// The flight recorder's window and bounds: the window covers a request slower than the
// bench's bound (100 ms) many times over, and the snapshot's size stays within what a
// hundred files may take on disk.
const (
	slowTraceWindow   = 2 * time.Second
	slowTraceBytesMax = 64 << 20
	slowTracesMax     = 100
)

// startSlowTracer starts the flight recorder; each snapshot goes to prefix.N.trace.
func startSlowTracer(prefix string, over time.Duration, progress func(format string, args ...any)) (*slowTracer, error) {
	fr := trace.NewFlightRecorder(trace.FlightRecorderConfig{MinAge: slowTraceWindow, MaxBytes: slowTraceBytesMax})
	if err := fr.Start(); err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	t := &slowTracer{fr: fr, over: over, prefix: prefix, slow: make(chan time.Time, 1), done: make(chan struct{}), progress: progress}
	go t.write()
	return t, nil
}

// write writes a snapshot each time a slow request asks for one, until stop. A request
// that ended before the last snapshot was taken is in it already: it asks for none.
func (t *slowTracer) write() {
	defer close(t.done)
	var taken time.Time
	for end := range t.slow {
		if end.Before(taken) {
			continue
		}
		taken = time.Now()
		n := t.written.Add(1)
		if n > slowTracesMax {
			continue
		}
		// The slow request has just ended: the window keeps the time it took.
		path := fmt.Sprintf("%s.%d.trace", t.prefix, n)
		if err := t.snapshot(path); err != nil {
			t.progress("--trace: %v", err)
			continue
		}
		t.progress("--trace: %s written", path)
	}
}

func (t *slowTracer) snapshot(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := t.fr.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// stop ends the recording once the last snapshot asked for is written.
func (t *slowTracer) stop() {
	if t == nil {
		return
	}
	close(t.slow)
	<-t.done
	t.fr.Stop()
}

// SlowRequest is a request slower than --trace-over, as the report lists it.
type SlowRequest struct {
	// Run is the run it belongs to, AtS when it was sent, in seconds into that run's
	// timeline, as the rows' from_s (negative in the warm-up before it).
	Run       string  `json:"run"`
	AtS       float64 `json:"at_s"`
	Kind      string  `json:"kind"`
	LatencyMs float64 `json:"latency_ms"`
	// OSRunWaitMs is how long the process's threads waited, summed, for a CPU of the
	// operating system while the request ran (osRunWait): when it is near the latency
	// or above it, the machine, not the process, held the request up.
	OSRunWaitMs float64 `json:"os_run_wait_ms"`
}

// request starts a traced request of kind; end records its latency, and asks for a
// snapshot when it is above the threshold. Both read the process's scheduler statistics
// (osRunWait), which takes system calls: the caller starts its clock after request and
// stops it before end, so that the tracer's work is no part of the latency.
func (t *slowTracer) request(ctx context.Context, kind string) (context.Context, func(latency time.Duration)) {
	if t == nil {
		return ctx, func(time.Duration) {}
	}
	ctx, task := trace.NewTask(ctx, kind)
	sent, waitBefore := time.Now(), osRunWait()
	return ctx, func(latency time.Duration) {
		wait := osRunWait() - waitBefore
		trace.Log(ctx, "latency", latency.String())
		trace.Log(ctx, "os_run_wait", wait.String())
		task.End()
		if latency <= t.over {
			return
		}
		t.mu.Lock()
		t.slowest = append(t.slowest, SlowRequest{Run: t.run, AtS: round(sent.Sub(t.started).Seconds(), 2), Kind: kind,
			LatencyMs: round(float64(latency)/float64(time.Millisecond), 1), OSRunWaitMs: round(float64(wait)/float64(time.Millisecond), 1)})
		t.mu.Unlock()
		if t.written.Load() < slowTracesMax {
			select {
			case t.slow <- time.Now():
			default: // a snapshot is asked for already, which will hold this request
			}
		}
	}
}
