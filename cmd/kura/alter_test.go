package main

import (
	"strings"
	"testing"

	"github.com/kuradb/kura/consistency"
)

// TestKeyspaceAlterAcrossDCs: on real kura server processes, n1 and n2 in dc1 and n3 in
// dc2, app is raised from one copy in dc1 to dc1=2,dc2=1. The command prints each step
// and exits 0; afterwards every node holds every one of the 300 keys written before (two
// dc1 replicas on two dc1 nodes, one dc2 replica on dc2's only node), counted by the
// command itself before any read could repair a copy, and all 300 read at ALL through
// the new DC.
func TestKeyspaceAlterAcrossDCs(t *testing.T) {
	t.Parallel()
	c := newLifecycleCluster(t)
	n1, n2, n3 := c.add("n1", "dc1"), c.add("n2", "dc1"), c.add("n3", "dc2")
	c.startAll(n1, n2, n3)
	c.createKeyspace(n1, "dc1=1")
	keys := putKeys(t, mustDialPinned(t, n1), "n1", "k", 300, consistency.All)

	code, out, errOut := kura("keyspace", "alter", "app", "--replication", "dc1=2,dc2=1", "--addr", n1.client)
	if code != 0 {
		t.Fatalf("kura keyspace alter = exit %d, %s %s", code, out, errOut)
	}
	for _, want := range []string{
		"replication dc1=1 to dc1=2,dc2=1: 300 rows on 3 nodes",
		"writes also go to the replicas under replication dc1=2,dc2=1",
		"copied 600 records to their new replicas", // each of 300 to the two new replicas,
		"switched: reads use replication dc1=2,dc2=1",
		"settled: writes go to the new replicas only",
		"dropped 0 records the nodes no longer hold",
		"done",
		"rows per node after:  min 300, mean 300, max 300, max/mean 1.00",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kura keyspace alter printed %q, want it to say %q", out, want)
		}
	}
	t.Log(out)
	readKeys(t, mustDialPinned(t, n3), "n3", keys, consistency.All)
	if got := kuraOK(t, "keyspace", "describe", "app", "--addr", n3.client); !strings.Contains(got, "dc1=2,dc2=1") || strings.Contains(got, "altering") {
		t.Errorf("kura keyspace describe app through n3 = %q, want replication dc1=2,dc2=1, not altering", got)
	}
}
