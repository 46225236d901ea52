package sched

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// epoch is the virtual time zero of the scripted queues.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// TestScripts runs the queue scripts in testdata/: each policy's order, told push by
// push and pop by pop in virtual time. Regenerate the expected output with:
// go test ./internal/data/sched -run TestScripts -rewrite
//
// Commands (DUR is a virtual time since the script's epoch, e.g. 0, 1ms, 2s):
//
//	new policy=P [scan-wait=DUR] [scan-pass=N] [remote-slack=DUR]   an empty queue; the clock at 0
//	push at=DUR       move the clock to DUR and push the tasks listed in the input, one per
//	                  line: "NAME local", "NAME remote" or
//	                  "NAME scan [scan=N] [nodes=N] [limit=N] [since=DUR]"
//	pop [n=N] [at=DUR]  pop N tasks (default: all) at the clock, moved to DUR first if
//	                  given; prints their names in pop order
//	update scan=N nodes=N                             a RaS progress update
//	policy P          switch the policy (queued tasks re-ordered)
//	remove NAME       remove a queued task; prints whether it was queued
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		s := &script{}
		datadriven.RunTest(t, path, s.run)
	})
}

type script struct {
	q     *Queue
	now   time.Duration // the virtual clock: the latest push or pop time
	names map[*Item]string
	items map[string]*Item
}

func (s *script) run(t *testing.T, d *datadriven.TestData) string {
	if d.Cmd != "new" && s.q == nil {
		d.Fatalf(t, "%s before new", d.Cmd)
	}
	switch d.Cmd {
	case "new":
		var policy string
		d.ScanArgs(t, "policy", &policy)
		p, err := ParsePolicy(policy)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		fair := Fairness{
			ScanWait:    durArg(t, d, "scan-wait"),
			RemoteSlack: durArg(t, d, "remote-slack"),
		}
		d.MaybeScanArgs(t, "scan-pass", &fair.ScanPass)
		s.q = NewQueue(p, fair)
		s.now = 0
		s.names = map[*Item]string{}
		s.items = map[string]*Item{}
		return ""
	case "push":
		s.advance(t, d)
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			name, task := parseTask(t, d, line)
			if _, dup := s.items[name]; dup {
				d.Fatalf(t, "task %s pushed twice", name)
			}
			it := s.q.Push(task, epoch.Add(s.now))
			s.names[it] = name
			s.items[name] = it
		}
		return ""
	case "pop":
		n := -1
		d.MaybeScanArgs(t, "n", &n)
		s.advance(t, d)
		var out []string
		for ; n != 0; n-- {
			it := s.q.Pop(epoch.Add(s.now))
			if it == nil {
				break
			}
			out = append(out, s.names[it])
		}
		if len(out) == 0 {
			return "empty"
		}
		return strings.Join(out, " ")
	case "update":
		var scan, nodes int
		d.ScanArgs(t, "scan", &scan)
		d.ScanArgs(t, "nodes", &nodes)
		s.q.Update(ScanID(scan), nodes)
		return ""
	case "policy":
		p, err := ParsePolicy(d.CmdArgs[0].Key)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		s.q.SetPolicy(p)
		return ""
	case "remove":
		it, ok := s.items[d.CmdArgs[0].Key]
		if !ok {
			d.Fatalf(t, "no task %s", d.CmdArgs[0].Key)
		}
		return fmt.Sprint(s.q.Remove(it))
	}
	d.Fatalf(t, "unknown command %s", d.Cmd)
	return ""
}

// advance moves the clock to the command's at=DUR, if given; the clock never goes back,
// as the Stage's does not.
func (s *script) advance(t *testing.T, d *datadriven.TestData) {
	if !d.HasArg("at") {
		return
	}
	at := durArg(t, d, "at")
	if at < s.now {
		d.Fatalf(t, "at=%v: the clock is already at %v", at, s.now)
	}
	s.now = at
}

// durArg reads an optional duration argument; absent is 0.
func durArg(t *testing.T, d *datadriven.TestData, key string) time.Duration {
	var v string
	if !d.MaybeScanArgs(t, key, &v) {
		return 0
	}
	dur, err := time.ParseDuration(v)
	if err != nil {
		d.Fatalf(t, "%s=%s: %v", key, v, err)
	}
	return dur
}

// parseTask reads "NAME CLASS [key=N ...] [since=DUR]".
func parseTask(t *testing.T, d *datadriven.TestData, line string) (string, Task) {
	f := strings.Fields(line)
	if len(f) < 2 {
		d.Fatalf(t, "task %q: want NAME CLASS [scan=N nodes=N limit=N since=DUR]", line)
	}
	var task Task
	switch f[1] {
	case "local":
		task.Class = LocalGet
	case "remote":
		task.Class = RemoteGet
	case "scan":
		task.Class = ScanPage
	default:
		d.Fatalf(t, "task %q: class %q: want local, remote or scan", line, f[1])
	}
	for _, kv := range f[2:] {
		if since, ok := strings.CutPrefix(kv, "since="); ok {
			dur, err := time.ParseDuration(since)
			if err != nil {
				d.Fatalf(t, "task %q: %q: %v", line, kv, err)
			}
			task.Since = epoch.Add(dur)
			continue
		}
		var key string
		var v int
		if _, err := fmt.Sscanf(strings.Replace(kv, "=", " ", 1), "%s %d", &key, &v); err != nil {
			d.Fatalf(t, "task %q: %q: %v", line, kv, err)
		}
		switch key {
		case "scan":
			task.Scan = ScanID(v)
		case "nodes":
			task.Nodes = v
		case "limit":
			task.Limit = v
		default:
			d.Fatalf(t, "task %q: unknown field %q", line, key)
		}
	}
	return f[0], task
}

// fairBound checks, pop by pop, the bound the package doc states for Fair: once a scan
// page is overdue (past its deadline: its request's arrival, Task.Since or else the
// page's, plus ScanWait per node its scan waits for, at least one, the count lowered by
// progress updates), it pops within ScanPass + 2(k+1) pops, k the overdue pages of
// requests with earlier deadlines that pop ahead of it; and overdue pages pop earliest
// deadline first. It works from the tasks as pushed and the updates as sent, not from
// the queue's fields.
type fairBound struct {
	wait  time.Duration
	pass  int
	seq   int
	pages map[*Item]*pageWait // the queued scan pages
	known map[ScanID]int      // the latest progress update of each scan
}

// pageWait is what fairBound knows of a queued scan page.
type pageWait struct {
	scan  ScanID
	since time.Time
	due   time.Time
	seq   int // push order
	pops  int // pops since it became overdue, its own included
	ahead int // of those, overdue pages with earlier deadlines
	gets  int // gets popped since it was pushed
}

func newFairBound(f Fairness) *fairBound {
	f = f.withDefaults()
	return &fairBound{wait: f.ScanWait, pass: f.ScanPass, pages: map[*Item]*pageWait{}, known: map[ScanID]int{}}
}

// held says gets have held w back: ScanPass of them popped while it waited.
func (b *fairBound) held(w *pageWait) bool { return w.gets >= b.pass }

// before says w's deadline is earlier than o's, or the same and w was pushed first.
func (w *pageWait) before(o *pageWait) bool {
	if !w.due.Equal(o.due) {
		return w.due.Before(o.due)
	}
	return w.seq < o.seq
}

func (b *fairBound) overdue(w *pageWait, now time.Time) bool { return !w.due.After(now) }

// dueBy is a deadline as the package doc states it.
func (b *fairBound) dueBy(since time.Time, nodes int) time.Time {
	return since.Add(time.Duration(max(nodes, 1)) * b.wait)
}

// push pushes t on q at now and records it.
func (b *fairBound) push(q *Queue, t Task, now time.Time) *Item {
	it := q.Push(t, now)
	if t.Class != ScanPage {
		return it
	}
	b.seq++
	since := it.Arrival()
	if !t.Since.IsZero() && t.Since.Before(since) {
		since = t.Since
	}
	nodes := t.Nodes
	if n, ok := b.known[t.Scan]; ok && t.Scan != 0 && n < nodes {
		nodes = n
	}
	b.pages[it] = &pageWait{scan: t.Scan, since: since, due: b.dueBy(since, nodes), seq: b.seq}
	return it
}

// update sends q a progress update and records it: a deadline only comes sooner.
func (b *fairBound) update(q *Queue, scan ScanID, nodes int) {
	q.Update(scan, nodes)
	if scan == 0 {
		return
	}
	b.known[scan] = nodes
	for _, w := range b.pages {
		if due := b.dueBy(w.since, nodes); w.scan == scan && due.Before(w.due) {
			w.due = due
		}
	}
}

// remove records a removed task.
func (b *fairBound) remove(it *Item) { delete(b.pages, it) }

// popped records that it popped at now and checks the bound; it returns, for a scan
// page that was overdue, what it waited for (nil otherwise).
func (b *fairBound) popped(it *Item, now time.Time) (*pageWait, error) {
	for _, w := range b.pages {
		if b.overdue(w, now) {
			w.pops++
		}
	}
	p := b.pages[it]
	delete(b.pages, it)
	if p == nil {
		for _, w := range b.pages {
			w.gets++
		}
	}
	if p == nil || !b.overdue(p, now) {
		p = nil
	}
	for _, w := range b.pages {
		if !b.overdue(w, now) {
			continue
		}
		if p != nil {
			if w.before(p) {
				return nil, fmt.Errorf("an overdue page due at %v popped while one due at %v waited", p.due.Sub(epoch), w.due.Sub(epoch))
			}
			w.ahead++
		}
		if w.pops > b.pass+2*w.ahead+1 {
			return nil, fmt.Errorf("a page due at %v still queued after %d pops, %d of them pages with earlier deadlines: the bound is %d+2(k+1)",
				w.due.Sub(epoch), w.pops, w.ahead, b.pass)
		}
	}
	return p, nil
}

// TestFairBoundUnderGetStream is the test: gets keep arriving faster than they
// are served (two local and one remote get per tick, one pop per tick, virtual time),
// and scan requests of one or more pages arrive among them. Under Fair every page must
// pop within its bound, ScanPass + 2(k+1) pops (here ticks) once its request has waited
// ScanWait, k counting the pages of older requests: a later page of a request is
// overdue as soon as it is pushed (Since is kept). ReS and A starve them all.
func TestFairBoundUnderGetStream(t *testing.T) {
	const tick = time.Millisecond
	const horizon = 6000 * tick
	type request struct {
		at           time.Duration // when its first page is pushed
		since        time.Duration // its Task.Since, if not at (a request begun earlier)
		pages        int
		nodes, limit int
	}
	for _, tc := range []struct {
		name     string
		policy   string
		scanWait time.Duration
		scanPass int
		requests []request
		starves  bool
	}{
		{name: "fair, default ScanWait and ScanPass", policy: "fair", requests: []request{{at: 5 * tick, pages: 1}}},
		{name: "fair, a long scan, ScanPass 1", policy: "fair", scanWait: 100 * tick, scanPass: 1, requests: []request{{at: 5 * tick, pages: 40}}},
		{name: "fair, a long scan, ScanPass 30", policy: "fair", scanWait: 100 * tick, scanPass: 30, requests: []request{{at: 5 * tick, pages: 40}}},
		{name: "fair, one page", policy: "fair", scanWait: 100 * tick, requests: []request{{at: 5 * tick, pages: 1}}},
		{name: "fair, a long scan", policy: "fair", scanWait: 100 * tick, requests: []request{{at: 5 * tick, pages: 40}}},
		{name: "fair, a request begun earlier", policy: "fair", scanWait: 100 * tick,
			requests: []request{{at: 5 * tick, pages: 1}, {at: 50 * tick, since: 2 * tick, pages: 3}}},
		{name: "kura, three scans", policy: "kura", scanWait: 100 * tick, requests: []request{
			{at: 5 * tick, pages: 4, nodes: 12, limit: 10000},
			{at: 5 * tick, pages: 2, nodes: 1, limit: 1},
			{at: 30 * tick, pages: 3, nodes: 20, limit: 1 << 30},
		}},
		{name: "res starves it", policy: "res", scanWait: 100 * tick, requests: []request{{at: 5 * tick, pages: 1, nodes: 1, limit: 1}}, starves: true},
		{name: "A starves it", policy: "A", scanWait: 100 * tick, requests: []request{{at: 5 * tick, pages: 1, nodes: 1, limit: 1}}, starves: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePolicy(tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			fair := Fairness{ScanWait: tc.scanWait, ScanPass: tc.scanPass}
			q := NewQueue(p, fair)
			b := newFairBound(fair)
			left := make([]int, len(tc.requests))       // pages not yet popped
			next := make([]time.Time, len(tc.requests)) // when its next page is pushed; zero: queued
			for i, r := range tc.requests {
				left[i], next[i] = r.pages, epoch.Add(r.at)
			}
			req := map[*Item]int{}
			for now := epoch; now.Before(epoch.Add(horizon)); now = now.Add(tick) {
				for range 2 {
					b.push(q, Task{Class: LocalGet}, now)
				}
				b.push(q, Task{Class: RemoteGet}, now)
				for i, r := range tc.requests {
					if next[i].IsZero() || now.Before(next[i]) {
						continue
					}
					since := epoch.Add(r.at)
					if r.since != 0 {
						since = epoch.Add(r.since)
					}
					it := b.push(q, Task{Class: ScanPage, Scan: ScanID(i + 1), Nodes: r.nodes, Limit: r.limit, Since: since}, now)
					req[it], next[i] = i, time.Time{}
				}
				it := q.Pop(now)
				if _, err := b.popped(it, now); err != nil && !tc.starves {
					t.Fatalf("at %v: %v", now.Sub(epoch), err)
				}
				if it.Task().Class != ScanPage {
					continue
				}
				if tc.starves {
					t.Fatalf("a scan page popped at %v; want them starved", now.Sub(epoch))
				}
				i := req[it]
				if left[i]--; left[i] > 0 {
					next[i] = now.Add(tick) // the page is read, then the next one queued
				}
			}
			for i, n := range left {
				if n > 0 && !tc.starves {
					t.Errorf("request %d: %d of its %d pages still queued after %v", i, n, tc.requests[i].pages, horizon)
				}
			}
		})
	}
}

// TestFairTimeBound checks the bound in time: with W workers and reads of at most R
// each, a scan page starts within R·⌈(ScanPass+2(k+1))/W⌉ of becoming overdue (its
// deadline, its request's arrival plus ScanWait per node its scan waits for, or its
// push if later), k the overdue pages with earlier deadlines that pop ahead of it. A discrete-event simulation in virtual time: gets arrive faster
// than the workers serve them, scan requests of a few pages arrive at random times, and
// each read holds its worker for a random time up to R.
func TestFairTimeBound(t *testing.T) {
	const r = 10 * time.Millisecond
	const horizon = 2 * time.Second
	for _, tc := range []struct {
		name     string
		policy   string
		workers  int
		scanWait time.Duration
		scanPass int
	}{
		{name: "fair, one worker", policy: "fair", workers: 1, scanWait: 50 * time.Millisecond, scanPass: 1},
		{name: "fair, one worker, ScanPass 5", policy: "fair", workers: 1, scanWait: 50 * time.Millisecond, scanPass: 5},
		{name: "kura, three workers", policy: "kura", workers: 3, scanWait: 50 * time.Millisecond, scanPass: 4},
		{name: "kura, 32 workers", policy: "kura", workers: 32, scanWait: 100 * time.Millisecond, scanPass: 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePolicy(tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewSource(int64(tc.workers)))
			q := NewQueue(p, Fairness{ScanWait: tc.scanWait, ScanPass: tc.scanPass})
			b := newFairBound(Fairness{ScanWait: tc.scanWait, ScanPass: tc.scanPass})
			type request struct {
				since time.Time
				left  int
				nodes int
				next  time.Time // when its next page is pushed; zero: queued or done
			}
			var reqs []*request
			for i := 0; i < 40; i++ {
				at := epoch.Add(time.Duration(rng.Int63n(int64(horizon / 2))))
				reqs = append(reqs, &request{since: at, left: 1 + rng.Intn(6), nodes: 1 + rng.Intn(12), next: at})
			}
			getEvery := r / time.Duration(4*tc.workers) // 4W gets per R: more than W workers serve
			nextGet := epoch
			type worker struct {
				until time.Time
				page  *request // the scan request whose page it reads, if any
			}
			busy := map[*worker]bool{}
			idle := tc.workers
			owner := map[*Item]*request{}
			served := 0
			for now := epoch; now.Before(epoch.Add(horizon)); {
				// Reads ending now free their workers; a scan's next page is queued then.
				for w := range busy {
					if w.until.After(now) {
						continue
					}
					delete(busy, w)
					idle++
					if w.page != nil && w.page.left > 0 {
						w.page.next = now
					}
				}
				for !nextGet.After(now) {
					b.push(q, Task{Class: Class(rng.Intn(2))}, nextGet)
					nextGet = nextGet.Add(getEvery)
				}
				for i, rq := range reqs {
					if rq.next.IsZero() || rq.next.After(now) {
						continue
					}
					it := b.push(q, Task{Class: ScanPage, Scan: ScanID(i + 1), Nodes: rq.nodes, Limit: 100, Since: rq.since}, now)
					owner[it], rq.next = rq, time.Time{}
				}
				for ; idle > 0; idle-- {
					it := q.Pop(now)
					if it == nil {
						break
					}
					w, err := b.popped(it, now)
					if err != nil {
						t.Fatalf("at %v: %v", now.Sub(epoch), err)
					}
					if w != nil {
						overdue := w.due
						if it.Arrival().After(overdue) {
							overdue = it.Arrival()
						}
						rounds := (tc.scanPass + 2*(w.ahead+1) + tc.workers - 1) / tc.workers
						if late := now.Sub(overdue); late > time.Duration(rounds)*r {
							t.Fatalf("a page overdue at %v started at %v, %v late; the bound with k=%d is %v",
								overdue.Sub(epoch), now.Sub(epoch), late, w.ahead, time.Duration(rounds)*r)
						}
					}
					rw := &worker{until: now.Add(r/10 + time.Duration(rng.Int63n(int64(r-r/10)+1)))}
					if rq := owner[it]; rq != nil {
						rq.left--
						rw.page = rq
						served++
					}
					busy[rw] = true
				}
				// The next event: a read ending, a get arriving or a scan page queued.
				next := nextGet
				for w := range busy {
					if w.until.Before(next) {
						next = w.until
					}
				}
				for _, rq := range reqs {
					if !rq.next.IsZero() && rq.next.Before(next) {
						next = rq.next
					}
				}
				now = next
			}
			for i, rq := range reqs {
				if rq.left > 0 {
					t.Errorf("request %d: %d pages not served by %v", i, rq.left, horizon)
				}
			}
			if served == 0 {
				t.Fatal("no scan page served")
			}
		})
	}
}

// TestFairBoundRandom checks Fair's order and bound on random scripts of pushes (scan
// pages with and without a Since), pops at advancing times, progress updates, removals
// and switches between fair and fair+ras: gets pop by deadline; a scan page that is not
// overdue pops only when no get and no overdue page waits; a get pops while an overdue
// page that gets have held back (ScanPass) waits only right after an overdue page;
// OverduePops counts the pages popped past their deadline; and fairBound's checks.
func TestFairBoundRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(15))
	var overdueTotal uint64
	for run := 0; run < 300; run++ {
		p := Policy{Queue: Fair, RaS: rng.Intn(2) == 0}
		fair := Fairness{
			ScanWait:    time.Duration(rng.Intn(10)) * time.Millisecond,
			ScanPass:    rng.Intn(5),
			RemoteSlack: time.Duration(rng.Intn(3)) * time.Millisecond,
		}
		q := NewQueue(p, fair)
		fair = fair.withDefaults()
		b := newFairBound(fair)
		queued := map[*Item]bool{}
		lastOverdue := false // the last pop was an overdue page
		overduePops := 0     // pages popped past their deadline, by fairBound's count
		now := epoch
		for step := 0; step < 400; step++ {
			now = now.Add(time.Duration(rng.Intn(2000)) * time.Microsecond)
			switch r := rng.Intn(10); {
			case r < 5:
				task := Task{Class: Class(rng.Intn(NumClasses))}
				if task.Class == ScanPage {
					task.Scan = ScanID(1 + rng.Intn(8))
					task.Nodes = rng.Intn(20)
					task.Limit = rng.Intn(20000)
					if rng.Intn(2) == 0 { // a later page: its request arrived up to 20ms ago
						task.Since = now.Add(-time.Duration(rng.Intn(20000)) * time.Microsecond)
					}
				}
				it := b.push(q, task, now)
				queued[it] = true
			case r < 8:
				overdueWaits, heldWaits, getWaits := false, false, false
				for other := range queued {
					if w := b.pages[other]; w != nil && b.overdue(w, now) {
						overdueWaits = true
						heldWaits = heldWaits || b.held(w)
					} else if w == nil {
						getWaits = true
					}
				}
				it := q.Pop(now)
				if it == nil {
					continue
				}
				delete(queued, it)
				w := b.pages[it]
				wasOverdue := w != nil && b.overdue(w, now)
				if wasOverdue {
					overduePops++
				}
				if _, err := b.popped(it, now); err != nil {
					t.Fatalf("run %d: %v", run, err)
				}
				switch {
				case w != nil && !wasOverdue && (getWaits || overdueWaits):
					t.Fatalf("run %d: a scan page not overdue popped while a get or an overdue page waited", run)
				case w == nil && heldWaits && !lastOverdue:
					t.Fatalf("run %d: a get popped while an overdue page held back by gets waited, after a pop that was not one", run)
				}
				lastOverdue = wasOverdue && heldWaits
				if w != nil {
					continue
				}
				for other := range queued {
					if b.pages[other] != nil {
						continue
					}
					due, odue := it.Arrival(), other.Arrival()
					if it.Task().Class == RemoteGet {
						due = due.Add(fair.RemoteSlack)
					}
					if other.Task().Class == RemoteGet {
						odue = odue.Add(fair.RemoteSlack)
					}
					if odue.Before(due) || (odue.Equal(due) && other.seq < it.seq) {
						t.Fatalf("run %d: %v due at %v popped before %v due at %v", run,
							it.Task().Class, due.Sub(epoch), other.Task().Class, odue.Sub(epoch))
					}
				}
			case r < 9:
				b.update(q, ScanID(1+rng.Intn(8)), rng.Intn(20))
			default:
				for it := range queued {
					if !q.Remove(it) {
						t.Fatalf("run %d: a queued task was not removed", run)
					}
					b.remove(it)
					delete(queued, it)
					break
				}
				p.RaS = rng.Intn(2) == 0
				q.SetPolicy(p)
				lastOverdue = false
			}
			if q.Len() != len(queued) || q.Queued(ScanPage) != len(b.pages) {
				t.Fatalf("run %d: Len %d, %d scan pages; want %d, %d", run, q.Len(), q.Queued(ScanPage), len(queued), len(b.pages))
			}
			if q.OverduePops() != uint64(overduePops) {
				t.Fatalf("run %d: OverduePops %d; want %d", run, q.OverduePops(), overduePops)
			}
		}
		overdueTotal += q.OverduePops()
	}
	if overdueTotal == 0 {
		t.Fatal("no page popped past its deadline: the scripts check nothing of the bound")
	}
}

// TestRaSKeepsFIFOTurns checks that RaS under FIFO only reorders scan pages among the
// turns FIFO gives scan pages: on random scripts without removals the classes pop in
// the same sequence with and without RaS, and the pages of each turn are RaS's pick.
func TestRaSKeepsFIFOTurns(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	for run := 0; run < 200; run++ {
		plain := NewQueue(Policy{Queue: FIFO}, Fairness{})
		ras := NewQueue(Policy{Queue: FIFO, RaS: true}, Fairness{})
		now := epoch
		for step := 0; step < 300; step++ {
			now = now.Add(time.Millisecond)
			if rng.Intn(2) == 0 {
				task := Task{Class: Class(rng.Intn(NumClasses))}
				if task.Class == ScanPage {
					task.Scan = ScanID(1 + rng.Intn(8))
					task.Nodes = 1 + rng.Intn(5)
					task.Limit = rng.Intn(100)
				}
				plain.Push(task, now)
				ras.Push(task, now)
				continue
			}
			var best *Item
			for _, it := range ras.scans.items {
				if best == nil || ras.scanLess(it, best) {
					best = it
				}
			}
			a, b := plain.Pop(now), ras.Pop(now)
			if (a == nil) != (b == nil) {
				t.Fatalf("run %d step %d: FIFO popped %v, FIFO+RaS %v", run, step, a, b)
			}
			if a == nil {
				continue
			}
			if a.Task().Class != b.Task().Class {
				t.Fatalf("run %d step %d: FIFO popped a %v, FIFO+RaS a %v", run, step, a.Task().Class, b.Task().Class)
			}
			if b.Task().Class == ScanPage && b != best {
				t.Fatalf("run %d step %d: FIFO+RaS popped %+v, not RaS's pick %+v", run, step, b.Task(), best.Task())
			}
			if b.Task().Class != ScanPage && a.seq != b.seq {
				t.Fatalf("run %d step %d: FIFO popped get #%d, FIFO+RaS get #%d", run, step, a.seq, b.seq)
			}
		}
	}
}
