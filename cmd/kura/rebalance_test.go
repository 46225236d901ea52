package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/assembly/node"
)

// TestKeySampleAndRebalance creates ordered keyspaces with and without a key sample,
// refuses the samples that make no sense, and rebalances a loaded keyspace, printing
// the steps and the rows per node before and after. The nodes gossip every 200 ms, so
// that the rebalance's three ring delays (five rounds each) take 3 s rather than 15 s.
func TestKeySampleAndRebalance(t *testing.T) {
	t.Parallel()
	c := startExampleWith(t, "three-dc", node.Config{GossipInterval: 200 * time.Millisecond})
	addr := c.Nodes[0].ClientAddr()
	dir := t.TempDir()
	sample := filepath.Join(dir, "sample.txt")
	var lines []string
	for i := range 500 {
		lines = append(lines, fmt.Sprintf("user%06d", i*1997%1000000))
	}
	if err := os.WriteFile(sample, []byte(strings.Join(lines, "\r\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.txt")
	if err := os.WriteFile(empty, []byte("\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		args     []string
		code     int
		contains string
	}{
		{[]string{"keyspace", "create", "balanced", "--replication", "simple=1", "--partitioner", "ordered", "--key-sample", sample, "--splits", "64"}, 0, "keyspace balanced created with 64 split keys from the sample"},
		{[]string{"keyspace", "describe", "balanced"}, 0, "split keys: 64, from user000000 to user"},
		{[]string{"keyspace", "list"}, 0, "balanced\treplication=simple=1\tpartitioner=ordered\tsplits=64"},
		{[]string{"keyspace", "create", "hashed", "--replication", "simple=1", "--key-sample", sample}, 2, "add --partitioner ordered"},
		{[]string{"keyspace", "create", "coded", "--erasure", "5,3", "--partitioner", "ordered", "--key-sample", sample}, 2, "erasure-coded keyspace places each chunk by its own hash"},
		{[]string{"keyspace", "create", "nothing", "--replication", "simple=1", "--partitioner", "ordered", "--key-sample", empty}, 2, "holds no keys"},
		{[]string{"keyspace", "create", "missing", "--replication", "simple=1", "--partitioner", "ordered", "--key-sample", filepath.Join(dir, "none")}, 1, "no such file"},
		{[]string{"keyspace", "create", "many", "--replication", "simple=1", "--partitioner", "ordered", "--key-sample", sample, "--splits", "0"}, 2, "--splits 0: want 1 to 4096"},
		{[]string{"keyspace", "create", "app", "--replication", "simple=1", "--partitioner", "ordered"}, 0, "keyspace app created"},
		{[]string{"rebalance"}, 2, "rebalance --keyspace KS"},
		{[]string{"rebalance", "--keyspace", "nope"}, 1, "no such keyspace"},
	}
	for _, tt := range tests {
		code, out, errOut := kura(append(tt.args, "--addr", addr)...)
		if code != tt.code || !strings.Contains(out+errOut, tt.contains) {
			t.Errorf("kura %v = exit %d, %q %q; want exit %d saying %q", tt.args, code, out, errOut, tt.code, tt.contains)
		}
	}

	ctx := context.Background()
	cl, err := client.Dial(ctx, []string{addr}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range 600 {
		if _, err := cl.Put(ctx, "app", fmt.Appendf(nil, "user%06d", i*7919%1000000), []byte("v"), consistency.One); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := kura("rebalance", "--keyspace", "app", "--splits", "64", "--addr", addr)
	if code != 0 {
		t.Fatalf("kura rebalance = exit %d, %s %s", code, out, errOut)
	}
	for _, want := range []string{"sampled", "copied", "switched", "settled", "dropped", "done", "ROWS BEFORE", "rows per node before: min 0, mean 67, max 600, max/mean 9.00", "rows per node after:"} {
		if !strings.Contains(out, want) {
			t.Errorf("kura rebalance printed %q, want it to say %q", out, want)
		}
	}
	t.Log(out)
}
