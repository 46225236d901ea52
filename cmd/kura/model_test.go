package main

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/io/topology"
)

func modelJSON(t *testing.T, args ...string) modelResult {
	t.Helper()
	code, out, errOut := kura(append([]string{"model", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("kura model %v: exit %d: %s", args, code, errOut)
	}
	var result modelResult
	if err := json.Unmarshal([]byte(out), &result); err != nil {
		t.Fatalf("decode %q: %v", out, err)
	}
	return result
}

func findRow(t *testing.T, result modelResult, coordinator, op, level string) modelRow {
	t.Helper()
	for _, row := range result.Rows {
		if row.Coordinator == coordinator && row.Op == op && row.Consistency == level {
			return row
		}
	}
	t.Fatalf("no row for %s %s %s in %+v", coordinator, op, level, result.Rows)
	return modelRow{}
}

// TestModelThreeDC: one replica per DC; a quorum from Tokyo needs Virginia's reply (40 ms
// one way, the nearer of the other two), so 80 ms + t_proc + a few µs of serialisation.
func TestModelThreeDC(t *testing.T) {
	result := modelJSON(t, "--topology", "three-dc", "--replication", "tokyo=1,frankfurt=1,virginia=1")
	if want := 9 * (4 + 3); len(result.Rows) != want {
		t.Errorf("%d rows, want %d (9 coordinators, 4 write and 3 read levels)", len(result.Rows), want)
	}
	row := findRow(t, result, "tokyo-1", "write", "QUORUM")
	if row.LatencyMs == nil || *row.LatencyMs < 81 || *row.LatencyMs > 81.01 || row.P != 1 {
		t.Errorf("tokyo-1 QUORUM write = %v ms, p %v; want 81 ms and p 1", deref(row.LatencyMs), row.P)
	}
	// From Tokyo, ALL waits for Frankfurt: 60 ms one way.
	if row := findRow(t, result, "tokyo-3", "read", "ALL"); row.LatencyMs == nil || math.Abs(*row.LatencyMs-121) > 0.01 {
		t.Errorf("tokyo-3 ALL read = %v ms, want 121", deref(row.LatencyMs))
	}
}

// TestModelSerial: a compare-and-set from Tokyo at SERIAL waits twice for Virginia
// (prepare, propose; the commit is not waited for), 2 × 81 ms; a serial read once;
// LOCAL_SERIAL stays in Tokyo.
func TestModelSerial(t *testing.T) {
	result := modelJSON(t, "--topology", "three-dc", "--replication", "tokyo=1,frankfurt=1,virginia=1",
		"--coordinator", "tokyo-1", "--consistency", "SERIAL,LOCAL_SERIAL")
	if row := findRow(t, result, "tokyo-1", "write", "SERIAL"); row.LatencyMs == nil || math.Abs(*row.LatencyMs-162) > 0.1 || row.RoundTrips != 2 {
		t.Errorf("tokyo-1 SERIAL write = %v ms, %d round trips; want 162 ms, 2", deref(row.LatencyMs), row.RoundTrips)
	}
	if row := findRow(t, result, "tokyo-1", "read", "SERIAL"); row.LatencyMs == nil || math.Abs(*row.LatencyMs-81) > 0.1 || row.RoundTrips != 1 {
		t.Errorf("tokyo-1 SERIAL read = %v ms, %d round trips; want 81 ms, 1", deref(row.LatencyMs), row.RoundTrips)
	}
	if row := findRow(t, result, "tokyo-1", "write", "LOCAL_SERIAL"); row.LatencyMs == nil || *row.LatencyMs > 6 || row.P != 0 {
		t.Errorf("tokyo-1 LOCAL_SERIAL write = %v ms, p %v; want a few ms inside Tokyo", deref(row.LatencyMs), row.P)
	}
}

// TestModelPaperSetup: paper 002's six nodes at RF 3, QUORUM from node 1: p = 3/6, so
// 1 ms + 3/6 × 8 ms.
func TestModelPaperSetup(t *testing.T) {
	result := modelJSON(t, "--topology", "two-dc-6", "--tokens", "even", "--replication", "3",
		"--coordinator", "node-1", "--consistency", "QUORUM", "--op", "write", "--ranges")
	if len(result.Rows) != 1 {
		t.Fatalf("%d rows, want 1", len(result.Rows))
	}
	row := result.Rows[0]
	if math.Abs(row.P-0.5) > 1e-9 || row.LatencyMs == nil || math.Abs(*row.LatencyMs-5) > 0.001 || len(row.Ranges) != 6 {
		t.Errorf("row = p %v, %v ms, %d ranges; want p 0.5, 5 ms and 6 ranges", row.P, deref(row.LatencyMs), len(row.Ranges))
	}
}

func TestModelTable(t *testing.T) {
	code, out, errOut := kura("model", "--topology", "two-dc-6", "--tokens", "even", "--replication", "dc2=1",
		"--coordinator", "node-1", "--consistency", "ONE,LOCAL_ONE", "--op", "read", "--ranges")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"COORDINATOR", "LOCAL_ONE", "unavailable", "RANGE_START", "node-1 read at ONE:", "node-4"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestModelUsageErrors(t *testing.T) {
	tests := [][]string{
		{"model", "--topology", "two-dc-6"},
		{"model", "--topology", "two-dc-6", "--replication", "3", "--consistency", "MOST"},
		{"model", "--topology", "two-dc-6", "--replication", "3", "--op", "scan"},
		{"model", "--topology", "two-dc-6", "--replication", "3", "--coordinator", "node-9"},
		{"model", "--topology", "two-dc-6", "--replication", "3", "--tokens", "random"},
	}
	for _, args := range tests {
		if code, _, errOut := kura(args...); code != 2 {
			t.Errorf("kura %v: exit %d (%s), want 2", args, code, errOut)
		}
	}
}

// TestModelRunningCluster takes the nodes, their tokens and the keyspace's replication
// from a running cluster.
func TestModelRunningCluster(t *testing.T) {
	topo, err := topology.Example("lan-3")
	if err != nil {
		t.Fatal(err)
	}
	c, err := embedded.Start(topo, embedded.Options{ClientAPI: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.CreateKeyspace(ctx, schema.Keyspace{Name: "app", Replication: "simple=2"}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	result := modelJSON(t, "--addr", c.Nodes[0].ClientAddr(), "--keyspace", "app", "--topology", "lan-3",
		"--coordinator", "node-2", "--consistency", "ALL", "--op", "write", "--ranges", "--proc-ms", "0.5")
	if result.Replication != "simple=2" || len(result.Rows) != 1 {
		t.Fatalf("result = %+v, want simple=2 and one row", result)
	}
	row := result.Rows[0]
	// lan-3 has no emulated latency: only t_proc remains; 3 nodes × 16 vnodes ranges.
	if row.LatencyMs == nil || *row.LatencyMs != 0.5 || len(row.Ranges) != 48 {
		t.Errorf("row = latency %v ms, %d ranges; want 0.5 ms and 48 ranges", deref(row.LatencyMs), len(row.Ranges))
	}
}

// deref shows an optional figure in a failure message.
func deref(v *float64) any {
	if v == nil {
		return "none"
	}
	return *v
}
