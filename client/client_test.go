package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/power"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/io/certs/certstest"
	"github.com/kuradb/kura/internal/io/topology"
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
	// A scan answers every key with its value and the timestamp its write was given
	// (the answer is decoded by scanCodec).
	written := map[string]hlc.Timestamp{}
	for _, k := range []string{"s1", "s2", "s3"} {
		ts, err := cl.Put(ctx, "app", []byte(k), []byte("v-"+k), consistency.All)
		if err != nil {
			t.Fatal(err)
		}
		written[k] = ts
	}
	items, err := cl.Scan(ctx, "app", []byte("s"), []byte("t"), 10, consistency.One)
	if err != nil || len(items) != len(written) {
		t.Fatalf("Scan = %v, %v; want the %d keys written", items, err, len(written))
	}
	for _, it := range items {
		if ts, ok := written[string(it.Key)]; !ok || string(it.Value) != "v-"+string(it.Key) || it.Timestamp != ts {
			t.Errorf("Scan answered %q=%q at %d; wrote it at %d", it.Key, it.Value, it.Timestamp, ts)
		}
	}

	// The preferred node dies: the client moves on to the next node.
	if err := c.Stop(localReplica); err != nil {
		t.Fatal(err)
	}
	v, found, err := cl.Get(ctx, "app", key, consistency.One)
	if err != nil || !found || string(v.Value) != "v" {
		t.Fatalf("Get after the preferred node died = %q, %v, %v", v.Value, found, err)
	}
}

// TestRouteSpreadsOverEqualNodes: a key's local replicas share its requests, whatever
// the partitioner: a key always starts at one of them, different keys at each; remote
// replicas come after them, a node that failed lately last; requests without a key
// start at each local node in turn, and so do scans of a hash-partitioned keyspace,
// whatever their start key.
func TestRouteSpreadsOverEqualNodes(t *testing.T) {
	nodes := []*kurav1.NodeStatus{nodeStatus("a", "dc1", "a:1", "up"), nodeStatus("b", "dc1", "b:1", "up"), nodeStatus("c", "dc2", "c:1", "up")}
	var members []ring.Member
	for _, n := range nodes {
		members = append(members, ring.Member{ID: n.Id, DC: n.Dc, Tokens: cluster.Node{ID: n.Id}.RingTokens(ring.DefaultVnodes)})
	}
	r, err := ring.New(members)
	if err != nil {
		t.Fatal(err)
	}
	for _, partitioner := range []string{"hash", "grouped", "ordered"} {
		t.Run(partitioner, func(t *testing.T) {
			ks, err := schema.Keyspace{Name: "app", Replication: "dc1=2,dc2=1", Partitioner: partitioner}.Compile()
			if err != nil {
				t.Fatal(err)
			}
			c := &Client{opts: Options{LocalDC: "dc1"}.withDefaults(), nodes: nodes, ring: r,
				keyspaces: map[string]schema.Keyspace{"app": ks}, bad: map[string]time.Time{}, asleep: map[string]bool{}}
			firsts := map[string]int{}
			for i := range 100 {
				key := []byte(fmt.Sprintf("k%d", i))
				route := c.route("app", key)
				if again := c.route("app", key); !slices.Equal(route, again) {
					t.Fatalf("key %s routed to %v, then %v", key, route, again)
				}
				if !slices.Contains(route[:2], "a:1") || !slices.Contains(route[:2], "b:1") || route[2] != "c:1" {
					t.Fatalf("route of %s = %v, want a and b, then c", key, route)
				}
				firsts[route[0]]++
			}
			if firsts["a:1"] < 25 || firsts["b:1"] < 25 {
				t.Errorf("keys starting at each local replica: %v, want both to share them", firsts)
			}
			if first, second := c.route("", nil)[0], c.route("", nil)[0]; first == second {
				t.Errorf("two requests without a key both start at %s, want each local node in turn", first)
			}
			start := []byte("k0")
			scanFirst := c.route("app", c.scanRouteKey("app", start))[0]
			scanSecond := c.route("app", c.scanRouteKey("app", start))[0]
			if ordered := partitioner == "ordered"; (scanFirst == scanSecond) != ordered {
				t.Errorf("two scans from %s start at %s, then %s; want the same node only when the keyspace is ordered", start, scanFirst, scanSecond)
			}
			c.bad["a:1"] = time.Now()
			if route := c.route("app", []byte("k0")); !slices.Equal(route[:3], []string{"b:1", "c:1", "a:1"}) {
				t.Errorf("route with a failed lately = %v, want b, c, then a", route)
			}
		})
	}
}

// TestTLSAndToken: a client with the cluster's CA and the token works with a node that
// serves TLS and requires a token; one lacking either is turned away, saying why.
func TestTLSAndToken(t *testing.T) {
	ca := certstest.NewCA(t)
	identity := certstest.Identity(t, ca, "a", "127.0.0.1")
	n, err := node.Start(node.Config{ID: "a", DC: "dc1", Listen: "127.0.0.1:0", ClientAddr: "127.0.0.1:0", InMemory: true,
		TLS: identity, AuthToken: "s3cret", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	trusting := &tls.Config{RootCAs: identity.CA}
	tests := []struct {
		name string
		opts Options
		want string // "" when Dial must succeed
	}{
		{"TLS and token", Options{TLS: trusting, Token: "s3cret"}, ""},
		{"no TLS", Options{Token: "s3cret"}, "serves TLS: give the client its CA"},
		{"TLS without the CA", Options{TLS: &tls.Config{}, Token: "s3cret"}, "certificate signed by unknown authority"},
		{"no token", Options{TLS: trusting}, "this node requires a token"},
		{"wrong token", Options{TLS: trusting, Token: "guess"}, "the authorization token is wrong"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cl, err := Dial(ctx, []string{n.ClientAddr()}, tt.opts)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Dial: err = %v, want it to say %q", err, tt.want)
				}
				return
			}
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
				t.Fatalf("Get = %q, %t, %v", v.Value, found, err)
			}
		})
	}
}

// fakeNode is a gRPC server standing for a kura node: it answers ClusterStatus with the
// view the test gives it, ListKeyspaces with none, Get with its own id as the value,
// and CompareAndSet as applied.
type fakeNode struct {
	kurav1.UnimplementedKVServer
	kurav1.UnimplementedAdminServer
	id   string
	addr string
	view func() []*kurav1.NodeStatus
	// statusCalls receives a value at each ClusterStatus call.
	statusCalls chan struct{}
}

// startFake serves a fake node on l (a fresh loopback port when nil).
func startFake(t *testing.T, id string, l net.Listener) *fakeNode {
	t.Helper()
	if l == nil {
		var err error
		if l, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	f := &fakeNode{id: id, addr: l.Addr().String(), statusCalls: make(chan struct{}, 100)}
	serveFake(t, l, f, f)
	return f
}

// serveFake serves kv and admin on l until the test ends.
func serveFake(t *testing.T, l net.Listener, kv kurav1.KVServer, admin kurav1.AdminServer) {
	s := grpc.NewServer()
	kurav1.RegisterKVServer(s, kv)
	kurav1.RegisterAdminServer(s, admin)
	go s.Serve(l)
	t.Cleanup(s.Stop)
}

func (f *fakeNode) ClusterStatus(context.Context, *kurav1.ClusterStatusRequest) (*kurav1.ClusterStatusResponse, error) {
	f.statusCalls <- struct{}{}
	return &kurav1.ClusterStatusResponse{Self: f.id, Nodes: f.view()}, nil
}

func (f *fakeNode) ListKeyspaces(context.Context, *kurav1.ListKeyspacesRequest) (*kurav1.ListKeyspacesResponse, error) {
	return &kurav1.ListKeyspacesResponse{}, nil
}

func (f *fakeNode) Get(context.Context, *kurav1.GetRequest) (*kurav1.GetResponse, error) {
	return &kurav1.GetResponse{Found: true, Value: []byte(f.id)}, nil
}

func (f *fakeNode) CompareAndSet(context.Context, *kurav1.CompareAndSetRequest) (*kurav1.CompareAndSetResponse, error) {
	return &kurav1.CompareAndSetResponse{Applied: true}, nil
}

// startStandIn serves a sleeping node a's stand-in, as a node serves it: every call is
// answered UNAVAILABLE with a redirect to targets. It returns the address and the number
// of calls answered so far.
func startStandIn(t *testing.T, targets ...*kurav1.RedirectTarget) (string, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	calls := new(atomic.Int32)
	st, err := status.New(codes.Unavailable, "node a is asleep").WithDetails(&kurav1.Redirect{NodeId: "a", Reason: "asleep", Targets: targets})
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.UnknownServiceHandler(func(any, grpc.ServerStream) error {
		calls.Add(1)
		return st.Err()
	}))
	go s.Serve(l)
	t.Cleanup(s.Stop)
	return l.Addr().String(), calls
}

func nodeStatus(id, dc, addr, state string) *kurav1.NodeStatus {
	return &kurav1.NodeStatus{Id: id, Dc: dc, ClientAddr: addr, Alive: true, State: state}
}

// sleepingCluster is a cluster whose node a sleeps: b (dc1) and c (dc2) are fake nodes,
// and a's stand-in redirects to both, c first. b's view lists a at its stand-in's
// address, up until the stand-in answers a call and asleep from then on when
// learnsAsleep, up for good otherwise.
func sleepingCluster(t *testing.T, learnsAsleep bool) (b, c *fakeNode, standIn string, standInCalls *atomic.Int32) {
	b, c = startFake(t, "b", nil), startFake(t, "c", nil)
	standIn, standInCalls = startStandIn(t,
		&kurav1.RedirectTarget{Id: "c", Dc: "dc2", ClientAddr: c.addr},
		&kurav1.RedirectTarget{Id: "b", Dc: "dc1", ClientAddr: b.addr})
	b.view = func() []*kurav1.NodeStatus {
		state := "up"
		if learnsAsleep && standInCalls.Load() > 0 {
			state = "asleep"
		}
		return []*kurav1.NodeStatus{nodeStatus("a", "dc1", standIn, state), nodeStatus("b", "dc1", b.addr, "up"), nodeStatus("c", "dc2", c.addr, "up")}
	}
	return b, c, standIn, standInCalls
}

func getValue(t *testing.T, ctx context.Context, cl *Client, want string) {
	t.Helper()
	item, found, err := cl.Get(ctx, "app", []byte("k"), consistency.One)
	if err != nil || !found || string(item.Value) != want {
		t.Fatalf("Get = %q, %t, %v; want %q from node %s", item.Value, found, err, want, want)
	}
}

// TestFollowsRedirect: the client's first choice sleeps; its stand-in's redirect sends
// the request at once to the awake node of the client's DC, which answers; the client
// then refreshes its view in the background and leaves the sleeping node alone.
func TestFollowsRedirect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, _, _, standInCalls := sleepingCluster(t, true)
	cl, err := Dial(ctx, []string{b.addr}, Options{LocalDC: "dc1"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	<-b.statusCalls // Dial's

	getValue(t, ctx, cl, "b")
	if n := standInCalls.Load(); n != 1 {
		t.Fatalf("the stand-in got %d calls, want 1", n)
	}
	select {
	case <-b.statusCalls: // the refresh the redirect set off
	case <-ctx.Done():
		t.Fatal("no refresh after the redirect")
	}
	getValue(t, ctx, cl, "b")
	if n := standInCalls.Load(); n != 1 {
		t.Fatalf("the stand-in got %d calls, want 1: the client went back to the sleeping node", n)
	}
}

// TestStaticNodes: a client that knows only node a, which went to sleep after the
// client's view was taken, loads the node list once, through the stand-in's redirect,
// and never again; every request still goes to a, and follows the redirect.
func TestStaticNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, c, standIn, standInCalls := sleepingCluster(t, false)
	// A refresh interval so short that every call finds the view stale.
	cl, err := Dial(ctx, []string{standIn}, Options{LocalDC: "dc1", StaticNodes: true, RefreshInterval: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const gets = 3
	for range gets {
		getValue(t, ctx, cl, "b")
	}
	// Dial's refresh, then each get's refresh of the keyspaces and the get itself.
	if n, want := standInCalls.Load(), int32(1+2*gets); n != want {
		t.Fatalf("the stand-in got %d calls, want %d", n, want)
	}
	if n := len(b.statusCalls) + len(c.statusCalls); n != 1 {
		t.Fatalf("%d ClusterStatus calls, want Dial's alone", n)
	}
}

// TestAttemptTimeout: a node that takes requests and never answers costs one attempt
// timeout, after which the request goes to the next node; a compare-and-set, which the
// silent node may have applied, is not sent again.
func TestAttemptTimeout(t *testing.T) {
	tests := []struct {
		name string
		// silent starts the node that will not answer and returns its address; the
		// node answers as fake node f until freeze is called.
		silent func(t *testing.T) (addr string, freeze func())
	}{
		{"listener never accepting", func(t *testing.T) (string, func()) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return l.Addr().String(), nil
		}},
		{"frozen node", func(t *testing.T) (string, func()) {
			g := power.NewGate()
			l, err := g.Listen("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			return startFake(t, "f", l).addr, g.Freeze
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			silent, freeze := tt.silent(t)
			b := startFake(t, "b", nil)
			b.view = func() []*kurav1.NodeStatus {
				return []*kurav1.NodeStatus{nodeStatus("f", "dc1", silent, "up"), nodeStatus("b", "dc1", b.addr, "up")}
			}
			// An attempt timeout long enough that a loaded machine never takes the live node b
			// for a silent one, and short enough to keep the test quick.
			opts := Options{LocalDC: "dc1", AttemptTimeout: time.Second}
			cl, err := Dial(ctx, []string{b.addr}, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if freeze != nil {
				// Connected, and then the node stops. On a busy machine the first
				// answer of f may take longer than the attempt timeout, and b answers
				// instead: ask until f has answered once.
				for {
					item, found, err := cl.Get(ctx, "app", []byte("k"), consistency.One)
					if err != nil {
						t.Fatalf("Get before the freeze: %v (f never answered)", err)
					}
					if found && string(item.Value) == "f" {
						break
					}
				}
				freeze()
			}
			getValue(t, ctx, cl, "b")

			fresh, err := Dial(ctx, []string{b.addr}, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			_, err = fresh.CompareAndSet(ctx, "app", []byte("k"), IfAbsent(), PutValue([]byte("v"), 0), consistency.Serial)
			var e *Error
			if !errors.As(err, &e) || e.Code != codes.DeadlineExceeded {
				t.Fatalf("CompareAndSet on the silent node: %v, want DeadlineExceeded", err)
			}
			if _, err := fresh.CompareAndSet(ctx, "app", []byte("k"), IfAbsent(), PutValue([]byte("v"), 0), consistency.Serial); err != nil {
				t.Fatalf("CompareAndSet once the silent node is known: %v", err)
			}
		})
	}
}

// gRPC's refusals of oversized messages come back as kura's invalid argument and its
// dial failures as the address that failed, each with what to do; other errors pass
// through.
func TestErrorFromStatusSaysWhatToDo(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode codes.Code
		want     string
	}{
		{"node refuses", status.Error(codes.ResourceExhausted, "grpc: received message larger than max (20971541 vs. 16908288)"),
			codes.InvalidArgument, "the request takes 20.0 MiB, more than the 16.1 MiB the node accepts in one request"},
		{"client refuses", status.Error(codes.ResourceExhausted, "grpc: trying to send message larger than max (70000000 vs. 67108864)"),
			codes.InvalidArgument, "more than the 64.0 MiB this client sends"},
		{"nothing listens", status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:7200: connect: connection refused"`),
			codes.Unavailable, "cannot reach 127.0.0.1:7200: connection refused: is a kura server running there"},
		{"other exhaustion", status.Error(codes.ResourceExhausted, "quota"), codes.ResourceExhausted, "quota"},
		{"unavailable", status.Error(codes.Unavailable, "unavailable: ONE needs 1 replicas"), codes.Unavailable, "unavailable: ONE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e *Error
			if !errors.As(errorFromStatus(tt.err), &e) {
				t.Fatalf("errorFromStatus(%v) is no *Error", tt.err)
			}
			if e.Code != tt.wantCode || !strings.Contains(e.Message, tt.want) {
				t.Errorf("errorFromStatus = %v %q, want %v containing %q", e.Code, e.Message, tt.wantCode, tt.want)
			}
		})
	}
}
