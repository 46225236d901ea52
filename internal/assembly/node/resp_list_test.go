package node

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestGoRedisListQueueAcrossDCs: a list used as a queue through two DCs' nodes. While a
// client in each DC pushes (one at the head, one at the tail) and two clients in each DC
// pop its head, racing for the same items, no item is popped twice, and every
// acknowledged push is either popped or still in the list, which both nodes read in one
// order. The list is filled first with more items than the pops take, so it never runs
// empty meanwhile (an emptied list keeps its header and reads as absent:
// internal/service/resp/list_test.go).
func TestGoRedisListQueueAcrossDCs(t *testing.T) {
	t.Parallel()
	nodes := startTypedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := func(n *Node) *redis.Client { return redisClientAtAll(t, n, 1) }
	const key, prefill, pushes, pops = "{q}:jobs", 50, 20, 10
	var want []string
	for i := range prefill {
		want = append(want, fmt.Sprintf("pre-%d", i))
	}
	if err := client(nodes[0]).RPush(ctx, key, anys(want)...).Err(); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var popped []string
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i, n := range []*Node{nodes[0], nodes[2]} {
		pusher := client(n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range pushes {
				item := fmt.Sprintf("%s-%d", n.ID(), j)
				push := pusher.RPush
				if i == 1 {
					push = pusher.LPush
				}
				if err := push(ctx, key, item).Err(); err != nil {
					errs <- fmt.Errorf("push %s: %w", item, err)
					return
				}
				mu.Lock()
				want = append(want, item) // acknowledged
				mu.Unlock()
			}
		}()
	}
	for _, n := range []*Node{nodes[0], nodes[0], nodes[2], nodes[2]} {
		popper := client(n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range pops {
				item, err := popper.LPop(ctx, key).Result()
				if err != nil {
					errs <- fmt.Errorf("pop through %s: %w", n.ID(), err)
					return
				}
				mu.Lock()
				popped = append(popped, item)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// A node's read waits for the commits of its own pops still on their way, not for
	// another coordinator's (a plain read takes no part in Paxos: docs/lwt.md): read
	// through a, then b, then a again, so that each of the last two reads follows the
	// other node's wait.
	a, b := client(nodes[0]), client(nodes[2])
	if err := a.LRange(ctx, key, 0, -1).Err(); err != nil {
		t.Fatal(err)
	}
	fromB, err := b.LRange(ctx, key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	left, err := a.LRange(ctx, key, 0, -1).Result()
	if err != nil || !slices.Equal(fromB, left) {
		t.Fatalf("the list through the other DC's node = %v; want %v (%v)", fromB, left, err)
	}
	seen := map[string]int{}
	for _, item := range popped {
		if seen[item]++; seen[item] > 1 {
			t.Errorf("item %s popped twice", item)
		}
	}
	for _, item := range left {
		if seen[item]++; seen[item] > 1 {
			t.Errorf("item %s both popped and left in the list, or in it twice", item)
		}
	}
	for _, item := range want {
		if seen[item] == 0 {
			t.Errorf("acknowledged item %s neither popped nor in the list", item)
		}
	}
	if len(popped) != 4*pops || len(seen) != len(want) {
		t.Errorf("%d popped, %d items seen; want %d popped, %d items", len(popped), len(seen), 4*pops, len(want))
	}
}

func anys(items []string) []any {
	out := make([]any, len(items))
	for i, it := range items {
		out[i] = it
	}
	return out
}
