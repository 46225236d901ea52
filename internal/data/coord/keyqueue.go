package coord

import (
	"context"
	"sync"
)

// keyQueue lets one lightweight transaction per key run on this coordinator at a time,
// the others waiting their turn in arrival order. Transactions of one key through one
// coordinator would otherwise duel with each other's ballots, each round lost to a
// neighbour costing a back-off; queued, they contend only with other coordinators'.
// Paxos keeps them correct either way: the queue only spares rounds.
type keyQueue struct {
	mu   sync.Mutex
	keys map[string][]chan struct{} // per key held, the waiters in arrival order
}

// lock waits until key is this caller's, or ctx ends; unlock hands it to the next
// waiter.
func (q *keyQueue) lock(ctx context.Context, key string) (unlock func(), err error) {
	unlock = func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		waiters := q.keys[key]
		if len(waiters) == 0 {
			delete(q.keys, key)
			return
		}
		q.keys[key] = waiters[1:]
		close(waiters[0])
	}
	q.mu.Lock()
	if q.keys == nil {
		q.keys = map[string][]chan struct{}{}
	}
	waiters, held := q.keys[key]
	if !held {
		q.keys[key] = nil
		q.mu.Unlock()
		return unlock, nil
	}
	turn := make(chan struct{})
	q.keys[key] = append(waiters, turn)
	q.mu.Unlock()
	select {
	case <-turn:
		return unlock, nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	for i, w := range q.keys[key] {
		if w == turn {
			q.keys[key] = append(q.keys[key][:i:i], q.keys[key][i+1:]...)
			q.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	q.mu.Unlock()
	unlock() // handed over as ctx ended: pass it on
	return nil, ctx.Err()
}
