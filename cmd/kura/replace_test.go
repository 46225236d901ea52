package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/kuradb/kura/api/kurav1"
)

// nodeStatuses asks the node at the client address addr for the cluster as it sees it.
func nodeStatuses(addr string) ([]*kurav1.NodeStatus, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := kurav1.NewAdminClient(conn).ClusterStatus(ctx, &kurav1.ClusterStatusRequest{})
	if err != nil {
		return nil, err
	}
	return st.GetNodes(), nil
}

// waitView polls the admin API of each node at addrs until ok holds of the view of every
// one. The deadline is generous: CI is a loaded 2-core machine running four servers.
func waitView(t *testing.T, what string, addrs []string, ok func(map[string]*kurav1.NodeStatus) bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		why := ""
		for _, addr := range addrs {
			nodes, err := nodeStatuses(addr)
			if err != nil {
				why = fmt.Sprintf("%s: %v", addr, err)
				break
			}
			byID := map[string]*kurav1.NodeStatus{}
			var seen []string
			for _, n := range nodes {
				byID[n.GetId()] = n
				seen = append(seen, fmt.Sprintf("%s=%s/alive=%t/replaces=%q", n.GetId(), n.GetStatus(), n.GetAlive(), n.GetReplaces()))
			}
			if !ok(byID) {
				why = fmt.Sprintf("%s sees %s", addr, strings.Join(seen, " "))
				break
			}
		}
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never: %s", what, why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestClientCommandsWorkAfterReplace runs three `kura server` processes, kills one with
// SIGKILL, starts a new node with --replace in its place, and once the replacement is
// normal runs the Go client's put, get and scan and `kura keyspace list` through the
// command line. The replacement takes over the dead node's tokens, and the cluster
// listing the client builds its ring from keeps the dead node (removed, or still normal
// while the replacement joins): a client that put both on its ring failed every command
// with "ring: duplicate token" (issue 43, item 4).
func TestClientCommandsWorkAfterReplace(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts four server processes")
	}
	dir := t.TempDir()
	// Gossip rounds of 200 ms make failure detection and the replacement's ring delay
	// short; the ring delay of 2 s (ten rounds) leaves a loaded machine time to spread
	// the replacement's announcement before it streams.
	common := []string{"--dc", "dc1", "--gossip-interval", "200ms", "--ring-delay", "2s", "--log-level", "warn", "--repair-interval", "0"}
	var seed string
	newServer := func(id string, extra ...string) *serverProcess {
		listen, clientAddr := freeAddr(t), freeAddr(t)
		args := append([]string{"--id", id, "--listen", listen, "--client", clientAddr, "--data-dir", filepath.Join(dir, id)}, common...)
		if seed == "" {
			seed = listen
		} else {
			args = append(args, "--seeds", seed)
		}
		p := &serverProcess{args: append(args, extra...), client: clientAddr}
		startServer(t, p)
		return p
	}
	n1, n2, n3 := newServer("n1"), newServer("n2"), newServer("n3")
	allNormal := func(ids ...string) func(map[string]*kurav1.NodeStatus) bool {
		return func(view map[string]*kurav1.NodeStatus) bool {
			for _, id := range ids {
				if n := view[id]; n == nil || !n.GetAlive() || n.GetStatus() != "normal" {
					return false
				}
			}
			return true
		}
	}
	waitView(t, "the three nodes see each other normal", []string{n1.client, n2.client, n3.client}, allNormal("n1", "n2", "n3"))

	waitFor(t, "keyspace create", "keyspace", "create", "app", "--replication", "dc1=2", "--addr", n1.client)
	for _, k := range []string{"a", "b", "c"} {
		// ALL: every replica holds the keys before n2 dies, so they survive it.
		waitFor(t, "put before the kill", "put", "--addr", n1.client, "--keyspace", "app", "--consistency", "ALL", k, "v-"+k)
	}

	if err := n2.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	n2.cmd.Wait()
	// --replace refuses a node that is still up: let the survivors find it dead first.
	waitView(t, "the survivors see n2 down", []string{n1.client, n3.client}, func(view map[string]*kurav1.NodeStatus) bool {
		return view["n2"] != nil && !view["n2"].GetAlive()
	})
	n4 := newServer("n4", "--replace", "n2")
	addrs := []string{n1.client, n3.client, n4.client}
	waitView(t, "n4 replaces n2 and is normal", addrs, func(view map[string]*kurav1.NodeStatus) bool {
		return allNormal("n1", "n3", "n4")(view) && view["n4"].GetReplaces() == "n2"
	})

	// Every command through every node: each node's listing holds n2 and n4 with the same
	// tokens. kura() runs the command once: a failure is the client's answer, not a
	// server still starting.
	for _, addr := range addrs {
		if code, out, errOut := kura("put", "--addr", addr, "--keyspace", "app", "--consistency", "QUORUM", "after-"+addr, "v"); code != 0 {
			t.Errorf("kura put through %s after the replace: exit %d: %s%s", addr, code, out, errOut)
		}
		if code, out, errOut := kura("keyspace", "list", "--addr", addr); code != 0 || !strings.Contains(out, "app\t") {
			t.Errorf("kura keyspace list through %s after the replace = %q (exit %d, %s), want app listed", addr, out, code, errOut)
		}
		if code, out, errOut := kura("get", "--addr", addr, "--keyspace", "app", "--consistency", "QUORUM", "b"); code != 0 || out != "v-b" {
			t.Errorf("kura get b through %s after the replace = %q (exit %d, %s), want v-b", addr, out, code, errOut)
		}
		code, out, errOut := kura("scan", "--addr", addr, "--keyspace", "app", "--consistency", "QUORUM", "--keys-only")
		if code != 0 {
			t.Errorf("kura scan through %s after the replace: exit %d: %s%s", addr, code, out, errOut)
			continue
		}
		for _, k := range []string{"a", "b", "c", "after-" + addr} {
			if !slices.Contains(strings.Split(out, "\n"), k) {
				t.Errorf("kura scan through %s after the replace lacks %q:\n%s", addr, k, out)
			}
		}
	}
}

// TestServerExitsWhenItsReplacementIsRefused: a node started with --replace naming a
// node that is up was refused, said so in its log, and stayed booting for ever, its
// process running as if it would join some day. It now exits with status 1 and the
// reason on stderr.
func TestServerExitsWhenItsReplacementIsRefused(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts two server processes")
	}
	dir := t.TempDir()
	common := []string{"--dc", "dc1", "--gossip-interval", "200ms", "--ring-delay", "2s", "--log-level", "warn", "--repair-interval", "0"}
	seed, client := freeAddr(t), freeAddr(t)
	n1 := &serverProcess{args: append([]string{"--id", "n1", "--listen", seed, "--client", client, "--data-dir", filepath.Join(dir, "n1")}, common...), client: client}
	startServer(t, n1)
	waitView(t, "n1 is normal", []string{n1.client}, func(view map[string]*kurav1.NodeStatus) bool {
		return view["n1"] != nil && view["n1"].GetStatus() == "normal"
	})

	n2 := &serverProcess{args: append([]string{"--id", "n2", "--listen", freeAddr(t), "--client", freeAddr(t), "--data-dir", filepath.Join(dir, "n2"),
		"--seeds", seed, "--replace", "n1"}, common...)}
	startServer(t, n2)
	exited := make(chan error, 1)
	go func() { exited <- n2.cmd.Wait() }()
	select {
	case err := <-exited:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Errorf("n2 ended with %v, want exit status 1", err)
		}
		if want := "node n1 is up"; !strings.Contains(n2.log.String(), want) {
			t.Errorf("n2's output does not say %q:\n%s", want, n2.log.String())
		}
	case <-time.After(2 * time.Minute):
		// The refusal takes 20 gossip rounds (4 s): minutes are a loaded machine's margin.
		t.Fatal("n2, refused, still runs after 2 minutes")
	}
}
