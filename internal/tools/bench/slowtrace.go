package bench

import (
	"context"
	"fmt"
	"os"
	"runtime/trace"
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
}

// The flight recorder's window and bounds: the window covers a request slower than the
// bench's bound (100 ms) many times over, and the snapshot's size stays within what a
// few dozen files may take on disk.
const (
	slowTraceWindow   = 2 * time.Second
	slowTraceBytesMax = 64 << 20
	slowTracesMax     = 30
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

// request starts a traced request of kind; end records its latency, and asks for a
// snapshot when it is above the threshold.
func (t *slowTracer) request(ctx context.Context, kind string) (context.Context, func(latency time.Duration)) {
	if t == nil {
		return ctx, func(time.Duration) {}
	}
	ctx, task := trace.NewTask(ctx, kind)
	return ctx, func(latency time.Duration) {
		trace.Log(ctx, "latency", latency.String())
		task.End()
		if latency > t.over && t.written.Load() < slowTracesMax {
			select {
			case t.slow <- time.Now():
			default: // a snapshot is asked for already, which will hold this request
			}
		}
	}
}
