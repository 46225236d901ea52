package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
)

// ycsbKey is a key of YCSB's shape: "user" and the positive FNV-1a hash of the record's
// number in decimal.
func ycsbKey(i uint64) string {
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], i)
	h.Write(b[:])
	return "user" + strconv.FormatUint(h.Sum64()&math.MaxInt64, 10)
}

// maxOverMean is the largest row count over the mean.
func maxOverMean(rows []*kurav1.NodeRows) float64 {
	var most, total int64
	for _, r := range rows {
		most = max(most, r.GetRows())
		total += r.GetRows()
	}
	if total == 0 {
		return 0
	}
	return float64(most) / (float64(total) / float64(len(rows)))
}

// TestRebalanceMovesWithoutLosingAWrite: four nodes, an ordered keyspace with two
// replicas per key loaded with YCSB-shaped keys, which all share a token prefix and so
// sit on one replica set. A rebalance through the admin API, under a write load, must
// spread the rows, and afterwards every acknowledged key, and every scan, reads at ALL
// through every node; keys deleted before are still deleted.
func TestRebalanceMovesWithoutLosingAWrite(t *testing.T) {
	t.Parallel()
	a := startNode(t, "a", "dc1")
	nodes := []*Node{a, startNode(t, "b", "dc1", a.Addr()), startNode(t, "c", "dc1", a.Addr()), startNode(t, "d", "dc1", a.Addr())}
	waitAllNormal(t, 4, nodes...)
	ctx := context.Background()
	createKeyspace(t, schema.Keyspace{Name: "app", Replication: "dc1=2", Partitioner: "ordered"}, a, nodes...)
	var keys []string
	for i := range 2000 {
		key := ycsbKey(uint64(i))
		if _, err := a.Coordinator().Put(ctx, "app", []byte(key), []byte("v"), 0, consistency.Quorum); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	deleted := keys[:100]
	keys = keys[100:]
	for _, key := range deleted {
		if _, err := a.Coordinator().Delete(ctx, "app", []byte(key), consistency.Quorum); err != nil {
			t.Fatal(err)
		}
	}

	w := startYCSBWriter(nodes[1], len(keys)+len(deleted))
	stream, err := adminOf(t, nodes[2]).Rebalance(ctx, &kurav1.RebalanceRequest{Keyspace: "app", Splits: 256})
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	var last *kurav1.RebalanceProgress
	for {
		p, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("rebalance failed after %q: %v", steps, err)
		}
		steps = append(steps, p.GetStep())
		last = p
	}
	keys = append(keys, w.finish()...)
	if last.GetStep() != "done" {
		t.Fatalf("the rebalance ended with %q, want done (steps %q)", last.GetStep(), steps)
	}
	before, after := maxOverMean(last.GetBefore()), maxOverMean(last.GetAfter())
	hashed := hashSpread(t, a, keys)
	t.Logf("max/mean rows per node: before %.2f, after %.2f (the hash partitioner: %.2f); steps:\n%s", before, after, hashed, strings.Join(steps, "\n"))
	if before < 1.99 || after > 1.15*hashed {
		t.Errorf("max/mean rows per node %.2f before, %.2f after; want every row on one replica set before (2), and after within 15%% of the hash partitioner's %.2f on this ring",
			before, after, hashed)
	}

	for _, n := range nodes {
		ks, err := n.Keyspace("app")
		if err != nil {
			t.Fatal(err)
		}
		if ks.Moving || len(ks.Splits) == 0 {
			t.Errorf("%s: keyspace after the rebalance is moving %v with %d split keys", n.ID(), ks.Moving, len(ks.Splits))
		}
		missing := 0
		for _, key := range keys {
			if _, found, err := n.Coordinator().Get(ctx, "app", []byte(key), consistency.All); err != nil || !found {
				missing++
			}
		}
		for _, key := range deleted {
			if _, found, err := n.Coordinator().Get(ctx, "app", []byte(key), consistency.All); err != nil || found {
				t.Errorf("%s: deleted key %s found %v (err %v) after the rebalance", n.ID(), key, found, err)
			}
		}
		if missing > 0 {
			t.Errorf("%s: %d of %d acknowledged keys missing at ALL after the rebalance", n.ID(), missing, len(keys))
		}
		checkScan(t, n, keys)
	}
}

// checkScan scans the whole keyspace app through n at ALL, in pages, and fails unless it
// finds exactly keys, in order.
func checkScan(t *testing.T, n *Node, keys []string) {
	t.Helper()
	seen := map[string]bool{}
	var start []byte
	for {
		recs, err := n.Coordinator().Scan(context.Background(), "app", start, nil, 500, consistency.All)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range recs {
			if i > 0 && bytes.Compare(recs[i-1].Key, r.Key) >= 0 {
				t.Fatalf("%s: scan out of order: %q then %q", n.ID(), recs[i-1].Key, r.Key)
			}
			seen[string(r.Key)] = true
		}
		if len(recs) < 500 {
			break
		}
		start = append(bytes.Clone(recs[len(recs)-1].Key), 0)
	}
	missing := 0
	for _, key := range keys {
		if !seen[key] {
			missing++
		}
	}
	if missing > 0 || len(seen) != len(keys) {
		t.Errorf("%s: a scan of the keyspace found %d keys, %d of the %d acknowledged missing", n.ID(), len(seen), missing, len(keys))
	}
}

// startYCSBWriter writes YCSB-shaped keys from number from on at QUORUM through n until
// stopped, and remembers those acknowledged.
func startYCSBWriter(n *Node, from int) *writer {
	w := &writer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := from; ; i++ {
			select {
			case <-w.stop:
				return
			default:
			}
			key := ycsbKey(uint64(i))
			if _, err := n.Coordinator().Put(context.Background(), "app", []byte(key), []byte("v"), 0, consistency.Quorum); err == nil {
				w.mu.Lock()
				w.acked = append(w.acked, key)
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// hashSpread is the max/mean rows per node the hash partitioner would give keys on n's
// ring, each key counted at each of its replicas: the ring's own unevenness.
func hashSpread(t *testing.T, n *Node, keys []string) float64 {
	t.Helper()
	r, err := n.ring.Ring()
	if err != nil {
		t.Fatal(err)
	}
	ks, err := n.Keyspace("app")
	if err != nil {
		t.Fatal(err)
	}
	pl := r.Placement(ks.Strategy())
	counts := map[string]int64{}
	for _, key := range keys {
		for _, m := range pl.ReplicasFor(ring.HashPartitioner().Token([]byte(key))) {
			counts[m.ID]++
		}
	}
	var rows []*kurav1.NodeRows
	for _, m := range r.Members() {
		rows = append(rows, &kurav1.NodeRows{Node: m.ID, Rows: counts[m.ID]})
	}
	return maxOverMean(rows)
}
