package node

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/base/racedetector"
	"github.com/kuradb/kura/internal/base/waitingtests"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/schema"
)

// TestMain runs clustersAtOnce of the parallel tests at once (waitUntil says which),
// except under the race detector.
func TestMain(m *testing.M) {
	if !racedetector.Enabled {
		waitingtests.AtOnce(clustersAtOnce)
	}
	os.Exit(m.Run())
}

// clustersAtOnce is how many of the parallel tests run at once unless go test is given
// -parallel. Its default, GOMAXPROCS, is 2 on CI's machine, where two at a time kept the
// CPU idle most of the time: with the elastic test's writer paced, the package took 79 s
// and used 22 s of CPU, four at once 52 s (load 5 to 10). Under the race detector the
// clusters compute more than they wait, and four at once on a loaded machine starved
// gossip until a node saw a live peer down (a write at ALL refused right after every
// node had been seen up): there go test's default stays.
const clustersAtOnce = 4

func startNode(t *testing.T, id, dc string, seeds ...string) *Node {
	t.Helper()
	n, err := Start(Config{
		ID: id, DC: dc, Listen: "127.0.0.1:0", ClientAddr: "127.0.0.1:0", Seeds: seeds, InMemory: true,
		GossipInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// normalNodes counts the nodes n sees normal and up.
func normalNodes(n *Node) int {
	count := 0
	for _, other := range n.View().Nodes() {
		if other.Status == cluster.StatusNormal && n.View().State(other.ID) == cluster.StateUp {
			count++
		}
	}
	return count
}

// waitUntil polls cond until it holds, failing the test after 30 s. The tests whose
// clusters spend seconds waiting on gossip, joins and streams call t.Parallel, so a wait
// may share the machine with another test's cluster: the deadline bounds a hang, never a
// speed. Two stay serial: the browser test (Chromium beside another cluster) and
// TestLeftNodeRedirectsItsClients, which asserts that a refusal comes within 2 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// createKeyspace creates ks through n and waits until every node of others knows it.
func createKeyspace(t *testing.T, ks schema.Keyspace, n *Node, others ...*Node) {
	t.Helper()
	if err := n.CreateKeyspace(context.Background(), ks); err != nil {
		t.Fatal(err)
	}
	for _, o := range others {
		waitUntil(t, o.ID()+" knows keyspace "+ks.Name, func() bool { _, err := o.Keyspace(ks.Name); return err == nil })
	}
}

func TestNodesJoinThroughSeedsAndShareKeyspaces(t *testing.T) {
	a := startNode(t, "a", "dc1")
	b := startNode(t, "b", "dc2", a.Addr())
	c := startNode(t, "c", "dc2", a.Addr())
	for _, n := range []*Node{a, b, c} {
		waitUntil(t, n.ID()+" knows all three normal", func() bool { return normalNodes(n) == 3 })
	}
	ctx := context.Background()
	if err := a.CreateKeyspace(ctx, schema.Keyspace{Name: "app", Replication: "dc1=1,dc2=2"}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "c knows the keyspace", func() bool {
		_, err := c.Keyspace("app")
		return err == nil
	})
	if err := a.CreateKeyspace(ctx, schema.Keyspace{Name: "app", Replication: "dc1=1,dc2=2"}); err != nil {
		t.Fatalf("re-creating an identical keyspace: %v", err)
	}
	if err := a.CreateKeyspace(ctx, schema.Keyspace{Name: "app", Replication: "dc1=1"}); !errors.Is(err, schema.ErrInvalidKeyspace) {
		t.Fatalf("re-creating with other replication: err = %v", err)
	}
	err := a.CreateKeyspace(ctx, schema.Keyspace{Name: "typo", Replication: "dc1=1,dc3=1"})
	if !errors.Is(err, schema.ErrInvalidKeyspace) || !strings.Contains(err.Error(), `"dc3"`) {
		t.Fatalf("replication naming an unknown DC: err = %v", err)
	}

	// A node that stops is seen down, and the level arithmetic follows.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a sees b down", func() bool { return !a.View().State("b").Reachable() })
	if _, err := a.Coordinator().Put(ctx, "app", []byte("k"), []byte("v"), 0, consistency.All); err == nil {
		t.Fatal("ALL succeeded with a replica down")
	}
	if _, err := a.Coordinator().Put(ctx, "app", []byte("k"), []byte("v"), 0, consistency.Quorum); err != nil {
		t.Fatalf("QUORUM with one of three replicas down: %v", err)
	}
}

func TestClientAPIErrorsCarryCodes(t *testing.T) {
	a := startNode(t, "a", "dc1")
	ctx := context.Background()
	cl, err := client.Dial(ctx, []string{a.ClientAddr()}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.CreateKeyspace(ctx, "app", "simple=1", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Put(ctx, "app", []byte("k"), []byte("v"), consistency.One); err != nil {
		t.Fatal(err)
	}
	if v, found, err := cl.Get(ctx, "app", []byte("k"), consistency.One); err != nil || !found || string(v.Value) != "v" {
		t.Fatalf("Get = %q, %v, %v", v.Value, found, err)
	}
	tests := []struct {
		name string
		err  error
		code codes.Code
	}{
		{"unknown keyspace", func() error { _, err := cl.Put(ctx, "nope", []byte("k"), nil, consistency.One); return err }(), codes.NotFound},
		{"empty key", func() error { _, err := cl.Put(ctx, "app", nil, nil, consistency.One); return err }(), codes.InvalidArgument},
		{"read at ANY", func() error { _, _, err := cl.Get(ctx, "app", []byte("k"), consistency.Any); return err }(), codes.InvalidArgument},
		{"bad keyspace name", cl.CreateKeyspace(ctx, "no good", "simple=1", ""), codes.InvalidArgument},
		{"TWO with one replica", func() error { _, err := cl.Put(ctx, "app", []byte("k"), nil, consistency.Two); return err }(), codes.Unavailable},
	}
	for _, tt := range tests {
		var e *client.Error
		if !errors.As(tt.err, &e) || e.Code != tt.code {
			t.Errorf("%s: err = %v, want code %v", tt.name, tt.err, tt.code)
		}
	}
}
