package coord_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/io/topology"
)

// benchCluster starts nodes in-memory nodes in one DC, with no WAN emulation and slow
// gossip (so that background work disturbs the measurement little), and a keyspace
// holding rf copies of every key.
func benchCluster(b *testing.B, nodes, rf int) (*embedded.Cluster, schema.Keyspace) {
	b.Helper()
	spec := "name: bench\ndatacenters:\n  - {name: a, latency_ms: 0.05, bandwidth_mbps: 10000, nodes: ["
	for i := range nodes {
		if i > 0 {
			spec += ", "
		}
		spec += fmt.Sprintf("{id: a%d}", i+1)
	}
	spec += "]}\n"
	topo, err := topology.Parse([]byte(spec))
	if err != nil {
		b.Fatal(err)
	}
	c, err := embedded.Start(topo, embedded.Options{Node: node.Config{GossipInterval: time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	ks := schema.Keyspace{Name: "bench", Replication: fmt.Sprintf("a=%d", rf)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.CreateKeyspace(ctx, ks); err != nil {
		b.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		b.Fatal(err)
	}
	return c, ks
}

// benchKeys is how many distinct keys the benchmarks read and write: enough that the
// keys are not all one replica's, few enough to stay in the row cache.
const benchKeys = 1024

// BenchmarkCoordinatorLocal measures the coordinator's point read and write at ONE
// where this node is a replica: on one node with one copy (everything local), and on
// three nodes with three copies (the read local, the write to this node and two others).
// Allocations per operation are the figure to watch (-benchmem); they include storage's.
func BenchmarkCoordinatorLocal(b *testing.B) {
	for _, shape := range []struct{ nodes, rf int }{{1, 1}, {3, 3}} {
		c, ks := benchCluster(b, shape.nodes, shape.rf)
		co := c.Nodes[0].Coordinator()
		ctx := context.Background()
		keys := make([][]byte, benchKeys)
		value := make([]byte, 256)
		for i := range keys {
			keys[i] = fmt.Appendf(nil, "key-%d", i)
			if _, err := co.Put(ctx, ks.Name, keys[i], value, 0, consistency.One); err != nil {
				b.Fatal(err)
			}
		}
		name := fmt.Sprintf("nodes=%d,rf=%d", shape.nodes, shape.rf)
		b.Run(name+"/Get", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, found, err := co.Get(ctx, ks.Name, keys[i%benchKeys], consistency.One); err != nil || !found {
					b.Fatal(found, err)
				}
				i++
			}
		})
		b.Run(name+"/Put", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := co.Put(ctx, ks.Name, keys[i%benchKeys], value, 0, consistency.One); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
