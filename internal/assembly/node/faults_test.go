package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/io/clockguard"
)

// startFaultyCluster starts three nodes of dc1 that accept fault injection, with keyspace
// "app" replicated on all three, and returns them once each sees all three normal.
func startFaultyCluster(t *testing.T) []*Node {
	t.Helper()
	var nodes []*Node
	for _, id := range []string{"a", "b", "c"} {
		cfg := Config{
			ID: id, DC: "dc1", Listen: "127.0.0.1:0", ClientAddr: "127.0.0.1:0", InMemory: true, EnableFaults: true,
			GossipInterval: 50 * time.Millisecond, ReplicaTimeout: 2 * time.Second, Logger: slog.New(slog.DiscardHandler),
		}
		if len(nodes) > 0 {
			cfg.Seeds = []string{nodes[0].Addr()}
		}
		n, err := Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		nodes = append(nodes, n)
	}
	waitAllNormal(t, 3, nodes...)
	if err := nodes[0].CreateKeyspace(context.Background(), schema.Keyspace{Name: "app", Replication: "simple=3"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		waitUntil(t, n.ID()+" knows keyspace app", func() bool { _, err := n.Keyspace("app"); return err == nil })
	}
	return nodes
}

// adminOf dials n's admin API.
func adminOf(t *testing.T, n *Node) kurav1.AdminClient {
	t.Helper()
	conn, err := grpc.NewClient(n.ClientAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return kurav1.NewAdminClient(conn)
}

// TestSkewedNodeRefusesToCoordinateAndNothingItStampedWins runs the clock-skew scenario of
// issue 12: node c's clock jumps 30 s ahead. It must refuse to coordinate writes (as
// unavailable, saying why), store no future timestamp, and a write through a correct node
// afterwards must be what every level reads.
func TestSkewedNodeRefusesToCoordinateAndNothingItStampedWins(t *testing.T) {
	t.Parallel()
	nodes := startFaultyCluster(t)
	a, c := nodes[0], nodes[2]
	ctx := context.Background()
	if _, err := c.coord.Put(ctx, "app", []byte("k"), []byte("before"), 0, consistency.All); err != nil {
		t.Fatalf("put through c before the skew: %v", err)
	}
	if _, err := adminOf(t, c).SetFaults(ctx, &kurav1.Faults{ClockOffsetMs: 30_000}); err != nil {
		t.Fatal(err)
	}

	for _, level := range []consistency.Level{consistency.One, consistency.Quorum, consistency.All, consistency.Any} {
		_, err := c.coord.Put(ctx, "app", []byte("k"), []byte("skewed-"+level.String()), 0, level)
		if coord.Classify(err) != coord.ClassUnavailable || !errors.Is(err, clockguard.ErrClockOffset) || !strings.Contains(err.Error(), "ahead of its peers") {
			t.Errorf("put at %v through the skewed node: %v; want unavailable for its clock", level, err)
		}
	}
	if _, err := c.coord.Delete(ctx, "app", []byte("k"), consistency.One); coord.Classify(err) != coord.ClassUnavailable {
		t.Errorf("delete through the skewed node: %v; want unavailable", err)
	}
	// The skewed node still serves as a replica: a correct node's write reaches it. ALL
	// makes c's acknowledgement part of the write, so a read at ONE through c cannot
	// race the third replica's copy.
	if _, err := a.coord.Put(ctx, "app", []byte("k"), []byte("after"), 0, consistency.All); err != nil {
		t.Fatalf("put through a correct node: %v", err)
	}
	for _, level := range []consistency.Level{consistency.One, consistency.Quorum, consistency.All} {
		for _, n := range nodes {
			rec, found, err := n.coord.Get(ctx, "app", []byte("k"), level)
			if err != nil || !found || string(rec.Value) != "after" {
				t.Errorf("get at %v through %s = %q, %v, %v; want the later write", level, n.ID(), rec.Value, found, err)
			}
		}
	}
	limit := hlc.FromTime(time.Now().Add(clockguard.DefaultMaxOffset))
	for _, n := range nodes {
		resp, err := adminOf(t, n).LocalScan(ctx, &kurav1.LocalScanRequest{Keyspace: "app"})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range resp.GetVersions() {
			if hlc.Timestamp(v.GetTimestamp()) > limit {
				t.Errorf("%s stores %s at %s, ahead of the cluster's clock", n.ID(), v.GetKey(), hlc.Timestamp(v.GetTimestamp()))
			}
		}
	}
	if pending, err := c.coord.HintsPending(); err != nil || pending != 0 {
		t.Errorf("the skewed node holds %d hints (%v), want none", pending, err)
	}
	// a samples each peer at most once a second (clockguard.resampleAfter): its view of
	// c catches up within one clock ping after that.
	adminA := adminOf(t, a)
	waitUntil(t, "a measures c's clock about +30000ms off", func() bool {
		st, err := adminA.ClusterStatus(ctx, &kurav1.ClusterStatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range st.GetNodes() {
			if n.GetId() == "c" {
				return n.GetClockMeasured() && n.GetClockOffsetMs() >= 29_000
			}
		}
		return false
	})
	st, err := adminOf(t, c).ClusterStatus(ctx, &kurav1.ClusterStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if clock := st.GetClock(); clock.GetOk() || clock.GetOffsetMs() < 29_000 || !strings.Contains(clock.GetRefusal(), "ahead of its peers") {
		t.Errorf("c's clock status %v, want refusing, about +30000ms", clock)
	}

	if _, err := adminOf(t, c).SetFaults(ctx, &kurav1.Faults{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.coord.Put(ctx, "app", []byte("k"), []byte("healed"), 0, consistency.All); err != nil {
		t.Errorf("put through c once its clock is back: %v", err)
	}
}

// TestPartitionAndHeal cuts node c off through the fault API: the others see it down and
// the levels it would be needed for are unavailable; after the heal, the write it missed
// reaches it by hint.
func TestPartitionAndHeal(t *testing.T) {
	t.Parallel()
	nodes := startFaultyCluster(t)
	a, c := nodes[0], nodes[2]
	ctx := context.Background()
	if _, err := adminOf(t, c).SetFaults(ctx, &kurav1.Faults{Partitioned: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a sees c down", func() bool { return !a.View().State("c").Reachable() })
	waitUntil(t, "c sees a and b down", func() bool {
		return !c.View().State("a").Reachable() && !c.View().State("b").Reachable()
	})
	if _, err := a.coord.Put(ctx, "app", []byte("k"), []byte("v"), 0, consistency.Quorum); err != nil {
		t.Fatalf("put at QUORUM with c cut off: %v", err)
	}
	if _, err := a.coord.Put(ctx, "app", []byte("k2"), []byte("v"), 0, consistency.All); coord.Classify(err) != coord.ClassUnavailable {
		t.Errorf("put at ALL with c cut off: %v, want unavailable", err)
	}
	if _, _, err := c.coord.Get(ctx, "app", []byte("k"), consistency.Quorum); coord.Classify(err) != coord.ClassUnavailable {
		t.Errorf("get at QUORUM on the cut-off side: %v, want unavailable", err)
	}

	if _, err := adminOf(t, c).SetFaults(ctx, &kurav1.Faults{}); err != nil {
		t.Fatal(err)
	}
	waitAllNormal(t, 3, nodes...)
	waitUntil(t, "c receives the write it missed", func() bool {
		rec, found, err := c.local.Get(ctx, "app", []byte("k"))
		return err == nil && found && string(rec.Value) == "v"
	})
}

func TestFaultAPIRefusals(t *testing.T) {
	ctx := context.Background()
	plain := startNode(t, "plain", "dc1")
	if _, err := adminOf(t, plain).SetFaults(ctx, &kurav1.Faults{ClockOffsetMs: 1}); status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "--enable-faults") {
		t.Errorf("SetFaults on a node without --enable-faults: %v, want FailedPrecondition naming the flag", err)
	}
	faulty, err := Start(Config{ID: "faulty", DC: "dc1", Listen: "127.0.0.1:0", ClientAddr: "127.0.0.1:0", InMemory: true, EnableFaults: true,
		GossipInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { faulty.Close() })
	admin := adminOf(t, faulty)
	for _, bad := range []*kurav1.Faults{
		{Partitioned: []string{""}},
		{Links: []*kurav1.LinkFault{{Target: "*", Loss: 1.5}}},
		{Links: []*kurav1.LinkFault{{Target: "b", DelayMs: -1}}},
		{Links: []*kurav1.LinkFault{{Target: "b"}, {Target: "b"}}},
	} {
		if _, err := admin.SetFaults(ctx, bad); status.Code(err) != codes.InvalidArgument {
			t.Errorf("SetFaults(%v) = %v, want InvalidArgument", bad, err)
		}
	}
	want := &kurav1.Faults{Partitioned: []string{"dc:dc2"}, Links: []*kurav1.LinkFault{{Target: "*", Loss: 0.1, DelayMs: 20}}, ClockOffsetMs: -2000}
	if _, err := admin.SetFaults(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := admin.GetFaults(ctx, &kurav1.GetFaultsRequest{})
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("GetFaults = %v, %v; want %v", got, err, want)
	}
}
