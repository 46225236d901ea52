package node

import (
	"context"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/data/coord"
)

// threeNodes starts a and b in dc1 and c in dc2, and waits until each sees all three
// normal and up.
func threeNodes(t *testing.T) (a, b, c *Node) {
	t.Helper()
	a = startNode(t, "a", "dc1")
	b = startNode(t, "b", "dc1", a.Addr())
	c = startNode(t, "c", "dc2", a.Addr())
	for _, n := range []*Node{a, b, c} {
		waitUntil(t, n.ID()+" sees three nodes normal", func() bool { return normalNodes(n) == 3 })
	}
	return a, b, c
}

// redirectDetail returns err's Redirect detail, or nil.
func redirectDetail(err error) *kurav1.Redirect {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	for _, d := range st.Details() {
		if r, ok := d.(*kurav1.Redirect); ok {
			return r
		}
	}
	return nil
}

func targetIDs(r *kurav1.Redirect) []string {
	var ids []string
	for _, t := range r.GetTargets() {
		ids = append(ids, t.GetId())
	}
	return ids
}

// TestRedirectTargetsNameTheServingMembers: the members a node that has left the ring
// sends its clients to are the others that serve, those of its own DC first, never
// itself nor a leaving node, each with its client address and DC. apiserver's
// TestRedirectLeft covers the answer that carries them.
func TestRedirectTargetsNameTheServingMembers(t *testing.T) {
	a, b, c := threeNodes(t)
	targets := func() *kurav1.Redirect { return &kurav1.Redirect{Targets: apiBackend{a}.RedirectTargets()} }
	r := targets()
	if ids := targetIDs(r); !slices.Equal(ids, []string{"b", "c"}) {
		t.Errorf("redirect targets %v, want [b c] (a's own DC first, a itself not)", ids)
	}
	for _, tg := range r.GetTargets() {
		want := map[string]*Node{"b": b, "c": c}[tg.GetId()]
		if want != nil && (tg.GetClientAddr() != want.ClientAddr() || tg.GetDc() != want.cfg.DC) {
			t.Errorf("target %s at %s in %s, want %s in %s", tg.GetId(), tg.GetClientAddr(), tg.GetDc(), want.ClientAddr(), want.cfg.DC)
		}
	}

	// A leaving member serves no longer than it takes to hand its ranges over: it is no
	// target.
	b.changer.SetStatus(cluster.StatusLeaving, b.directory.Self().Tokens)
	waitUntil(t, "a sees b leaving", func() bool { n, _ := a.directory.Node("b"); return n.Status == cluster.StatusLeaving })
	if ids := targetIDs(targets()); !slices.Equal(ids, []string{"c"}) {
		t.Errorf("with b leaving: redirect targets %v, want [c]", ids)
	}
	c.changer.SetStatus(cluster.StatusLeaving, c.directory.Self().Tokens)
	waitUntil(t, "a sees c leaving", func() bool { n, _ := a.directory.Node("c"); return n.Status == cluster.StatusLeaving })
	if ids := targetIDs(targets()); len(ids) != 0 {
		t.Errorf("with b and c leaving: redirect targets %v, want none", ids)
	}
}

// TestLeftNodeRedirectsItsClients: through the client API of a node that has left the
// ring, a write is refused at once with the redirect, and a Go client that knows only
// that node (StaticNodes) follows it and succeeds.
func TestLeftNodeRedirectsItsClients(t *testing.T) {
	a, b, c := threeNodes(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, []string{a.ClientAddr()}, client.Options{StaticNodes: true, AttemptTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.CreateKeyspace(ctx, "app", "dc1=1,dc2=1", ""); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*Node{b, c} {
		waitUntil(t, n.ID()+" knows keyspace app", func() bool { _, err := n.Keyspace("app"); return err == nil })
	}
	if _, err := cl.Put(ctx, "app", []byte("before"), []byte("v"), consistency.Quorum); err != nil {
		t.Fatalf("put through a while a member: %v", err)
	}

	// a marks itself left, as a decommission ends, and stays up.
	a.changer.SetStatus(cluster.StatusLeft, a.directory.Self().Tokens)
	for _, n := range []*Node{b, c} {
		waitUntil(t, n.ID()+" sees a left", func() bool { m, _ := n.directory.Node("a"); return m.Status == cluster.StatusLeft })
	}

	conn, err := grpc.NewClient(a.ClientAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = kurav1.NewKVClient(conn).Put(ctx, &kurav1.PutRequest{Keyspace: "app", Key: []byte("raw"), Value: []byte("v"), Consistency: kurav1.Consistency_QUORUM})
	if st := status.Convert(err); st.Code() != codes.Unavailable || !slices.Equal(targetIDs(redirectDetail(err)), []string{"b", "c"}) {
		t.Fatalf("put through a after it left: %v (details %v), want codes.Unavailable with a redirect to [b c]", err, st.Details())
	}
	if msg := status.Convert(err).Message(); msg != (&coord.LeftRingError{Node: "a", Status: cluster.StatusLeft}).Error() {
		t.Errorf("put through a after it left: message %q, want the coordinator's words", msg)
	}
	// The batch calls the Go client makes of requests waiting behind one in flight are
	// refused whole, with the redirect, not item by item: per item, the client handed the
	// refusal to its callers instead of sending the requests elsewhere.
	kv := kurav1.NewKVClient(conn)
	_, err = kv.PutMany(ctx, &kurav1.PutManyRequest{Keyspace: "app", Consistency: kurav1.Consistency_QUORUM,
		Items: []*kurav1.PutManyItem{{Key: []byte("raw"), Value: []byte("v")}, {Key: []byte("raw-2"), Value: []byte("v")}}})
	if st := status.Convert(err); st.Code() != codes.Unavailable || !slices.Equal(targetIDs(redirectDetail(err)), []string{"b", "c"}) {
		t.Errorf("PutMany through a after it left: %v (details %v), want codes.Unavailable with a redirect to [b c]", err, st.Details())
	}
	_, err = kv.GetMany(ctx, &kurav1.GetManyRequest{Keyspace: "app", Consistency: kurav1.Consistency_QUORUM, Keys: [][]byte{[]byte("before"), []byte("raw")}})
	if st := status.Convert(err); st.Code() != codes.Unavailable || !slices.Equal(targetIDs(redirectDetail(err)), []string{"b", "c"}) {
		t.Errorf("GetMany through a after it left: %v (details %v), want codes.Unavailable with a redirect to [b c]", err, st.Details())
	}
	// Refused before anything was written: the coordinator's own words (above), not a
	// replica's timeout, and no replica holds the key.
	for _, n := range []*Node{a, b, c} {
		if _, found, err := n.local.Get(ctx, "app", []byte("raw")); err != nil || found {
			t.Errorf("after the refusal, %s holds the refused key: found %v, err %v", n.ID(), found, err)
		}
	}

	for i, key := range []string{"after-1", "after-2", "after-3"} {
		if _, err := cl.Put(ctx, "app", []byte(key), []byte("v"), consistency.Quorum); err != nil {
			t.Fatalf("put %d through a client that knows only a, after a left: %v", i, err)
		}
		if item, found, err := cl.Get(ctx, "app", []byte(key), consistency.Quorum); err != nil || !found || string(item.Value) != "v" {
			t.Fatalf("get %s through a client that knows only a, after a left: %q, %v, %v", key, item.Value, found, err)
		}
	}
}
