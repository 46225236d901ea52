package sched

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls until cond holds. It waits for the stage's state, never asserts on
// time: the test's own timeout is the limit.
func waitFor(cond func() bool) {
	for !cond() {
		time.Sleep(100 * time.Microsecond)
	}
}

func queued(s *Stage) int {
	n := 0
	for _, c := range s.Stats().ByClass {
		n += c.Queued
	}
	return n
}

// blockWorker occupies one of s's workers until the returned func is called; the func
// returns once the blocking read's Do has returned.
func blockWorker(t *testing.T, s *Stage) (unblock func()) {
	t.Helper()
	release := make(chan struct{})
	done := make(chan error)
	before := s.Stats().Busy
	go func() {
		done <- s.Do(context.Background(), Task{Class: LocalGet}, func() int { <-release; return 0 })
	}()
	waitFor(func() bool { return s.Stats().Busy == before+1 })
	return func() {
		close(release)
		if err := <-done; err != nil {
			t.Errorf("blocking read: %v", err)
		}
	}
}

// recorder runs named reads on a stage and records the order they run in.
type recorder struct {
	mu   sync.Mutex
	ran  []string
	wg   sync.WaitGroup
	errs sync.Map // name -> error
}

// start queues a read named name and waits until it is queued, so that reads arrive in
// the order they are started.
func (r *recorder) start(s *Stage, ctx context.Context, name string, task Task) {
	before := queued(s)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		err := s.Do(ctx, task, func() int {
			r.mu.Lock()
			r.ran = append(r.ran, name)
			r.mu.Unlock()
			return 0
		})
		if err != nil {
			r.errs.Store(name, err)
		}
	}()
	waitFor(func() bool { return queued(s) == before+1 })
}

func (r *recorder) order() string {
	r.wg.Wait()
	return strings.Join(r.ran, " ")
}

// TestStageOrder checks, with one worker held by a blocked read, the order in which the
// queued reads then run: each policy's, a policy switched while they wait, and RaS
// progress. Fair's RemoteSlack and ScanWait are an hour so that its order does not
// depend on how fast the reads were queued.
func TestStageOrder(t *testing.T) {
	type progress struct {
		scan  ScanID
		nodes int
	}
	for _, tc := range []struct {
		name     string
		policy   string
		switchTo string
		progress *progress
		want     string
	}{
		{name: "fifo", policy: "fifo", want: "s1 r1 s2 l1"},
		{name: "res", policy: "res", want: "l1 r1 s1 s2"},
		{name: "A", policy: "A", want: "l1 r1 s2 s1"},
		{name: "P+RaS", policy: "P+RaS", want: "s2 r1 s1 l1"},
		{name: "fair", policy: "fair", want: "l1 r1 s1 s2"},
		{name: "kura", policy: "kura", want: "l1 r1 s2 s1"},
		{name: "switched to res", policy: "fifo", switchTo: "res", want: "l1 r1 s1 s2"},
		{name: "switched to fifo", policy: "A", switchTo: "fifo", want: "s1 r1 s2 l1"},
		{name: "progress", policy: "A", progress: &progress{1, 1}, want: "l1 r1 s1 s2"},
		{name: "progress ignored without RaS", policy: "res", progress: &progress{2, 9}, want: "l1 r1 s1 s2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePolicy(tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewStage(Config{Workers: 1, Policy: p, Fair: Fairness{RemoteSlack: time.Hour, ScanWait: time.Hour}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			unblock := blockWorker(t, s)
			var r recorder
			ctx := context.Background()
			r.start(s, ctx, "s1", Task{Class: ScanPage, Scan: 1, Nodes: 3, Limit: 10})
			r.start(s, ctx, "r1", Task{Class: RemoteGet})
			r.start(s, ctx, "s2", Task{Class: ScanPage, Scan: 2, Nodes: 2, Limit: 10})
			r.start(s, ctx, "l1", Task{Class: LocalGet})
			if tc.switchTo != "" {
				sp, err := ParsePolicy(tc.switchTo)
				if err != nil {
					t.Fatal(err)
				}
				s.SetPolicy(sp)
				if s.Policy() != sp {
					t.Fatalf("Policy() = %v after SetPolicy(%v)", s.Policy(), sp)
				}
			}
			if tc.progress != nil {
				s.Progress(tc.progress.scan, tc.progress.nodes)
			}
			unblock()
			if got := r.order(); got != tc.want {
				t.Fatalf("ran %s, want %s", got, tc.want)
			}
			st := s.Stats()
			for c, want := range []uint64{2, 1, 2} { // the blocking read is a local get
				if cs := st.ByClass[c]; cs.Served != want || cs.Queued != 0 || cs.Wait < 0 {
					t.Errorf("%v: %+v, want %d served, none queued", Class(c), cs, want)
				}
			}
			if st.Busy != 0 || st.Workers != 1 {
				t.Errorf("stats %+v, want 1 worker, none busy", st)
			}
		})
	}
}

// TestStageCancel checks that a read whose ctx ends while queued leaves the queue
// without running, and that one whose ctx ended before Do does not queue.
func TestStageCancel(t *testing.T) {
	s, err := NewStage(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	unblock := blockWorker(t, s)

	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Do(done, Task{Class: LocalGet}, func() int { t.Error("ran a done read"); return 0 }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do with a done ctx = %v, want context.Canceled", err)
	}

	var r recorder
	ctx, cancel := context.WithCancel(context.Background())
	r.start(s, ctx, "cancelled", Task{Class: LocalGet})
	r.start(s, context.Background(), "kept", Task{Class: ScanPage})
	cancel()
	waitFor(func() bool { return queued(s) == 1 })
	if got := s.Stats().ByClass[LocalGet].Queued; got != 0 {
		t.Fatalf("%d local gets queued after the cancel, want 0", got)
	}
	unblock()
	if got := r.order(); got != "kept" {
		t.Fatalf("ran %q, want only kept", got)
	}
	if err, _ := r.errs.Load("cancelled"); !errors.Is(err.(error), context.Canceled) {
		t.Fatalf("the cancelled read returned %v, want context.Canceled", err)
	}
	if st := s.Stats(); st.Busy != 0 {
		t.Fatalf("%d workers busy after all reads returned", st.Busy)
	}
}

// TestStageClose checks that Close fails the queued reads without running them, lets
// the running one finish, and fails later calls.
func TestStageClose(t *testing.T) {
	s, err := NewStage(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	unblock := blockWorker(t, s)
	var r recorder
	r.start(s, context.Background(), "a", Task{Class: LocalGet})
	r.start(s, context.Background(), "b", Task{Class: ScanPage})
	s.Close()
	s.Close()
	if got := r.order(); got != "" {
		t.Fatalf("ran %q after Close, want nothing", got)
	}
	for _, name := range []string{"a", "b"} {
		if err, _ := r.errs.Load(name); err == nil || !errors.Is(err.(error), ErrClosed) {
			t.Errorf("queued read %s returned %v, want ErrClosed", name, err)
		}
	}
	unblock() // the running read finishes normally
	if err := s.Do(context.Background(), Task{}, func() int { t.Error("ran after Close"); return 0 }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Do after Close = %v, want ErrClosed", err)
	}
}

// TestStageBound runs many concurrent reads, some cancelled, on a small pool with an
// emulated device, and checks that no more than Workers run at once and that every
// worker is free at the end (run it with -race).
func TestStageBound(t *testing.T) {
	const workers = 3
	s, err := NewStage(Config{Workers: workers, Policy: Policy{Queue: Fair, RaS: true}, Device: Device{PerKiB: time.Microsecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var running, most atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for i := 0; i < 50; i++ {
				ctx, cancel := context.WithCancel(context.Background())
				if rng.Intn(8) == 0 {
					cancel()
				}
				task := Task{Class: Class(rng.Intn(NumClasses)), Scan: ScanID(1 + rng.Intn(4)), Nodes: rng.Intn(4), Limit: rng.Intn(100)}
				err := s.Do(ctx, task, func() int {
					n := running.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					running.Add(-1)
					return rng.Intn(4096)
				})
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("Do: %v", err)
				}
				if rng.Intn(4) == 0 {
					s.Progress(task.Scan, rng.Intn(4))
				}
				cancel()
			}
		}(g)
	}
	wg.Wait()
	if m := most.Load(); m > workers {
		t.Fatalf("%d reads ran at once on %d workers", m, workers)
	}
	st := s.Stats()
	if st.Busy != 0 || queued(s) != 0 {
		t.Fatalf("stats %+v after all reads returned, want nothing busy or queued", st)
	}
}

func TestNewStage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		workers int
		wantErr string
	}{
		{name: "defaults", cfg: Config{}, workers: DefaultWorkers},
		{name: "workers", cfg: Config{Workers: 4}, workers: 4},
		{name: "negative workers", cfg: Config{Workers: -1}, wantErr: "-1 read workers"},
		{name: "negative device", cfg: Config{Device: Device{Access: -time.Millisecond}}, wantErr: "negative time"},
		{name: "negative slack", cfg: Config{Fair: Fairness{RemoteSlack: -time.Millisecond}}, wantErr: "negative"},
		{name: "negative scan wait", cfg: Config{Fair: Fairness{ScanWait: -time.Second}}, wantErr: "negative"},
		{name: "unknown discipline", cfg: Config{Policy: Policy{Queue: 7}}, wantErr: "unknown queue discipline"},
		{name: "shared device", cfg: Config{Device: Device{Access: time.Millisecond}, SharedDevice: true}, workers: DefaultWorkers},
		{name: "shared device without a device time", cfg: Config{SharedDevice: true}, wantErr: "needs a device time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewStage(tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("NewStage(%+v) = %v; want an error with %q", tc.cfg, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.Stats().Workers; got != tc.workers {
				t.Fatalf("%d workers, want %d", got, tc.workers)
			}
		})
	}
}

// TestStagePagingInterleaves checks why scans are paged: a scan that queues its pages
// one after another yields its worker between pages, so gets queued meanwhile run
// between them under every policy, even with one worker.
func TestStagePagingInterleaves(t *testing.T) {
	for _, policy := range []string{"fifo", "res", "A", "kura"} {
		t.Run(policy, func(t *testing.T) {
			p, err := ParsePolicy(policy)
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewStage(Config{Workers: 1, Policy: p})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var r recorder
			page1 := make(chan struct{})
			scanDone := make(chan struct{})
			go func() {
				defer close(scanDone)
				for i := 1; i <= 3; i++ {
					err := s.Do(context.Background(), Task{Class: ScanPage, Scan: 1, Nodes: 1, Limit: 3 * PageRows}, func() int {
						if i == 1 {
							<-page1
						}
						r.mu.Lock()
						r.ran = append(r.ran, fmt.Sprintf("p%d", i))
						r.mu.Unlock()
						return PageBytes
					})
					if err != nil {
						t.Errorf("page %d: %v", i, err)
					}
				}
			}()
			waitFor(func() bool { return s.Stats().Busy == 1 })
			r.start(s, context.Background(), "g1", Task{Class: LocalGet})
			r.start(s, context.Background(), "g2", Task{Class: LocalGet})
			close(page1)
			<-scanDone
			if got, want := r.order(), "p1 g1 g2 p2 p3"; got != want {
				t.Fatalf("ran %s, want %s", got, want)
			}
		})
	}
}

// TestStageCountsBytesRead checks that each class counts the bytes its reads report,
// a negative count as none, and that a read that never ran counts nothing.
func TestStageCountsBytesRead(t *testing.T) {
	s, err := NewStage(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, r := range []struct {
		class Class
		bytes int
	}{{LocalGet, 1000}, {LocalGet, 24}, {RemoteGet, -7}, {ScanPage, 50000}, {ScanPage, 1}} {
		if err := s.Do(ctx, Task{Class: r.class}, func() int { return r.bytes }); err != nil {
			t.Fatal(err)
		}
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Do(done, Task{Class: ScanPage}, func() int { return 1 << 20 }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do with a done ctx = %v, want context.Canceled", err)
	}
	st := s.Stats()
	for c, want := range []uint64{1024, 0, 50001} {
		if got := st.ByClass[c].ReadBytes; got != want {
			t.Errorf("%v: %d bytes read, want %d", Class(c), got, want)
		}
	}
}
