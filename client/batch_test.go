package client

import (
	"context"
	"errors"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
)

// gatedNode is a fake node holding values in a map. Its Gets and Puts wait until the
// test lets them go; its GetMany and PutMany record the keys of each call and answer
// each key as Get and Put would, but for these keys: "refused" is refused (by every
// call), "elsewhere" answered as by a node that cannot reach it (by the batch calls
// alone), and "full" not read by GetMany, as by a node whose answer was full.
type gatedNode struct {
	*fakeNode
	entered chan string   // the key of each Get or Put, as it arrives
	release chan struct{} // closed to let the Gets and Puts answer
	batches chan []string // the keys of each GetMany or PutMany
	// batchErr, when set, is every GetMany's and PutMany's answer: Unimplemented from a
	// node of an older version, Unavailable from one going away.
	batchErr error

	mu     sync.Mutex
	values map[string]*kurav1.PutManyItem // by key, as the last put wrote it
	clock  uint64                         // the last put's timestamp
}

var (
	errRefused   = status.Error(codes.InvalidArgument, "invalid: key refused")
	errElsewhere = status.Error(codes.Unavailable, "cannot reach the key's replicas from here")
	errFull      = status.Error(codes.ResourceExhausted, "answer full: the values read before this key reached 64 MiB")
)

func (g *gatedNode) Get(ctx context.Context, req *kurav1.GetRequest) (*kurav1.GetResponse, error) {
	g.entered <- string(req.GetKey())
	<-g.release
	return g.get(string(req.GetKey()))
}

func (g *gatedNode) Put(ctx context.Context, req *kurav1.PutRequest) (*kurav1.PutResponse, error) {
	g.entered <- string(req.GetKey())
	<-g.release
	return g.put(&kurav1.PutManyItem{Key: req.GetKey(), Value: req.GetValue(), TtlMs: req.GetTtlMs(), ExpiresAtUnixMs: req.GetExpiresAtUnixMs()})
}

func (g *gatedNode) GetMany(ctx context.Context, req *kurav1.GetManyRequest) (*kurav1.GetManyResponse, error) {
	var keys []string
	for _, k := range req.GetKeys() {
		keys = append(keys, string(k))
	}
	if err := g.batch(keys); err != nil {
		return nil, err
	}
	resp := &kurav1.GetManyResponse{}
	for _, k := range keys {
		r, err := g.get(k)
		switch k {
		case "elsewhere":
			err = errElsewhere
		case "full":
			r, err = nil, errFull
		}
		st := status.Convert(err)
		resp.Results = append(resp.Results, &kurav1.GetManyResult{Response: r, Code: int32(st.Code()), Message: st.Message()})
	}
	return resp, nil
}

func (g *gatedNode) PutMany(ctx context.Context, req *kurav1.PutManyRequest) (*kurav1.PutManyResponse, error) {
	var keys []string
	for _, item := range req.GetItems() {
		keys = append(keys, string(item.GetKey()))
	}
	if err := g.batch(keys); err != nil {
		return nil, err
	}
	resp := &kurav1.PutManyResponse{}
	for _, item := range req.GetItems() {
		var r *kurav1.PutResponse
		err := errElsewhere
		if string(item.GetKey()) != "elsewhere" {
			r, err = g.put(item)
		}
		st := status.Convert(err)
		resp.Results = append(resp.Results, &kurav1.PutManyResult{Response: r, Code: int32(st.Code()), Message: st.Message()})
	}
	return resp, nil
}

// batch records a batch call of keys, and refuses it when the node has no batch calls.
func (g *gatedNode) batch(keys []string) error {
	g.batches <- keys
	return g.batchErr
}

func (g *gatedNode) get(key string) (*kurav1.GetResponse, error) {
	if key == "refused" {
		return nil, errRefused
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if v, ok := g.values[key]; ok {
		return &kurav1.GetResponse{Found: true, Value: v.GetValue()}, nil
	}
	return &kurav1.GetResponse{}, nil
}

func (g *gatedNode) put(item *kurav1.PutManyItem) (*kurav1.PutResponse, error) {
	if string(item.GetKey()) == "refused" {
		return nil, errRefused
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.clock++
	g.values[string(item.GetKey())] = item
	return &kurav1.PutResponse{Timestamp: g.clock}, nil
}

// stored returns what the last put of key wrote, or nil.
func (g *gatedNode) stored(key string) *kurav1.PutManyItem {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.values[key]
}

// startGated serves a one-node cluster of a gatedNode holding "v:"+key under each of
// keys.
func startGated(t *testing.T, batchErr error, keys ...string) *gatedNode {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeNode{id: "a", addr: l.Addr().String(), statusCalls: make(chan struct{}, 100)}
	f.view = func() []*kurav1.NodeStatus { return []*kurav1.NodeStatus{nodeStatus("a", "dc1", f.addr, "up")} }
	g := &gatedNode{fakeNode: f, entered: make(chan string, 100), release: make(chan struct{}), batches: make(chan []string, 100),
		batchErr: batchErr, values: map[string]*kurav1.PutManyItem{}}
	for _, k := range keys {
		g.values[k] = &kurav1.PutManyItem{Key: []byte(k), Value: []byte("v:" + k)}
	}
	serveFake(t, l, g, f)
	return g
}

// requestKind is Get or Put as the tests send it.
type requestKind struct {
	name string
	// send sends a request of key and returns what it read (a Get) or "" (a Put).
	send func(ctx context.Context, cl *Client, key string) (string, error)
	// queued is how many requests of the kind wait in the client's queues.
	queued func(cl *Client) int
	// inFlightMax is how many requests of the kind go at once before the next wait.
	inFlightMax int
	// unbatched reports whether the client sends requests of the kind to addr alone.
	unbatched func(cl *Client, addr string) bool
}

// putTTL is the expiry the tests' Puts ask for, which a batch must carry.
const putTTL = time.Hour

var (
	getKind = requestKind{
		name: "Get",
		send: func(ctx context.Context, cl *Client, key string) (string, error) {
			item, found, err := cl.Get(ctx, "app", []byte(key), consistency.One)
			if err == nil && !found {
				err = errors.New("not found")
			}
			return string(item.Value), err
		},
		queued:      func(cl *Client) int { return queued(cl.gets) },
		inFlightMax: getsInFlightMax,
		unbatched:   func(cl *Client, addr string) bool { return unbatched(cl.gets, addr) },
	}
	putKind = requestKind{
		name: "Put",
		send: func(ctx context.Context, cl *Client, key string) (string, error) {
			ts, err := cl.Put(ctx, "app", []byte(key), []byte("v:"+key), consistency.One, WithTTL(putTTL))
			if err == nil && ts == 0 {
				err = errors.New("acknowledged without a timestamp")
			}
			return "", err
		},
		queued:      func(cl *Client) int { return queued(cl.puts) },
		inFlightMax: putsInFlightMax,
		unbatched:   func(cl *Client, addr string) bool { return unbatched(cl.puts, addr) },
	}
)

// queued reports how many requests wait in b's queues.
func queued[Req batchable, Resp any](b *batcher[Req, Resp]) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, q := range b.queues {
		n += len(q.waiting)
	}
	return n
}

func unbatched[Req batchable, Resp any](b *batcher[Req, Resp], addr string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.unbatched[addr]
}

// sendAll sends a request of each key at once; wait returns each one's outcome, by key.
func sendAll(ctx context.Context, cl *Client, kind requestKind, keys []string) (wait func() (values map[string]string, errs map[string]error)) {
	type outcome struct {
		key, value string
		err        error
	}
	out := make(chan outcome, len(keys))
	for _, k := range keys {
		go func() {
			value, err := kind.send(ctx, cl, k)
			out <- outcome{k, value, err}
		}()
	}
	return func() (map[string]string, map[string]error) {
		values, errs := map[string]string{}, map[string]error{}
		for range keys {
			o := <-out
			if o.err != nil {
				errs[o.key] = o.err
			} else {
				values[o.key] = o.value
			}
		}
		return values, errs
	}
}

// busyThenQueued fills the client's calls in flight to g with requests of kind that wait
// for g.release, starts requests of keys, which queue behind them, and once they have,
// lets g answer. wait returns the queued requests' outcomes, once the busy ones have
// returned too.
func busyThenQueued(t *testing.T, ctx context.Context, cl *Client, g *gatedNode, kind requestKind, keys []string) (wait func() (map[string]string, map[string]error)) {
	t.Helper()
	var busy []string
	for i := range kind.inFlightMax {
		busy = append(busy, "busy"+strconv.Itoa(i))
	}
	waitBusy := sendAll(ctx, cl, kind, busy)
	for range busy {
		<-g.entered
	}
	waitQueued := sendAll(ctx, cl, kind, keys)
	for kind.queued(cl) < len(keys) {
		if ctx.Err() != nil {
			t.Fatalf("%d of %d %ss queued", kind.queued(cl), len(keys), kind.name)
		}
		runtime.Gosched()
	}
	close(g.release)
	return func() (map[string]string, map[string]error) {
		waitBusy()
		return waitQueued()
	}
}

// sentAlone drains the keys of the requests g received alone.
func sentAlone(g *gatedNode) []string {
	var keys []string
	for len(g.entered) > 0 {
		keys = append(keys, <-g.entered)
	}
	return keys
}

// dialGated is a client of g.
func dialGated(t *testing.T, ctx context.Context, g *gatedNode) *Client {
	cl, err := Dial(ctx, []string{g.addr}, Options{LocalDC: "dc1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// wantRefused fails unless err is the node's refusal of the key.
func wantRefused(t *testing.T, what string, err error) {
	t.Helper()
	var refused *Error
	if !errors.As(err, &refused) || refused.Code != codes.InvalidArgument {
		t.Errorf("%s: %v, want the key's InvalidArgument", what, err)
	}
}

// TestWaitingGetsGoTogether: Gets beyond the calls in flight to a node wait, and go as
// one GetMany when a call returns; each gets its own key's answer, found, missing or
// failed, as a Get sent alone would have, and one the node could not serve, or did not
// read because the batch's answer was full, goes alone.
func TestWaitingGetsGoTogether(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := startGated(t, nil, "k1", "k2", "elsewhere", "full")
	cl := dialGated(t, ctx, g)

	keys := []string{"k1", "k2", "missing", "refused", "elsewhere", "full"}
	values, errs := busyThenQueued(t, ctx, cl, g, getKind, keys)()
	if n := len(g.batches); n != 1 {
		t.Fatalf("%d GetMany calls, want one", n)
	}
	if batch := <-g.batches; !sameKeys(batch, keys) {
		t.Fatalf("GetMany of %q, want the queued keys %q", batch, keys)
	}
	if alone := sentAlone(g); !sameKeys(alone, []string{"elsewhere", "full"}) {
		t.Errorf("%q sent alone, want the keys the batch did not serve", alone)
	}
	for _, k := range []string{"k1", "k2", "elsewhere", "full"} {
		if values[k] != "v:"+k {
			t.Errorf("Get(%s) = %q, %v; want its value", k, values[k], errs[k])
		}
	}
	if err := errs["missing"]; err == nil || err.Error() != "not found" {
		t.Errorf("Get(missing): %v, want not found", err)
	}
	wantRefused(t, "Get(refused)", errs["refused"])
}

// TestWaitingPutsGoTogether: Puts beyond the calls in flight to a node wait, and go as
// one PutMany, expiry included, when a call returns; each is acknowledged or refused
// alone, one the node could not serve goes alone, and every Put acknowledged reads back.
func TestWaitingPutsGoTogether(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := startGated(t, nil)
	cl := dialGated(t, ctx, g)

	keys := []string{"k1", "k2", "k3", "refused", "elsewhere"}
	_, errs := busyThenQueued(t, ctx, cl, g, putKind, keys)()
	if n := len(g.batches); n != 1 {
		t.Fatalf("%d PutMany calls, want one", n)
	}
	if batch := <-g.batches; !sameKeys(batch, keys) {
		t.Fatalf("PutMany of %q, want the queued keys %q", batch, keys)
	}
	if alone := sentAlone(g); !slices.Equal(alone, []string{"elsewhere"}) {
		t.Errorf("%q sent alone, want the key the batch could not serve", alone)
	}
	wantRefused(t, "Put(refused)", errs["refused"])
	for _, k := range []string{"k1", "k2", "k3", "elsewhere"} {
		if errs[k] != nil {
			t.Errorf("Put(%s): %v", k, errs[k])
			continue
		}
		if got, err := getKind.send(ctx, cl, k); got != "v:"+k {
			t.Errorf("Get(%s) after its Put = %q, %v; want the value put", k, got, err)
		}
		if ttl := g.stored(k).GetTtlMs(); ttl != putTTL.Milliseconds() {
			t.Errorf("Put(%s) wrote a TTL of %d ms, want %d", k, ttl, putTTL.Milliseconds())
		}
	}
	if g.stored("refused") != nil {
		t.Error("the refused Put was written")
	}
}

// TestLargePutsShareNoBatch: waiting Puts go together only up to batchBytesMax, so that
// a batch fits any node's message limit: Puts of larger values go one per call.
func TestLargePutsShareNoBatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := startGated(t, nil)
	cl := dialGated(t, ctx, g)

	large := putKind
	large.send = func(ctx context.Context, cl *Client, key string) (string, error) {
		_, err := cl.Put(ctx, "app", []byte(key), make([]byte, batchBytesMax*2/3), consistency.One)
		return "", err
	}
	keys := []string{"k1", "k2", "k3"}
	if _, errs := busyThenQueued(t, ctx, cl, g, large, keys)(); len(errs) > 0 {
		t.Fatalf("Puts failed: %v", errs)
	}
	if n := len(g.batches); n != len(keys) {
		t.Fatalf("%d PutMany calls, want one per Put", n)
	}
	var batched []string
	for range keys {
		batch := <-g.batches
		if len(batch) != 1 {
			t.Errorf("PutMany of %q, want one large value per call", batch)
		}
		batched = append(batched, batch...)
	}
	if !sameKeys(batched, keys) {
		t.Errorf("PutMany calls of %q, want %q", batched, keys)
	}
}

// TestWaitingRequestsGoAloneWhenTheBatchFails: when the batch call fails whole, the
// waiting requests go alone, and the client learns from the failure as from a request's
// own. A node without GetMany or PutMany (an older version) answers it Unimplemented:
// later requests of that kind are never batched for that node, while the other kind
// still is. A node going away answers Unavailable: it is marked as failed, so that the
// requests sent alone try it last, and later ones are still batched.
func TestWaitingRequestsGoAloneWhenTheBatchFails(t *testing.T) {
	failures := []struct {
		name      string
		batchErr  error
		unbatched bool // the node is never batched for again
		bad       bool // the node is marked as failed
	}{
		{"unimplemented", status.Error(codes.Unimplemented, "unknown method"), true, false},
		{"unreachable", status.Error(codes.Unavailable, "the node is shutting down"), false, true},
	}
	for _, f := range failures {
		for _, tt := range []struct{ kind, other requestKind }{{getKind, putKind}, {putKind, getKind}} {
			t.Run(f.name+"/"+tt.kind.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				keys := []string{"k1", "k2", "k3"}
				var held []string // the values the Gets read; the Puts write their own
				if tt.kind.name == "Get" {
					held = keys
				}
				g := startGated(t, f.batchErr, held...)
				cl := dialGated(t, ctx, g)

				values, errs := busyThenQueued(t, ctx, cl, g, tt.kind, keys)()
				if len(errs) > 0 {
					t.Fatalf("%ss failed: %v", tt.kind.name, errs)
				}
				if alone := sentAlone(g); !sameKeys(alone, keys) {
					t.Errorf("%q sent alone, want every queued key %q", alone, keys)
				}
				cl.mu.Lock()
				_, bad := cl.bad[g.addr]
				cl.mu.Unlock()
				if bad != f.bad {
					t.Errorf("node marked as failed: %v, want %v", bad, f.bad)
				}
				for _, k := range keys {
					if tt.kind.name == "Get" && values[k] != "v:"+k {
						t.Errorf("Get(%s) = %q, want its value", k, values[k])
					}
					if got, err := getKind.send(ctx, cl, k); got != "v:"+k {
						t.Errorf("Get(%s) after the %s = %q, %v; want its value", k, tt.kind.name, got, err)
					}
				}
				if n := len(g.batches); n != 1 {
					t.Fatalf("%d batch calls, want the one that failed", n)
				}
				if got := tt.kind.unbatched(cl, g.addr); got != f.unbatched {
					t.Fatalf("%ss to the node unbatched: %v, want %v", tt.kind.name, got, f.unbatched)
				}
				if tt.other.unbatched(cl, g.addr) {
					t.Fatalf("the node no longer batched for %ss, whose batch call it never refused", tt.other.name)
				}
			})
		}
	}
}

// sameKeys reports whether a and b hold the same keys, in any order.
func sameKeys(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestNoBatchingSendsEachRequestAlone: with Options.NoBatching, requests to a node whose
// call is in flight do not wait to go together: every Get and Put reaches the node as a
// call of its own while the others are still unanswered, and no batch call is made.
func TestNoBatchingSendsEachRequestAlone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g := startGated(t, nil, "k1", "k2", "k3")
	cl, err := Dial(ctx, []string{g.addr}, Options{LocalDC: "dc1", NoBatching: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, kind := range []requestKind{getKind, putKind} {
		keys := []string{"k1", "k2", "k3"}
		g.release = make(chan struct{})
		wait := sendAll(ctx, cl, kind, keys)
		var arrived []string
		for range keys {
			select {
			case k := <-g.entered:
				arrived = append(arrived, k)
			case <-ctx.Done():
				t.Fatalf("%ss: %q arrived alone, want all of %q before any answer", kind.name, arrived, keys)
			}
		}
		close(g.release)
		if _, errs := wait(); len(errs) > 0 {
			t.Errorf("%ss: %v", kind.name, errs)
		}
		if n := len(g.batches); n != 0 {
			t.Errorf("%ss: %d batch calls, want none", kind.name, n)
		}
	}
}
