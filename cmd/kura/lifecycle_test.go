package main

// Issue 43: the cluster's life cycle as a new operator meets it, with real `kura server`
// processes started with the README's commands (the first node without --seeds, the
// others with --seeds pointing at it), real signals and real data dirs. The simulator
// (internal/tools/sim/lifecycle) runs the same scenarios in virtual time; these tests cover what it
// cannot see: a SIGTERM delivered to a process, a data dir deleted on disk, the CLI's
// words. One test per defect.
//
// Every node runs with --gossip-interval 200ms (so the default ring delay, five gossip
// rounds, is 1 s) and --repair-interval 0: what the checks find must be the life
// cycle's doing, not background anti-entropy's repairing it afterwards.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
)

// lcGossip is the gossip round of every node of these tests.
const lcGossip = "200ms"

// lcCluster is the processes of one test, in the order they were added: the first is
// the seedless n1, every later one has --seeds n1.
type lcCluster struct {
	t     *testing.T
	dir   string
	seed  string // n1's internode address (its --listen)
	nodes []*lcNode
}

// lcNode is one `kura server` process, started from this test binary (TestMain runs the
// kura command line when KURA_AS_MAIN is set, so nothing is built), stopped with a real
// SIGTERM or SIGKILL and started again with the same command line.
type lcNode struct {
	*crashNode
	dc, listen, dataDir string
	// bin, when set, is the kura binary start runs instead of this test binary: another
	// build's (upgrade_test.go).
	bin     string
	cleanup sync.Once
}

func newLifecycleCluster(t *testing.T) *lcCluster {
	t.Helper()
	if testing.Short() {
		t.Skip("life-cycle test: runs real kura server processes")
	}
	return &lcCluster{t: t, dir: t.TempDir()}
}

// add defines node id in dc, with its own loopback address and free ports, and the
// README's flags; extra flags come last. It does not start it.
func (c *lcCluster) add(id, dc string, extra ...string) *lcNode {
	c.t.Helper()
	host := fmt.Sprintf("127.0.0.%d", 20+len(c.nodes))
	listen, clientAddr := freeAddrOn(c.t, host), freeAddrOn(c.t, host)
	dataDir := filepath.Join(c.dir, id)
	args := []string{"--id", id, "--dc", dc, "--listen", listen, "--client", clientAddr, "--data-dir", dataDir,
		"--gossip-interval", lcGossip, "--repair-interval", "0", "--log-level", "info"}
	if c.seed == "" {
		c.seed = listen
	} else {
		args = append(args, "--seeds", c.seed)
	}
	args = append(args, extra...)
	n := &lcNode{crashNode: &crashNode{id: id, client: clientAddr, args: args}, dc: dc, listen: listen, dataDir: dataDir}
	c.nodes = append(c.nodes, n)
	return n
}

// start runs the node's command line in a new process; the test's cleanup kills it.
func (n *lcNode) start(t *testing.T) {
	t.Helper()
	n.mu.Lock()
	fmt.Fprintf(&n.logs, "--- start %s at %s: kura server %s\n", n.id, time.Now().Format("15:04:05.000"), strings.Join(n.args, " "))
	cmd := exec.Command(os.Args[0], append([]string{"server"}, n.args...)...)
	cmd.Env = append(os.Environ(), "KURA_AS_MAIN=1")
	if n.bin != "" {
		cmd = exec.Command(n.bin, append([]string{"server"}, n.args...)...)
	}
	cmd.Stdout, cmd.Stderr = &lockedWriter{&n.mu, &n.logs}, &lockedWriter{&n.mu, &n.logs}
	err := cmd.Start()
	if err == nil {
		n.cmd = cmd
	}
	n.mu.Unlock()
	if err != nil {
		t.Fatalf("start %s: %v", n.id, err)
	}
	n.cleanup.Do(func() {
		t.Cleanup(func() {
			n.kill()
			n.wait()
			if t.Failed() {
				out := n.output()
				const tail = 60 << 10
				if len(out) > tail {
					out = "[...]\n" + out[len(out)-tail:]
				}
				t.Logf("%s output:\n%s", n.id, out)
			}
		})
	})
}

// terminate sends SIGTERM, as an operator stopping the node would, and waits for the
// process to exit.
func (n *lcNode) terminate(t *testing.T) {
	t.Helper()
	n.mu.Lock()
	cmd := n.cmd
	fmt.Fprintf(&n.logs, "--- SIGTERM %s at %s\n", n.id, time.Now().Format("15:04:05.000"))
	n.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM %s: %v", n.id, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Logf("%s exited on SIGTERM (%v)", n.id, exitText(err))
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not exit within 20 s of SIGTERM", n.id)
	}
}

// kill9 sends SIGKILL and waits for the process to be gone.
func (n *lcNode) kill9() {
	n.mu.Lock()
	fmt.Fprintf(&n.logs, "--- SIGKILL %s at %s\n", n.id, time.Now().Format("15:04:05.000"))
	n.mu.Unlock()
	n.kill()
	n.wait()
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// crashNodes returns the nodes as crash_test.go's helpers take them.
func crashNodes(nodes ...*lcNode) []*crashNode {
	out := make([]*crashNode, len(nodes))
	for i, n := range nodes {
		out[i] = n.crashNode
	}
	return out
}

// statusRow is one node's row of `kura status`.
type statusRow struct{ status, state string }

// kuraStatus runs `kura status --addr addr`, with extra flags (--all) if given, and
// returns its table's rows by node id, and the whole output.
func kuraStatus(addr string, extra ...string) (map[string]statusRow, string, error) {
	code, out, errOut := kura(append([]string{"status", "--addr", addr, "--timeout", "3s"}, extra...)...)
	if code != 0 {
		return nil, out + errOut, fmt.Errorf("kura status --addr %s: exit %d: %s", addr, code, strings.TrimSpace(errOut))
	}
	rows := map[string]statusRow{}
	inTable := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "NODE":
			inTable = true
		case !inTable:
		case len(f) < 4 || f[0] == "clock" || f[0] == "protocol" || strings.HasPrefix(line, "WARNING") || strings.HasPrefix(line, "streaming on"):
			inTable = false
		default:
			rows[f[0]] = statusRow{status: f[2], state: f[3]}
		}
	}
	if len(rows) == 0 {
		return nil, out, fmt.Errorf("kura status --addr %s: no node rows in %q", addr, out)
	}
	return rows, out, nil
}

// viewMismatch compares rows with want (node id -> "STATUS STATE", as kura status prints
// them) and says what differs; "" when they match, every node of want and no other.
func viewMismatch(rows map[string]statusRow, want map[string]string) string {
	var diffs []string
	for id, w := range want {
		r, ok := rows[id]
		switch {
		case !ok:
			diffs = append(diffs, id+" missing")
		case r.status+" "+r.state != w:
			diffs = append(diffs, fmt.Sprintf("%s is %s %s, want %s", id, r.status, r.state, w))
		}
	}
	for id, r := range rows {
		if _, ok := want[id]; !ok {
			diffs = append(diffs, fmt.Sprintf("unexpected %s (%s %s)", id, r.status, r.state))
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}

// waitViews polls `kura status` on every observer until each shows exactly want, and
// returns how long that took; at the deadline it fails with what each observer showed.
func waitViews(t *testing.T, what string, timeout time.Duration, observers []*lcNode, want map[string]string) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		var bad []string
		outputs := map[string]string{}
		for _, o := range observers {
			rows, out, err := kuraStatus(o.client)
			outputs[o.id] = out
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: %v", o.id, err))
				continue
			}
			if m := viewMismatch(rows, want); m != "" {
				bad = append(bad, fmt.Sprintf("%s sees: %s", o.id, m))
			}
		}
		if len(bad) == 0 {
			t.Logf("%s: every observer's kura status agreed after %v", what, time.Since(start).Round(time.Millisecond))
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			var dump strings.Builder
			for _, o := range observers {
				fmt.Fprintf(&dump, "--- kura status --addr %s (%s):\n%s", o.client, o.id, outputs[o.id])
			}
			t.Fatalf("%s: not every node's kura status showed %v within %v:\n  %s\n%s", what, want, timeout, strings.Join(bad, "\n  "), dump.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// allNormalUp is want for waitViews: every node normal and up.
func allNormalUp(nodes ...*lcNode) map[string]string {
	want := map[string]string{}
	for _, n := range nodes {
		want[n.id] = "normal up"
	}
	return want
}

// kuraOK runs a kura command and fails the test unless it exits 0; it returns stdout.
func kuraOK(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := kura(args...)
	if code != 0 {
		t.Fatalf("kura %s: exit %d: %s%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// dialPinned returns a client that sends every request to the node at addr and to no
// other (client.Options.StaticNodes): "through n1" means n1 coordinates.
func dialPinned(addr string) (*client.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return client.Dial(ctx, []string{addr}, client.Options{StaticNodes: true, AttemptTimeout: 5 * time.Second})
}

// mustDialPinned is dialPinned, retried until the node answers.
func mustDialPinned(t *testing.T, n *lcNode) *client.Client {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := dialPinned(n.client)
		if err == nil {
			t.Cleanup(func() { c.Close() })
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("dial %s: %v", n.id, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// putKeys writes prefix-0000.. prefix-(count-1), value "v-"+key, through c at level; each
// put is retried on an error until a deadline of 15 s for them all (a put that fails
// then fails the test with its error). It returns the keys.
func putKeys(t *testing.T, c *client.Client, through, prefix string, count int, level consistency.Level) []string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	keys := make([]string, count)
	retried := 0
	for i := range keys {
		key := fmt.Sprintf("%s-%04d", prefix, i)
		keys[i] = key
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := c.Put(ctx, "app", []byte(key), []byte("v-"+key), level)
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("put %s at %s through %s: %v (%d of %d acknowledged)", key, level, through, err, i, count)
			}
			retried++
			time.Sleep(100 * time.Millisecond)
		}
	}
	if retried > 0 {
		t.Logf("%d puts through %s at %s were retried after an error", retried, through, level)
	}
	return keys
}

// readKeys reads every key through c at level and fails the test for each one not found
// or with the wrong value; errors are retried until a deadline of 20 s for them all.
func readKeys(t *testing.T, c *client.Client, through string, keys []string, level consistency.Level) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var missing []string
	for _, key := range keys {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			item, found, err := c.Get(ctx, "app", []byte(key), level)
			cancel()
			if err == nil {
				if !found || string(item.Value) != "v-"+key {
					missing = append(missing, fmt.Sprintf("%s (found %v, value %q)", key, found, item.Value))
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("get %s at %s through %s kept failing: %v", key, level, through, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if len(missing) > 0 {
		if len(missing) > 20 {
			missing = append(missing[:20], fmt.Sprintf("... and %d more", len(missing)-20))
		}
		t.Fatalf("%d of %d acknowledged keys not read at %s through %s: %s", len(missing), len(keys), level, through, strings.Join(missing, ", "))
	}
}

// createKeyspace creates keyspace app through n with the CLI, and waits until every node
// knows it.
func (c *lcCluster) createKeyspace(n *lcNode, replication string) {
	c.t.Helper()
	kuraOK(c.t, "keyspace", "create", "app", "--replication", replication, "--addr", n.client)
	waitKeyspaceEverywhere(c.t, "app", crashNodes(c.nodes...))
}

// startAll starts the nodes in order and waits until every one's kura status shows all
// of them normal and up.
func (c *lcCluster) startAll(nodes ...*lcNode) {
	c.t.Helper()
	for _, n := range nodes {
		n.start(c.t)
	}
	waitViews(c.t, "first start", 40*time.Second, nodes, allNormalUp(nodes...))
}

// Issue 43, item 1: n1, started without --seeds as the README says, is stopped with
// SIGTERM and started again with the same command. It must rejoin: every node's kura
// status shows all three normal and up, and a write through n1 is read through n2.
func TestGracefulRestartOfFirstNodeRejoins(t *testing.T) {
	t.Parallel()
	c := newLifecycleCluster(t)
	n1, n2, n3 := c.add("n1", "dc1"), c.add("n2", "dc1"), c.add("n3", "dc2")
	c.startAll(n1, n2, n3)
	c.createKeyspace(n1, "dc1=2,dc2=1")
	before := putKeys(t, mustDialPinned(t, n1), "n1", "a", 50, consistency.Quorum)

	n1.terminate(t)
	// The others must first see n1 down, so that "up" below is news of its new life and
	// not a view left over from before the SIGTERM.
	waitViews(t, "n1 stopped", 30*time.Second, []*lcNode{n2, n3}, map[string]string{"n1": "normal down", "n2": "normal up", "n3": "normal up"})
	n1.start(t)
	restarted := time.Now()
	waitViews(t, "n1 restarted after SIGTERM", 30*time.Second, []*lcNode{n1, n2, n3}, allNormalUp(n1, n2, n3))
	t.Logf("n1 rejoined %v after its restart", time.Since(restarted).Round(time.Millisecond))

	after := putKeys(t, mustDialPinned(t, n1), "n1", "b", 50, consistency.Quorum)
	readKeys(t, mustDialPinned(t, n2), "n2", slices.Concat(before, after), consistency.Quorum)
}

// Issue 43, item 2: with the seed n1 dead for good, n2 stopped with SIGTERM and started
// with its original command (--seeds n1) must find the cluster from its stored ring: it
// sees n3 and n4 up, they see it, and QUORUM writes through it succeed.
func TestRestartWithSeedDownFindsClusterFromStoredRing(t *testing.T) {
	t.Parallel()
	c := newLifecycleCluster(t)
	n1, n2, n3, n4 := c.add("n1", "dc1"), c.add("n2", "dc1"), c.add("n3", "dc1"), c.add("n4", "dc2")
	c.startAll(n1, n2, n3, n4)
	// dc1=2,dc2=1: three replicas (two of n1, n2, n3, and n4), QUORUM two. n1 holds at
	// most one of a key's replicas, so with n1 down two of every key's remain: QUORUM is
	// reachable without n1, and through n2 only if n2 reaches n3 and n4 (alone, n2 holds
	// at most one replica of a key).
	c.createKeyspace(n1, "dc1=2,dc2=1")
	before := putKeys(t, mustDialPinned(t, n2), "n2", "a", 50, consistency.Quorum)

	n1.kill9() // for good
	n2.terminate(t)
	// n3 and n4 must first see both down, so that "n2 up" below is news of its new life.
	down := map[string]string{"n1": "normal down", "n2": "normal down", "n3": "normal up", "n4": "normal up"}
	waitViews(t, "n1 killed and n2 stopped", 30*time.Second, []*lcNode{n3, n4}, down)
	n2.start(t)
	restarted := time.Now()
	want := map[string]string{"n1": "normal down", "n2": "normal up", "n3": "normal up", "n4": "normal up"}
	waitViews(t, "n2 restarted with its seed down", 30*time.Second, []*lcNode{n2, n3, n4}, want)
	t.Logf("n2 found the cluster %v after its restart", time.Since(restarted).Round(time.Millisecond))

	through2 := mustDialPinned(t, n2)
	after := putKeys(t, through2, "n2", "b", 50, consistency.Quorum)
	readKeys(t, through2, "n2", slices.Concat(before, after), consistency.Quorum)
}

// lcInfo is what the tests read of `kura info --json`.
type lcInfo struct {
	RingStatus  string `json:"ring_status"`
	StorageKeys int64  `json:"storage_keys"`
}

func kuraInfo(addr string) (lcInfo, error) {
	code, out, errOut := kura("info", "--addr", addr, "--json", "--timeout", "3s")
	if code != 0 {
		return lcInfo{}, fmt.Errorf("kura info --addr %s: exit %d: %s", addr, code, strings.TrimSpace(errOut))
	}
	var info lcInfo
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		return lcInfo{}, fmt.Errorf("kura info --json: %v in %q", err, out)
	}
	return info, nil
}

// waitStorageKeys polls kura info on each node until its storage holds want keys: the
// copies a write sent to every replica, past the ones that acknowledged it, have landed.
func waitStorageKeys(t *testing.T, want int, nodes ...*lcNode) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range nodes {
		for {
			info, err := kuraInfo(n.client)
			if err == nil && info.StorageKeys == int64(want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s's storage never held the %d keys written: last kura info %+v (%v)", n.id, want, info, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// Issue 43, item 3: n1, started without --seeds, loses its disk (kill -9, its data dir
// deleted, the same command). It must not serve reads from nothing: from its restart on,
// no read at ONE through it answers "not found" for an acknowledged key, and once it
// reports itself normal its own storage holds every key again, as kura info counts them
// and as it alone serves them with the other nodes killed.
func TestWipedSeedlessNodeRebuildsBeforeServing(t *testing.T) {
	t.Parallel()
	c := newLifecycleCluster(t)
	n1, n2, n3 := c.add("n1", "dc1"), c.add("n2", "dc1"), c.add("n3", "dc2")
	c.startAll(n1, n2, n3)
	// dc1=2 with two nodes in dc1: n1 holds a replica of every key.
	c.createKeyspace(n1, "dc1=2,dc2=1")
	keys := putKeys(t, mustDialPinned(t, n2), "n2", "a", 200, consistency.Quorum)
	// Each write went to all three replicas; QUORUM answered at two. Let the third copies
	// land before n1 dies, so that whichever replica n1 rebuilds a range from holds it.
	waitStorageKeys(t, len(keys), n1, n2, n3)

	n1.kill9()
	if err := os.RemoveAll(n1.dataDir); err != nil {
		t.Fatal(err)
	}
	n1.start(t)
	restarted := time.Now()

	// Until n1 reports itself normal with its keys stored, read at ONE through it, round
	// and round the keys: an error (not serving yet, keyspace not learned yet) is fine,
	// "not found" is the defect.
	deadline := restarted.Add(40 * time.Second)
	var through1 *client.Client
	defer func() {
		if through1 != nil {
			through1.Close()
		}
	}()
	statuses := []string{} // n1's ring status as kura info showed it, each change once
	reads, found, failed := 0, 0, 0
	var lastErr error
	var info lcInfo
	for i := 0; ; i++ {
		var err error
		info, err = kuraInfo(n1.client)
		if err == nil {
			if len(statuses) == 0 || statuses[len(statuses)-1] != info.RingStatus {
				statuses = append(statuses, info.RingStatus)
				t.Logf("%v after the restart: n1 is %s, %d keys stored", time.Since(restarted).Round(time.Millisecond), info.RingStatus, info.StorageKeys)
			}
			if info.RingStatus == "normal" && info.StorageKeys == int64(len(keys)) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("n1 never reported itself normal with its %d keys stored within 40 s of its restart: last kura info %+v (err %v); ring statuses seen %v; %d reads at ONE through it: %d found, %d failed (last error: %v)",
				len(keys), info, err, statuses, reads, found, failed, lastErr)
		}
		if through1 == nil {
			if through1, err = dialPinned(n1.client); err != nil {
				through1 = nil
				lastErr = err
				time.Sleep(100 * time.Millisecond)
				continue
			}
		}
		for j := range 20 {
			key := keys[(i*20+j)%len(keys)]
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			item, ok, err := through1.Get(ctx, "app", []byte(key), consistency.One)
			cancel()
			reads++
			switch {
			case err != nil:
				failed++
				lastErr = err
			case !ok:
				t.Fatalf("%v after its restart on an empty data dir, n1 (ring status %v so far) answered a read at ONE of the acknowledged key %s with not found: it serves reads from nothing",
					time.Since(restarted).Round(time.Millisecond), statuses, key)
			case string(item.Value) != "v-"+key:
				t.Fatalf("read of %s at ONE through n1 = %q", key, item.Value)
			default:
				found++
			}
		}
	}
	t.Logf("n1 normal with %d keys stored %v after its restart (ring statuses seen: %v); meanwhile %d reads at ONE through it: %d found, %d failed (last error: %v)",
		info.StorageKeys, time.Since(restarted).Round(time.Millisecond), statuses, reads, found, failed, lastErr)
	if !slices.Contains(statuses, "rebuilding") {
		t.Logf("note: kura info never showed n1 rebuilding (polled every few hundred ms); its stored keys are checked below")
	}
	readKeys(t, mustDialPinned(t, n1), "n1", keys, consistency.One)

	// n1's own copies: with n2 and n3 gone, only n1 can answer.
	n2.kill9()
	n3.kill9()
	waitViews(t, "n2 and n3 killed", 30*time.Second, []*lcNode{n1}, map[string]string{"n1": "normal up", "n2": "normal down", "n3": "normal down"})
	readKeys(t, mustDialPinned(t, n1), "n1 alone", keys, consistency.One)
}

// Issue 43, item 5: a node that dies while joining must not block every later ring
// change. While it is down and joining, a decommission is refused with the way out
// (kura node remove n4); the removal succeeds; then a decommission proceeds, and
// nothing acknowledged is lost.
func TestRemoveAbortsDeadJoiner(t *testing.T) {
	t.Parallel()
	c := newLifecycleCluster(t)
	// No default keyspace: each=3 would refuse n2's decommission at the end.
	none := []string{"--default-replication", "none"}
	n1, n2, n3 := c.add("n1", "dc1", none...), c.add("n2", "dc1", none...), c.add("n3", "dc2", none...)
	c.startAll(n1, n2, n3)
	// dc1=1,dc2=1: n2's decommission at the end leaves n1 alone in dc1, still enough
	// nodes for the keyspace, and n1 gains n2's ranges.
	c.createKeyspace(n1, "dc1=1,dc2=1")
	through1 := mustDialPinned(t, n1)
	keys := putKeys(t, through1, "n1", "a", 50, consistency.Quorum)

	// n4 joins dc1 with a ring delay of 30 s: it announces itself joining and waits.
	n4 := c.add("n4", "dc1", append(none, "--ring-delay", "30s")...)
	n4.start(t)
	joining := map[string]string{"n1": "normal up", "n2": "normal up", "n3": "normal up", "n4": "joining joining"}
	waitViews(t, "n4 joining", 30*time.Second, []*lcNode{n1, n2, n3}, joining)
	// Writes while n4 is a pending replica.
	keys = append(keys, putKeys(t, through1, "n1", "b", 50, consistency.Quorum)...)

	n4.kill9()
	joining["n4"] = "joining down"
	waitViews(t, "n4 killed while joining", 30*time.Second, []*lcNode{n1, n2, n3}, joining)

	code, out, errOut := kura("node", "decommission", "--addr", n2.client, "--timeout", "60s")
	if code == 0 || !strings.Contains(errOut, "node n4 is joining and down") || !strings.Contains(errOut, "kura node remove n4") {
		t.Fatalf("decommission of n2 with n4 dead while joining: exit %d, stdout %q, stderr %q; want a refusal naming n4 and the way out, kura node remove n4", code, out, errOut)
	}
	t.Logf("refused as it should be: %s", strings.TrimSpace(errOut))

	out = kuraOK(t, "node", "remove", "n4", "--addr", n1.client, "--timeout", "60s")
	t.Logf("kura node remove n4: %s", strings.TrimSpace(out))
	// kura status lists members only (issue 43, item 8): n4 drops out of it once removed,
	// and --all shows it so.
	waitViews(t, "n4 removed", 30*time.Second, []*lcNode{n1, n2, n3}, allNormalUp(n1, n2, n3))
	removed := map[string]string{"n1": "normal up", "n2": "normal up", "n3": "normal up", "n4": "removed down"}
	if rows, out, err := kuraStatus(n1.client, "--all"); err != nil || viewMismatch(rows, removed) != "" {
		t.Fatalf("kura status --all on n1 after n4's removal: %v %s\n%s", err, viewMismatch(rows, removed), out)
	}

	start := time.Now()
	code, out, errOut = kura("node", "decommission", "--addr", n2.client, "--timeout", "60s")
	if code != 0 {
		because := ""
		if strings.Contains(errOut, "n4") {
			because = " (still because of n4)"
		}
		t.Fatalf("decommission of n2 after n4's removal failed%s: exit %d, stdout %q, stderr %q", because, code, out, errOut)
	}
	t.Logf("kura node decommission of n2 took %v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))
	readKeys(t, through1, "n1", keys, consistency.Quorum)
}

// Issue 43, item 6: two nodes join one DC at once while a client writes at QUORUM. Once
// both are normal, every acknowledged key reads at ONE through every node of that DC,
// with no repair: no gainer streamed a range from a holder still receiving it, and no
// joiner's gains missed the other's.
func TestConcurrentJoinsLoseNoReads(t *testing.T) {
	c := newLifecycleCluster(t)
	n1, n2, n3 := c.add("n1", "dc1"), c.add("n2", "dc1"), c.add("n3", "dc2")
	c.startAll(n1, n2, n3)
	c.createKeyspace(n1, "dc1=2,dc2=1")

	// The writer: through n3 (another DC, as the simulator's load), a new key every 5 ms
	// at QUORUM, remembering those acknowledged.
	ctx := context.Background()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	writer, err := client.Dial(dctx, []string{n3.client}, client.Options{RefreshInterval: time.Second})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	var mu sync.Mutex
	var acked []string
	var failures atomic.Int64
	var lastErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			key := fmt.Sprintf("w-%06d", i)
			wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			_, err := writer.Put(wctx, "app", []byte(key), []byte("v-"+key), consistency.Quorum)
			cancel()
			if err != nil {
				failures.Add(1)
				lastErr.Store(err.Error())
				continue
			}
			mu.Lock()
			acked = append(acked, key)
			mu.Unlock()
		}
	}()
	stopWriter := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopWriter()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	for deadline := time.Now().Add(20 * time.Second); count() < 200; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d writes acknowledged in 20 s before the joins (%d failed, last: %v)", count(), failures.Load(), lastErr.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Two new nodes of dc1, started together as an operator starts them: n5 right after
	// n4 has announced its join, inside n4's ring delay, while neither has streamed.
	// Measured on the code before the fix (b7db3e9): started at the same instant, the
	// two lost no key, in this test as in the simulator's simultaneous-joins; with n5
	// started inside n4's ring delay, every run lost keys (36-37 of 720-760 did not read
	// through n5, 5-25 through each of some other nodes of dc1). A ring delay of 2 s for
	// both keeps n5's start inside n4's on a loaded machine too.
	n4, n5 := c.add("n4", "dc1", "--ring-delay", "2s"), c.add("n5", "dc1", "--ring-delay", "2s")
	joinsAt, before := time.Now(), count()
	n4.start(t)
	for deadline := time.Now().Add(20 * time.Second); ; {
		rows, _, err := kuraStatus(n1.client)
		if err == nil && rows["n4"].status == "joining" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n1 never saw n4 joining: %v %v", rows, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("n1 sees n4 joining %v after its start: starting n5", time.Since(joinsAt).Round(time.Millisecond))
	n5.start(t)
	all := []*lcNode{n1, n2, n3, n4, n5}
	waitViews(t, "n4 and n5 joined together", 40*time.Second, all, allNormalUp(all...))
	during := count() - before
	stopWriter()
	keys := slices.Clone(acked)
	t.Logf("writes: %d acknowledged before the joins, %d while n4 and n5 joined (%v), %d failed (last: %v)",
		before, during, time.Since(joinsAt).Round(time.Millisecond), failures.Load(), lastErr.Load())
	if during == 0 {
		t.Fatalf("no write was acknowledged while n4 and n5 joined: the test proves nothing")
	}
	// How the two joins went, as the joiners logged it.
	for _, n := range []*lcNode{n4, n5} {
		for _, line := range strings.Split(n.output(), "\n") {
			for _, what := range []string{`msg="ring status"`, "msg=joined", "another node started a ring change", "waiting to join"} {
				if strings.Contains(line, what) {
					t.Logf("%s: %s", n.id, line)
					break
				}
			}
		}
	}

	// Every acknowledged key at ONE through each node of dc1, eight readers per node.
	type lost struct {
		node string
		keys []string
	}
	var lostMu sync.Mutex
	var losses []lost
	var readErr error
	var rg sync.WaitGroup
	for _, n := range []*lcNode{n1, n2, n4, n5} {
		rg.Add(1)
		go func() {
			defer rg.Done()
			c, err := dialPinned(n.client)
			if err != nil {
				lostMu.Lock()
				readErr = errors.Join(readErr, fmt.Errorf("dial %s: %w", n.id, err))
				lostMu.Unlock()
				return
			}
			defer c.Close()
			var missing []string
			var kmu sync.Mutex
			var kg sync.WaitGroup
			next := atomic.Int64{}
			for range 8 {
				kg.Add(1)
				go func() {
					defer kg.Done()
					for {
						i := int(next.Add(1) - 1)
						if i >= len(keys) {
							return
						}
						key := keys[i]
						deadline := time.Now().Add(10 * time.Second)
						for {
							rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
							item, found, err := c.Get(rctx, "app", []byte(key), consistency.One)
							cancel()
							if err == nil {
								if !found || string(item.Value) != "v-"+key {
									kmu.Lock()
									missing = append(missing, key)
									kmu.Unlock()
								}
								break
							}
							if time.Now().After(deadline) {
								lostMu.Lock()
								readErr = errors.Join(readErr, fmt.Errorf("get %s at ONE through %s kept failing: %w", key, n.id, err))
								lostMu.Unlock()
								break
							}
							time.Sleep(50 * time.Millisecond)
						}
					}
				}()
			}
			kg.Wait()
			if len(missing) > 0 {
				sort.Strings(missing)
				lostMu.Lock()
				losses = append(losses, lost{n.id, missing})
				lostMu.Unlock()
			}
		}()
	}
	rg.Wait()
	if readErr != nil {
		t.Fatal(readErr)
	}
	if len(losses) > 0 {
		sort.Slice(losses, func(i, j int) bool { return losses[i].node < losses[j].node })
		var lines []string
		for _, l := range losses {
			shown := l.keys
			if len(shown) > 10 {
				shown = append(slices.Clone(shown[:10]), fmt.Sprintf("... %d more", len(l.keys)-10))
			}
			lines = append(lines, fmt.Sprintf("through %s: %d not found (%s)", l.node, len(l.keys), strings.Join(shown, ", ")))
		}
		t.Fatalf("of %d QUORUM-acknowledged keys, some do not read at ONE through the nodes of dc1 after two concurrent joins:\n  %s",
			len(keys), strings.Join(lines, "\n  "))
	}
	t.Logf("all %d acknowledged keys read at ONE through n1, n2, n4 and n5", len(keys))
}
