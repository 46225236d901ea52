package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/base/waitingtests"
)

// The test binary doubles as the kura binary: with KURA_AS_MAIN set it runs the command
// line it was given, so the multi-process test needs no separate build.
//
// The tests that start clusters call t.Parallel: they spend most of their time waiting
// on gossip, ring delays and restarts, not computing, and each has its own ports
// (freeAddrOn) and data dirs, so go test runs clustersAtOnce of them at once, after the
// serial ones. Their waits have deadlines that bound a hang, never a speed.
// TestConcurrentJoinsLoseNoReads stays serial: it means to start its second join inside
// the first's ring delay of 2 s, which a busier machine would make less likely.
func TestMain(m *testing.M) {
	if os.Getenv("KURA_AS_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	waitingtests.AtOnce(clustersAtOnce)
	os.Exit(m.Run())
}

// clustersAtOnce is how many of the parallel tests run at once unless go test is given
// -parallel. Its default, GOMAXPROCS, is 2 on CI's machine, where two at a time kept the
// CPU idle most of the time: the package used 67 s of CPU in 185 s (load 2 to 16);
// four at once, with the trims of the upgrade, convergence and rebalance tests, took
// 92 s and 51 s of CPU (load 7 to 9).
const clustersAtOnce = 4

// kura runs a client command in this process and returns its exit code and output.
func kura(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// freeAddr is freeAddrOn 127.0.0.1.
func freeAddr(t *testing.T) string { return freeAddrOn(t, "127.0.0.1") }

// serverProcess is one `kura server` child process.
type serverProcess struct {
	args   []string
	client string
	cmd    *exec.Cmd
	log    *bytes.Buffer
}

func startServer(t *testing.T, p *serverProcess) {
	t.Helper()
	p.log = &bytes.Buffer{}
	p.cmd = exec.Command(os.Args[0], append([]string{"server"}, p.args...)...)
	p.cmd.Env = append(os.Environ(), "KURA_AS_MAIN=1")
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		if t.Failed() {
			t.Logf("server %v output:\n%s", p.args, p.log.String())
		}
	})
}

// waitFor retries a client command until it succeeds; the servers start asynchronously.
func waitFor(t *testing.T, what string, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, out, errOut := kura(args...)
		if code == 0 {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: kura %v: exit %d: %s%s", what, args, code, out, errOut)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestMultiProcessClusterSurvivesKill9(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var servers []*serverProcess
	var seed string
	for i, dc := range []string{"dc1", "dc1", "dc2"} {
		listen, client := freeAddr(t), freeAddr(t)
		args := []string{"--id", fmt.Sprintf("n%d", i+1), "--dc", dc, "--listen", listen, "--client", client,
			"--data-dir", filepath.Join(dir, fmt.Sprintf("n%d", i+1)), "--log-level", "warn"}
		if seed == "" {
			seed = listen
		} else {
			args = append(args, "--seeds", seed)
		}
		p := &serverProcess{args: args, client: client}
		startServer(t, p)
		servers = append(servers, p)
	}
	n1, n2, n3 := servers[0].client, servers[1].client, servers[2].client
	status := waitFor(t, "n1 answers", "status", "--addr", n1)
	// Two nodes join at once: one waits for the other, and each waits a ring delay,
	// streams and waits for its arbiter's promise; on a loaded machine that passed 20 s.
	deadline := time.Now().Add(90 * time.Second)
	for strings.Count(status, " up ") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the three nodes never saw each other:\n%s", status)
		}
		time.Sleep(100 * time.Millisecond)
		status = waitFor(t, "n1 answers", "status", "--addr", n1)
	}

	if code, _, errOut := kura("keyspace", "create", "app", "--replication", "dc1=2,dc2=1", "--addr", n1); code != 0 {
		t.Fatalf("keyspace create: %s", errOut)
	}
	if code, _, errOut := kura("put", "--addr", n1, "--keyspace", "app", "--consistency", "QUORUM", "greeting", "hello, world"); code != 0 {
		t.Fatalf("put: %s", errOut)
	}
	// ALL: acknowledged by every replica, n2 included, before n2 is killed.
	if code, _, errOut := kura("put", "--addr", n2, "--keyspace", "app", "--consistency", "ALL", "durable", "on disk"); code != 0 {
		t.Fatalf("put at ALL: %s", errOut)
	}
	if code, out, errOut := kura("get", "--addr", n3, "--keyspace", "app", "--consistency", "QUORUM", "greeting"); code != 0 || out != "hello, world" {
		t.Fatalf("get through n3 = %q (exit %d, %s), want hello, world", out, code, errOut)
	}
	if code, _, errOut := kura("get", "--addr", n3, "--keyspace", "app", "missing"); code != 1 || errOut != "not found\n" {
		t.Fatalf("get of a missing key: exit %d, stderr %q; want 1, not found", code, errOut)
	}

	// kill -9 a replica that holds the key on disk, restart it, and read its own copy.
	victim := servers[1]
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	victim.cmd.Wait()
	startServer(t, victim)
	// ONE through n2 reads n2's own copy first.
	got := waitFor(t, "n2 serves again", "get", "--addr", n2, "--keyspace", "app", "--consistency", "ONE", "durable")
	if got != "on disk" {
		t.Fatalf("after kill -9 and restart, n2 reads %q", got)
	}
}

func TestCommandLineErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		text string
	}{
		{[]string{}, 2, "Usage: kura <command>"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"get"}, 2, "get KEY"},
		{[]string{"get", "k", "--consistency", "MOST"}, 2, "unknown consistency level"},
		{[]string{"server", "--dc", "x", "--in-memory"}, 2, "--id is required"},
		{[]string{"server", "--id", "a", "--dc", "x"}, 2, "exactly one of --data-dir DIR and --in-memory"},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--compaction-throughput", "-1"}, 2, "--compaction-throughput must not be negative"},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--row-cache", "-1"}, 2, "--row-cache must not be negative"},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--gc-heap-floor", "-1"}, 2, "--gc-heap-floor must be between 0 and 1048576 MiB"},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--gc-heap-floor", "1e30"}, 2, "--gc-heap-floor must be between 0 and 1048576 MiB"},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--spare-go-procs", "-1"}, 2, "--spare-go-procs must be between 0 and 64"},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--spare-go-procs", "65"}, 2, "--spare-go-procs must be between 0 and 64"},
		{[]string{"server", "--id", "a", "--dc", "x", "--in-memory", "--power-levels", "app=MOST"}, 2, `--power-levels: power: invalid level declaration: app: unknown consistency level "MOST"`},
		{[]string{"keyspace"}, 2, "keyspace create NAME"},
		// Arguments are checked before anything dials: an address nobody serves.
		{[]string{"keyspace", "create", "--addr", "127.0.0.1:1"}, 2, "keyspace create NAME"},
		{[]string{"keyspace", "drop", "--addr", "127.0.0.1:1"}, 2, "keyspace drop NAME"},
		{[]string{"keyspace", "list", "extra", "--addr", "127.0.0.1:1"}, 2, "keyspace list takes no arguments"},
		// A wrong flag: one line naming the closest flag, not the whole list.
		{[]string{"server", "--listn", "x"}, 2, "unknown flag --listn; did you mean --listen?"},
		{[]string{"get", "k", "--zzzzzz"}, 2, "unknown flag --zzzzzz (kura get --help lists the flags)"},
		{[]string{"put", "k", "v", "--ttl", "5"}, 2, "--ttl takes a duration with its unit"},
		{[]string{"snapshot"}, 2, "snapshot create NAME"},
		{[]string{"snapshot", "create", "../up", "--addr", "127.0.0.1:1"}, 2, `invalid snapshot name "../up"`},
		{[]string{"snapshot", "list", "extra", "--addr", "127.0.0.1:1"}, 2, "snapshot create NAME"},
		{[]string{"restore"}, 2, "restore --data DIR --snapshot NAME"},
		{[]string{"restore", "keyspace", "app", "--addr", "127.0.0.1:1"}, 2, "restore keyspace KS --snapshot NAME"},
		{[]string{"restore", "keyspace", "app", "--snapshot", "s", "--consistency", "SERIAL", "--addr", "127.0.0.1:1"}, 2, "a restore writes at ANY to ALL"},
		{[]string{"restore", "--data", "/nonexistent-kura-dir", "--snapshot", "s"}, 1, "no such snapshot"},
		{[]string{"faults", "--help"}, 0, "Usage: kura faults set|clear|show"},
		{[]string{"faults", "show", "--addr", "127.0.0.1:1,127.0.0.1:1"}, 2, "names 127.0.0.1:1 twice"},
		{[]string{"faults", "show", "--addr", "127.0.0.1:1", "--tls-ca", "/nonexistent-kura-ca.crt"}, 1, "/nonexistent-kura-ca.crt"},
		{[]string{"node", "help"}, 0, "Usage: kura node decommission"},
		{[]string{"get", "--help"}, 0, "-consistency"},
		{[]string{"get", "k", "--addr", "127.0.0.1:1", "--timeout", "300ms"}, 1, "no node answered"},
	}
	for _, tt := range tests {
		code, _, errOut := kura(tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.text) {
			t.Errorf("kura %v: exit %d, stderr %q; want exit %d and %q", tt.args, code, errOut, tt.code, tt.text)
		}
		if wrongFlag := strings.Contains(tt.text, "flag") || strings.Contains(tt.text, "duration"); wrongFlag && strings.Count(errOut, "\n") > 1 {
			t.Errorf("kura %v: %d lines on stderr, want the error alone:\n%s", tt.args, strings.Count(errOut, "\n"), errOut)
		}
	}
}
