package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/embedded"
	"github.com/kuradb/kura/topology"
)

func TestKeyspaceCreateWithErasure(t *testing.T) {
	c := startThreeDC(t)
	addr := c.Nodes[0].ClientAddr()

	tests := []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"keyspace", "create", "coded", "--erasure", "5,3"}, 0, "keyspace coded created"},
		{[]string{"keyspace", "list"}, 0, "coded\treplication=simple=1\tpartitioner=hash\terasure=5,3"},
		{[]string{"keyspace", "describe", "coded"}, 0, "erasure: 5,3 (5 chunks per value, any 3 rebuild it)"},
		{[]string{"put", "--keyspace", "coded", "--consistency", "QUORUM", "greeting", "hello"}, 0, ""},
		{[]string{"get", "--keyspace", "coded", "greeting"}, 0, "hello"},
		{[]string{"keyspace", "create", "bad", "--erasure", "3,5"}, 1, "want 1 <= k <= m"},
		{[]string{"keyspace", "create", "bad", "--erasure", "5"}, 2, "want M,K"},
		{[]string{"keyspace", "create", "both", "--erasure", "5,3", "--replication", "simple=3"}, 2, "--replication dc1=2,dc2=1 | --erasure M,K"},
		{[]string{"keyspace", "create", "neither"}, 2, "--replication dc1=2,dc2=1 | --erasure M,K"},
	}
	for _, tt := range tests {
		code, out, errOut := kura(append(tt.args, "--addr", addr)...)
		if code != tt.code || !strings.Contains(out+errOut, tt.contains) {
			t.Errorf("kura %v = exit %d, %q %q; want exit %d saying %q", tt.args, code, out, errOut, tt.code, tt.contains)
		}
	}
}

func TestCas(t *testing.T) {
	c := startThreeDC(t)
	addr := c.Nodes[0].ClientAddr()
	tests := []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"keyspace", "create", "app", "--replication", "simple=3"}, 0, "keyspace app created"},
		{[]string{"cas", "--keyspace", "app", "lock", "alice", "--if-absent"}, 0, "applied (was (none))"},
		{[]string{"cas", "--keyspace", "app", "lock", "bob", "--if-absent"}, 1, "not applied (is alice)"},
		{[]string{"cas", "--keyspace", "app", "lock", "bob", "--if-equals", "alice", "--consistency", "LOCAL_SERIAL"}, 0, "applied (was alice)"},
		{[]string{"get", "--keyspace", "app", "--consistency", "SERIAL", "lock"}, 0, "bob"},
		{[]string{"cas", "--keyspace", "app", "lock", "--delete", "--if-equals", "alice"}, 1, "not applied (is bob)"},
		{[]string{"cas", "--keyspace", "app", "lock", "--delete", "--if-present"}, 0, "applied (was bob)"},
		{[]string{"get", "--keyspace", "app", "--consistency", "SERIAL", "lock"}, 1, "not found"},
		{[]string{"cas", "--keyspace", "app", "lock", "v", "--if-absent", "--consistency", "QUORUM"}, 1, "SERIAL or LOCAL_SERIAL, not QUORUM"},
		{[]string{"put", "--keyspace", "app", "--consistency", "SERIAL", "lock", "v"}, 1, "level of lightweight transactions"},
		{[]string{"cas", "--keyspace", "app", "lock", "v"}, 2, "one condition"},
		{[]string{"cas", "--keyspace", "app", "lock", "v", "--if-absent", "--if-present"}, 2, "one condition"},
		{[]string{"cas", "--keyspace", "app", "lock", "v", "--delete", "--if-present"}, 2, "--delete deletes the key"},
		{[]string{"cas", "--keyspace", "app", "lock", "--if-present"}, 2, "--delete deletes the key"},
	}
	for _, tt := range tests {
		code, out, errOut := kura(append(tt.args, "--addr", addr)...)
		if code != tt.code || !strings.Contains(out+errOut, tt.contains) {
			t.Errorf("kura %v = exit %d, %q %q; want exit %d saying %q", tt.args, code, out, errOut, tt.code, tt.contains)
		}
	}
}

// startThreeDC starts the three-dc example in this process with client APIs, converged,
// and closes it when the test ends.
func startThreeDC(t *testing.T) *embedded.Cluster {
	t.Helper()
	topo, err := topology.Example("three-dc")
	if err != nil {
		t.Fatal(err)
	}
	c, err := embedded.Start(topo, embedded.Options{ClientAPI: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}
