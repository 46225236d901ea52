package coord_test

import (
	"context"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/io/topology"
)

// threeDCs is a small 3-DC topology with real (emulated) but short WAN delays, so that
// the tests exercise remote replicas without waiting long.
const threeDCs = `
name: test-three-dc
datacenters:
  - {name: a, latency_ms: 0.05, bandwidth_mbps: 10000, nodes: [{id: a1}, {id: a2}, {id: a3}]}
  - {name: b, latency_ms: 0.05, bandwidth_mbps: 10000, nodes: [{id: b1}, {id: b2}]}
  - {name: c, latency_ms: 0.05, bandwidth_mbps: 10000, nodes: [{id: c1}, {id: c2}]}
links:
  - {between: [a, b], latency_ms: 2, bandwidth_mbps: 1000}
  - {between: [a, c], latency_ms: 3, bandwidth_mbps: 1000}
  - {between: [b, c], latency_ms: 4, bandwidth_mbps: 1000}
`

// testAnswerBytesMax is the test clusters' Limits.AnswerBytesMax: a few of their
// largest values.
const testAnswerBytesMax = 256 << 10

func startCluster(t *testing.T, keyspaces ...schema.Keyspace) *embedded.Cluster {
	t.Helper()
	return startClusterTimeout(t, 2*time.Second, keyspaces...)
}

// startClusterTimeout is startCluster whose replicas have replicaTimeout to answer: a
// test of large writes that is not about timeouts gives them room on a loaded machine.
func startClusterTimeout(t *testing.T, replicaTimeout time.Duration, keyspaces ...schema.Keyspace) *embedded.Cluster {
	t.Helper()
	topo, err := topology.Parse([]byte(threeDCs))
	if err != nil {
		t.Fatal(err)
	}
	c, err := embedded.Start(topo, embedded.Options{
		EmulateWAN: true,
		Node: node.Config{
			GossipInterval: 50 * time.Millisecond,
			ReplicaTimeout: replicaTimeout,
			Limits:         coord.Limits{KeyBytesMax: 1024, ValueBytesMax: 64 << 10, AnswerBytesMax: testAnswerBytesMax},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := testContext(t)
	for _, ks := range keyspaces {
		if err := c.CreateKeyspace(ctx, ks); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds or the deadline passes: the cluster's own loops
// (gossip, hint replay) run on the wall clock.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var spread = schema.Keyspace{Name: "spread", Replication: "a=2,b=1,c=1"}

// replicasOf returns the ids of key's replicas in keyspace ks, as the coordinator places them.
func replicasOf(t *testing.T, c *embedded.Cluster, ks schema.Keyspace, key []byte) []string {
	t.Helper()
	compiled, err := ks.Compile()
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Nodes[0].Ring()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range compiled.Strategy().Replicas(r, compiled.Partition().Token(key)) {
		ids = append(ids, m.ID)
	}
	return ids
}

// coordinatorOutside returns a running node that is not one of ids.
func coordinatorOutside(c *embedded.Cluster, ids []string) *node.Node {
	for _, n := range c.Nodes {
		inside := false
		for _, id := range ids {
			inside = inside || n.ID() == id
		}
		if !inside {
			return n
		}
	}
	return nil
}
