// Package workers runs tasks on goroutines kept from one task to the next.
//
// A new goroutine starts with a small stack and grows it by copying as the calls under it
// deepen, and a grown stack is freed when the goroutine ends. A goroutine per request
// therefore pays that growth on every request: on the replica of a 3-node cluster
// serving reads, runtime.newstack (copying stacks under a storage read) was a quarter to
// a third of the process's CPU. A worker keeps its stack between tasks.
package workers

import (
	"slices"
	"sync"
)

// Pool runs tasks on workers, each task apart from the others: a task never waits for
// another to end. A nil Pool runs each task on a goroutine of its own.
//
// The idle workers are a stack, last in first out: the garbage collector halves the
// stack of a goroutine that stays parked through a cycle, so the work goes to the few
// workers used most recently, whose stacks are still grown, and the others stay cold.
type Pool struct {
	done    <-chan struct{} // closed with the pool's owner: idle workers end
	maxIdle int

	mu   sync.Mutex
	idle []chan func() // each idle worker's inbox, the most recently idle last
}

// New returns a pool whose workers end when done is closed, keeping at most maxIdle of
// them waiting for work: a parked goroutine costs its stack, which the garbage collector
// shrinks while it is unused.
func New(done <-chan struct{}, maxIdle int) *Pool {
	return &Pool{done: done, maxIdle: maxIdle}
}

// Run hands task to the most recently idle worker, or starts one when none is idle, so
// that a task never waits for another.
func (w *Pool) Run(task func()) {
	if w == nil {
		go task()
		return
	}
	w.mu.Lock()
	if n := len(w.idle); n > 0 {
		inbox := w.idle[n-1]
		w.idle = w.idle[:n-1]
		w.mu.Unlock()
		inbox <- task // buffered: the worker is parked on it or about to be
		return
	}
	w.mu.Unlock()
	go w.work(task)
}

// work runs task, then waits for the next one, until enough workers are idle or the
// pool's owner closes.
func (w *Pool) work(task func()) {
	inbox := make(chan func(), 1)
	for {
		task()
		w.mu.Lock()
		if len(w.idle) >= w.maxIdle {
			w.mu.Unlock()
			return
		}
		w.idle = append(w.idle, inbox)
		w.mu.Unlock()
		select {
		case task = <-inbox:
		case <-w.done:
			w.mu.Lock()
			i := slices.Index(w.idle, inbox)
			if i >= 0 {
				w.idle = slices.Delete(w.idle, i, i+1)
			}
			w.mu.Unlock()
			if i < 0 {
				// Run took this worker as the owner closed: its task is on the way.
				(<-inbox)()
			}
			return
		}
	}
}
