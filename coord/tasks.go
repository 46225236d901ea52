package coord

import (
	"sync"

	"github.com/kuradb/kura/workers"
)

// backgroundTasksMax is the default bound of the background tasks a coordinator runs at
// once (Config.BackgroundTasksMax): each holds at most one replica request, bounded by
// the replica timeout.
const backgroundTasksMax = 1024

// tasks runs the coordinator's work that goes on beside a request, on its workers (see
// package workers), and counts it, so that Close can wait for it to end before the
// node's transport and storage close under it. Two kinds:
//
//   - a gathering's requests to other nodes (request): never bounded, since a request
//     that waited for another could wait for itself (GetAll's reads gather on the same
//     workers), and bounded anyway by the requests under way;
//   - the work a request leaves behind and does not wait for (background): an ANY
//     write's copies to the live replicas, read repairs, a scan's progress notes. These
//     are bounded: once backgroundMax run, the next waits for one to end, so that a
//     burst of repairs slows its clients rather than piling up goroutines.
//
// A quorum whose workers are nil runs each request on a goroutine of its own, untracked
// (quorums built by hand in tests, and lightweight transactions' rounds, which wait for
// their own requests).
type tasks struct {
	pool  *workers.Pool
	slots chan struct{} // one per background task running

	mu      sync.Mutex
	closed  bool
	running sync.WaitGroup
}

func newTasks(pool *workers.Pool, backgroundMax int) *tasks {
	return &tasks{pool: pool, slots: make(chan struct{}, backgroundMax)}
}

// request runs one of a gathering's requests, which must not wait for another task.
// Once the coordinator is closed it still runs, untracked: the request it serves is
// still under way.
func (t *tasks) request(task func()) {
	// nil: a quorum built without the coordinator's tasks.
	if t == nil {
		go task()
		return
	}
	if !t.track() {
		t.pool.Run(task)
		return
	}
	t.pool.Run(func() {
		defer t.running.Done()
		task()
	})
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
	t.mu.Lock()
	defer t.mu.Unlock()
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
		c.tasks.request(func() {
			defer func() {
				<-slots
				wg.Done()
			}()
			task(i)
		})
	}
	wg.Wait()
	return n
}
