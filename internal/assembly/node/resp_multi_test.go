package node

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/core/schema"
)

// TestRedisTransactionsAcrossDCs runs MULTI/EXEC and WATCH through go-redis on a cluster
// of two DCs, in a keyspace whose transactions run per partition: a pipelined
// transaction over two keys of a tag, optimistic transfers between two keys of a tag from
// clients of both DCs (WATCH, then MULTI/EXEC, again when another's EXEC came between),
// which must neither lose nor make money, the refusal of keys of two tags, and a
// transaction over two keys of a tag in the default keyspace, whose transactions run per
// partition in the default configuration (a client that names no keyspace).
func TestRedisTransactionsAcrossDCs(t *testing.T) {
	t.Parallel()
	nodes := startTypedCluster(t)
	for _, n := range nodes {
		waitUntil(t, "node "+n.ID()+" counts every node as running partition transactions", n.PartitionTransactionsRead)
	}
	ctx := context.Background()
	if err := nodes[0].CreateKeyspace(ctx, schema.Keyspace{Name: "tx", Replication: "dc1=2,dc2=1", Transactions: schema.TransactionsPartition}); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		waitUntil(t, "node "+n.ID()+" knows keyspace tx", func() bool { _, err := n.Keyspace("tx"); return err == nil })
	}
	client := func(n *Node) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: n.RESPAddr(), PoolSize: 4,
			OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.Do(ctx, "KURA.KEYSPACE", "tx").Err() }})
		t.Cleanup(func() { c.Close() })
		return c
	}
	near, far := client(nodes[0]), client(nodes[2])

	cmds, err := near.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "{acct}a", 100, 0)
		p.Set(ctx, "{acct}b", 100, 0)
		p.IncrBy(ctx, "{acct}a", 5)
		p.MGet(ctx, "{acct}a", "{acct}b")
		return nil
	})
	if err != nil || len(cmds) != 4 || cmds[2].(*redis.IntCmd).Val() != 105 {
		t.Fatalf("TxPipelined = %v, %v; want the four replies, the INCRBY's 105", cmds, err)
	}
	if got := cmds[3].(*redis.SliceCmd).Val(); len(got) != 2 || got[0] != "105" || got[1] != "100" {
		t.Fatalf("MGET inside the transaction = %v, want [105 100]", got)
	}

	// Transfers of 1 from a to b and back, from both DCs at once, each WATCHing both keys:
	// an EXEC whose keys changed since its WATCH does nothing (TxFailedErr) and is tried
	// again. The sum stays 205, and a ends where the transfers leave it.
	transfer := func(c *redis.Client, from, to string) error {
		for range 100 {
			err := c.Watch(ctx, func(tx *redis.Tx) error {
				balance, err := tx.Get(ctx, from).Int()
				if err != nil {
					return err
				}
				_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Set(ctx, from, balance-1, 0)
					p.IncrBy(ctx, to, 1)
					return nil
				})
				return err
			}, from, to)
			if !errors.Is(err, redis.TxFailedErr) {
				return err
			}
		}
		return errors.New("100 tries lost to other transfers")
	}
	const perClient = 6
	var wg sync.WaitGroup
	errs := make(chan error, 4*perClient)
	for i, c := range []*redis.Client{near, far, near, far} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from, to := "{acct}a", "{acct}b"
			if i%2 == 1 {
				from, to = to, from
			}
			for range perClient {
				errs <- transfer(c, from, to)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("transfer: %v", err)
		}
	}
	// Read in a transaction: a serial read, which a commit still on its way from the
	// other coordinator cannot slip past.
	var final *redis.SliceCmd
	if _, err := far.TxPipelined(ctx, func(p redis.Pipeliner) error {
		final = p.MGet(ctx, "{acct}a", "{acct}b")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := final.Val()
	a, _ := strconv.Atoi(got[0].(string))
	b, _ := strconv.Atoi(got[1].(string))
	if a != 105 || b != 100 {
		t.Fatalf("after as many transfers each way: a=%d b=%d, want 105 and 100 (sum 205)", a, b)
	}

	_, err = near.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, "{acct}a")
		p.Incr(ctx, "{other}a")
		return nil
	})
	if err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT") {
		t.Fatalf("keys of two tags: %v, want CROSSSLOT", err)
	}
	plain := redis.NewClient(&redis.Options{Addr: nodes[1].RESPAddr()})
	t.Cleanup(func() { plain.Close() })
	cmds, err = plain.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, "{acct}a")
		p.IncrBy(ctx, "{acct}b", 2)
		return nil
	})
	if err != nil || len(cmds) != 2 || cmds[0].(*redis.IntCmd).Val() != 1 || cmds[1].(*redis.IntCmd).Val() != 2 {
		t.Fatalf("two keys of a tag in the default keyspace: %v, %v; want the replies 1 and 2", cmds, err)
	}
	// Read back through another node in a transaction, serially, as above.
	other := redis.NewClient(&redis.Options{Addr: nodes[2].RESPAddr()})
	t.Cleanup(func() { other.Close() })
	if _, err := other.TxPipelined(ctx, func(p redis.Pipeliner) error {
		final = p.MGet(ctx, "{acct}a", "{acct}b")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := final.Val(); len(got) != 2 || got[0] != "1" || got[1] != "2" {
		t.Fatalf("the default keyspace's {acct}a, {acct}b through another node = %v, want [1 2]", got)
	}
}
