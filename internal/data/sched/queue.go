package sched

import (
	"container/heap"
	"container/list"
	"math"
	"time"
)

// Scan pages: a scan is served in pages so that a long scan yields its worker between
// pages and gets interleave with it. A page ends after PageRows rows or once it holds
// PageBytes bytes, whichever comes first.
//
// With ~1 KB rows a page costs the device time of a few gets (with a Device of
// 2ms+20us, about 7ms against 2ms), so a get that finds every worker on a page waits
// little, while a 10,000-row scan needs only ~40 queue slots per node.
const (
	PageRows  = 256
	PageBytes = 256 << 10
)

// Defaults of Fairness: see the package doc for how they trade gets against scans.
const (
	DefaultScanWait    = 5 * time.Second
	DefaultScanPass    = 64
	DefaultRemoteSlack = 250 * time.Millisecond
)

// Fairness tunes the Fair discipline; the zero Fairness is the defaults, and other
// disciplines ignore it.
type Fairness struct {
	// ScanWait is how long a scan request may wait at the node, from the arrival of its
	// first page, for each node its scan waits for (Task.Nodes, at least 1, lowered by
	// progress updates): its pages' deadline. Past it they are overdue: they then go
	// before other scan pages, earliest deadline first, and alternate with gets once
	// gets have held them back (see ScanPass). 0 means DefaultScanWait.
	ScanWait time.Duration
	// ScanPass is how many gets may go ahead of a scan page while it waits before,
	// once overdue, it takes every other turn from them: overdue pages that gets have
	// not held back (a node overloaded by scans, not by gets) do not slow the gets. 0
	// means DefaultScanPass.
	ScanPass int
	// RemoteSlack is how long a remote get lets local gets that arrived after it go
	// first: gets are served by deadline, a local get's its arrival and a remote get's
	// its arrival plus RemoteSlack. 0 means DefaultRemoteSlack.
	RemoteSlack time.Duration
}

func (f Fairness) withDefaults() Fairness {
	if f.ScanWait == 0 {
		f.ScanWait = DefaultScanWait
	}
	if f.ScanPass == 0 {
		f.ScanPass = DefaultScanPass
	}
	if f.RemoteSlack == 0 {
		f.RemoteSlack = DefaultRemoteSlack
	}
	return f
}

// rasMemory bounds how many scans' progress a queue remembers for pages not yet queued.
// A scan's pages at one node are queued one after another, so its count must outlive
// its queued pages; a scan's ids are not retired explicitly, so the oldest are forgotten.
const rasMemory = 4096

// Item is a task in a Queue, from Push until Pop or Remove.
type Item struct {
	task    Task
	arrival time.Time
	since   time.Time // the arrival of the scan request's first page (Task.Since), else arrival
	due     time.Time // a scan page's Fair deadline: since plus ScanWait per node waited for
	seq     uint64    // push order, the tie-break everywhere
	passed  uint64    // a scan page's Queue.passed at its push
	queued  bool
	index   int // in Queue.scans; -1 when not there
	// elem is a get's place in its class's arrival list, or the FIFO turn a scan page
	// holds (a *turn; nil once another scan page took it: see Queue.turns).
	elem *list.Element
}

// turn is a place in FIFO's order that a scan page's arrival made, held by a page.
type turn struct {
	seq   uint64
	owner *Item
}

// Task is the task as queued: RaS progress updates (Queue.Update) set its Nodes.
func (it *Item) Task() Task { return it.task }

// Arrival is when the task was pushed (never before an earlier push's arrival).
func (it *Item) Arrival() time.Time { return it.arrival }

// Queue orders the read stage's tasks by a Policy. It is pure and deterministic: no
// goroutines, no clock (times come in as arguments), ties broken by push order. It is not
// safe for concurrent use; the Stage locks it.
type Queue struct {
	policy Policy
	fair   Fairness
	// overdue says Fair's last pop was an overdue scan page: the next goes to a get,
	// if one waits.
	overdue bool
	// passed counts the gets popped while a scan page was queued: a page has been
	// passed by passed less its Item.passed gets (Fairness.ScanPass).
	passed uint64
	// overduePops counts the scan pages Fair popped past their deadline.
	overduePops uint64

	// gets holds each class of gets in push order, their order under every discipline
	// (within a class, arrival order is also Fair's deadline order).
	gets [ScanPage]list.List
	// scans holds the scan pages in the order scanLess defines for the policy.
	scans scanHeap
	// turns holds one *turn per queued scan page, in push order: FIFO serves a scan page
	// when the first turn is older than every queued get, and serves in it the first
	// scan page in RaS order, which need not be the page that made the turn. The turns
	// keep their arrival order, so FIFO's order across classes is the paper's O with or
	// without RaS.
	turns list.List

	byScan map[ScanID][]*Item // queued pages of each scan, for Update
	known  map[ScanID]int     // RaS progress, for pages queued later
	order  []ScanID           // known's keys, a ring from next on oldest first
	next   int                // where order's oldest key is once the ring is full

	seq  uint64
	last time.Time // latest arrival, so arrivals never go back
}

// NewQueue returns an empty queue ordering by p, with Fair tuned by f (zero fields are
// the defaults).
func NewQueue(p Policy, f Fairness) *Queue {
	q := &Queue{
		policy: p,
		fair:   f.withDefaults(),
		byScan: map[ScanID][]*Item{},
		known:  map[ScanID]int{},
	}
	q.scans.q = q
	return q
}

// Policy is the queue's current policy.
func (q *Queue) Policy() Policy { return q.policy }

// SetPolicy orders the queue by p from the next Pop on, queued tasks included.
func (q *Queue) SetPolicy(p Policy) {
	q.policy = p
	q.overdue = false
	heap.Init(&q.scans)
}

// Len is the number of queued tasks.
func (q *Queue) Len() int {
	return q.gets[LocalGet].Len() + q.gets[RemoteGet].Len() + len(q.scans.items)
}

// OverduePops is how many scan pages Fair has popped past their deadline: pages served
// by deadline rather than in RaS's order (or push order).
func (q *Queue) OverduePops() uint64 { return q.overduePops }

// Queued is the number of queued tasks of class c.
func (q *Queue) Queued(c Class) int {
	if c < ScanPage {
		return q.gets[c].Len()
	}
	return len(q.scans.items)
}

// Push queues t, arrived at now. A scan page whose scan had a progress update (Update)
// is queued with the smaller of its own Nodes and the updated count: the update is
// newer than the request the page belongs to. A class beyond ScanPage is queued as a
// scan page.
func (q *Queue) Push(t Task, now time.Time) *Item {
	if t.Class > ScanPage {
		t.Class = ScanPage
	}
	if now.Before(q.last) {
		now = q.last
	}
	q.last = now
	q.seq++
	it := &Item{task: t, arrival: now, since: now, seq: q.seq, passed: q.passed, queued: true, index: -1}
	if !t.Since.IsZero() && t.Since.Before(now) {
		it.since = t.Since
	}
	if t.Class < ScanPage {
		it.elem = q.gets[t.Class].PushBack(it)
		return it
	}
	it.elem = q.turns.PushBack(&turn{seq: it.seq, owner: it})
	if t.Scan != 0 {
		if n, ok := q.known[t.Scan]; ok && n < it.task.Nodes {
			it.task.Nodes = n
		}
		q.byScan[t.Scan] = append(q.byScan[t.Scan], it)
	}
	it.due = q.dueBy(it.since, it.task.Nodes)
	heap.Push(&q.scans, it)
	return it
}

// Pop removes and returns the task the policy serves next at now, nil when the queue is
// empty.
//
//   - FIFO: the oldest task; when that is a scan page, the first scan page in the scan
//     order (itself, unless RaS picks another: RaS reorders scan pages among the turns
//     FIFO gives to scan pages).
//   - ReS: the oldest local get, else the oldest remote get, else the first scan page.
//   - Fair: the gets first, by deadline (a local get's arrival, a remote get's arrival
//     plus RemoteSlack), then the first scan page; but a scan page past its deadline
//     (its request's arrival plus ScanWait per node its scan waits for) is overdue:
//     overdue pages go before the other scan pages, earliest deadline first, and
//     alternate with the gets once one of them has been passed by ScanPass gets.
func (q *Queue) Pop(now time.Time) *Item {
	var it *Item
	switch q.policy.Queue {
	case ReS:
		for c := LocalGet; c <= ScanPage && it == nil; c++ {
			it = q.head(c)
		}
	case Fair:
		it = q.head(LocalGet)
		if r := q.head(RemoteGet); r != nil && (it == nil || q.fairLess(r, it)) {
			it = r
		}
		overdue, held := q.overdueScan(now)
		switch {
		case overdue != nil && (it == nil || held && !q.overdue):
			it = overdue
			q.overdue = held
			q.overduePops++
		case it != nil:
			q.overdue = false
		default:
			it = q.head(ScanPage)
			q.overdue = false
		}
	default:
		for c := LocalGet; c < ScanPage; c++ {
			if cand := q.head(c); cand != nil && (it == nil || cand.seq < it.seq) {
				it = cand
			}
		}
		if e := q.turns.Front(); e != nil && (it == nil || e.Value.(*turn).seq < it.seq) {
			it = q.head(ScanPage)
			q.takeTurn(e.Value.(*turn).owner, it)
		}
	}
	if it != nil {
		if it.task.Class < ScanPage && len(q.scans.items) > 0 {
			q.passed++
		}
		q.Remove(it)
	}
	return it
}

// overdueScan is the queued scan page with the earliest deadline if that is not after
// now, nil when no page is overdue, and whether some overdue page has been passed by
// ScanPass gets. The scan pages queued are at most the reads in flight of the node's
// clients, so a walk over them costs less than the read it schedules.
func (q *Queue) overdueScan(now time.Time) (first *Item, held bool) {
	for _, it := range q.scans.items {
		if it.due.After(now) {
			continue
		}
		held = held || q.passed-it.passed >= uint64(q.fair.ScanPass)
		if first == nil || it.due.Before(first.due) || (it.due.Equal(first.due) && it.seq < first.seq) {
			first = it
		}
	}
	return first, held
}

// dueBy is the deadline of a scan page whose request arrived at since and whose scan
// waits for nodes nodes: since plus ScanWait per node, at least one. A scan that waits
// for fewer nodes is closer to done, which is why RaS serves it first; its deadline
// comes sooner too, so that among pages of similar age the bound keeps RaS's order.
func (q *Queue) dueBy(since time.Time, nodes int) time.Time {
	n := time.Duration(max(nodes, 1))
	if n > math.MaxInt64/q.fair.ScanWait {
		return since.Add(math.MaxInt64) // far beyond any wait; saturated, not wrapped
	}
	return since.Add(n * q.fair.ScanWait)
}

// takeTurn hands owner's turn, the first, to the scan page top that FIFO serves in it:
// top's own turn, if it still has one, goes to owner, so every queued page but one
// keeps a turn no earlier than it had.
func (q *Queue) takeTurn(owner, top *Item) {
	if owner == top {
		return
	}
	owner.elem, top.elem = top.elem, owner.elem
	if owner.elem != nil {
		owner.elem.Value.(*turn).owner = owner
	}
	top.elem.Value.(*turn).owner = top
}

// head is the task class c would serve next: the oldest get, or the first scan page.
func (q *Queue) head(c Class) *Item {
	if c == ScanPage {
		if len(q.scans.items) == 0 {
			return nil
		}
		return q.scans.items[0]
	}
	if e := q.gets[c].Front(); e != nil {
		return e.Value.(*Item)
	}
	return nil
}

// Remove takes it out of the queue (a caller that gave up); false if it was no longer
// queued. A scan page gives up its turn, or, if another page took it, the last turn,
// so no page moves ahead in FIFO's order because another left.
func (q *Queue) Remove(it *Item) bool {
	if !it.queued {
		return false
	}
	it.queued = false
	if it.task.Class < ScanPage {
		q.gets[it.task.Class].Remove(it.elem)
		it.elem = nil
		return true
	}
	if it.elem == nil {
		last := q.turns.Back()
		last.Value.(*turn).owner.elem = nil
		it.elem = last
	}
	q.turns.Remove(it.elem)
	it.elem = nil
	heap.Remove(&q.scans, it.index)
	if s := it.task.Scan; s != 0 {
		pages := q.byScan[s]
		for i, p := range pages {
			if p == it {
				pages[i] = pages[len(pages)-1]
				pages = pages[:len(pages)-1]
				break
			}
		}
		if len(pages) == 0 {
			delete(q.byScan, s)
		} else {
			q.byScan[s] = pages
		}
	}
	return true
}

// Update is RaS's priority update: scan now waits for nodes nodes. Its queued pages are
// reordered with that count, and pages queued later take it too (see Push). The queue
// remembers the counts of its rasMemory most recently updated scans. Only RaS orders
// by the count, but it is kept under every policy so that switching RaS on finds it.
func (q *Queue) Update(scan ScanID, nodes int) {
	if scan == 0 {
		return
	}
	if _, ok := q.known[scan]; !ok {
		if len(q.order) < rasMemory {
			q.order = append(q.order, scan)
		} else {
			delete(q.known, q.order[q.next])
			q.order[q.next] = scan
			q.next = (q.next + 1) % rasMemory
		}
	}
	q.known[scan] = nodes
	for _, it := range q.byScan[scan] {
		it.task.Nodes = nodes
		// A deadline only comes sooner: an overdue page stays overdue, which the bound needs.
		if due := q.dueBy(it.since, nodes); due.Before(it.due) {
			it.due = due
		}
		heap.Fix(&q.scans, it.index)
	}
}

// deadline is a get's Fair deadline, which orders the gets: its arrival, plus
// RemoteSlack for a remote get.
func (q *Queue) deadline(it *Item) time.Time {
	if it.task.Class == RemoteGet {
		return it.arrival.Add(q.fair.RemoteSlack)
	}
	return it.arrival
}

// fairLess orders gets by deadline, then push order.
func (q *Queue) fairLess(a, b *Item) bool {
	da, db := q.deadline(a), q.deadline(b)
	if !da.Equal(db) {
		return da.Before(db)
	}
	return a.seq < b.seq
}

// scanLess is the order among scan pages: under RaS, fewer nodes first, then the
// smaller limit; else, and then, push order. Fair keeps it: its overdue pages, which go
// earliest deadline first, are what bounds a scan's wait.
func (q *Queue) scanLess(a, b *Item) bool {
	if q.policy.RaS {
		if a.task.Nodes != b.task.Nodes {
			return a.task.Nodes < b.task.Nodes
		}
		if a.task.Limit != b.task.Limit {
			return a.task.Limit < b.task.Limit
		}
	}
	return a.seq < b.seq
}

// scanHeap is the heap.Interface of the queued scan pages, ordered by scanLess.
type scanHeap struct {
	q     *Queue
	items []*Item
}

func (h *scanHeap) Len() int           { return len(h.items) }
func (h *scanHeap) Less(i, j int) bool { return h.q.scanLess(h.items[i], h.items[j]) }
func (h *scanHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index = i
	h.items[j].index = j
}
func (h *scanHeap) Push(x any) {
	it := x.(*Item)
	it.index = len(h.items)
	h.items = append(h.items, it)
}
func (h *scanHeap) Pop() any {
	it := h.items[len(h.items)-1]
	h.items[len(h.items)-1] = nil
	h.items = h.items[:len(h.items)-1]
	it.index = -1
	return it
}
