package transport

import (
	"slices"
	"sync"
)

// maxIdleWorkers bounds the handler goroutines a transport keeps waiting for work: about
// as many as requests in flight at once from hundreds of clients, while a parked
// goroutine costs a few KB (the garbage collector shrinks an unused stack).
const maxIdleWorkers = 512

// workers runs request handlers on goroutines kept from one request to the next.
//
// A new goroutine starts with a small stack and grows it by copying as the calls under it
// deepen, and a grown stack is freed when the goroutine ends. A goroutine per request
// therefore paid that growth on every request: on the replica of a 3-node cluster
// serving reads, runtime.newstack (copying stacks under a storage read) was a quarter to
// a third of the process's CPU. A worker keeps its stack between requests.
//
// The idle workers are a stack, last in first out: the garbage collector halves the
// stack of a goroutine that stays parked through a cycle, so the work goes to the few
// workers used most recently, whose stacks are still grown, and the others stay cold.
type workers struct {
	done <-chan struct{} // closed with the transport: idle workers end

	mu   sync.Mutex
	idle []chan func() // each idle worker's inbox, the most recently idle last
}

func newWorkers(done <-chan struct{}) *workers {
	return &workers{done: done}
}

// run hands task to the most recently idle worker, or starts one when none is idle, so
// that a request never waits for another's handler.
func (w *workers) run(task func()) {
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
// transport closes.
func (w *workers) work(task func()) {
	inbox := make(chan func(), 1)
	for {
		task()
		w.mu.Lock()
		if len(w.idle) >= maxIdleWorkers {
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
				// run took this worker as the transport closed: its task is on the way.
				(<-inbox)()
			}
			return
		}
	}
}
