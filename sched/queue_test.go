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
//	new policy=P [scan-slack=DUR] [remote-slack=DUR]  an empty queue
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
		var slack Slack
		slack.Scan = durArg(t, d, "scan-slack")
		slack.Remote = durArg(t, d, "remote-slack")
		s.q = NewQueue(p, slack)
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

// maxSlack is the documented most a task of class c can have under p (the bound).
func maxSlack(p Policy, s Slack, c Class) time.Duration {
	s = s.withDefaults()
	switch {
	case c == LocalGet:
		return 0
	case c == RemoteGet:
		return s.Remote
	case p.RaS:
		return 5 * s.Scan
	}
	return s.Scan
}

// TestFairBoundUnderGetStream is the test: gets keep arriving faster than they
// are served (two local and one remote get per tick, one pop per tick, virtual time), and
// a scan page pushed at tick 5 must pop within its bound under Fair, before every task
// pushed after its deadline, while ReS starves it.
func TestFairBoundUnderGetStream(t *testing.T) {
	const tick = time.Millisecond
	const arrive = 5 * tick
	const horizon = 2000 * tick
	for _, tc := range []struct {
		name    string
		policy  string
		slack   Slack
		page    Task
		starves bool
	}{
		{name: "fair", policy: "fair", page: Task{Class: ScanPage, Scan: 1, Nodes: 12, Limit: 10000}},
		{name: "fair short slack", policy: "fair", slack: Slack{Scan: 3 * tick}, page: Task{Class: ScanPage}},
		{name: "kura one node", policy: "kura", page: Task{Class: ScanPage, Scan: 1, Nodes: 1, Limit: 1}},
		{name: "kura 12 nodes", policy: "kura", page: Task{Class: ScanPage, Scan: 1, Nodes: 12, Limit: 10000}},
		{name: "kura beyond the caps", policy: "kura", page: Task{Class: ScanPage, Scan: 1, Nodes: 100, Limit: 1 << 30}},
		{name: "res starves it", policy: "res", page: Task{Class: ScanPage, Scan: 1, Nodes: 1}, starves: true},
		{name: "A starves it", policy: "A", page: Task{Class: ScanPage, Scan: 1, Nodes: 1}, starves: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePolicy(tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			q := NewQueue(p, tc.slack)
			due := epoch.Add(arrive + maxSlack(p, tc.slack, ScanPage))
			var page *Item
			for now := epoch; now.Before(epoch.Add(horizon)); now = now.Add(tick) {
				q.Push(Task{Class: LocalGet}, now)
				q.Push(Task{Class: LocalGet}, now)
				q.Push(Task{Class: RemoteGet}, now)
				if now.Equal(epoch.Add(arrive)) {
					page = q.Push(tc.page, now)
				}
				it := q.Pop()
				if it == page {
					if tc.starves {
						t.Fatalf("the scan page popped at %v; want it starved", now.Sub(epoch))
					}
					// One pop per tick serves at most the tasks pushed by the page's
					// deadline (three per tick, and the page) before the page.
					bound := 3 * (due.Sub(epoch) + tick)
					if now.Sub(epoch) > bound {
						t.Fatalf("the scan page popped at %v, after its bound %v", now.Sub(epoch), bound)
					}
					return
				}
				if page != nil && !tc.starves && it.Arrival().After(due) {
					t.Fatalf("at %v a task pushed at %v popped before the scan page due at %v",
						now.Sub(epoch), it.Arrival().Sub(epoch), due.Sub(epoch))
				}
			}
			if !tc.starves {
				t.Fatalf("the scan page did not pop in %v", horizon)
			}
		})
	}
}

// TestFairBoundRandom checks the bound on random scripts: under Fair no task pops while
// a task queued before it is past arrival + its largest slack at the popped task's
// arrival, whatever the mix, progress updates, removals and policy switches among Fair
// variants.
func TestFairBoundRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(15))
	for run := 0; run < 200; run++ {
		p := Policy{Queue: Fair, RaS: rng.Intn(2) == 0}
		slack := Slack{Scan: time.Duration(rng.Intn(20)) * time.Millisecond, Remote: time.Duration(rng.Intn(3)) * time.Millisecond}
		q := NewQueue(p, slack)
		queued := map[*Item]bool{}
		now := epoch
		for step := 0; step < 300; step++ {
			now = now.Add(time.Duration(rng.Intn(2000)) * time.Microsecond)
			switch r := rng.Intn(10); {
			case r < 5:
				task := Task{Class: Class(rng.Intn(NumClasses))}
				if task.Class == ScanPage {
					task.Scan = ScanID(1 + rng.Intn(8))
					task.Nodes = rng.Intn(20)
					task.Limit = rng.Intn(20000)
				}
				queued[q.Push(task, now)] = true
			case r < 8:
				it := q.Pop()
				if it == nil {
					continue
				}
				delete(queued, it)
				for other := range queued {
					if due := other.Arrival().Add(maxSlack(p, slack, other.Task().Class)); it.Arrival().After(due) {
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
					delete(queued, it)
					break
				}
				p.RaS = rng.Intn(2) == 0
				q.SetPolicy(p)
			}
			if q.Len() != len(queued) {
				t.Fatalf("run %d: Len %d, want %d", run, q.Len(), len(queued))
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
		plain := NewQueue(Policy{Queue: FIFO}, Slack{})
		ras := NewQueue(Policy{Queue: FIFO, RaS: true}, Slack{})
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
