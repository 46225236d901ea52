package client

import (
	"context"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/embedded"
	"github.com/kuradb/kura/node"
	"github.com/kuradb/kura/topology"
)

func TestRoutesToLocalReplicaAndFailsOver(t *testing.T) {
	topo, err := topology.Example("two-dc-6")
	if err != nil {
		t.Fatal(err)
	}
	c, err := embedded.Start(topo, embedded.Options{ClientAPI: true, Node: node.Config{
		GossipInterval: 50 * time.Millisecond,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	cl, err := Dial(ctx, []string{c.Nodes[0].ClientAddr()}, Options{LocalDC: "dc2"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.CreateKeyspace(ctx, "app", "dc1=1,dc2=1", ""); err != nil {
		t.Fatal(err)
	}

	key := []byte("routed")
	ks := cl.keyspaces["app"]
	var localReplica string
	for _, m := range ks.Strategy().Replicas(cl.ring, ks.Partition().Token(key)) {
		if m.DC == "dc2" {
			localReplica = m.ID
		}
	}
	route := cl.route("app", key)
	if got := c.Node(localReplica).ClientAddr(); route[0] != got {
		t.Fatalf("first choice %s, want the dc2 replica %s at %s", route[0], localReplica, got)
	}
	// ALL, so that the dc1 replica holds the value too before the dc2 one dies: at ONE the
	// write to dc1 could still be in flight when the Get below reads there.
	if _, err := cl.Put(ctx, "app", key, []byte("v"), consistency.All); err != nil {
		t.Fatal(err)
	}

	// The preferred node dies: the client moves on to the next node.
	if err := c.Stop(localReplica); err != nil {
		t.Fatal(err)
	}
	v, found, err := cl.Get(ctx, "app", key, consistency.One)
	if err != nil || !found || string(v) != "v" {
		t.Fatalf("Get after the preferred node died = %q, %v, %v", v, found, err)
	}
}
