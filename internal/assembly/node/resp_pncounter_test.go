package node

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/io/faults"
)

// TestGoRedisPNCounterAcrossACut: a conflict-free counter incremented and decremented
// at once through a node of each DC, at LOCAL_QUORUM, while dc2 is cut off from dc1:
// every increment is answered without Paxos and without the other DC. Healed, every
// node reads the sum of every acknowledged step. A DEL then removes the counter on every
// node, and the next INCR starts a new one.
func TestGoRedisPNCounterAcrossACut(t *testing.T) {
	t.Parallel()
	// startConsoleNode: front ends and fault injection, to cut the DCs apart.
	nodes := startCluster(t, startConsoleNode, "dc1=2,dc2=1", "dc1", "dc1", "dc2")
	for _, n := range nodes {
		waitUntil(t, "node "+n.ID()+" counts every node as reading typed records", n.RecordTypesRead)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := func(n *Node, level string, pool int) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: n.RESPAddr(), PoolSize: pool, MaxRetries: -1,
			OnConnect: func(ctx context.Context, cn *redis.Conn) error {
				if err := cn.Do(ctx, "KURA.COUNTERS", "PN").Err(); err != nil {
					return err
				}
				return cn.Do(ctx, "KURA.CONSISTENCY", level).Err()
			}})
		t.Cleanup(func() { c.Close() })
		return c
	}
	const key = "{c}:hits"
	dc1, dc2 := client(nodes[0], "LOCAL_QUORUM", 8), client(nodes[2], "LOCAL_QUORUM", 8)
	if v, err := dc1.Incr(ctx, key).Result(); err != nil || v != 1 {
		t.Fatalf("first INCR = %d, %v", v, err)
	}
	acked := atomic.Int64{}
	acked.Add(1)

	// The cut: dc2's node hears nothing from dc1 and dc1 nothing from it.
	if err := nodes[2].faults.Set(faults.Spec{Partitioned: []string{"dc:dc1"}}); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes[:2] {
		if err := n.faults.Set(faults.Spec{Partitioned: []string{"dc:dc2"}}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for _, c := range []*redis.Client{dc1, dc2} {
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 25 {
					step := int64(w*10 + i%7 - 3) // some negative: a PN counter
					if err := c.IncrBy(ctx, key, step).Err(); err != nil {
						t.Errorf("INCRBY %d during the cut: %v", step, err)
						continue
					}
					acked.Add(step)
				}
			}()
		}
	}
	wg.Wait()
	want := strconv.FormatInt(acked.Load(), 10)
	for _, n := range nodes {
		if err := n.faults.Set(faults.Spec{}); err != nil {
			t.Fatal(err)
		}
	}
	readers := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		readers[i] = client(n, "ALL", 1)
	}
	for i, r := range readers {
		// The last answer goes in the failure message: a wrong sum and a read refused
		// (a peer still down in gossip) fail this wait for different reasons.
		var v string
		var err error
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if v, err = r.Get(ctx, key).Result(); err == nil && v == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %s never read the sum of every acknowledged step, %s: last read %q, %v", nodes[i].ID(), want, v, err)
			}
		}
	}
	// A pipeline's GETs are read together (coord.GetAll), then the counter summed.
	pipe := readers[1].Pipeline()
	get, mget := pipe.Get(ctx, key), pipe.MGet(ctx, key, "{c}:none")
	if _, err := pipe.Exec(ctx); err != nil || get.Val() != want || len(mget.Val()) != 2 || mget.Val()[0] != want || mget.Val()[1] != nil {
		t.Fatalf("pipelined GET = %q, MGET = %v, %v; want %s", get.Val(), mget.Val(), err, want)
	}
	if typ, err := readers[2].Type(ctx, key).Result(); err != nil || typ != "string" {
		t.Fatalf("TYPE = %q, %v; want string", typ, err)
	}

	if n, err := readers[2].Del(ctx, key).Result(); err != nil || n != 1 {
		t.Fatalf("DEL = %d, %v", n, err)
	}
	for i, r := range readers {
		if err := r.Get(ctx, key).Err(); err != redis.Nil {
			t.Fatalf("GET through %s after DEL: %v, want nil", nodes[i].ID(), err)
		}
	}
	if v, err := readers[0].Incr(ctx, key).Result(); err != nil || v != 1 {
		t.Fatalf("INCR after DEL = %d, %v; want 1", v, err)
	}
	for i, r := range readers {
		if v, err := r.Get(ctx, key).Result(); err != nil || v != "1" {
			t.Fatalf("GET through %s after DEL and INCR = %q, %v; want 1", nodes[i].ID(), v, err)
		}
	}
}
