package node

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
)

// TestCompareAndSetOverGRPC races compare-and-set clients through every node of a real
// three-node cluster over loopback: put-if-absent has one winner, and counters
// incremented by read-then-compare-and-set loops lose no increment.
func TestCompareAndSetOverGRPC(t *testing.T) {
	t.Parallel()
	nodes := startCluster(t, startAllPortsNode, "simple=3", "dc1", "dc1", "dc1")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	kvs := make([]kurav1.KVClient, len(nodes))
	for i, n := range nodes {
		kvs[i] = kvClient(t, n)
	}
	const clients = 6

	t.Run("put if absent", func(t *testing.T) {
		applied := make([]bool, clients)
		var wg sync.WaitGroup
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := kvs[i%len(kvs)].CompareAndSet(ctx, &kurav1.CompareAndSetRequest{
					Keyspace: "default", Key: []byte("lock"),
					Condition: &kurav1.CompareAndSetRequest_IfAbsent{IfAbsent: true},
					Action:    &kurav1.CompareAndSetRequest_Put{Put: &kurav1.CompareAndSetPut{Value: []byte(strconv.Itoa(i))}},
				})
				if err != nil {
					t.Errorf("client %d: %v", i, err)
					return
				}
				applied[i] = resp.GetApplied()
				if !resp.GetApplied() && !resp.GetFound() {
					t.Errorf("client %d lost without seeing the winner's value", i)
				}
			}()
		}
		wg.Wait()
		var winners []int
		for i, ok := range applied {
			if ok {
				winners = append(winners, i)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("winners %v, want exactly one", winners)
		}
		cas := 0.0
		for _, n := range nodes {
			cas += sumMetric(scrape(t, n), "kura_requests_total", func(l map[string]string) bool {
				return l["api"] == "grpc" && l["op"] == "cas" && l["consistency"] == "SERIAL"
			})
		}
		if cas != clients {
			t.Errorf("the nodes counted %v compare-and-set requests at SERIAL, want %d", cas, clients)
		}
		got, err := kvs[0].Get(ctx, &kurav1.GetRequest{Keyspace: "default", Key: []byte("lock"), Consistency: kurav1.Consistency_SERIAL})
		if err != nil || string(got.GetValue()) != strconv.Itoa(winners[0]) {
			t.Errorf("serial get = %q, %v; want the winner %d", got.GetValue(), err, winners[0])
		}
	})

	t.Run("increments by compare-and-set loops", func(t *testing.T) {
		const each = 5
		var wg sync.WaitGroup
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				kv := kvs[i%len(kvs)]
				for range each {
					if err := incrementByCAS(ctx, kv, []byte("counter")); err != nil {
						t.Errorf("client %d: %v", i, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		got, err := kvs[1].Get(ctx, &kurav1.GetRequest{Keyspace: "default", Key: []byte("counter"), Consistency: kurav1.Consistency_LOCAL_SERIAL})
		if err != nil || string(got.GetValue()) != strconv.Itoa(clients*each) {
			t.Errorf("counter = %q, %v; want %d", got.GetValue(), err, clients*each)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		tests := []struct {
			name string
			req  *kurav1.CompareAndSetRequest
		}{
			{"no condition", &kurav1.CompareAndSetRequest{Keyspace: "default", Key: []byte("k"), Action: &kurav1.CompareAndSetRequest_Delete{Delete: true}}},
			{"no action", &kurav1.CompareAndSetRequest{Keyspace: "default", Key: []byte("k"), Condition: &kurav1.CompareAndSetRequest_IfPresent{IfPresent: true}}},
			{"negative ttl", &kurav1.CompareAndSetRequest{Keyspace: "default", Key: []byte("k"), Condition: &kurav1.CompareAndSetRequest_IfPresent{IfPresent: true},
				Action: &kurav1.CompareAndSetRequest_Put{Put: &kurav1.CompareAndSetPut{Value: []byte("v"), TtlMs: -1}}}},
			{"a plain level", &kurav1.CompareAndSetRequest{Keyspace: "default", Key: []byte("k"), Condition: &kurav1.CompareAndSetRequest_IfPresent{IfPresent: true},
				Action: &kurav1.CompareAndSetRequest_Delete{Delete: true}, SerialConsistency: kurav1.Consistency_QUORUM}},
			{"an empty key", &kurav1.CompareAndSetRequest{Keyspace: "default", Condition: &kurav1.CompareAndSetRequest_IfPresent{IfPresent: true},
				Action: &kurav1.CompareAndSetRequest_Delete{Delete: true}}},
		}
		for _, tt := range tests {
			if _, err := kvs[0].CompareAndSet(ctx, tt.req); status.Code(err) != codes.InvalidArgument {
				t.Errorf("%s: %v, want InvalidArgument", tt.name, err)
			}
		}
		_, err := kvs[0].Put(ctx, &kurav1.PutRequest{Keyspace: "default", Key: []byte("k"), Value: []byte("v"), Consistency: kurav1.Consistency_SERIAL})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("put at SERIAL: %v, want InvalidArgument", err)
		}
	})
}

// incrementByCAS adds one to a decimal counter as a client of a plain compare-and-set
// API would: read it at SERIAL, write the next value if it is still the one read, and
// start again if not.
func incrementByCAS(ctx context.Context, kv kurav1.KVClient, key []byte) error {
	for {
		got, err := kv.Get(ctx, &kurav1.GetRequest{Keyspace: "default", Key: key, Consistency: kurav1.Consistency_SERIAL})
		if err != nil {
			return err
		}
		req := &kurav1.CompareAndSetRequest{Keyspace: "default", Key: key, Condition: &kurav1.CompareAndSetRequest_IfAbsent{IfAbsent: true}}
		n := 0
		if got.GetFound() {
			if n, err = strconv.Atoi(string(got.GetValue())); err != nil {
				return err
			}
			req.Condition = &kurav1.CompareAndSetRequest_IfEquals{IfEquals: got.GetValue()}
		}
		req.Action = &kurav1.CompareAndSetRequest_Put{Put: &kurav1.CompareAndSetPut{Value: []byte(strconv.Itoa(n + 1))}}
		resp, err := kv.CompareAndSet(ctx, req)
		if msg := status.Convert(err).Message(); strings.Contains(msg, "under contention") && !strings.Contains(msg, "outcome unknown") {
			continue // nothing was written: a busy machine made the rounds collide
		}
		if err != nil {
			return err
		}
		if resp.GetApplied() {
			return nil
		}
	}
}
