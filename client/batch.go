package client

// Calls that wait go together. A Get or a Put is sent at once while fewer than
// getsInFlightMax (Puts: putsInFlightMax) calls of its kind are in flight to its node
// for its keyspace and level; beyond that it waits, and when a call returns, the
// requests waiting behind it go to the node as one GetMany or PutMany. Under load, a
// node then answers a few calls carrying many keys rather than many calls carrying one,
// and each read or write pays a share of one call's gRPC cost, on the client and on the
// node; a lone request goes out as before, without waiting. A waiting request whose
// batch fails as a whole (the node unreachable, silent or asleep, a node without the
// batch call) goes its own way, as a request sent at once would: to its node, then the
// next.
//
// Order: the requests waiting in one queue come from concurrent callers, none of which
// has been answered, so no order among them is promised, and the node writes a
// PutMany's items with no order among them (coord.PutEach). A caller's next request
// starts only once its previous one has returned, so each caller's own requests keep
// their order.
//
// One batcher serves each kind of call; what differs between them (the request sent
// alone, the batch call and its answer) is given as functions (getCalls, putCalls).

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
)

const (
	// getsInFlightMax and putsInFlightMax are how many Gets or Puts to one node, for one
	// keyspace and level, the client keeps in flight before the next ones wait to be
	// sent together: one of each. A node sends a batch's reads or writes to each replica
	// together (one storage call, one read_many or mutate message per replica, one WAL
	// sync), so a request waits for the one call in flight rather than go as a second
	// that costs a replica round and a sync of its own. On 3 nodes in 2 DCs, against 2
	// calls, reads did 5-13 % more at 16 and 64 clients, at ONE and QUORUM, and 6-10 %
	// less at 256 clients at QUORUM; against 8 calls, writes did 11-24 % more at 16
	// clients, 40-58 % at 64 and 27-57 % at 256 (docs/performance-log.md).
	getsInFlightMax = 1
	putsInFlightMax = 1
	// batchMax bounds the requests of one batch call (the node accepts up to 1,024).
	batchMax = 64
	// batchSendersIdleMax bounds the idle goroutines kept to send batch calls
	// (Client.senders): about one per node, keyspace, level and kind of call in use at
	// once.
	batchSendersIdleMax = 16
	// batchBytesMax bounds the encoded size of one batch call's requests; a request
	// larger than that goes in a batch of its own. A node accepts a message of its
	// largest key and value and 64 KiB more, whatever its limits, and requests that large
	// gain little from sharing a call.
	batchBytesMax = 64 << 10
)

// batchable is a request a batcher can carry: a GetRequest or a PutRequest.
type batchable interface {
	proto.Message
	GetKeyspace() string
	GetKey() []byte
	GetConsistency() kurav1.Consistency
}

// batchCalls is what a batcher needs of one kind of request.
type batchCalls[Req batchable, Resp any] struct {
	// inFlightMax is how many calls may be in flight before requests wait.
	inFlightMax int
	// one sends req alone on conn.
	one func(ctx context.Context, conn *grpc.ClientConn, req Req) (Resp, error)
	// many sends reqs, all of qk's keyspace and level, in one call on conn, and returns
	// each one's answer in order: its response, or its own error (a status error); err
	// is the failure of the call as a whole.
	many func(ctx context.Context, conn *grpc.ClientConn, qk queueKey, reqs []Req) (resps []Resp, errs []error, err error)
}

// batcher holds the requests of one kind waiting for each node, keyspace and level.
type batcher[Req batchable, Resp any] struct {
	calls batchCalls[Req, Resp]

	mu     sync.Mutex
	queues map[queueKey]*queue[Req, Resp]
	// unbatched holds the nodes that answered the batch call as unimplemented (an older
	// version): their requests of this kind always go one by one.
	unbatched map[string]bool
}

func newBatcher[Req batchable, Resp any](calls batchCalls[Req, Resp]) *batcher[Req, Resp] {
	return &batcher[Req, Resp]{calls: calls}
}

// queueKey names the requests that may share a batch call.
type queueKey struct {
	addr     string
	keyspace string
	level    kurav1.Consistency
}

// queue is one queue's calls in flight and the requests waiting behind them.
type queue[Req, Resp any] struct {
	key      queueKey
	inFlight int
	waiting  []*waiter[Req, Resp]
}

// waiter is one request waiting to go in a batch, and, once done is closed, its
// outcome.
type waiter[Req, Resp any] struct {
	req  Req
	done chan struct{}
	resp Resp
	err  error
	// alone means the request is to be sent by itself: the batch failed as a whole, or
	// the node answered this request with an error another node may not.
	alone bool
}

// do sends req as the client sends any request, by itself or in a batch with the other
// requests waiting for the same node.
func (b *batcher[Req, Resp]) do(ctx context.Context, c *Client, req Req) (Resp, error) {
	addrs := c.routeFor(ctx, req.GetKeyspace(), req.GetKey())
	if len(addrs) == 0 || c.opts.NoBatching {
		return b.alone(ctx, c, addrs, req)
	}
	qk := queueKey{addr: addrs[0], keyspace: req.GetKeyspace(), level: req.GetConsistency()}
	b.mu.Lock()
	if b.unbatched[qk.addr] {
		b.mu.Unlock()
		return b.alone(ctx, c, addrs, req)
	}
	if b.queues == nil {
		b.queues = map[queueKey]*queue[Req, Resp]{}
	}
	q := b.queues[qk]
	if q == nil {
		q = &queue[Req, Resp]{key: qk}
		b.queues[qk] = q
	}
	if q.inFlight < b.calls.inFlightMax {
		q.inFlight++
		b.mu.Unlock()
		resp, err := b.alone(ctx, c, addrs, req)
		b.release(c, q)
		return resp, err
	}
	w := &waiter[Req, Resp]{req: req, done: make(chan struct{})}
	q.waiting = append(q.waiting, w)
	b.mu.Unlock()
	select {
	case <-w.done:
	case <-ctx.Done():
		// The batch still carries the request (a write may yet be made, as by a call cut
		// short); its answer goes unread. The error is the one a call cut short by ctx
		// returns.
		var none Resp
		return none, errorFromStatus(status.FromContextError(ctx.Err()).Err())
	}
	if w.alone {
		// Routed again: a node whose batch failed whole is now last in line, as after a
		// request of its own failed there.
		return b.alone(ctx, c, c.route(req.GetKeyspace(), req.GetKey()), req)
	}
	return w.resp, w.err
}

// alone sends req by itself to addrs, best first.
func (b *batcher[Req, Resp]) alone(ctx context.Context, c *Client, addrs []string, req Req) (Resp, error) {
	var resp Resp
	err := c.callOn(ctx, addrs, resend, func(ctx context.Context, conn *grpc.ClientConn) (err error) {
		resp, err = b.calls.one(ctx, conn, req)
		return err
	})
	return resp, err
}

// release ends one call of q: the requests waiting behind it, if any, go as the next
// call, sent by a kept worker.
func (b *batcher[Req, Resp]) release(c *Client, q *queue[Req, Resp]) {
	if batch := b.next(q); batch != nil {
		c.senders.Run(func() { b.sendAll(c, q, batch) })
	}
}

// sendAll sends batch, then each batch that waited behind it, until none waits: under
// load one goroutine keeps sending a queue's calls, with no hand-off between them.
func (b *batcher[Req, Resp]) sendAll(c *Client, q *queue[Req, Resp], batch []*waiter[Req, Resp]) {
	for batch != nil {
		b.send(c, q.key, batch)
		batch = b.next(q)
	}
}

// next takes the next batch off q, the call in flight that ended passing its place to
// it, or, when no request waits, ends that call.
func (b *batcher[Req, Resp]) next(q *queue[Req, Resp]) []*waiter[Req, Resp] {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(q.waiting) == 0 {
		q.inFlight--
		if q.inFlight == 0 {
			delete(b.queues, q.key)
		}
		return nil
	}
	n, size := 1, proto.Size(q.waiting[0].req)
	for ; n < min(len(q.waiting), batchMax); n++ {
		if size += proto.Size(q.waiting[n].req); size > batchBytesMax {
			break
		}
	}
	batch := q.waiting[:n:n]
	q.waiting = append([]*waiter[Req, Resp](nil), q.waiting[n:]...)
	return batch
}

// send sends batch in one call to the queue's node and hands each request its outcome;
// when the call fails as a whole, each request is told to go alone.
func (b *batcher[Req, Resp]) send(c *Client, qk queueKey, batch []*waiter[Req, Resp]) {
	defer func() {
		for _, w := range batch {
			close(w.done)
		}
	}()
	reqs := make([]Req, len(batch))
	for i, w := range batch {
		reqs[i] = w.req
	}
	var resps []Resp
	var errs []error
	// The batch is no single caller's: it runs until the client closes, each waiting
	// caller giving up on it by its own context.
	err := c.attempt(c.ctx, qk.addr, func(ctx context.Context, conn *grpc.ClientConn) (err error) {
		resps, errs, err = b.calls.many(ctx, conn, qk, reqs)
		return err
	})
	if err == nil && (len(resps) != len(batch) || len(errs) != len(batch)) {
		err = status.Errorf(codes.Internal, "a batch of %d answered %d", len(batch), len(resps))
	}
	if err != nil {
		// What the node's failure tells, the client learns as from a request sent alone,
		// so that the requests now sent alone do not wait on that node first.
		switch {
		case status.Code(err) == codes.Unimplemented:
			b.mu.Lock()
			if b.unbatched == nil {
				b.unbatched = map[string]bool{}
			}
			b.unbatched[qk.addr] = true
			b.mu.Unlock()
		case redirectOf(err) != nil:
			c.remember(func() { c.asleep[qk.addr] = true })
			c.refreshSoon()
		case errors.Is(err, errAttemptTimeout) || unreachable(err):
			c.remember(func() { c.bad[qk.addr] = time.Now() })
		}
		for _, w := range batch {
			w.alone = true
		}
		return
	}
	for i, w := range batch {
		if err := errs[i]; err != nil {
			// An error a request sent alone would retry elsewhere sends it alone, as does
			// a key the node did not read because the batch's answer was full.
			w.alone = unreachable(err) || status.Code(err) == codes.ResourceExhausted
			w.err = errorFromStatus(err)
			continue
		}
		w.resp = resps[i]
	}
}

// batchResult is one request's answer in a batch call's response: a GetManyResult or a
// PutManyResult.
type batchResult[Resp any] interface {
	GetResponse() Resp
	GetCode() int32
	GetMessage() string
}

// unpack splits a batch call's results into each request's response and error.
func unpack[Resp any, R batchResult[Resp]](results []R) ([]Resp, []error) {
	resps, errs := make([]Resp, len(results)), make([]error, len(results))
	for i, r := range results {
		if code := codes.Code(r.GetCode()); code != codes.OK {
			errs[i] = status.Error(code, r.GetMessage())
			continue
		}
		resps[i] = r.GetResponse()
	}
	return resps, errs
}

// getCalls batches Gets as GetMany.
var getCalls = batchCalls[*kurav1.GetRequest, *kurav1.GetResponse]{
	inFlightMax: getsInFlightMax,
	one: func(ctx context.Context, conn *grpc.ClientConn, req *kurav1.GetRequest) (*kurav1.GetResponse, error) {
		return kurav1.NewKVClient(conn).Get(ctx, req)
	},
	many: func(ctx context.Context, conn *grpc.ClientConn, qk queueKey, reqs []*kurav1.GetRequest) ([]*kurav1.GetResponse, []error, error) {
		keys := make([][]byte, len(reqs))
		for i, req := range reqs {
			keys[i] = req.GetKey()
		}
		resp, err := kurav1.NewKVClient(conn).GetMany(ctx, &kurav1.GetManyRequest{Keyspace: qk.keyspace, Keys: keys, Consistency: qk.level})
		if err != nil {
			return nil, nil, err
		}
		resps, errs := unpack(resp.GetResults())
		return resps, errs, nil
	},
}

// putCalls batches Puts as PutMany, each with its own expiry.
var putCalls = batchCalls[*kurav1.PutRequest, *kurav1.PutResponse]{
	inFlightMax: putsInFlightMax,
	one: func(ctx context.Context, conn *grpc.ClientConn, req *kurav1.PutRequest) (*kurav1.PutResponse, error) {
		return kurav1.NewKVClient(conn).Put(ctx, req)
	},
	many: func(ctx context.Context, conn *grpc.ClientConn, qk queueKey, reqs []*kurav1.PutRequest) ([]*kurav1.PutResponse, []error, error) {
		items := make([]*kurav1.PutManyItem, len(reqs))
		for i, req := range reqs {
			items[i] = &kurav1.PutManyItem{Key: req.GetKey(), Value: req.GetValue(), TtlMs: req.GetTtlMs(), ExpiresAtUnixMs: req.GetExpiresAtUnixMs()}
		}
		resp, err := kurav1.NewKVClient(conn).PutMany(ctx, &kurav1.PutManyRequest{Keyspace: qk.keyspace, Consistency: qk.level, Items: items})
		if err != nil {
			return nil, nil, err
		}
		resps, errs := unpack(resp.GetResults())
		return resps, errs, nil
	},
}
