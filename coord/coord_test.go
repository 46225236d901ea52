package coord_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/coord"
	"github.com/kuradb/kura/embedded"
	"github.com/kuradb/kura/node"
	"github.com/kuradb/kura/schema"
	"github.com/kuradb/kura/topology"
)

// threeDCs is a small 3-DC topology with real (emulated) but short WAN delays, so that
// the tests exercise remote replicas without waiting long.
const threeDCs = `
name: test-three-dc
datacenters:
  - {name: a, latency_ms: 0.05, bandwidth_mbps: 10000, nodes: [{id: a1}, {id: a2}, {id: a3}]}
  - {name: b, latency_ms: 0.05, bandwidth_mbps: 10000, nodes: [{id: b1}, {id: b2}]}
  - {name: c, latency_ms: 0.05, bandwidth_mbps: 10000, nodes: [{id: c1}, {id: c2}]}
links:
  - {between: [a, b], latency_ms: 2, bandwidth_mbps: 1000}
  - {between: [a, c], latency_ms: 3, bandwidth_mbps: 1000}
  - {between: [b, c], latency_ms: 4, bandwidth_mbps: 1000}
`

func startCluster(t *testing.T, keyspaces ...schema.Keyspace) *embedded.Cluster {
	t.Helper()
	topo, err := topology.Parse([]byte(threeDCs))
	if err != nil {
		t.Fatal(err)
	}
	c, err := embedded.Start(topo, embedded.Options{
		EmulateWAN: true,
		Node: node.Config{
			GossipInterval: 50 * time.Millisecond,
			ReplicaTimeout: 2 * time.Second,
			Limits:         coord.Limits{KeyBytesMax: 1024, ValueBytesMax: 64 << 10},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := testContext(t)
	for _, ks := range keyspaces {
		if err := c.CreateKeyspace(ctx, ks); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds or the deadline passes: the cluster's own loops
// (heartbeats, hint replay) run on the wall clock.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var spread = schema.Keyspace{Name: "spread", Replication: "a=2,b=1,c=1"}

func TestEveryLevelWritesAndReadsBack(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	for i, level := range consistency.Levels() {
		for _, via := range []string{"a1", "b2", "c1"} {
			co := c.Node(via).Coordinator()
			key := []byte(fmt.Sprintf("key-%d-%s", i, via))
			value := []byte("value at " + level.String())
			if _, err := co.Put(ctx, "spread", key, value, level); err != nil {
				t.Fatalf("put at %v via %s: %v", level, via, err)
			}
			readLevel := level
			if level == consistency.Any {
				readLevel = consistency.All // ANY promises the write exists somewhere, not where
			}
			rec, found, err := co.Get(ctx, "spread", key, readLevel)
			if err != nil || !found || !bytes.Equal(rec.Value, value) {
				t.Fatalf("get at %v via %s = %q, %v, %v; want %q", readLevel, via, rec.Value, found, err, value)
			}
			if _, err := co.Delete(ctx, "spread", key, level); err != nil {
				t.Fatalf("delete at %v via %s: %v", level, via, err)
			}
			if _, found, err := co.Get(ctx, "spread", key, readLevel); err != nil || found {
				t.Fatalf("get after delete at %v via %s: found %v, err %v", readLevel, via, found, err)
			}
		}
	}
}

// replicasOf returns the ids of key's replicas in keyspace ks, as the coordinator places them.
func replicasOf(t *testing.T, c *embedded.Cluster, ks schema.Keyspace, key []byte) []string {
	t.Helper()
	compiled, err := ks.Compile()
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Nodes[0].Coordinator().Ring()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range compiled.Strategy().Replicas(r, compiled.Partition().Token(key)) {
		ids = append(ids, m.ID)
	}
	return ids
}

// coordinatorOutside returns a running node that is not one of ids.
func coordinatorOutside(c *embedded.Cluster, ids []string) *node.Node {
	for _, n := range c.Nodes {
		inside := false
		for _, id := range ids {
			inside = inside || n.ID() == id
		}
		if !inside {
			return n
		}
	}
	return nil
}

func TestQuorumWriteWithReplicaDownLeavesHintThatConverges(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	key := []byte("hinted-key")
	replicas := replicasOf(t, c, spread, key)
	co := coordinatorOutside(c, replicas)
	down := replicas[len(replicas)-1]
	if err := c.Stop(down); err != nil {
		t.Fatal(err)
	}
	eventually(t, down+" is seen down", func() bool { return !co.View().Alive(down) })

	if _, err := co.Coordinator().Put(ctx, "spread", key, []byte("v1"), consistency.Quorum); err != nil {
		t.Fatalf("QUORUM put with one of %d replicas down: %v", len(replicas), err)
	}
	if _, err := co.Coordinator().Put(ctx, "spread", key, []byte("v1"), consistency.All); !errors.Is(err, coord.ErrUnavailable) {
		t.Fatalf("ALL put with a replica down: err = %v, want unavailable", err)
	}
	if n, _ := co.Coordinator().HintsPending(); n != 1 {
		t.Fatalf("hints pending = %d, want 1", n)
	}

	if err := c.Restart(down); err != nil { // back empty: its memory died with it
		t.Fatal(err)
	}
	eventually(t, "the hint is delivered", func() bool {
		n, _ := co.Coordinator().HintsPending()
		return n == 0
	})
	// ONE through the restarted replica reads its own copy first.
	rec, found, err := c.Node(down).Coordinator().Get(ctx, "spread", key, consistency.One)
	if err != nil || !found || string(rec.Value) != "v1" {
		t.Fatalf("restarted replica reads %q, %v, %v; want v1", rec.Value, found, err)
	}
}

func TestAnySucceedsWithEveryReplicaDown(t *testing.T) {
	single := schema.Keyspace{Name: "single", Replication: "b=1"}
	c := startCluster(t, single)
	ctx := testContext(t)
	key := []byte("lonely")
	replica := replicasOf(t, c, single, key)[0]
	co := c.Node("a1")
	if err := c.Stop(replica); err != nil {
		t.Fatal(err)
	}
	eventually(t, replica+" is seen down", func() bool { return !co.View().Alive(replica) })

	if _, err := co.Coordinator().Put(ctx, "single", key, []byte("kept"), consistency.One); !errors.Is(err, coord.ErrUnavailable) {
		t.Fatalf("ONE with the only replica down: err = %v, want unavailable", err)
	}
	if _, err := co.Coordinator().Put(ctx, "single", key, []byte("kept"), consistency.Any); err != nil {
		t.Fatalf("ANY with the only replica down: %v", err)
	}
	if err := c.Restart(replica); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ANY write reaches the replica", func() bool {
		rec, found, err := co.Coordinator().Get(ctx, "single", key, consistency.One)
		return err == nil && found && string(rec.Value) == "kept"
	})
}

func TestReadRepairsStaleReplica(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	key := []byte("repaired")
	replicas := replicasOf(t, c, spread, key)
	co := coordinatorOutside(c, replicas)
	if _, err := co.Coordinator().Put(ctx, "spread", key, []byte("old"), consistency.All); err != nil {
		t.Fatal(err)
	}
	stale := replicas[0]
	if err := c.Stop(stale); err != nil {
		t.Fatal(err)
	}
	eventually(t, stale+" is seen down", func() bool { return !co.View().Alive(stale) })
	if _, err := co.Coordinator().Put(ctx, "spread", key, []byte("new"), consistency.Quorum); err != nil {
		t.Fatal(err)
	}
	// Drop the hint path: the restarted replica is empty and only read repair or the
	// hint can fix it; reading at ALL must answer "new" either way and leave it repaired.
	if err := c.Restart(stale); err != nil {
		t.Fatal(err)
	}
	eventually(t, stale+" is back", func() bool { return co.View().Alive(stale) })
	rec, found, err := co.Coordinator().Get(ctx, "spread", key, consistency.All)
	if err != nil || !found || string(rec.Value) != "new" {
		t.Fatalf("ALL read = %q, %v, %v; want new", rec.Value, found, err)
	}
	eventually(t, stale+" holds the newest value", func() bool {
		rec, found, err := c.Node(stale).Coordinator().Get(ctx, "spread", key, consistency.One)
		return err == nil && found && string(rec.Value) == "new"
	})
}

func TestBadInputGetsClearErrorsAndNodeKeepsServing(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	co := c.Node("a1").Coordinator()
	tests := []struct {
		name string
		run  func() error
		want error
		text string
	}{
		{"empty key", func() error {
			_, err := co.Put(ctx, "spread", nil, []byte("v"), consistency.One)
			return err
		}, coord.ErrInvalidArgument, "empty key"},
		{"key too large", func() error {
			_, err := co.Put(ctx, "spread", make([]byte, 1025), []byte("v"), consistency.One)
			return err
		}, coord.ErrInvalidArgument, "key of 1025 bytes exceeds the limit of 1024 bytes"},
		{"value too large", func() error {
			_, err := co.Put(ctx, "spread", []byte("k"), make([]byte, 64<<10+1), consistency.One)
			return err
		}, coord.ErrInvalidArgument, "value of 65537 bytes exceeds the limit of 65536 bytes"},
		{"read key too large", func() error {
			_, _, err := co.Get(ctx, "spread", make([]byte, 2000), consistency.One)
			return err
		}, coord.ErrInvalidArgument, "exceeds the limit"},
		{"unknown keyspace", func() error {
			_, err := co.Put(ctx, "nope", []byte("k"), []byte("v"), consistency.One)
			return err
		}, schema.ErrNoKeyspace, `no such keyspace "nope"`},
		{"read at ANY", func() error {
			_, _, err := co.Get(ctx, "spread", []byte("k"), consistency.Any)
			return err
		}, coord.ErrInvalidArgument, "ANY is a write level"},
		{"scan limit too large", func() error {
			_, err := co.Scan(ctx, "spread", nil, nil, 1<<30, consistency.One)
			return err
		}, coord.ErrInvalidArgument, "scan limit"},
		{"unknown level", func() error {
			_, err := co.Put(ctx, "spread", []byte("k"), []byte("v"), consistency.Level(99))
			return err
		}, coord.ErrUnavailable, "unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !bytes.Contains([]byte(err.Error()), []byte(tt.text)) {
				t.Fatalf("err = %q, want it to say %q", err, tt.text)
			}
		})
	}
	if _, err := co.Put(ctx, "spread", []byte("still"), []byte("serving"), consistency.Quorum); err != nil {
		t.Fatalf("node stopped serving after bad input: %v", err)
	}
}

func TestScanReturnsNewestLiveKeysInOrder(t *testing.T) {
	for _, partitioner := range []string{"hash", "ordered"} {
		t.Run(partitioner, func(t *testing.T) {
			ks := schema.Keyspace{Name: "scanned", Replication: "a=1,b=1", Partitioner: partitioner}
			c := startCluster(t, ks)
			ctx := testContext(t)
			co := c.Node("c2").Coordinator()
			var want []string
			for i := 0; i < 120; i++ {
				key := fmt.Sprintf("k%03d", i)
				if _, err := co.Put(ctx, "scanned", []byte(key), []byte("v-"+key), consistency.All); err != nil {
					t.Fatal(err)
				}
				if i%5 == 0 {
					if _, err := co.Delete(ctx, "scanned", []byte(key), consistency.All); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want = append(want, key)
			}
			for _, tt := range []struct {
				start, end string
				limit      int
				level      consistency.Level
			}{
				{"", "", 0, consistency.One},
				{"", "", 7, consistency.One},
				{"k010", "k050", 0, consistency.Quorum},
				{"k010", "k050", 9, consistency.All},
				{"k100", "", 3, consistency.LocalQuorum},
			} {
				// LOCAL levels need a coordinator in a DC that holds replicas.
				co := co
				if tt.level == consistency.LocalQuorum {
					co = c.Node("a2").Coordinator()
				}
				got, err := co.Scan(ctx, "scanned", bytesOrNil(tt.start), bytesOrNil(tt.end), tt.limit, tt.level)
				if err != nil {
					t.Fatalf("scan %+v: %v", tt, err)
				}
				expect := expectedScan(want, tt.start, tt.end, tt.limit)
				var keys []string
				for _, r := range got {
					keys = append(keys, string(r.Key))
					if string(r.Value) != "v-"+string(r.Key) {
						t.Fatalf("scan %+v: key %s has value %q", tt, r.Key, r.Value)
					}
				}
				if fmt.Sprint(keys) != fmt.Sprint(expect) {
					t.Fatalf("scan %+v = %v, want %v", tt, keys, expect)
				}
			}
			if _, err := co.Scan(ctx, "scanned", nil, nil, 0, consistency.LocalOne); !errors.Is(err, coord.ErrUnavailable) {
				t.Fatalf("LOCAL_ONE scan from a DC without replicas: err = %v, want unavailable", err)
			}
		})
	}
}

func bytesOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

func expectedScan(keys []string, start, end string, limit int) []string {
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		if k >= start && (end == "" || k < end) && (limit == 0 || len(out) < limit) {
			out = append(out, k)
		}
	}
	return out
}
