package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/embedded"
	"github.com/kuradb/kura/node"
	"github.com/kuradb/kura/routing/chord"
	"github.com/kuradb/kura/schema"
	"github.com/kuradb/kura/topology"
)

// With DHT routing every node joins one ring, lookups find the true owner, and the store
// reads and writes through it.
func TestDHTRoutingServesTheStore(t *testing.T) {
	for _, protocol := range []string{"chord", "mlchord"} {
		t.Run(protocol, func(t *testing.T) {
			topo, err := topology.Example("three-dc")
			if err != nil {
				t.Fatal(err)
			}
			c, err := embedded.Start(topo, embedded.Options{Node: node.Config{
				Routing: protocol, HeartbeatInterval: 50 * time.Millisecond,
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := c.WaitConverged(ctx); err != nil {
				t.Fatal(err)
			}
			var peers []chord.Peer
			for _, n := range c.Nodes {
				peers = append(peers, chord.Peer{ID: chord.NodeID(n.ID()), Name: n.ID(), DC: n.Self().DC})
			}
			layout, err := chord.NewLayout(peers)
			if err != nil {
				t.Fatal(err)
			}
			// Wait until every node's lookups agree with the true owners: joined and stabilised.
			keys := make([][]byte, 40)
			for i := range keys {
				keys[i] = []byte(fmt.Sprintf("key-%d", i))
			}
			deadline := time.Now().Add(25 * time.Second)
			for {
				wrong := 0
				for _, n := range c.Nodes {
					for _, k := range keys {
						route, err := n.Router().Lookup(ctx, k)
						if err != nil || route.Owner != layout.Owner(chord.KeyID(k)).Name {
							wrong++
						}
					}
				}
				if wrong == 0 {
					break
				}
				if time.Now().After(deadline) {
					for _, n := range c.Nodes[:3] {
						route, err := n.Router().Lookup(ctx, keys[0])
						t.Logf("%s joined=%v route=%+v err=%v want %s", n.ID(), n.Router().Joined(), route, err, layout.Owner(chord.KeyID(keys[0])).Name)
					}
					t.Fatalf("%d lookups still find the wrong owner", wrong)
				}
				time.Sleep(200 * time.Millisecond)
			}
			if err := c.CreateKeyspace(ctx, schema.Keyspace{Name: "app", Replication: "simple=3"}); err != nil {
				t.Fatal(err)
			}
			if err := c.WaitConverged(ctx); err != nil {
				t.Fatal(err)
			}
			for i, k := range keys {
				via := c.Nodes[i%len(c.Nodes)].Coordinator()
				if _, err := via.Put(ctx, "app", k, k, consistency.Quorum); err != nil {
					t.Fatalf("put %s: %v", k, err)
				}
				other := c.Nodes[(i+4)%len(c.Nodes)].Coordinator()
				rec, found, err := other.Get(ctx, "app", k, consistency.Quorum)
				if err != nil || !found || string(rec.Value) != string(k) {
					t.Fatalf("get %s = %q, %v, %v", k, rec.Value, found, err)
				}
			}
			got, err := c.Nodes[0].Coordinator().Scan(ctx, "app", nil, nil, 0, consistency.One)
			if err != nil || len(got) != len(keys) {
				t.Fatalf("scan found %d keys (err %v), want %d", len(got), err, len(keys))
			}
		})
	}
}
