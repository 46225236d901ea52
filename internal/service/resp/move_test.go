package resp

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestMovesInOneTransaction: in a keyspace whose transactions run per partition (the
// fake's "default"), LMOVE, RPOPLPUSH, BLMOVE, BRPOPLPUSH and SMOVE between two keys of
// one hash tag run as one transaction over both keys, so the element is never in both;
// across tags, or in a keyspace of per-key transactions, they take their steps one after
// the other, with no transaction over the two keys.
func TestMovesInOneTransaction(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    []string
		move     []string
		want     string
		together bool // one transaction over both keys
	}{
		{"LMOVE in one tag", cmd("RPUSH", "{q}a", "x", "y"), cmd("LMOVE", "{q}a", "{q}b", "LEFT", "RIGHT"), "$1\r\nx\r\n", true},
		{"RPOPLPUSH in one tag", cmd("RPUSH", "{q}a", "x", "y"), cmd("RPOPLPUSH", "{q}a", "{q}b"), "$1\r\ny\r\n", true},
		{"BLMOVE in one tag", cmd("RPUSH", "{q}a", "x", "y"), cmd("BLMOVE", "{q}a", "{q}b", "RIGHT", "LEFT", "0"), "$1\r\ny\r\n", true},
		{"BRPOPLPUSH in one tag", cmd("RPUSH", "{q}a", "x", "y"), cmd("BRPOPLPUSH", "{q}a", "{q}b", "0"), "$1\r\ny\r\n", true},
		{"LMOVE of an empty list in one tag", cmd("RPUSH", "{q}c", "x", "y"), cmd("LMOVE", "{q}a", "{q}b", "LEFT", "RIGHT"), "$-1\r\n", true},
		{"SMOVE in one tag", cmd("SADD", "{q}a", "x", "y"), cmd("SMOVE", "{q}a", "{q}b", "x"), ":1\r\n", true},
		{"LMOVE across tags", cmd("RPUSH", "{q}a", "x", "y"), cmd("LMOVE", "{q}a", "{r}b", "LEFT", "RIGHT"), "$1\r\nx\r\n", false},
		{"SMOVE across tags", cmd("SADD", "{q}a", "x", "y"), cmd("SMOVE", "{q}a", "{r}b", "x"), ":1\r\n", false},
		{"LMOVE of untagged keys", cmd("RPUSH", "a", "x", "y"), cmd("LMOVE", "a", "b", "LEFT", "RIGHT"), "$1\r\nx\r\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, fake, addr := startServer(t, Config{})
			c := dial(t, addr)
			c.do(":2\r\n", tc.setup...)
			fake.mu.Lock()
			fake.calls = nil
			fake.mu.Unlock()
			c.do(tc.want, tc.move...)
			fake.mu.Lock()
			calls := slices.Clone(fake.calls)
			fake.mu.Unlock()
			both := "casbatch " + strings.Join(tc.move[1:3], " ")
			if got := slices.Contains(calls, both); got != tc.together {
				t.Errorf("backend calls %q: a transaction over both keys %v, want %v", calls, got, tc.together)
			}
		})
	}
}

// TestBlockedMove: a BLMOVE blocked on an empty source takes the item another client
// pushes to it, whether it was blocked already or not: across hash tags, its steps one
// after the other; within one tag of a keyspace of partition transactions, in one
// transaction.
func TestBlockedMove(t *testing.T) {
	for _, tc := range []struct{ name, src, dst string }{
		{"across tags", "{a}q", "{b}q"},
		{"in one tag", "{q}in", "{q}out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, addr := startServer(t, Config{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			waiter := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
			defer waiter.Close()
			pusher := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
			defer pusher.Close()
			moved := make(chan string, 1)
			go func() {
				v, err := waiter.BLMove(ctx, tc.src, tc.dst, "LEFT", "RIGHT", 0).Result()
				if err != nil {
					v = "error: " + err.Error()
				}
				moved <- v
			}()
			if err := pusher.RPush(ctx, tc.src, "x").Err(); err != nil {
				t.Fatalf("RPUSH: %v", err)
			}
			if v := <-moved; v != "x" {
				t.Fatalf("BLMOVE = %q, want x", v)
			}
			if got, err := pusher.LRange(ctx, tc.dst, 0, -1).Result(); err != nil || !slices.Equal(got, []string{"x"}) {
				t.Errorf("LRANGE of the destination = %v, %v, want [x]", got, err)
			}
			if n, err := pusher.LLen(ctx, tc.src).Result(); err != nil || n != 0 {
				t.Errorf("LLEN of the source = %d, %v, want 0", n, err)
			}
		})
	}
}
