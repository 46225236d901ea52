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
// go test ./sched -run TestScripts -rewrite
//
// Commands:
//
//	new policy=P [get-run=N] [remote-slack=DUR] [node-slack=DUR]  an empty queue
//	push at=DUR       push the tasks listed in the input at virtual time DUR, one per line:
//	                  "NAME local", "NAME remote" or "NAME scan [scan=N] [nodes=N] [limit=N]"
//	pop [n=N]         pop N tasks (default: all); prints their names in pop order
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
		var fair Fairness
		d.MaybeScanArgs(t, "get-run", &fair.GetRun)
		fair.RemoteSlack = durArg(t, d, "remote-slack")
		fair.NodeSlack = durArg(t, d, "node-slack")
		s.q = NewQueue(p, fair)
		s.names = map[*Item]string{}
		s.items = map[string]*Item{}
		return ""
	case "push":
		at := durArg(t, d, "at")
		for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
			name, task := parseTask(t, d, line)
			if _, dup := s.items[name]; dup {
				d.Fatalf(t, "task %s pushed twice", name)
			}
			it := s.q.Push(task, epoch.Add(at))
			s.names[it] = name
			s.items[name] = it
		}
		return ""
	case "pop":
		n := -1
		d.MaybeScanArgs(t, "n", &n)
		var out []string
		for ; n != 0; n-- {
			it := s.q.Pop()
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

// parseTask reads "NAME CLASS [key=N ...]".
func parseTask(t *testing.T, d *datadriven.TestData, line string) (string, Task) {
	f := strings.Fields(line)
	if len(f) < 2 {
		d.Fatalf(t, "task %q: want NAME CLASS [scan=N nodes=N limit=N]", line)
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

// TestFairBoundUnderGetStream is the test: gets keep arriving faster than they
// are served (two local and one remote get per tick, one pop per tick, virtual time),
// and scan pages pushed at tick 5 must all pop within their bound under Fair, GetRun+1
// pops each, while ReS starves them.
func TestFairBoundUnderGetStream(t *testing.T) {
	const tick = time.Millisecond
	const arrive = 5 * tick
	const horizon = 2000 * tick
	page := func(scan ScanID, nodes, limit int) Task {
		return Task{Class: ScanPage, Scan: scan, Nodes: nodes, Limit: limit}
	}
	for _, tc := range []struct {
		name    string
		policy  string
		fair    Fairness
		pages   []Task
		starves bool
	}{
		{name: "fair", policy: "fair", pages: []Task{page(1, 12, 10000)}},
		{name: "fair, one get per page", policy: "fair", fair: Fairness{GetRun: 1}, pages: []Task{page(0, 0, 0)}},
		{name: "kura, three scans", policy: "kura", fair: Fairness{GetRun: 4},
			pages: []Task{page(1, 12, 10000), page(2, 1, 1), page(3, 100, 1<<30)}},
		{name: "res starves it", policy: "res", pages: []Task{page(1, 1, 1)}, starves: true},
		{name: "A starves it", policy: "A", pages: []Task{page(1, 1, 1)}, starves: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePolicy(tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			q := NewQueue(p, tc.fair)
			bound := len(tc.pages) * (tc.fair.withDefaults().GetRun + 1)
			waiting := map[*Item]bool{}
			pops := 0
			for now := epoch; now.Before(epoch.Add(horizon)); now = now.Add(tick) {
				q.Push(Task{Class: LocalGet}, now)
				q.Push(Task{Class: LocalGet}, now)
				q.Push(Task{Class: RemoteGet}, now)
				if now.Equal(epoch.Add(arrive)) {
					for _, task := range tc.pages {
						waiting[q.Push(task, now)] = true
					}
				}
				it := q.Pop()
				if len(waiting) > 0 {
					pops++
				}
				delete(waiting, it)
				if it.Task().Class == ScanPage && tc.starves {
					t.Fatalf("a scan page popped at %v; want them starved", now.Sub(epoch))
				}
				if len(waiting) > 0 && pops >= bound && !tc.starves {
					t.Fatalf("%d scan pages still queued after %d pops, the bound", len(waiting), pops)
				}
			}
			if len(waiting) == 0 && tc.starves {
				t.Fatalf("the scan pages popped; want them starved")
			}
		})
	}
}

// TestFairBoundRandom checks Fair's bounds on random scripts of pushes, pops, progress
// updates, removals and switches between fair and fair+ras: while scan pages wait, at
// most GetRun gets pop in a row; no get pops while a get pushed more than RemoteSlack
// before it waits; no scan page pops while one pushed more than its largest RaS offset
// (16 NodeSlack) before it waits.
func TestFairBoundRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(15))
	for run := 0; run < 200; run++ {
		p := Policy{Queue: Fair, RaS: rng.Intn(2) == 0}
		fair := Fairness{
			GetRun:      rng.Intn(5),
			RemoteSlack: time.Duration(rng.Intn(3)) * time.Millisecond,
			NodeSlack:   time.Duration(rng.Intn(5)) * time.Millisecond,
		}
		q := NewQueue(p, fair)
		fair = fair.withDefaults()
		queued := map[*Item]bool{}
		scans, gets := 0, 0 // scan pages queued; gets popped in a row while scan pages waited
		now := epoch
		for step := 0; step < 300; step++ {
			now = now.Add(time.Duration(rng.Intn(2000)) * time.Microsecond)
			if scans == 0 {
				gets = 0
			}
			switch r := rng.Intn(10); {
			case r < 5:
				task := Task{Class: Class(rng.Intn(NumClasses))}
				if task.Class == ScanPage {
					task.Scan = ScanID(1 + rng.Intn(8))
					task.Nodes = rng.Intn(20)
					task.Limit = rng.Intn(20000)
					scans++
				}
				queued[q.Push(task, now)] = true
			case r < 8:
				it := q.Pop()
				if it == nil {
					continue
				}
				delete(queued, it)
				if it.Task().Class == ScanPage {
					scans--
					gets = 0
				} else if scans > 0 {
					if gets++; gets > fair.GetRun {
						t.Fatalf("run %d: %d gets in a row while scan pages waited, GetRun %d", run, gets, fair.GetRun)
					}
				}
				for other := range queued {
					if (other.Task().Class == ScanPage) != (it.Task().Class == ScanPage) {
						continue
					}
					var due time.Time
					switch other.Task().Class {
					case LocalGet:
						due = other.Arrival()
					case RemoteGet:
						due = other.Arrival().Add(fair.RemoteSlack)
					default:
						due = other.Arrival().Add(rasMaxNodes * fair.NodeSlack)
					}
					if it.Arrival().After(due) {
						t.Fatalf("run %d: %+v pushed at %v popped before %+v due at %v", run,
							it.Task(), it.Arrival().Sub(epoch), other.Task(), due.Sub(epoch))
					}
				}
			case r < 9:
				q.Update(ScanID(1+rng.Intn(8)), rng.Intn(20))
			default:
				for it := range queued {
					if !q.Remove(it) {
						t.Fatalf("run %d: a queued task was not removed", run)
					}
					if it.Task().Class == ScanPage {
						scans--
					}
					delete(queued, it)
					break
				}
				p.RaS = rng.Intn(2) == 0
				q.SetPolicy(p)
				gets = 0
			}
			if q.Len() != len(queued) || q.Queued(ScanPage) != scans {
				t.Fatalf("run %d: Len %d, %d scan pages; want %d, %d", run, q.Len(), q.Queued(ScanPage), len(queued), scans)
			}
		}
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
			a, b := plain.Pop(), ras.Pop()
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
