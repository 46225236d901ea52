package coord

import (
	"sync"

	"github.com/kuradb/kura/internal/base/workers"
)

// backgroundTasksMax is the default bound of the background tasks a coordinator runs at
// once (Config.BackgroundTasksMax): each holds at most one replica request, bounded by
// the replica timeout.
const backgroundTasksMax = 1024

// tasks runs the coordinator's work that goes on beside a request, on its workers (see
// package workers), and counts it, so that Close can wait for it to end before the
// node's transport and storage close under it. Two kinds:
//
//   - the work a request waits for: a gathering's requests to other nodes, a batch's
//     reads and writes that go one by one (start, run, end). It is never bounded, since
//     a task that waited for a slot could wait for itself (GetAll's reads gather on the
//     same workers), and it is bounded anyway by the requests under way;
//   - the work a request leaves behind and does not wait for (background): an ANY
//     write's copies to the live replicas, read repairs, a scan's progress notes. It is
//     bounded: once Config.BackgroundTasksMax tasks run, the next waits for one to end,
//     so that a burst of repairs slows its clients rather than piling up goroutines.
//
// A quorum whose workers are nil runs each request on a goroutine of its own, untracked
// (quorums built by hand in tests, and lightweight transactions' rounds).
type tasks struct {
	pool  *workers.Pool
	slots chan struct{} // one per background task running

	// mu orders counting a task against close: no task is counted once close waits.
	mu      sync.RWMutex
	closed  bool
	running sync.WaitGroup
}

func newTasks(pool *workers.Pool, backgroundMax int) *tasks {
	return &tasks{pool: pool, slots: make(chan struct{}, backgroundMax)}
}

// start counts a task a request waits for, about to run, and reports whether it did:
// not for nil tasks, nor once closed (the request it serves is still under way, so the
// task still runs, uncounted). The task calls end with the answer when it is done; the
// caller makes the task call it, rather than wrapping the task, so that a request to a
// replica costs no allocation more.
func (t *tasks) start() bool {
	return t != nil && t.track()
}

// end ends a task start counted (counted true).
func (t *tasks) end(counted bool) {
	if counted {
		t.running.Done()
	}
}

// run runs task on the coordinator's workers; nil tasks start a goroutine.
func (t *tasks) run(task func()) {
	if t == nil {
		go task()
		return
	}
	t.pool.Run(task)
}

// background runs task once fewer than the bound are running, and reports whether it
// did: false, having run nothing, once the coordinator is closed, so that the caller
// does what it would do had the task failed (hint a write, skip a repair).
func (t *tasks) background(task func()) bool {
	t.slots <- struct{}{}
	if !t.track() {
		<-t.slots
		return false
	}
	t.pool.Run(func() {
		defer func() {
			<-t.slots
			t.running.Done()
		}()
		task()
	})
	return true
}

// track counts one more task running and reports true, or reports false once closed.
func (t *tasks) track() bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return false
	}
	t.running.Add(1)
	return true
}

// close refuses background tasks from now on and waits for every tracked task to end.
func (t *tasks) close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.running.Wait()
}

// fanOut runs task(i) for each i in [0, n) on the coordinator's workers, at most limit
// at once, and returns once every one it started has ended. Before starting task i it
// asks stop, when set: true starts no more, and fanOut returns i, the first index not
// run; it returns n when every task ran. The batches' reads and writes that go one by
// one, and a key walk's disputed keys, run through it.
func (c *Coordinator) fanOut(n, limit int, task func(i int), stop func() bool) int {
	slots := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		slots <- struct{}{}
		if stop != nil && stop() {
			<-slots
			wg.Wait()
			return i
		}
		wg.Add(1)
		counted := c.tasks.start()
		c.tasks.run(func() {
			defer func() {
				<-slots
				wg.Done()
				c.tasks.end(counted)
			}()
			task(i)
		})
	}
	wg.Wait()
	return n
}
