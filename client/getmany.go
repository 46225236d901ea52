package client

// Reads that wait go together. A Get is sent at once while fewer than getsInFlightMax
// calls are in flight to its node for its keyspace and level; beyond that it waits, and
// when a call returns, the Gets waiting behind it go to the node as one GetMany. Under
// load, a node then answers a few calls carrying many keys rather than many calls
// carrying one, and each read pays a share of one call's gRPC cost, on the client and
// on the node; a lone Get goes out as before, without waiting. A waiting Get whose batch
// fails as a whole (the node unreachable or asleep, a node without GetMany) goes its own
// way, as a Get sent at once would: to its node, then the next.

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
)

const (
	// getsInFlightMax is how many calls to one node, for one keyspace and level, the
	// client keeps in flight before Gets wait to be sent together.
	getsInFlightMax = 4
	// getBatchMax bounds the keys of one GetMany (the node accepts up to 1,024).
	getBatchMax = 64
)

// getBatcher holds the Gets waiting for each node, keyspace and level.
type getBatcher struct {
	mu     sync.Mutex
	queues map[getQueueKey]*getQueue
	// unbatched holds the nodes that answered a GetMany as unimplemented (an older
	// version): their Gets always go one by one.
	unbatched map[string]bool
}

// getQueueKey names the Gets that may share a GetMany.
type getQueueKey struct {
	addr     string
	keyspace string
	level    kurav1.Consistency
}

// getQueue is one queue's calls in flight and the Gets waiting behind them.
type getQueue struct {
	key      getQueueKey
	inFlight int
	waiting  []*waitingGet
}

// waitingGet is one Get waiting to go in a batch, and, once done is closed, its outcome.
type waitingGet struct {
	key   []byte
	addrs []string // the nodes to try, best first
	done  chan struct{}
	resp  *kurav1.GetResponse
	err   error
	// alone means the batch failed as a whole: the Get is to be sent by itself.
	alone bool
}

// get reads key from keyspace at level as Client.Get does, sent by itself or in a
// batch with the other Gets waiting for the same node.
func (b *getBatcher) get(ctx context.Context, c *Client, keyspace string, key []byte, level kurav1.Consistency) (*kurav1.GetResponse, error) {
	addrs := c.routeFor(ctx, keyspace, key)
	if len(addrs) == 0 {
		return c.getAlone(ctx, addrs, keyspace, key, level)
	}
	qk := getQueueKey{addr: addrs[0], keyspace: keyspace, level: level}
	b.mu.Lock()
	if b.unbatched[qk.addr] {
		b.mu.Unlock()
		return c.getAlone(ctx, addrs, keyspace, key, level)
	}
	if b.queues == nil {
		b.queues = map[getQueueKey]*getQueue{}
	}
	q := b.queues[qk]
	if q == nil {
		q = &getQueue{key: qk}
		b.queues[qk] = q
	}
	if q.inFlight < getsInFlightMax {
		q.inFlight++
		b.mu.Unlock()
		resp, err := c.getAlone(ctx, addrs, keyspace, key, level)
		b.release(c, q)
		return resp, err
	}
	w := &waitingGet{key: key, addrs: addrs, done: make(chan struct{})}
	q.waiting = append(q.waiting, w)
	b.mu.Unlock()
	select {
	case <-w.done:
	case <-ctx.Done():
		// The batch still reads the key; its answer goes unread. The error is the one a
		// call cut short by ctx returns.
		return nil, errorFromStatus(status.FromContextError(ctx.Err()).Err())
	}
	if w.alone {
		return c.getAlone(ctx, addrs, keyspace, key, level)
	}
	return w.resp, w.err
}

// release ends one call of q: the Gets waiting behind it, if any, go as the next call.
func (b *getBatcher) release(c *Client, q *getQueue) {
	b.mu.Lock()
	if len(q.waiting) == 0 {
		q.inFlight--
		if q.inFlight == 0 {
			delete(b.queues, q.key)
		}
		b.mu.Unlock()
		return
	}
	n := min(len(q.waiting), getBatchMax)
	batch := q.waiting[:n:n]
	q.waiting = append([]*waitingGet(nil), q.waiting[n:]...)
	b.mu.Unlock()
	go func() {
		b.send(c, q.key, batch)
		b.release(c, q)
	}()
}

// send reads batch's keys in one GetMany to the queue's node and hands each Get its
// outcome; when the call fails as a whole, each Get is told to go alone.
func (b *getBatcher) send(c *Client, qk getQueueKey, batch []*waitingGet) {
	defer func() {
		for _, w := range batch {
			close(w.done)
		}
	}()
	keys := make([][]byte, len(batch))
	for i, w := range batch {
		keys[i] = w.key
	}
	var resp *kurav1.GetManyResponse
	// The batch is no single caller's: it runs until the client closes, each waiting
	// caller giving up on it by its own context.
	err := c.attempt(c.ctx, qk.addr, func(ctx context.Context, conn *grpc.ClientConn) (err error) {
		resp, err = kurav1.NewKVClient(conn).GetMany(ctx, &kurav1.GetManyRequest{Keyspace: qk.keyspace, Keys: keys, Consistency: qk.level})
		return err
	})
	if err == nil && len(resp.GetResults()) != len(batch) {
		err = status.Errorf(codes.Internal, "GetMany of %d keys answered %d", len(batch), len(resp.GetResults()))
	}
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			b.mu.Lock()
			if b.unbatched == nil {
				b.unbatched = map[string]bool{}
			}
			b.unbatched[qk.addr] = true
			b.mu.Unlock()
		}
		for _, w := range batch {
			w.alone = true
		}
		return
	}
	for i, r := range resp.GetResults() {
		w := batch[i]
		if code := codes.Code(r.GetCode()); code != codes.OK {
			err := status.Error(code, r.GetMessage())
			// An error a Get sent alone would retry elsewhere sends it alone.
			w.alone = unreachable(err)
			w.err = errorFromStatus(err)
			continue
		}
		w.resp = r.GetResponse()
	}
}

// getAlone is Get sent by itself to addrs, best first.
func (c *Client) getAlone(ctx context.Context, addrs []string, keyspace string, key []byte, level kurav1.Consistency) (*kurav1.GetResponse, error) {
	var resp *kurav1.GetResponse
	err := c.callOn(ctx, addrs, resend, func(ctx context.Context, conn *grpc.ClientConn) (err error) {
		resp, err = kurav1.NewKVClient(conn).Get(ctx, &kurav1.GetRequest{Keyspace: keyspace, Key: key, Consistency: level})
		return err
	})
	return resp, err
}
