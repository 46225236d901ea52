package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestGoRedisSetAcrossDCs: sets through the whole node, two DCs' nodes each serving a
// client. Members added through both nodes at once make one set, none lost; an SREM
// through one node removes adds written through the other (each tagged by its node);
// the STORE forms and SMOVE work on one hash tag (SMOVE as a transaction) and across
// tags; a DEL ends every member, and the set written again holds only its new one.
func TestGoRedisSetAcrossDCs(t *testing.T) {
	nodes := startTypedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := func(n *Node) *redis.Client { return redisClientAtAll(t, n, 4) }
	a, b := client(nodes[0]), client(nodes[2])

	var want []string
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 20 {
		for side, c := range []*redis.Client{a, b} {
			member := fmt.Sprintf("%c%02d", 'a'+side, i)
			want = append(want, member)
			wg.Go(func() {
				if n, err := c.SAdd(ctx, "{u}:s", member).Result(); err != nil || n != 1 {
					errs <- fmt.Errorf("SADD %s = %d, %v", member, n, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	slices.Sort(want)
	for _, c := range []*redis.Client{a, b} {
		if got, err := c.SMembers(ctx, "{u}:s").Result(); err != nil || !slices.Equal(got, want) {
			t.Fatalf("SMEMBERS = %v, %v; want the %d members added through both nodes", got, err, len(want))
		}
	}
	if n, err := b.SRem(ctx, "{u}:s", "a00", "a01", "b00", "none").Result(); err != nil || n != 3 {
		t.Fatalf("SREM = %d, %v", n, err)
	}
	if ok, err := a.SIsMember(ctx, "{u}:s", "a00").Result(); err != nil || ok {
		t.Fatalf("SISMEMBER of a member removed through the other node = %v, %v", ok, err)
	}
	if n, err := a.SCard(ctx, "{u}:s").Result(); err != nil || n != 37 {
		t.Fatalf("SCARD = %d, %v", n, err)
	}
	if err := a.SAdd(ctx, "{u}:t", "a02", "zz").Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := b.SInterStore(ctx, "{u}:both", "{u}:s", "{u}:t").Result(); err != nil || n != 1 {
		t.Fatalf("SINTERSTORE = %d, %v", n, err)
	}
	if got, err := a.SMembers(ctx, "{u}:both").Result(); err != nil || !slices.Equal(got, []string{"a02"}) {
		t.Fatalf("SMEMBERS of the stored intersection = %v, %v", got, err)
	}
	if ok, err := b.SMove(ctx, "{u}:t", "{u}:s", "zz").Result(); err != nil || !ok {
		t.Fatalf("SMOVE = %v, %v", ok, err)
	}
	// Within one tag of the default keyspace SMOVE is one transaction, whose commit is
	// sent once the client was answered (docs/lwt.md): the node that ran it waits for
	// the commit before it reads the key, another node's read may come first.
	if ok, err := b.SIsMember(ctx, "{u}:s", "zz").Result(); err != nil || !ok {
		t.Fatalf("SISMEMBER after SMOVE = %v, %v", ok, err)
	}
	if n, err := a.SUnionStore(ctx, "{v}:x", "{u}:s").Result(); err != nil || n != 38 {
		t.Fatalf("SUNIONSTORE across hash tags = %d, %v, want 38", n, err)
	}
	if ok, err := b.SMove(ctx, "{v}:x", "{w}:y", "zz").Result(); err != nil || !ok {
		t.Fatalf("SMOVE across hash tags = %v, %v", ok, err)
	}
	for key, want := range map[string]int64{"{v}:x": 37, "{w}:y": 1, "{u}:s": 38} {
		if n, err := a.SCard(ctx, key).Result(); err != nil || n != want {
			t.Fatalf("SCARD %s after the moves across tags = %d, %v, want %d", key, n, err, want)
		}
	}
	if typ, err := b.Type(ctx, "{u}:s").Result(); err != nil || typ != "set" {
		t.Fatalf("TYPE = %q, %v", typ, err)
	}
	if err := b.Get(ctx, "{u}:s").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("GET of a set: %v, want WRONGTYPE", err)
	}
	if n, err := b.Del(ctx, "{u}:s").Result(); err != nil || n != 1 {
		t.Fatalf("DEL = %d, %v", n, err)
	}
	if err := a.SAdd(ctx, "{u}:s", "fresh").Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := b.SMembers(ctx, "{u}:s").Result(); err != nil || !slices.Equal(got, []string{"fresh"}) {
		t.Fatalf("SMEMBERS after DEL and SADD = %v, %v; want only the new member", got, err)
	}
}
