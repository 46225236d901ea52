package node_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/routing/chord"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/io/topology"
)

// With DHT routing every node joins one ring, lookups find the true owner and its true
// successors (where the store puts the replicas), and the store reads, writes and scans
// through it. The nodes start together, so they all join through the node that founds
// the ring, at once. Each protocol has a cluster of its own: the two run in parallel.
func TestDHTRoutingServesTheStore(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{"chord", "mlchord"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			topo, err := topology.Example("three-dc")
			if err != nil {
				t.Fatal(err)
			}
			c, err := embedded.Start(topo, embedded.Options{Node: node.Config{
				Routing: protocol, GossipInterval: 50 * time.Millisecond,
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var peers []chord.Peer
			for _, n := range c.Nodes {
				peers = append(peers, chord.Peer{ID: chord.NodeID(n.ID()), Name: n.ID(), DC: n.Self().DC})
			}
			layout, err := chord.NewLayout(peers)
			if err != nil {
				t.Fatal(err)
			}
			keys := keysOwnedByAll(layout, 40)
			// The ring is founded after 2 s; joining and stabilising take well under a
			// second more on loopback, alone. The deadline bounds a hang, not a speed:
			// under the race detector, beside other clusters on a loaded machine,
			// stabilising took more than 10 s.
			deadline := time.Now().Add(time.Minute)
			for {
				wrong := wrongReplicas(ctx, c, layout, keys, 3)
				if len(wrong) == 0 {
					break
				}
				if time.Now().After(deadline) {
					for _, n := range c.Nodes {
						pred, succs := n.Router().Neighbors()
						t.Logf("%s: joined %v, predecessor %q, successors %v", n.ID(), n.Router().Joined(), pred, succs)
					}
					t.Fatalf("%d lookups still find wrong replicas, e.g. %s", len(wrong), wrong[0])
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err := c.CreateKeyspace(ctx, schema.Keyspace{Name: "app", Replication: "simple=3"}); err != nil {
				t.Fatal(err)
			}
			if err := c.WaitConverged(ctx); err != nil {
				t.Fatal(err)
			}
			for i, k := range keys {
				via := c.Nodes[i%len(c.Nodes)].Coordinator()
				if _, err := via.Put(ctx, "app", k, k, 0, consistency.Quorum); err != nil {
					t.Fatalf("put %s: %v", k, err)
				}
				other := c.Nodes[(i+4)%len(c.Nodes)].Coordinator()
				rec, found, err := other.Get(ctx, "app", k, consistency.Quorum)
				if err != nil || !found || string(rec.Value) != string(k) {
					t.Fatalf("get %s = %q, %v, %v", k, rec.Value, found, err)
				}
			}
			// A scan reads every range from the replicas the directory's ring names, which
			// finds every key only because the DHT put each on those nodes.
			got, err := c.Nodes[0].Coordinator().Scan(ctx, "app", nil, nil, 0, consistency.All)
			if err != nil || len(got) != len(keys) {
				t.Fatalf("scan found %d keys (err %v), want %d", len(got), err, len(keys))
			}
		})
	}
}

// keysOwnedByAll returns at least n keys, with at least one owned by every node.
func keysOwnedByAll(layout *chord.Layout, n int) [][]byte {
	owners := map[string]bool{}
	var keys [][]byte
	for i := 0; len(keys) < n || len(owners) < len(layout.Peers()); i++ {
		k := fmt.Appendf(nil, "key-%d", i)
		keys = append(keys, k)
		owners[layout.Owner(chord.KeyID(k)).Name] = true
	}
	return keys
}

// wrongReplicas looks every key up from every node and describes each lookup whose owner
// and next replicas-1 successors are not the true ones.
func wrongReplicas(ctx context.Context, c *embedded.Cluster, layout *chord.Layout, keys [][]byte, replicas int) []string {
	var wrong []string
	for _, n := range c.Nodes {
		for _, k := range keys {
			var want []string
			for id := chord.KeyID(k); len(want) < replicas; {
				owner := layout.Owner(id)
				want = append(want, owner.Name)
				id = owner.ID + 1
			}
			route, err := n.Router().Lookup(ctx, ring.Token(chord.KeyID(k)))
			got := append([]string{route.Owner}, route.Successors...)
			if err != nil || len(got) < replicas || !slices.Equal(got[:replicas], want) {
				wrong = append(wrong, fmt.Sprintf("%s from %s: %v (err %v), want %v", k, n.ID(), got, err, want))
			}
		}
	}
	return wrong
}
