package storage

import "sync"

// Single-record writes are combined per stripe. Each write must be synced before it is
// acknowledged, and a write holds its stripe's lock from reading the stored record to
// the end of its synced commit, so writes to one hot key (or stripe) would each pay a
// WAL sync of their own, one after another: under a zipfian load most writers queue
// there (docs/performance.md). Instead, the writes that arrive for a stripe while one is
// being committed are queued; the first of them then becomes the leader, takes the
// stripe lock, applies every queued write in one batch in arrival order (each compared
// with the writes before it, so last-writer-wins holds as if they had come one by one),
// commits it with one sync, and hands every writer its own result. Then it passes
// leadership to the first write queued meanwhile and returns: each leader commits one
// batch, so none is kept leading under constant load.

// writeQueue gathers the writes waiting for one stripe.
type writeQueue struct {
	mu sync.Mutex
	// pending are the writes not yet taken by a leader, in arrival order.
	pending []*queuedWrite
	// leading is set while a write leads the stripe or has been told to: a write that
	// arrives then waits to be taken into a batch instead of leading one.
	leading bool
}

// queuedWrite is one single-record write waiting in a writeQueue.
type queuedWrite struct {
	op applyOp
	// err is the result of the batch that took the write: applyOps' error, which fails
	// every write of the batch, or nil (then op.applied says whether the record was
	// written).
	err error
	// done is closed when the write has its result, or when lead is set.
	done chan struct{}
	// lead tells a waiting write, before done is closed, that it leads the next batch.
	lead bool
}

// applyCombined applies op, a validated single-record write on an engine the caller has
// entered, in a batch with the writes to its stripe that arrive meanwhile. It returns
// once the batch is synced, or failed.
func (e *Engine) applyCombined(op applyOp) (applied bool, err error) {
	stripe := e.stripeOf(op.key)
	q := &e.queues[stripe]
	w := &queuedWrite{op: op, done: make(chan struct{})}
	q.mu.Lock()
	q.pending = append(q.pending, w)
	wait := q.leading
	q.leading = true
	q.mu.Unlock()
	if wait {
		<-w.done
	}
	if !wait || w.lead {
		e.lead(stripe, q, w)
	}
	return w.op.applied && w.err == nil, w.err
}

// lead commits, as self's stripe leader, the batch of every write pending in q (self
// among them), then passes leadership on.
func (e *Engine) lead(stripe int, q *writeQueue, self *queuedWrite) {
	q.mu.Lock()
	writes := q.pending
	q.pending = nil
	q.mu.Unlock()

	ops := make([]*applyOp, len(writes))
	for i, w := range writes {
		ops[i] = &w.op
	}
	e.stripes[stripe].Lock()
	err := e.applyOps(ops, true)
	e.stripes[stripe].Unlock()
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
