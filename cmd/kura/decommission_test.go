package main

// Issue 43, item 7: the last seconds of a decommission must not fail client writes. Once
// a leaving node has marked itself left it stays up one ring delay (so that every node
// learns "left" before it stops), and its peers refuse what it coordinates. Before the
// fix, a client of that node saw every write of that ring delay end in "TIMEOUT ... 0
// received (... not a member ...)" (about 1,100-1,240 per decommission). Now the node
// refuses at once, as unavailable, with a redirect naming the members, and the Go client
// follows it: a client that knows only the leaving node loses nothing.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
)

// TestDecommissionLosesNoClientWrites: 4 `kura server` processes in 2 DCs, keyspace
// dc1=2,dc2=1, a client whose only node is n4, writing new keys at QUORUM through it
// without a pause while n4 is decommissioned (kura node decommission, --ring-delay 2s)
// and for a few seconds after it has left. No write may fail, and every acknowledged key
// must read at QUORUM through n1.
func TestDecommissionLosesNoClientWrites(t *testing.T) {
	t.Parallel()
	c := newLifecycleCluster(t)
	// A ring delay of 2 s: the window, after n4 has marked itself left and before its
	// decommission returns, in which the writes failed.
	const ringDelay = 2 * time.Second
	// No default keyspace: each=3 would refuse the decommission that leaves dc2 one node.
	rd := []string{"--ring-delay", ringDelay.String(), "--default-replication", "none"}
	n1, n2 := c.add("n1", "dc1", rd...), c.add("n2", "dc1", rd...)
	n3, n4 := c.add("n3", "dc2", rd...), c.add("n4", "dc2", rd...)
	began := time.Now()
	c.startAll(n1, n2, n3, n4)
	// dc2=1 with n3 and n4 in dc2: n3 alone can hold dc2's replicas once n4 has left.
	c.createKeyspace(n1, "dc1=2,dc2=1")
	t.Logf("cluster of 4 up with keyspace app after %v", time.Since(began).Round(time.Millisecond))

	// The writer's client knows n4 and no other node (StaticNodes): any write that
	// reaches another node got there by n4's redirect.
	through4 := mustDialPinned(t, n4)

	// n4's ring status as kura info shows it, polled from the start of the writes: the
	// times it was first seen leaving and left.
	var statusMu sync.Mutex
	firstSeen := map[string]time.Time{}
	var statusSeq []string
	seen := func(status string) (time.Time, bool) {
		statusMu.Lock()
		defer statusMu.Unlock()
		at, ok := firstSeen[status]
		return at, ok
	}

	type failure struct {
		key    string
		at     time.Time
		took   time.Duration
		status string // n4's ring status last seen before the write began
		err    error
	}
	var (
		mu       sync.Mutex
		acked    []string
		ackedAt  []time.Time
		failures []failure
		attempts atomic.Int64
	)
	lastStatus := func() string {
		statusMu.Lock()
		defer statusMu.Unlock()
		if len(statusSeq) == 0 {
			return "?"
		}
		return statusSeq[len(statusSeq)-1]
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the status poller
		defer wg.Done()
		for {
			info, err := kuraInfo(n4.client)
			if err == nil {
				statusMu.Lock()
				if len(statusSeq) == 0 || statusSeq[len(statusSeq)-1] != info.RingStatus {
					statusSeq = append(statusSeq, info.RingStatus)
					firstSeen[info.RingStatus] = time.Now()
				}
				statusMu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	go func() { // the writer: one write after another, each with its own deadline
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			key := fmt.Sprintf("d-%06d", i)
			status := lastStatus()
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := through4.Put(ctx, "app", []byte(key), []byte("v-"+key), consistency.Quorum)
			cancel()
			attempts.Add(1)
			mu.Lock()
			if err != nil {
				failures = append(failures, failure{key: key, at: start, took: time.Since(start), status: status, err: err})
			} else {
				acked = append(acked, key)
				ackedAt = append(ackedAt, time.Now())
			}
			mu.Unlock()
		}
	}()
	stopAll := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopAll()
	count := func() (ok, failed int) {
		mu.Lock()
		defer mu.Unlock()
		return len(acked), len(failures)
	}

	// Some writes through n4 while it is normal, then the decommission.
	for deadline := time.Now().Add(20 * time.Second); ; {
		if ok, _ := count(); ok >= 100 {
			break
		}
		if time.Now().After(deadline) {
			ok, failed := count()
			t.Fatalf("only %d writes through n4 acknowledged in 20 s before the decommission (%d failed)", ok, failed)
		}
		time.Sleep(20 * time.Millisecond)
	}
	okBefore, failedBefore := count()
	decomAt := time.Now()
	code, out, errOut := kura("node", "decommission", "--addr", n4.client, "--timeout", "60s")
	decomDone := time.Now()
	if code != 0 {
		stopAll()
		t.Fatalf("kura node decommission --addr n4: exit %d after %v: %s%s", code, decomDone.Sub(decomAt).Round(time.Millisecond), out, errOut)
	}
	t.Logf("kura node decommission of n4 took %v: %s", decomDone.Sub(decomAt).Round(time.Millisecond), strings.TrimSpace(out))

	// The decommission returns a ring delay after n4 marked itself left; n4's process
	// keeps running. Write on through it a few seconds more.
	time.Sleep(3 * time.Second)
	stopAll()
	end := time.Now()

	mu.Lock()
	keys, at, fails := acked, ackedAt, failures
	mu.Unlock()
	statusMu.Lock()
	seq := statusSeq
	statusMu.Unlock()
	rel := func(when time.Time) string {
		if when.IsZero() {
			return "never"
		}
		return fmt.Sprintf("%+.3fs", when.Sub(decomAt).Seconds())
	}
	leavingAt, _ := seen("leaving")
	leftAt, sawLeft := seen("left")
	t.Logf("n4's ring status as kura info showed it: %v; leaving at %s, left at %s, decommission returned at %s, writes stopped at %s (times from the decommission's start)",
		seq, rel(leavingAt), rel(leftAt), rel(decomDone), rel(end))
	afterLeft, afterDone := 0, 0
	for _, a := range at {
		if sawLeft && a.After(leftAt) {
			afterLeft++
		}
		if a.After(decomDone) {
			afterDone++
		}
	}
	t.Logf("writes through n4 at QUORUM: %d attempted, %d acknowledged (%d before the decommission, %d after n4 was seen left, %d after the decommission returned), %d failed (%d before the decommission)",
		attempts.Load(), len(keys), okBefore, afterLeft, afterDone, len(fails), failedBefore)

	if len(fails) > 0 {
		var lines []string
		for i, f := range fails {
			if i == 20 {
				lines = append(lines, fmt.Sprintf("... and %d more", len(fails)-20))
				break
			}
			lines = append(lines, fmt.Sprintf("%s at %s (n4 last seen %s), failed after %v: %v", f.key, rel(f.at), f.status, f.took.Round(time.Millisecond), f.err))
		}
		first, last := fails[0], fails[len(fails)-1]
		t.Errorf("%d of %d writes through n4 failed, from %s to %s (times from the decommission's start; n4 seen leaving at %s, left at %s, decommission returned at %s):\n  %s",
			len(fails), attempts.Load(), rel(first.at), rel(last.at), rel(leavingAt), rel(leftAt), rel(decomDone), strings.Join(lines, "\n  "))
	}
	if len(keys) < 300 {
		t.Errorf("only %d writes acknowledged: too few for the test to prove anything", len(keys))
	}
	if afterDone == 0 {
		t.Errorf("no write through n4 was acknowledged after its decommission returned (n4 left): the redirect was never exercised")
	}

	// Every acknowledged key at QUORUM through n1, eight readers at once.
	through1 := mustDialPinned(t, n1)
	readStart := time.Now()
	var rmu sync.Mutex
	var missing, readErrs []string
	next := atomic.Int64{}
	var rg sync.WaitGroup
	for range 8 {
		rg.Add(1)
		go func() {
			defer rg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(keys) {
					return
				}
				key := keys[i]
				deadline := time.Now().Add(15 * time.Second)
				for {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					item, found, err := through1.Get(ctx, "app", []byte(key), consistency.Quorum)
					cancel()
					if err == nil {
						if !found || string(item.Value) != "v-"+key {
							rmu.Lock()
							missing = append(missing, fmt.Sprintf("%s (found %v, value %q)", key, found, item.Value))
							rmu.Unlock()
						}
						break
					}
					if time.Now().After(deadline) {
						rmu.Lock()
						readErrs = append(readErrs, fmt.Sprintf("%s: %v", key, err))
						rmu.Unlock()
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	rg.Wait()
	t.Logf("read %d acknowledged keys at QUORUM through n1 in %v", len(keys), time.Since(readStart).Round(time.Millisecond))
	for what, list := range map[string][]string{"not read (missing or wrong value)": missing, "kept failing to read": readErrs} {
		if len(list) == 0 {
			continue
		}
		shown := list
		if len(shown) > 20 {
			shown = append(shown[:20:20], fmt.Sprintf("... and %d more", len(list)-20))
		}
		t.Errorf("%d of %d acknowledged keys %s at QUORUM through n1: %s", len(list), len(keys), what, strings.Join(shown, ", "))
	}
	t.Logf("whole test: %v", time.Since(began).Round(time.Millisecond))
}
