package coord_test

import (
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/coord"
	"github.com/kuradb/kura/schema"
)

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
				if _, err := co.Put(ctx, "scanned", []byte(key), []byte("v-"+key), 0, consistency.All); err != nil {
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
