package coord_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
)

// TestScanKeysWalksEveryLiveKeyOnce writes keys, deletes some, and walks the keyspace
// with cursors handed from one coordinator to the next at every call: every live key
// comes exactly once, no deleted one, at every level and page size; the count agrees.
// Under the grouped partitioner the keys share ten hash tags, so each tag's keys share
// a token (and a replica set) while their positions spread.
func TestScanKeysWalksEveryLiveKeyOnce(t *testing.T) {
	for _, tt := range []struct {
		partitioner string
		keys        int
		format      func(i int) string
	}{
		{"hash", 300, func(i int) string { return fmt.Sprintf("k%03d", i) }},
		{"ordered", 300, func(i int) string { return fmt.Sprintf("k%03d", i) }},
		{"grouped", 1000, func(i int) string { return fmt.Sprintf("{user%d}:k%03d", i%10, i) }},
	} {
		t.Run(tt.partitioner, func(t *testing.T) {
			ks := schema.Keyspace{Name: "walked", Replication: "a=2,b=1", Partitioner: tt.partitioner}
			c := startCluster(t, ks)
			// Up to 1,250 writes at ALL and four walks: testContext's 20 s is too short on
			// a loaded machine (it ran out once), so a deadline of its own.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			writer := c.Node("a1").Coordinator()
			live := map[string]bool{}
			for i := range tt.keys {
				key := tt.format(i)
				if _, err := writer.Put(ctx, ks.Name, []byte(key), []byte("v"), 0, consistency.All); err != nil {
					t.Fatal(err)
				}
				if i%4 == 0 {
					if _, err := writer.Delete(ctx, ks.Name, []byte(key), consistency.All); err != nil {
						t.Fatal(err)
					}
					continue
				}
				live[key] = true
			}
			coordinators := []string{"a1", "b2", "c1", "a3"}
			for _, tt := range []struct {
				count int
				level consistency.Level
			}{{1, consistency.One}, {7, consistency.Quorum}, {50, consistency.All}, {1000, consistency.One}} {
				seen := map[string]int{}
				cursor, calls := uint64(0), 0
				for {
					co := c.Node(coordinators[calls%len(coordinators)]).Coordinator()
					keys, next, err := co.ScanKeys(ctx, ks.Name, cursor, tt.count, tt.level)
					if err != nil {
						t.Fatalf("count %d at %v, call %d: %v", tt.count, tt.level, calls, err)
					}
					for _, k := range keys {
						seen[string(k)]++
					}
					calls++
					if cursor = next; cursor == 0 {
						break
					}
					if calls > len(live)+10 {
						t.Fatalf("count %d: the walk does not end", tt.count)
					}
				}
				if len(seen) != len(live) {
					t.Errorf("count %d at %v: %d keys seen, want %d", tt.count, tt.level, len(seen), len(live))
				}
				for k, n := range seen {
					if !live[k] || n != 1 {
						t.Errorf("count %d at %v: %s seen %d times (live %v)", tt.count, tt.level, k, n, live[k])
					}
				}
				if tt.count == 1000 && calls != 1 {
					t.Errorf("a walk of %d keys at count 1000 took %d calls", len(live), calls)
				}
			}
			got, err := c.Node("b1").Coordinator().CountKeys(ctx, ks.Name)
			if err != nil || got.Keys != int64(len(live)) || got.Expiring != 0 {
				t.Errorf("CountKeys = %+v, %v; want %d keys", got, err, len(live))
			}
		})
	}
}

func TestScanKeysRefusesWhatItCannotWalk(t *testing.T) {
	coded := schema.Keyspace{Name: "coded", Replication: "simple=1", Erasure: schema.Erasure{M: 3, K: 2}}
	c := startCluster(t, schema.Keyspace{Name: "plain", Replication: "a=1"}, coded)
	ctx := testContext(t)
	co := c.Node("a1").Coordinator()
	tests := []struct {
		name     string
		keyspace string
		count    int
		level    consistency.Level
		want     error
	}{
		{"count 0", "plain", 0, consistency.One, coord.ErrInvalidArgument},
		{"count over the scan limit", "plain", co.Limits().ScanLimitMax + 1, consistency.One, coord.ErrInvalidArgument},
		{"ANY", "plain", 10, consistency.Any, coord.ErrInvalidArgument},
		{"an erasure-coded keyspace", "coded", 10, consistency.One, coord.ErrInvalidArgument},
		{"no such keyspace", "nope", 10, consistency.One, schema.ErrNoKeyspace},
		{"LOCAL_ONE without local replicas", "plain", 10, consistency.LocalOne, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := co.ScanKeys(ctx, tt.keyspace, 0, tt.count, tt.level)
			if tt.want == nil {
				if err != nil {
					t.Errorf("ScanKeys: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Errorf("ScanKeys: %v, want %v", err, tt.want)
			}
		})
	}
	if _, _, err := c.Node("b1").Coordinator().ScanKeys(ctx, "plain", 0, 10, consistency.LocalOne); !errors.Is(err, coord.ErrUnavailable) {
		t.Errorf("LOCAL_ONE from a DC without replicas: %v, want unavailable", err)
	}
}
