package client

import (
	"context"
	"errors"
	"net"
	"runtime"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
)

// gatedNode is a fake node whose Gets wait until the test lets them go, and whose
// GetMany answers each key as the test's answer function says, recording the keys of
// each call.
type gatedNode struct {
	*fakeNode
	entered chan string   // the key of each Get, as it arrives
	release chan struct{} // closed to let the Gets answer
	batches chan []string // the keys of each GetMany
	// answer is a GetMany's answer for one key; nil answers the whole call Unimplemented.
	answer func(key string) *kurav1.GetManyResult
}

func (g *gatedNode) Get(ctx context.Context, req *kurav1.GetRequest) (*kurav1.GetResponse, error) {
	g.entered <- string(req.GetKey())
	<-g.release
	return &kurav1.GetResponse{Found: true, Value: append([]byte("alone:"), req.GetKey()...)}, nil
}

func (g *gatedNode) GetMany(ctx context.Context, req *kurav1.GetManyRequest) (*kurav1.GetManyResponse, error) {
	var keys []string
	for _, k := range req.GetKeys() {
		keys = append(keys, string(k))
	}
	g.batches <- keys
	if g.answer == nil {
		return nil, status.Error(codes.Unimplemented, "unknown method GetMany")
	}
	resp := &kurav1.GetManyResponse{}
	for _, k := range keys {
		resp.Results = append(resp.Results, g.answer(k))
	}
	return resp, nil
}

// startGated serves a one-node cluster of a gatedNode answering GetMany with answer.
func startGated(t *testing.T, answer func(key string) *kurav1.GetManyResult) *gatedNode {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeNode{id: "a", addr: l.Addr().String(), statusCalls: make(chan struct{}, 100)}
	f.view = func() []*kurav1.NodeStatus { return []*kurav1.NodeStatus{nodeStatus("a", "dc1", f.addr, "up")} }
	g := &gatedNode{fakeNode: f, entered: make(chan string, 100), release: make(chan struct{}), batches: make(chan []string, 100), answer: answer}
	serveFake(t, l, g, f)
	return g
}

// waiting reports how many Gets wait in the client's queues.
func waiting(cl *Client) int {
	cl.gets.mu.Lock()
	defer cl.gets.mu.Unlock()
	n := 0
	for _, q := range cl.gets.queues {
		n += len(q.waiting)
	}
	return n
}

// getAll runs a Get of each key at once and returns each one's value or error, by key.
func getAll(ctx context.Context, cl *Client, keys []string) (values map[string]string, errs map[string]error, wait func()) {
	type outcome struct {
		key, value string
		err        error
	}
	out := make(chan outcome, len(keys))
	for _, k := range keys {
		go func() {
			item, found, err := cl.Get(ctx, "app", []byte(k), consistency.One)
			if err == nil && !found {
				err = errors.New("not found")
			}
			out <- outcome{k, string(item.Value), err}
		}()
	}
	values, errs = map[string]string{}, map[string]error{}
	return values, errs, func() {
		for range keys {
			o := <-out
			if o.err != nil {
				errs[o.key] = o.err
			} else {
				values[o.key] = o.value
			}
		}
	}
}

// busyThenQueued fills the client's calls in flight to g with Gets that wait for
// g.release, then starts Gets of keys, which queue behind them; it returns once they
// have.
func busyThenQueued(t *testing.T, ctx context.Context, cl *Client, g *gatedNode, keys []string) (values map[string]string, errs map[string]error, wait func()) {
	t.Helper()
	var busy []string
	for i := range getsInFlightMax {
		busy = append(busy, "busy"+string(rune('0'+i)))
	}
	_, _, waitBusy := getAll(ctx, cl, busy)
	for range busy {
		<-g.entered
	}
	values, errs, waitQueued := getAll(ctx, cl, keys)
	for waiting(cl) < len(keys) {
		if ctx.Err() != nil {
			t.Fatalf("%d of %d Gets queued", waiting(cl), len(keys))
		}
		runtime.Gosched()
	}
	close(g.release)
	return values, errs, func() {
		waitBusy()
		waitQueued()
	}
}

// TestWaitingGetsGoTogether: Gets beyond the calls in flight to a node wait, and go as
// one GetMany when a call returns; each gets its own key's answer, found, missing or
// failed, as a Get sent alone would have.
func TestWaitingGetsGoTogether(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := startGated(t, func(key string) *kurav1.GetManyResult {
		switch key {
		case "missing":
			return &kurav1.GetManyResult{Response: &kurav1.GetResponse{}}
		case "refused":
			return &kurav1.GetManyResult{Code: int32(codes.InvalidArgument), Message: "invalid: key refused"}
		}
		return &kurav1.GetManyResult{Response: &kurav1.GetResponse{Found: true, Value: []byte("batched:" + key)}}
	})
	cl, err := Dial(ctx, []string{g.addr}, Options{LocalDC: "dc1"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	keys := []string{"k1", "k2", "missing", "refused"}
	values, errs, wait := busyThenQueued(t, ctx, cl, g, keys)
	wait()
	if batch := <-g.batches; !sameKeys(batch, keys) {
		t.Fatalf("GetMany of %q, want the queued keys %q", batch, keys)
	}
	for _, k := range []string{"k1", "k2"} {
		if values[k] != "batched:"+k {
			t.Errorf("Get(%s) = %q, %v; want the batch's answer", k, values[k], errs[k])
		}
	}
	if err := errs["missing"]; err == nil || err.Error() != "not found" {
		t.Errorf("Get(missing): %v, want not found", err)
	}
	var refused *Error
	if !errors.As(errs["refused"], &refused) || refused.Code != codes.InvalidArgument {
		t.Errorf("Get(refused): %v, want the key's InvalidArgument", errs["refused"])
	}
}

// TestWaitingGetsGoAloneWhenTheBatchFails: a node without GetMany (an older version)
// answers it Unimplemented; the waiting Gets then go alone, and later ones are never
// batched for that node.
func TestWaitingGetsGoAloneWhenTheBatchFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := startGated(t, nil)
	cl, err := Dial(ctx, []string{g.addr}, Options{LocalDC: "dc1"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	keys := []string{"k1", "k2", "k3"}
	values, errs, wait := busyThenQueued(t, ctx, cl, g, keys)
	wait()
	for _, k := range keys {
		if values[k] != "alone:"+k {
			t.Errorf("Get(%s) = %q, %v; want the answer of a Get sent alone", k, values[k], errs[k])
		}
	}
	if n := len(g.batches); n != 1 {
		t.Fatalf("%d GetMany calls, want the one refused", n)
	}
	cl.gets.mu.Lock()
	unbatched := cl.gets.unbatched[g.addr]
	cl.gets.mu.Unlock()
	if !unbatched {
		t.Fatal("the node that refused GetMany is still batched for")
	}
}

// sameKeys reports whether a and b hold the same keys, in any order.
func sameKeys(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
