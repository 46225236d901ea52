package coord

import (
	"sync"
	"sync/atomic"

	"github.com/kuradb/kura/internal/data/sched"
)

// pendingReads counts, per node, the reads this coordinator has asked of it under kura's
// read policy (the Fair discipline) and not yet had answered: gets, and scan requests
// weighted by their rows (scanWork). Under that policy a read goes first to the replica
// of the local DC where it would wait least (leastFirst): a replica whose read stage is
// behind answers later, and a read sent elsewhere both answers sooner and leaves that
// stage to catch up. A coordinator sees only its own reads, not those of the others;
// with clients spread over the coordinators, its share follows the replicas' queues.
type pendingReads struct {
	nodes sync.Map // node id → *pendingWork; a node's entry is made once and kept
}

// pendingWork is what one node has pending of this coordinator's reads.
type pendingWork struct {
	gets  atomic.Int64 // gets asked and not answered
	scans atomic.Int64 // scan requests asked and not answered, each its scanWork
}

// scanRowsPerGet is how many rows of a scan are counted as much work as one get: a
// get reads one row at the cost of a device access, a page its rows after one access,
// and an access costs as long as reading several rows (the bench's emulated disk,
// 3.5 ms an access and 0.35 ms a KiB, reads 10 rows of 1 KiB in one access's time).
const scanRowsPerGet = 16

// scanWork is a scan request's weight, in gets: one for its access plus one per
// scanRowsPerGet rows of its limit, counted up to a page (sched.PageRows; no limit is
// a page's).
func scanWork(limit int) int64 {
	if limit <= 0 || limit > sched.PageRows {
		limit = sched.PageRows
	}
	return 1 + int64(limit/scanRowsPerGet)
}

// of returns node's counts, made on first use.
func (p *pendingReads) of(node string) *pendingWork {
	if w, ok := p.nodes.Load(node); ok {
		return w.(*pendingWork)
	}
	w, _ := p.nodes.LoadOrStore(node, new(pendingWork))
	return w.(*pendingWork)
}

// cost is how much a read waits for at the node, by what is pending there: a get waits
// for the gets ahead of it (gets go before scan pages under Fair), a scan request for
// everything.
func (w *pendingWork) cost(scan bool) int64 {
	if scan {
		return w.gets.Load() + w.scans.Load()
	}
	return w.gets.Load()
}

// leastFirst moves, among the first targets that local says are of this node's DC, those
// where a read (a scan's when scan) would wait least to the front; the order is kept
// among equals (this node first, then by distance: nearestFirst) and beyond them.
func (p *pendingReads) leastFirst(targets []target, scan bool, local func(target) bool) {
	n := 0
	for n < len(targets) && local(targets[n]) {
		n++
	}
	if n < 2 {
		return
	}
	var buf [8]int64 // room for the costs of a DC's replicas without allocating
	costs := buf[:0]
	for _, t := range targets[:n] {
		costs = append(costs, p.of(t.ID).cost(scan))
	}
	// An insertion sort, stable, over the few targets of a DC.
	for i := 1; i < n; i++ {
		for j := i; j > 0 && costs[j] < costs[j-1]; j-- {
			costs[j], costs[j-1] = costs[j-1], costs[j]
			targets[j], targets[j-1] = targets[j-1], targets[j]
		}
	}
}

// pendingRead is one read counted in pendingReads, until done.
type pendingRead struct {
	counter *atomic.Int64 // nil: not counted
	work    int64
}

// done uncounts the read, once answered (or failed).
func (r pendingRead) done() {
	if r.counter != nil {
		r.counter.Add(-r.work)
	}
}

// asked counts a read asked of node when policy is kura's (a scan request when scan, of
// limit rows), and returns it to call done on once answered; under any other policy
// nothing is counted.
func (p *pendingReads) asked(policy sched.Policy, node string, limit int, scan bool) pendingRead {
	if policy.Queue != sched.Fair {
		return pendingRead{}
	}
	w := p.of(node)
	r := pendingRead{counter: &w.gets, work: 1}
	if scan {
		r = pendingRead{counter: &w.scans, work: scanWork(limit)}
	}
	r.counter.Add(r.work)
	return r
}
