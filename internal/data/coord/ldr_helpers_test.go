package coord_test

import (
	"fmt"
	"github.com/kuradb/kura/internal/data/placement"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/io/topology"
)

// ldrTopology has a larger DC a and a smaller b, with a short emulated WAN between them.
const ldrTopology = `
name: test-ldr
datacenters:
  - {name: a, latency_ms: 0.05, bandwidth_mbps: 10000, nodes: [{id: a1}, {id: a2}, {id: a3}, {id: a4}, {id: a5}]}
  - {name: b, latency_ms: 0.05, bandwidth_mbps: 10000, nodes: [{id: b1}, {id: b2}, {id: b3}]}
links:
  - {between: [a, b], latency_ms: 1, bandwidth_mbps: 1000}
`

// coded is the erasure-coded keyspace of the LDR tests: 5 chunks, any 3 rebuild a value.
var coded = schema.Keyspace{Name: "coded", Erasure: schema.Erasure{M: 5, K: 3}}

// startLDRCluster starts the LDR test cluster with the coded keyspace; dataDir "" keeps
// data in memory (lost when a node stops).
func startLDRCluster(t *testing.T, dataDir string) *embedded.Cluster {
	t.Helper()
	topo, err := topology.Parse([]byte(ldrTopology))
	if err != nil {
		t.Fatal(err)
	}
	c, err := embedded.Start(topo, embedded.Options{
		DataDir:    dataDir,
		EmulateWAN: true,
		Node: node.Config{
			GossipInterval: 50 * time.Millisecond,
			ReplicaTimeout: 2 * time.Second,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := testContext(t)
	if err := c.CreateKeyspace(ctx, coded); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// chunkOwners returns the nodes holding each chunk of key in the coded keyspace.
func chunkOwners(t *testing.T, c *embedded.Cluster, key []byte) []placement.Member {
	t.Helper()
	owners, err := c.Nodes[0].Coordinator().ChunkOwners(testContext(t), coded.Name, key)
	if err != nil {
		t.Fatal(err)
	}
	return owners
}

// chunkPlacement summarises where a key's chunks are.
type chunkPlacement struct {
	owners  []placement.Member
	perDC   map[string]int
	perNode map[string]int
}

func placementOf(t *testing.T, c *embedded.Cluster, key []byte) chunkPlacement {
	p := chunkPlacement{owners: chunkOwners(t, c, key), perDC: map[string]int{}, perNode: map[string]int{}}
	for _, o := range p.owners {
		p.perDC[o.DC]++
		p.perNode[o.ID]++
	}
	return p
}

// findKey returns the first key "prefix-N" whose chunk chunkPlacement satisfies want; keys
// hash uniformly, so a few hundred tries find any chunkPlacement these tests ask for.
func findKey(t *testing.T, c *embedded.Cluster, prefix string, want func(chunkPlacement) bool) []byte {
	t.Helper()
	for i := 0; i < 5000; i++ {
		key := []byte(fmt.Sprintf("%s-%d", prefix, i))
		if want(placementOf(t, c, key)) {
			return key
		}
	}
	t.Fatalf("no key with the wanted chunk chunkPlacement among 5000")
	return nil
}

// chunkReadTraffic returns the chunk_read requests dc sent to other DCs so far, and the
// bytes of chunk_read frames (requests and answers) that crossed between dc and the others.
func chunkReadTraffic(c *embedded.Cluster, dc string) (requests, crossedBytes uint64) {
	for flow, counter := range c.Stats.Snapshot() {
		if flow.Kind.String() != "chunk_read" || (flow.FromDC == dc) == (flow.ToDC == dc) {
			continue
		}
		if flow.FromDC == dc {
			requests += counter.Messages
		}
		crossedBytes += counter.Bytes
	}
	return requests, crossedBytes
}

// nodeIn returns a running node of dc that holds no chunk in p, or nil.
func nodeIn(c *embedded.Cluster, dc string, p chunkPlacement, not ...string) *node.Node {
	for _, n := range c.Nodes {
		excluded := p.perNode[n.ID()] > 0 || n.Self().DC != dc
		for _, id := range not {
			excluded = excluded || id == n.ID()
		}
		if !excluded {
			return n
		}
	}
	return nil
}

// stopAndWait stops nodes and waits until observer sees them down.
func stopAndWait(t *testing.T, c *embedded.Cluster, observer *node.Node, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if err := c.Stop(id); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		eventually(t, id+" is seen down", func() bool { return !observer.View().State(id).Reachable() })
	}
}

// coordOf is a short hand for a node's coordinator.
func coordOf(c *embedded.Cluster, id string) *coord.Coordinator { return c.Node(id).Coordinator() }
