package node

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestGoRedisHashAcrossDCs: hashes through the whole node, two DCs' nodes each serving a
// client. Fields written through either node make one hash; a DEL through one ends every
// field, and the hash written again through the other holds only its new field.
func TestGoRedisHashAcrossDCs(t *testing.T) {
	nodes := startTypedCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := func(n *Node) *redis.Client { return redisClientAtAll(t, n, 1) }
	a, b := client(nodes[0]), client(nodes[2])
	if err := a.HSet(ctx, "{u}:h", "name", "ann").Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.HSet(ctx, "{u}:h", "city", "oslo").Err(); err != nil {
		t.Fatal(err)
	}
	if m, err := a.HGetAll(ctx, "{u}:h").Result(); err != nil || !maps.Equal(m, map[string]string{"name": "ann", "city": "oslo"}) {
		t.Fatalf("HGETALL = %v, %v", m, err)
	}
	if typ, err := b.Type(ctx, "{u}:h").Result(); err != nil || typ != "hash" {
		t.Fatalf("TYPE = %q, %v", typ, err)
	}
	if err := b.Get(ctx, "{u}:h").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("GET of a hash: %v, want WRONGTYPE", err)
	}
	if n, err := b.Del(ctx, "{u}:h").Result(); err != nil || n != 1 {
		t.Fatalf("DEL = %d, %v", n, err)
	}
	if err := a.HSet(ctx, "{u}:h", "fresh", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if m, err := b.HGetAll(ctx, "{u}:h").Result(); err != nil || !maps.Equal(m, map[string]string{"fresh": "1"}) {
		t.Fatalf("HGETALL after DEL and HSET = %v, %v; want only the new field", m, err)
	}
}
