package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
)

// buildKura builds the kura binary into a temporary directory: the crash test runs real
// `kura server` processes, built from this tree as an operator would run them.
func buildKura(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kura")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// handedOut holds every address freeAddrOn returned in this test binary, none twice.
var handedOut = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}

// freeAddrOn returns a free port on one loopback address (127.0.0.x): each node gets its
// own address, and a port outside the kernel's ephemeral range, so a port taken by
// another program between the check and the bind, or between kill and restart, is
// unlikely.
func freeAddrOn(t *testing.T, host string) string {
	t.Helper()
	// Below the kernel's ephemeral range (32768-60999 by default): a port the kernel hands
	// out for :0 or to an outgoing connection, as other tests make by the thousand, may
	// be taken again between this check and the server's bind; a port below it is only
	// ever taken on purpose.
	const low, high = 20000, 32768
	for range 1000 {
		addr := net.JoinHostPort(host, strconv.Itoa(low+rand.IntN(high-low)))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken: try another
		}
		l.Close()
		// Free now, but perhaps handed out already and not bound yet by its server: one
		// test's n2 and n3 once drew the same port.
		handedOut.Lock()
		taken := handedOut.addrs[addr]
		handedOut.addrs[addr] = true
		handedOut.Unlock()
		if !taken {
			return addr
		}
	}
	t.Fatalf("no free port on %s in [%d, %d)", host, low, high)
	return ""
}

// crashNode is one `kura server` process that the test kills and restarts on the same
// addresses and data dir.
type crashNode struct {
	id, client string
	args       []string
	mu         sync.Mutex
	cmd        *exec.Cmd
	logs       bytes.Buffer // every incarnation's output, in order
}

func (n *crashNode) start(t *testing.T, bin string) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(&n.logs, "--- start %s\n", n.id)
	n.cmd = exec.Command(bin, append([]string{"server"}, n.args...)...)
	n.cmd.Stdout, n.cmd.Stderr = &lockedWriter{&n.mu, &n.logs}, &lockedWriter{&n.mu, &n.logs}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
}

// kill sends SIGKILL: no shutdown code runs, as in a power cut of the process.
func (n *crashNode) kill() {
	n.mu.Lock()
	cmd := n.cmd
	n.mu.Unlock()
	cmd.Process.Signal(syscall.SIGKILL)
}

func (n *crashNode) wait() {
	n.mu.Lock()
	cmd := n.cmd
	n.mu.Unlock()
	cmd.Wait()
}

func (n *crashNode) output() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.logs.String()
}

// lockedWriter lets the log buffer be read while the process writes to it.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// ack is one acknowledged write.
type ack struct {
	key   string
	level consistency.Level
	phase string
	at    time.Time
}

// everyNodeSeesAllNormal asks each node's admin API for its view and reports whether
// every node sees every node normal and alive; when not, it says what is missing.
func everyNodeSeesAllNormal(ctx context.Context, nodes []*crashNode) (bool, string) {
	for _, n := range nodes {
		conn, err := grpc.NewClient(n.client, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return false, err.Error()
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := kurav1.NewAdminClient(conn).ClusterStatus(cctx, &kurav1.ClusterStatusRequest{})
		cancel()
		conn.Close()
		if err != nil {
			return false, fmt.Sprintf("%s: %v", n.id, err)
		}
		up := 0
		for _, other := range st.GetNodes() {
			if other.GetAlive() && other.GetStatus() == "normal" {
				up++
			}
		}
		if up != len(nodes) {
			return false, fmt.Sprintf("%s sees %d of %d nodes normal and up", n.id, up, len(nodes))
		}
	}
	return true, ""
}

// waitKeyspaceEverywhere polls every node's admin API until it knows the keyspace.
func waitKeyspaceEverywhere(t *testing.T, name string, nodes []*crashNode) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range nodes {
		for {
			conn, err := grpc.NewClient(n.client, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err = kurav1.NewAdminClient(conn).DescribeKeyspace(ctx, &kurav1.DescribeKeyspaceRequest{Name: name})
			cancel()
			conn.Close()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never learned keyspace %s: %v", n.id, name, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// waitAllNormal polls until every node sees every node normal and up; the deadline is
// generous because a loaded machine may be slow to start five processes.
func waitAllNormal(t *testing.T, what string, nodes []*crashNode) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ok, why := everyNodeSeesAllNormal(context.Background(), nodes)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the cluster never settled: %s", what, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestEveryAcknowledgedWriteSurvivesKill9OfTheWholeCluster runs five `kura server`
// processes in two DCs (3+2) with keyspace dc1=2,dc2=2, writes under load at QUORUM and
// ONE, SIGKILLs every node at once, restarts them on the same data dirs (dc1 first, dc2
// once dc1 has acknowledged writes alone) while the client keeps writing, and then reads every acknowledged write (before, during and after the
// crash) at ALL.
func TestEveryAcknowledgedWriteSurvivesKill9OfTheWholeCluster(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process crash test: builds kura and runs five servers")
	}
	bin := buildKura(t)
	dir := t.TempDir()
	var nodes []*crashNode
	var seed string
	for i, dc := range []string{"dc1", "dc1", "dc1", "dc2", "dc2"} {
		host := fmt.Sprintf("127.0.0.%d", i+2)
		id := fmt.Sprintf("n%d", i+1)
		listen, clientAddr := freeAddrOn(t, host), freeAddrOn(t, host)
		args := []string{"--id", id, "--dc", dc, "--listen", listen, "--client", clientAddr,
			"--data-dir", filepath.Join(dir, id), "--gossip-interval", "100ms", "--log-level", "warn"}
		if seed == "" {
			seed = listen
		} else {
			args = append(args, "--seeds", seed)
		}
		nodes = append(nodes, &crashNode{id: id, client: clientAddr, args: args})
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.kill()
			n.wait()
			if t.Failed() {
				t.Logf("%s output:\n%s", n.id, n.output())
			}
		}
	})
	for _, n := range nodes {
		n.start(t, bin)
	}
	waitAllNormal(t, "first start", nodes)
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.client)
	}
	ksArgs := []string{"keyspace", "create", "app", "--replication", "dc1=2,dc2=2", "--addr", addrs[0]}
	if code, _, errOut := kura(ksArgs...); code != 0 {
		t.Fatalf("keyspace create: %s", errOut)
	}

	ctx := context.Background()
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	c, err := client.Dial(dctx, addrs, client.Options{RefreshInterval: time.Second})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Every node must know the keyspace before the load starts, or early writes through a
	// node that has not heard of it fail for a reason this test is not about.
	waitKeyspaceEverywhere(t, "app", nodes)

	// The writers: one at QUORUM, one at ONE, each writing new keys in a loop and
	// remembering every write the cluster acknowledged, with the phase it was acked in.
	var phase atomic.Value
	phase.Store("before")
	var mu sync.Mutex
	var acked []ack
	ackedIn := map[string]int{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, level := range []consistency.Level{consistency.Quorum, consistency.One} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("%s-%06d", strings.ToLower(level.String()), i)
				wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := c.Put(wctx, "app", []byte(key), []byte("v-"+key), level)
				cancel()
				if err != nil {
					// Unacknowledged: the write may or may not have landed; nothing is
					// promised. Do not spin while the cluster is down.
					time.Sleep(20 * time.Millisecond)
					continue
				}
				p := phase.Load().(string)
				mu.Lock()
				acked = append(acked, ack{key: key, level: level, phase: p, at: time.Now()})
				ackedIn[p]++
				mu.Unlock()
			}
		}()
	}
	countIn := func(p string) int {
		mu.Lock()
		defer mu.Unlock()
		return ackedIn[p]
	}
	waitCount := func(p string, want int) {
		deadline := time.Now().Add(30 * time.Second)
		for countIn(p) < want {
			if time.Now().After(deadline) {
				t.Fatalf("only %d writes acknowledged %s the crash in 30 s", countIn(p), p)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitCount("before", 300)

	// kill -9 every node at once, under load, then restart them all on their data dirs.
	phase.Store("during")
	killedAt := time.Now()
	for _, n := range nodes {
		n.kill()
	}
	for _, n := range nodes {
		n.wait()
	}
	// dc1 comes back first and takes writes at ONE (two replicas of every key in dc1)
	// while dc2 is still down: those acknowledgements rest on dc1's copies and on hints
	// for dc2, which the reads at ALL below check too.
	for _, n := range nodes[:3] {
		n.start(t, bin)
	}
	waitCount("during", 50)
	for _, n := range nodes[3:] {
		n.start(t, bin)
	}
	waitAllNormal(t, "restart", nodes)
	phase.Store("after")
	t.Logf("killed every node; all five back, normal and up, after %v", time.Since(killedAt).Round(time.Millisecond))
	waitCount("after", 300)
	close(stop)
	wg.Wait()

	// Every acknowledged write must be readable at ALL. An error (a replica not answering
	// yet) is retried; not found, with every replica answering, is a lost write.
	var lost []ack
	for _, a := range acked {
		deadline := time.Now().Add(20 * time.Second)
		for {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			value, found, err := c.Get(rctx, "app", []byte(a.key), consistency.All)
			cancel()
			if err == nil {
				if !found || string(value.Value) != "v-"+a.key {
					lost = append(lost, a)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("reading %s at ALL kept failing: %v", a.key, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	perLevel := map[string]int{}
	for _, a := range acked {
		perLevel[a.phase+"/"+a.level.String()]++
	}
	t.Logf("acknowledged writes: %d before the kill, %d during the crash and restart, %d after (by phase/level: %v); %d read back at ALL",
		ackedIn["before"], ackedIn["during"], ackedIn["after"], perLevel, len(acked))
	if len(lost) > 0 {
		byPhase := map[string]int{}
		for _, a := range lost {
			byPhase[a.phase+"/"+a.level.String()]++
		}
		for i, a := range lost {
			if i == 20 {
				t.Logf("... and %d more", len(lost)-i)
				break
			}
			t.Logf("lost: %s at %s, acknowledged %s the crash, %v after the kill", a.key, a.level, a.phase, a.at.Sub(killedAt).Round(time.Millisecond))
		}
		t.Fatalf("%d of %d acknowledged writes are not readable at ALL (by phase/level: %v)", len(lost), len(acked), byPhase)
	}
}
