package workers

import (
	"testing"
	"testing/synctest"
)

func idleWorkers(w *Pool) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.idle)
}

// A task that blocks never holds up the next one: run starts a worker when none is idle.
func TestWorkersRunTasksApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		w := New(done, 512)
		release, second := make(chan struct{}), make(chan struct{})
		w.Run(func() { <-release })
		w.Run(func() { close(second) })
		<-second
		close(release)
		synctest.Wait()
		if got := idleWorkers(w); got != 2 {
			t.Fatalf("%d idle workers after two tasks at once, want 2", got)
		}
		close(done)
		synctest.Wait()
		if got := idleWorkers(w); got != 0 {
			t.Fatalf("%d idle workers once closed, want 0", got)
		}
	})
}

// Tasks one after another run on the same worker, the most recently idle one.
func TestWorkersReuseTheLastIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		defer close(done)
		w := New(done, 512)
		ran := 0
		for range 5 {
			w.Run(func() { ran++ })
			synctest.Wait()
			if got := idleWorkers(w); got != 1 {
				t.Fatalf("%d idle workers after tasks one at a time, want 1", got)
			}
		}
		if ran != 5 {
			t.Fatalf("%d tasks ran, want 5", ran)
		}
		// Two workers idle: the next task goes to the one that finished last.
		hold := make(chan struct{})
		w.Run(func() { <-hold }) // the idle worker
		w.Run(func() {})         // a new one, idle first
		synctest.Wait()
		close(hold)
		synctest.Wait()
		w.mu.Lock()
		idleFirst, idleLast := w.idle[0], w.idle[1]
		w.mu.Unlock()
		if idleFirst == idleLast {
			t.Fatal("two idle workers share an inbox")
		}
		busy := make(chan struct{})
		defer close(busy)
		w.Run(func() { <-busy })
		w.mu.Lock()
		left := w.idle
		w.mu.Unlock()
		if len(left) != 1 || left[0] != idleFirst {
			t.Fatal("run took the worker idle longest, want the one idle last")
		}
	})
}

// A worker taken as the owner closes still runs its task.
func TestWorkersRunTaskHandedAtClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		done := make(chan struct{})
		w := New(done, 512)
		w.Run(func() {})
		synctest.Wait()
		// Take the idle worker as run does, close, then hand it the task.
		w.mu.Lock()
		inbox := w.idle[0]
		w.idle = w.idle[:0]
		w.mu.Unlock()
		close(done)
		synctest.Wait()
		ran := make(chan struct{})
		inbox <- func() { close(ran) }
		<-ran
	})
}
