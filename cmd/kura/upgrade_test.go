package main

// Issue 45: a rolling upgrade from the last build that speaks internode protocol 3 only
// to this one, with real `kura server` processes: the old binaries are built from the
// repository's history, and each node in turn is stopped with SIGTERM and started with the
// next build on the same data dir while clients write. Issue 49 (Pebble v2) put a build
// between them: this build no longer reads the protocol-3 build's stores (Pebble format
// 1), so the cluster passes through the last build on Pebble v1 (protocol 4), which
// converts them as it opens them.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/io/transport"
)

// lastProtocol3Commit is the last commit whose kura speaks internode protocol 3 only:
// the build a cluster upgrades from to protocol 4.
const lastProtocol3Commit = "b438a3272b93a3d0c88504d922e813d9bacde093"

// lastPebbleV1Commit is the last commit whose kura links Pebble v1 (and opens its stores
// in format 13, ratcheting older ones): the build a store of a build before it passes
// through on its way to this one, and the one a node of this build can be rolled back to.
const lastPebbleV1Commit = "fd6b4641a303c16d11c4900d6babce6d92c31ce8"

// buildKuraAt builds kura at commit from the repository's history (git archive, so the
// repository is left as it is) and returns the binary; check says whether the source is
// the build the test means (what, in its failure). It skips the test when the history is
// not there, as in a shallow clone.
func buildKuraAt(t *testing.T, commit, what string, check func(src string) error) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("upgrade test: no git to take the %s from the repository's history", what)
	}
	if err := exec.Command("git", "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		t.Skipf("upgrade test: commit %s (the %s) is not in this repository's history: a shallow clone? (git fetch --unshallow)", commit, what)
	}
	src := sourceAt(t, commit)
	// The commit must be what the test says it is, or the test upgrades from nothing.
	if err := check(src); err != nil {
		t.Fatalf("commit %s is not the %s: %v", commit, what, err)
	}
	bin := filepath.Join(t.TempDir(), "kura-"+commit[:7])
	build := exec.Command("go", "build", "-o", bin, "./cmd/kura")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build at %s: %v\n%s", commit, err, out)
	}
	return bin
}

// fileHolds returns an error unless the file at path under src holds each of texts.
func fileHolds(src, path string, texts ...string) error {
	code, err := os.ReadFile(filepath.Join(src, path))
	if err != nil {
		return err
	}
	for _, text := range texts {
		if !strings.Contains(string(code), text) {
			return fmt.Errorf("%s does not hold %q", path, text)
		}
	}
	return nil
}

// buildProtocol3Kura builds kura at lastProtocol3Commit.
func buildProtocol3Kura(t *testing.T) string {
	return buildKuraAt(t, lastProtocol3Commit, "last protocol-3 build", func(src string) error {
		return fileHolds(src, "transport/transport.go", "const ProtocolVersion = 3\n")
	})
}

// buildPebbleV1Kura builds kura at lastPebbleV1Commit.
func buildPebbleV1Kura(t *testing.T) string {
	return buildKuraAt(t, lastPebbleV1Commit, "last build on Pebble v1", func(src string) error {
		return errors.Join(fileHolds(src, "go.mod", "github.com/cockroachdb/pebble v1."),
			fileHolds(src, "storage/storage.go", "const formatMajorVersion = pebble.FormatFlushableIngest"))
	})
}

// sourceAt extracts commit once into the user's cache directory and returns it: the go
// command's build cache keys a package by its directory, so a fresh temporary directory
// every run compiled all of kura's packages again (25 s of CPU, two minutes of the suite
// on a loaded 2-core machine), where the same directory finds them built. Each run
// extracts into a directory of its own and renames it into place, so a concurrent run
// never sees a half-extracted tree; without a cache directory it extracts into the test's
// temporary one.
func sourceAt(t *testing.T, commit string) string {
	t.Helper()
	parent := t.TempDir()
	final := filepath.Join(parent, "src")
	if cache, err := os.UserCacheDir(); err == nil {
		parent = filepath.Join(cache, "kura-test")
		final = filepath.Join(parent, "src-"+commit)
		if _, err := os.Stat(final); err == nil {
			return final
		}
		if err := os.MkdirAll(parent, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tmp, err := os.MkdirTemp(parent, "extract-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	// From the top of the work tree: run in a subdirectory, git archive takes only it.
	extract := exec.Command("sh", "-c", `git -C "$(git rev-parse --show-toplevel)" archive --format=tar "$1" | tar -x -C "$2"`, "sh", commit, tmp)
	if out, err := extract.CombinedOutput(); err != nil {
		t.Fatalf("extracting commit %s: %v\n%s", commit, err, out)
	}
	// A concurrent run may have renamed its own complete extraction into place first.
	if err := os.Rename(tmp, final); err != nil {
		if _, statErr := os.Stat(final); statErr != nil {
			t.Fatalf("keeping the extraction of commit %s: %v", commit, err)
		}
	}
	return final
}

// protocolLine returns kura status's "protocol versions: ..." line through n; "" when
// there is none (a protocol-3 node does not report versions).
func protocolLine(n *lcNode) (string, error) {
	_, out, err := kuraStatus(n.client)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "protocol versions:") {
			return line, nil
		}
	}
	return "", nil
}

// waitProtocolLine polls kura status through each observer until it shows want.
func waitProtocolLine(t *testing.T, observers []*lcNode, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, o := range observers {
		for {
			got, err := protocolLine(o)
			if err == nil && got == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("kura status through %s shows %q (%v), want %q", o.id, got, err, want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// upgradeWriter writes new keys at QUORUM through one node, one after another, and
// records what was acknowledged and what failed, and whether the node was being
// restarted when it failed.
type upgradeWriter struct {
	node *lcNode

	mu         sync.Mutex
	restarting bool // from the node's SIGTERM until a write through it succeeds again
	// restarted is when the node's new process was started: a write begun before it (one
	// the old process still served as it shut down) does not end restarting.
	restarted time.Time
	acked     []string
	excused   int      // failures while the node restarted
	failures  []string // failures at any other time
}

// mixedWrites is how many writes each writer has acknowledged between two steps of the
// upgrade, at least.
const mixedWrites = 50

// writePace spaces the writes of one writer, so that reading every key back at the end
// stays short.
const writePace = 40 * time.Millisecond

func (w *upgradeWriter) run(c *client.Client, stop <-chan struct{}) {
	pace := time.NewTicker(writePace)
	defer pace.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-pace.C:
		}
		key := fmt.Sprintf("%s-%06d", w.node.id, i)
		began := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := c.Put(ctx, "app", []byte(key), []byte("v-"+key), consistency.Quorum)
		cancel()
		w.mu.Lock()
		switch {
		case err == nil:
			w.acked = append(w.acked, key)
			if !w.restarted.IsZero() && began.After(w.restarted) {
				w.restarting = false
			}
		case w.restarting:
			w.excused++
		default:
			w.failures = append(w.failures, fmt.Sprintf("%s at %s: %v", key, time.Now().Format("15:04:05.000"), err))
		}
		w.mu.Unlock()
	}
}

// ackedCount is how many writes were acknowledged so far.
func (w *upgradeWriter) ackedCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// waitAcked waits until more than n writes through the node were acknowledged.
func (w *upgradeWriter) waitAcked(t *testing.T, n int, what string) {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for w.ackedCount() <= n {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no write through %s acknowledged within 40 s", what, w.node.id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// refusedStart runs this build's kura server on n's command line, n being stopped, and
// returns its output: the process must exit with an error within a minute.
func refusedStart(t *testing.T, n *lcNode) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"server"}, n.args...)...)
	cmd.Env = append(os.Environ(), "KURA_AS_MAIN=1")
	out, err := cmd.CombinedOutput()
	if err == nil || ctx.Err() != nil {
		t.Fatalf("this build on %s's data dir of the protocol-3 build: %v, want it refused; its output:\n%s", n.id, err, out)
	}
	return string(out)
}

// upgradeEach stops each node in turn with SIGTERM and starts it with bin ("" for this
// build) on its data dir, the writers going on; after each it waits until every node sees
// every member normal and up, a write through the node succeeds again and every writer
// has had mixedWrites more acknowledged, then until kura status through every node
// running bin shows protocolLine(how many nodes run it).
func upgradeEach(t *testing.T, nodes []*lcNode, writers []*upgradeWriter, bin string, protocolLine func(upgraded int) string) {
	t.Helper()
	for i, n := range nodes {
		w := writers[i]
		w.mu.Lock()
		w.restarting, w.restarted = true, time.Time{}
		before := len(w.acked)
		w.mu.Unlock()
		n.terminate(t)
		n.bin = bin
		n.start(t)
		w.mu.Lock()
		w.restarted = time.Now()
		w.mu.Unlock()
		waitViews(t, "after upgrading "+n.id, 60*time.Second, nodes, allNormalUp(nodes...))
		w.waitAcked(t, before, "after upgrading "+n.id)
		// A stretch of writes through every node of the mixed cluster before the next step:
		// each writer's count is taken before any wait, as the writers write at once (one
		// after another, each step waited three stretches, 6 s, for one).
		targets := make([]int, len(writers))
		for j, o := range writers {
			targets[j] = o.ackedCount() + mixedWrites
		}
		for j, o := range writers {
			o.waitAcked(t, targets[j], "after upgrading "+n.id)
		}
		want := protocolLine(i + 1)
		waitProtocolLine(t, nodes[:i+1], want)
		t.Logf("upgraded %s: %s", n.id, want)
	}
}

// TestRollingUpgradeFromProtocol3: 3 nodes in 2 DCs (n1, n2 in dc1, n3 in dc2) of the
// protocol-3 build, keyspace dc1=2,dc2=1, a client per node writing at QUORUM through it
// without a pause. This build started on a node's data dir refuses it (Pebble format 1),
// naming the build to pass through, and leaves it as it was. Each node in turn is then
// upgraded to the last build on Pebble v1, and then each in turn to this build. No write
// through a node other than the one restarting may fail; the cluster's protocol must stay
// 3 until the last node runs protocol 4, and become 4 then; every acknowledged key must
// read at QUORUM through every node, and at ONE through every node once repair has run;
// and a node rolled back to the last build on Pebble v1 must open what this build wrote
// and read every key at ONE.
func TestRollingUpgradeFromProtocol3(t *testing.T) {
	t.Parallel()
	c := newLifecycleCluster(t)
	protocol3, pebbleV1 := buildProtocol3Kura(t), buildPebbleV1Kura(t)
	nodes := []*lcNode{c.add("n1", "dc1"), c.add("n2", "dc1"), c.add("n3", "dc2")}
	for _, n := range nodes {
		n.bin = protocol3
	}
	c.startAll(nodes...)
	c.createKeyspace(nodes[0], "dc1=2,dc2=1")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	writers := make([]*upgradeWriter, len(nodes))
	for i, n := range nodes {
		writers[i] = &upgradeWriter{node: n}
		through := mustDialPinned(t, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			writers[i].run(through, stop)
		}()
	}
	stopWriters := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopWriters()
	for _, w := range writers {
		w.waitAcked(t, 50, "before the upgrade")
	}

	// Straight from the protocol-3 build to this one: refused, and the node starts again
	// with the build it passes through (upgradeEach's first step, which stops it again).
	n1 := nodes[0]
	writers[0].mu.Lock()
	writers[0].restarting = true
	writers[0].mu.Unlock()
	n1.terminate(t)
	if out := refusedStart(t, n1); !strings.Contains(out, "Pebble v1 from 7 December 2026") {
		t.Errorf("this build's refusal of a protocol-3 data dir does not name the build to pass through:\n%s", out)
	}
	n1.bin = pebbleV1
	n1.start(t)
	waitViews(t, "after the refusal", 60*time.Second, nodes, allNormalUp(nodes...))

	// Through the nodes of protocol 4 (those of 3 do not report versions): 3 until the
	// last one is upgraded.
	upgradeEach(t, nodes, writers, pebbleV1, func(upgraded int) string {
		if upgraded == len(nodes) {
			return fmt.Sprintf("protocol versions: %d (%s); cluster protocol %d", transport.ProtocolVersion, plural(len(nodes), "node"), transport.ProtocolVersion)
		}
		return fmt.Sprintf("protocol versions: %d (%s), %d (%s); cluster protocol %d",
			transport.OldestPeerVersion, plural(len(nodes)-upgraded, "node"), transport.ProtocolVersion, plural(upgraded, "node"), transport.OldestPeerVersion)
	})
	// The first node upgraded met protocol-3 acceptors, which refused its hello of 4.
	if out := nodes[0].output(); !strings.Contains(out, "dialing again in its version") {
		t.Errorf("n1 never dialed a protocol-3 node again in protocol 3; its output:\n%s", out)
	}
	// Both builds speak protocol 4.
	upgradeEach(t, nodes, writers, "", func(int) string {
		return fmt.Sprintf("protocol versions: %d (%s); cluster protocol %d", transport.ProtocolVersion, plural(len(nodes), "node"), transport.ProtocolVersion)
	})
	stopWriters()

	var keys []string
	for _, w := range writers {
		t.Logf("writes through %s at QUORUM: %d acknowledged, %d failed while it restarted, %d failed otherwise",
			w.node.id, len(w.acked), w.excused, len(w.failures))
		for j, f := range w.failures {
			if j == 10 {
				t.Errorf("... and %d more", len(w.failures)-10)
				break
			}
			t.Errorf("write through %s failed while it was not restarting: %s", w.node.id, f)
		}
		keys = append(keys, w.acked...)
	}
	for _, n := range nodes {
		readKeys(t, mustDialPinned(t, n), n.id, keys, consistency.Quorum)
	}
	// At ONE a node may answer from its own replica alone, which missed the writes of its
	// restart until hints or repair bring them.
	for _, n := range nodes {
		kuraOK(t, "repair", "--addr", n.client, "--keyspace", "app", "--timeout", "120s")
	}
	for _, n := range nodes {
		readKeys(t, mustDialPinned(t, n), n.id, keys, consistency.One)
	}

	// Rolled back: the last build on Pebble v1 opens the store this build wrote.
	n3 := nodes[2]
	n3.terminate(t)
	n3.bin = pebbleV1
	n3.start(t)
	waitViews(t, "after rolling back "+n3.id, 60*time.Second, nodes, allNormalUp(nodes...))
	readKeys(t, mustDialPinned(t, n3), n3.id, keys, consistency.One)
}
