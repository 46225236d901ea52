package node

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/service/resp"
	"github.com/redis/go-redis/v9"
)

// startFrontEndNode starts an in-memory node serving RESP and HTTP on loopback ports.
func startFrontEndNode(t *testing.T, id, dc, defaultReplication string, seeds ...string) *Node {
	t.Helper()
	n, err := Start(Config{
		ID: id, DC: dc, Listen: "127.0.0.1:0", RESPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		Seeds: seeds, InMemory: true, DefaultReplication: defaultReplication,
		GossipInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// startFrontEndCluster starts front-end nodes in the given DCs, joined through the first,
// whose default keyspace has the given replication, and returns once they see each other.
func startFrontEndCluster(t *testing.T, replication string, dcs ...string) []*Node {
	t.Helper()
	return startCluster(t, startFrontEndNode, replication, dcs...)
}

// startTypedCluster starts three front-end nodes, two in dc1 and one in dc2 (dc1=2,dc2=1),
// and waits until each counts every node as reading typed records, so that collections
// may be written: the cluster of the Redis data types' tests.
func startTypedCluster(t *testing.T) []*Node {
	t.Helper()
	nodes := startFrontEndCluster(t, "dc1=2,dc2=1", "dc1", "dc1", "dc2")
	for _, n := range nodes {
		waitUntil(t, "node "+n.ID()+" counts every node as reading typed records", n.RecordTypesRead)
	}
	return nodes
}

// redisClientAtAll returns a go-redis client of node n's Redis port, its connections at
// ALL: every replica holds a write once acknowledged, so another node's reads see it
// whatever replica they ask. It is closed when the test ends.
func redisClientAtAll(t *testing.T, n *Node, poolSize int) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: n.RESPAddr(), PoolSize: poolSize,
		OnConnect: func(ctx context.Context, cn *redis.Conn) error {
			return cn.Do(ctx, "KURA.CONSISTENCY", "ALL").Err()
		}})
	t.Cleanup(func() { c.Close() })
	return c
}

// startCluster starts nodes n1, n2 ... in the given DCs with start, joined through the
// first, whose default keyspace has the given replication, and returns once they see each
// other.
func startCluster(t *testing.T, start func(t *testing.T, id, dc, defaultReplication string, seeds ...string) *Node, replication string, dcs ...string) []*Node {
	t.Helper()
	var nodes []*Node
	for i, dc := range dcs {
		var seeds []string
		if i > 0 {
			seeds = []string{nodes[0].Addr()}
		}
		nodes = append(nodes, start(t, "n"+string(rune('1'+i)), dc, replication, seeds...))
	}
	waitAllReachable(t, nodes)
	// Reachable is not enough: a node joined through a seed owns its ranges only once
	// normal, and a write before that reaches the other DC by streaming, not as a write.
	waitAllNormal(t, len(nodes), nodes...)
	for _, n := range nodes {
		// The joiners adopt the first node's definition, which it settled as it started.
		waitUntil(t, "node "+n.ID()+" settled the default keyspace", func() bool { return n.catalog.TransactionsReady(schema.DefaultKeyspace) == nil })
		if ks, err := n.Keyspace(schema.DefaultKeyspace); err != nil || ks.Replication != replication || !ks.PartitionTransactions() {
			t.Fatalf("%s: default keyspace %+v, %v; want replication %s, transactions partition", n.ID(), ks, err, replication)
		}
	}
	return nodes
}

// waitAllReachable waits until every node knows every other and sees it alive.
func waitAllReachable(t *testing.T, nodes []*Node) {
	t.Helper()
	waitUntil(t, "every node sees every other alive", func() bool {
		for _, n := range nodes {
			if len(n.View().Nodes()) != len(nodes) {
				return false
			}
			for _, other := range nodes {
				if !n.View().State(other.ID()).Reachable() {
					return false
				}
			}
		}
		return true
	})
}

func TestFrontEndsStartOnlyWhenConfigured(t *testing.T) {
	plain, err := Start(Config{ID: "plain", DC: "dc1", Listen: "127.0.0.1:0", InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if plain.RESPAddr() != "" || plain.HTTPAddr() != "" {
		t.Fatalf("a node configured without front ends serves RESP %q, HTTP %q", plain.RESPAddr(), plain.HTTPAddr())
	}

	n := startFrontEndNode(t, "n1", "dc1", "")
	addrs := []string{n.RESPAddr(), n.HTTPAddr()}
	for _, addr := range addrs {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("front end %s: %v", addr, err)
		}
		nc.Close()
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	for _, addr := range addrs {
		if nc, err := net.Dial("tcp", addr); err == nil {
			nc.Close()
			t.Errorf("%s still accepts connections after Close", addr)
		}
	}
}

func TestFrontEndListenErrors(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{RESPAddr: "127.0.0.1:-1"}, "listen for Redis clients"},
		{Config{HTTPAddr: "127.0.0.1:-1"}, "listen for HTTP"},
		{Config{RESPAddr: "127.0.0.1:0", RESPKeyspace: "9lives"}, `the Redis connections' keyspace (RESPKeyspace): invalid keyspace: name "9lives" must be 1-48 letters`},
	}
	for _, tt := range tests {
		cfg := tt.cfg
		cfg.ID, cfg.DC, cfg.Listen, cfg.InMemory = "n1", "dc1", "127.0.0.1:0", true
		n, err := Start(cfg)
		if err == nil {
			n.Close()
			t.Fatalf("Start with %+v succeeded", tt.cfg)
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %q, want %q", err, tt.want)
		}
	}
}

// TestFrontEndsCloseTheirListenersBeforeServing: a node closed before its servers' accept
// loops took their listeners (each starts on a goroutine of its own) refuses connections
// as soon as Close returns, as when they had: the servers alone would close those
// listeners only once their loops started, after Close.
func TestFrontEndsCloseTheirListenersBeforeServing(t *testing.T) {
	var f frontEnds
	var err error
	if f.respListener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if f.httpListener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	f.resp, f.http = resp.NewServer(resp.Config{}), &http.Server{}
	addrs := []string{f.respListener.Addr().String(), f.httpListener.Addr().String()}
	f.close()
	for _, addr := range addrs {
		if nc, err := net.Dial("tcp", addr); err == nil {
			nc.Close()
			t.Errorf("%s still accepts connections after close", addr)
		}
	}
}
