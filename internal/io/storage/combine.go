package storage

import "sync"

// Writes are combined. Each write must be synced before it is acknowledged, and a write
// holds the locks of its keys' stripes from reading the stored records to the end of its
// synced commit, so writes to one hot key (or stripe) would each pay a WAL sync of their
// own, one after another: under a zipfian load most writers queue there
// (docs/performance-log.md). Instead, the writes that arrive while one is being committed
// are queued; the first of them then becomes the leader, takes the stripe locks of every
// queued write, applies them all in one batch in arrival order (each record compared with
// the records before it, so last-writer-wins holds as if they had come one by one),
// commits it with one sync, and hands every writer its own result. Then it passes
// leadership to the first write queued meanwhile and returns: each leader commits one
// batch, so none is kept leading under constant load.
//
// A single-record write queues with the others of its stripe, so writes to different
// stripes still commit side by side (and share WAL syncs in Pebble's commit pipeline).
// A write of several records (a pipeline's SETs, a coordinator's mutation of many keys,
// a stream page) queues with every other such write: their keys seldom share one
// stripe, and most of them hold the hottest keys' stripes, on which they queued one
// sync after another when each took its own locks.

// writeQueue gathers the writes waiting for one stripe, or the writes of several
// records.
type writeQueue struct {
	mu sync.Mutex
	// pending are the writes not yet taken by a leader, in arrival order.
	pending []*queuedWrite
	// leading is set while a write leads the queue or has been told to: a write that
	// arrives then waits to be taken into a batch instead of leading one.
	leading bool
}

// queuedWrite is one write, of one record or several, waiting in a writeQueue.
type queuedWrite struct {
	ops []applyOp
	// err is the result of the batch that took the write: applyOps' error, which fails
	// every write of the batch, or nil (then each op.applied says whether its record
	// was written).
	err error
	// done is closed when the write has its result, or when lead is set.
	done chan struct{}
	// lead tells a waiting write, before done is closed, that it leads the next batch.
	lead bool
}

// applyCombined applies ops, validated records on an engine the caller has entered, in a
// batch with the writes queued in q meanwhile, and sets each op's applied. It returns
// once the batch is synced, or failed.
func (e *Engine) applyCombined(q *writeQueue, ops []applyOp) error {
	w := &queuedWrite{ops: ops, done: make(chan struct{})}
	q.mu.Lock()
	q.pending = append(q.pending, w)
	wait := q.leading
	q.leading = true
	q.mu.Unlock()
	if wait {
		<-w.done
	}
	if !wait || w.lead {
		e.lead(q, w)
	}
	return w.err
}

// lead commits, as q's leader, the batch of every write pending in q (self among them),
// then passes leadership on.
func (e *Engine) lead(q *writeQueue, self *queuedWrite) {
	q.mu.Lock()
	writes := q.pending
	q.pending = nil
	q.mu.Unlock()

	var ops []*applyOp
	var keys [][]byte
	for _, w := range writes {
		for i := range w.ops {
			ops = append(ops, &w.ops[i])
			keys = append(keys, w.ops[i].key)
		}
	}
	unlock := e.lockKeys(keys)
	err := e.applyOps(ops)
	unlock()
	for _, w := range writes {
		w.err = err
		if w != self { // self's done may be closed already: it was how self was told to lead
			close(w.done)
		}
	}

	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		q.leading = false
		return
	}
	next := q.pending[0]
	next.lead = true
	close(next.done)
}
