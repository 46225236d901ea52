package node

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestGoRedisZsetAcrossDCs: sorted sets through the whole node, two DCs' nodes each
// serving a client. Members written through either node make one sorted set in score
// order; a member's score set through both is the later one's on both; ZINCRBY through
// both adds up; a DEL through one ends every member.
func TestGoRedisZsetAcrossDCs(t *testing.T) {
	nodes := startTypedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := func(n *Node) *redis.Client { return redisClientAtAll(t, n, 1) }
	a, b := client(nodes[0]), client(nodes[2])
	if err := a.ZAdd(ctx, "{u}:z", redis.Z{Score: 1, Member: "ann"}, redis.Z{Score: 5, Member: "bob"}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.ZAdd(ctx, "{u}:z", redis.Z{Score: 3, Member: "cy"}, redis.Z{Score: 9, Member: "ann"}).Err(); err != nil {
		t.Fatal(err)
	}
	want := []redis.Z{{Score: 3, Member: "cy"}, {Score: 5, Member: "bob"}, {Score: 9, Member: "ann"}}
	for _, c := range []*redis.Client{a, b} {
		if zs, err := c.ZRangeWithScores(ctx, "{u}:z", 0, -1).Result(); err != nil || !slices.Equal(zs, want) {
			t.Fatalf("ZRANGE WITHSCORES = %v, %v; want %v", zs, err, want)
		}
	}
	if err := a.ZIncrBy(ctx, "{u}:z", 2, "cy").Err(); err != nil {
		t.Fatal(err)
	}
	if f, err := b.ZIncrBy(ctx, "{u}:z", 0.5, "cy").Result(); err != nil || f != 5.5 {
		t.Fatalf("ZINCRBY after the other DC's = %v, %v; want 5.5", f, err)
	}
	if names, err := a.ZRangeByScore(ctx, "{u}:z", &redis.ZRangeBy{Min: "(5", Max: "+inf"}).Result(); err != nil || !slices.Equal(names, []string{"cy", "ann"}) {
		t.Fatalf("ZRANGEBYSCORE (5 +inf = %v, %v", names, err)
	}
	if typ, err := b.Type(ctx, "{u}:z").Result(); err != nil || typ != "zset" {
		t.Fatalf("TYPE = %q, %v", typ, err)
	}
	if err := b.Get(ctx, "{u}:z").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("GET of a sorted set: %v, want WRONGTYPE", err)
	}
	if n, err := b.Del(ctx, "{u}:z").Result(); err != nil || n != 1 {
		t.Fatalf("DEL = %d, %v", n, err)
	}
	if err := a.ZAdd(ctx, "{u}:z", redis.Z{Score: 7, Member: "fresh"}).Err(); err != nil {
		t.Fatal(err)
	}
	if zs, err := b.ZRangeWithScores(ctx, "{u}:z", 0, -1).Result(); err != nil || !slices.Equal(zs, []redis.Z{{Score: 7, Member: "fresh"}}) {
		t.Fatalf("ZRANGE after DEL and ZADD = %v, %v; want only the new member", zs, err)
	}
}
