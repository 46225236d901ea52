package node

import (
	"context"
	"testing"
	"time"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/core/cluster"
)

// TestClusterStatusReportsNoUptimeForDepartedOrDownNodes: gossip keeps a node's
// started_at after its process stopped, or after it left the ring, and ClusterStatus
// reported it, so kura status counted the uptime of a decommissioned node for ever
// (issue 43, item 8). A node that left, was removed or is down has no start time; the
// members that are up, and the answering node, keep theirs.
func TestClusterStatusReportsNoUptimeForDepartedOrDownNodes(t *testing.T) {
	t.Parallel()
	a, b, c := threeNodesNoKeyspace(t)
	admin := adminOf(t, a)
	ctx := context.Background()
	startedAt := func() map[string]*kurav1.NodeStatus {
		t.Helper()
		st, err := admin.ClusterStatus(ctx, &kurav1.ClusterStatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]*kurav1.NodeStatus{}
		for _, n := range st.GetNodes() {
			byID[n.GetId()] = n
		}
		return byID
	}
	// started_at travels with the first gossip of each node, before it is normal.
	for id, n := range startedAt() {
		if n.GetStartedAtUnixMs() <= 0 {
			t.Errorf("%s is %s and up, with no start time", id, n.GetStatus())
		}
	}

	if _, err := b.Decommission(ctx, false); err != nil {
		t.Fatal(err)
	}
	// b's process still runs and gossips: only its status says it is no member.
	waitUntil(t, "a sees b left", func() bool { n, ok := a.View().Node("b"); return ok && n.Status == cluster.StatusLeft })
	c.Close()
	waitUntil(t, "a sees c down", func() bool { return a.View().State("c") == cluster.StateDown })
	nodes := startedAt()
	for id, want := range map[string]bool{"a": true, "b": false, "c": false} {
		n := nodes[id]
		if got := n.GetStartedAtUnixMs() > 0; got != want {
			t.Errorf("%s (%s, %s) reports a start time %v, want one: %v", id, n.GetStatus(), n.GetState(), time.UnixMilli(n.GetStartedAtUnixMs()), want)
		}
	}
}

// TestClockCountsOnlyMembers: the clock guard kept a sample of every peer it ever
// measured, so kura status's clock line ("from its N measured peers") counted a
// decommissioned node for ever, which also stayed in the median and the majority the
// guard checks. Once a node left, its clock counts no more, though its process still
// runs and gossips.
func TestClockCountsOnlyMembers(t *testing.T) {
	t.Parallel()
	a, b, _ := threeNodesNoKeyspace(t)
	admin := adminOf(t, a)
	ctx := context.Background()
	status := func() (peers int32, measured map[string]bool) {
		t.Helper()
		st, err := admin.ClusterStatus(ctx, &kurav1.ClusterStatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		measured = map[string]bool{}
		for _, n := range st.GetNodes() {
			measured[n.GetId()] = n.GetClockMeasured()
		}
		return st.GetClock().GetPeers(), measured
	}
	waitUntil(t, "a measured b's and c's clocks", func() bool { peers, _ := status(); return peers == 2 })

	if _, err := b.Decommission(ctx, false); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a sees b left", func() bool { n, ok := a.View().Node("b"); return ok && n.Status == cluster.StatusLeft })
	waitUntil(t, "a's clock counts c alone", func() bool {
		peers, measured := status()
		return peers == 1 && measured["c"] && !measured["b"]
	})
}

// threeNodesNoKeyspace starts nodes a, b and c in dc1 with no default keyspace, so that
// decommissioning one leaves no keyspace short of replicas (each=3 over the two left
// would be refused): these tests are about what is reported of a node that left.
func threeNodesNoKeyspace(t *testing.T) (a, b, c *Node) {
	t.Helper()
	cfg := Config{ClientAddr: "127.0.0.1:0", DefaultReplication: NoDefaultKeyspace, RingDelay: time.Second}
	a = mustStartNodeWith(t, "a", cfg)
	b = mustStartNodeWith(t, "b", cfg, a.Addr())
	c = mustStartNodeWith(t, "c", cfg, a.Addr())
	waitAllNormal(t, 3, a, b, c)
	return a, b, c
}
