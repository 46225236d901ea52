package client

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/api/kurav1"
)

// statusGatedNode is a fake node that logs the calls it serves and, while its gate is shut,
// holds every ClusterStatus call until the gate opens.
type statusGatedNode struct {
	*fakeNode
	mu   sync.Mutex
	log  []string
	gate chan struct{} // nil: open
	held chan struct{} // receives a value when a call reaches the shut gate
}

func (g *statusGatedNode) note(call string) {
	g.mu.Lock()
	g.log = append(g.log, call)
	g.mu.Unlock()
}

func (g *statusGatedNode) calls() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.log)
}

func (g *statusGatedNode) ClusterStatus(ctx context.Context, req *kurav1.ClusterStatusRequest) (*kurav1.ClusterStatusResponse, error) {
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	g.note("status")
	if gate != nil {
		g.held <- struct{}{}
		<-gate
	}
	return g.fakeNode.ClusterStatus(ctx, req)
}

func (g *statusGatedNode) Get(ctx context.Context, req *kurav1.GetRequest) (*kurav1.GetResponse, error) {
	g.note("get")
	return g.fakeNode.Get(ctx, req)
}

// TestRefreshStaysOutOfTheCallsPath: a call that finds the view older than the refresh
// interval goes on with it and refreshes it in the background, so it does not wait for
// the refresh (here held for as long as the call takes); a call that finds it older than
// viewAgeMax intervals, as after a long idle spell, refreshes it first.
func TestRefreshStaysOutOfTheCallsPath(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeNode{id: "a", addr: l.Addr().String(), statusCalls: make(chan struct{}, 100)}
	f.view = func() []*kurav1.NodeStatus { return []*kurav1.NodeStatus{nodeStatus("a", "dc1", f.addr, "up")} }
	g := &statusGatedNode{fakeNode: f, held: make(chan struct{}, 1)}
	serveFake(t, l, g, g)
	// An interval no test run reaches, so that only the ages set below make the view stale.
	const interval = time.Hour
	cl, err := Dial(ctx, []string{f.addr}, Options{LocalDC: "dc1", RefreshInterval: interval})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	age := func(d time.Duration) {
		cl.mu.Lock()
		cl.refreshed = time.Now().Add(-d)
		cl.mu.Unlock()
	}

	// Stale: the get is answered while the refresh it started is still held.
	gate := make(chan struct{})
	g.mu.Lock()
	g.gate = gate
	g.log = nil
	g.mu.Unlock()
	age(2 * interval)
	getValue(t, ctx, cl, "a")
	select {
	case <-g.held: // the background refresh, held at the gate
	case <-ctx.Done():
		t.Fatalf("no background refresh of a stale view; calls %v", g.calls())
	}
	if calls := g.calls(); !slices.Contains(calls, "get") {
		t.Fatalf("calls %v: the get waited for the refresh", calls)
	}
	close(gate)
	cl.background.Wait()
	cl.mu.Lock()
	fresh := time.Since(cl.refreshed) < interval
	cl.mu.Unlock()
	if !fresh {
		t.Fatal("the background refresh did not renew the view")
	}

	// Older than viewAgeMax intervals: the refresh comes first, in the call's path.
	g.mu.Lock()
	g.gate = nil
	g.log = nil
	g.mu.Unlock()
	age((viewAgeMax + 1) * interval)
	getValue(t, ctx, cl, "a")
	if calls, want := g.calls(), []string{"status", "get"}; !slices.Equal(calls, want) {
		t.Fatalf("calls %v, want %v: a view that old is refreshed before the call", calls, want)
	}
}
