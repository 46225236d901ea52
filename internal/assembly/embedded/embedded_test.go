package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/io/topology"
)

func TestStartStopRestart(t *testing.T) {
	topo, err := topology.Example("lan-3")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(topo, Options{ClientAPI: true, Node: node.Config{
		GossipInterval: 50 * time.Millisecond,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != len(topo.Nodes()) {
		t.Fatalf("%d nodes, want %d", len(c.Nodes), len(topo.Nodes()))
	}
	victim := c.Nodes[1]
	addr := victim.Addr()
	if err := c.Stop(victim.ID()); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatalf("the others never saw %s down: %v", victim.ID(), err)
	}
	if err := c.Restart(victim.ID()); err != nil {
		t.Fatal(err)
	}
	if got := c.Node(victim.ID()).Addr(); got != addr {
		t.Fatalf("restarted on %s, want its old address %s", got, addr)
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatalf("the restarted node never rejoined: %v", err)
	}
	if err := c.Restart(victim.ID()); err == nil {
		t.Fatal("restarting a running node succeeded")
	}
}

func TestPowerTier(t *testing.T) {
	topo, err := topology.Example("lan-3")
	if err != nil {
		t.Fatal(err)
	}
	// The option sees each node's position and spec: here the last node may sleep.
	c, err := Start(topo, Options{
		Node:      node.Config{GossipInterval: 50 * time.Millisecond},
		PowerTier: func(index int, _ topology.NodeInDC) int { return index / 2 },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, n := range c.Nodes {
		if got, want := n.Self().Tier, i/2; got != want {
			t.Errorf("%s is of tier %d, want %d", n.ID(), got, want)
		}
	}
}

// A base port whose ports would pass 65535 is refused before any node starts.
func TestBasePortRefusedPastThePortRange(t *testing.T) {
	topo, err := topology.Example("lan-3")
	if err != nil {
		t.Fatal(err)
	}
	for _, base := range []int{-5, 65300} {
		if c, err := Start(topo, Options{BasePort: base}); err == nil {
			c.Close()
			t.Errorf("Start with base port %d succeeded, want an error", base)
		}
	}
}
