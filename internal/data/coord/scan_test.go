package coord_test

import (
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
)

func TestScanReturnsNewestLiveKeysInOrder(t *testing.T) {
	for _, partitioner := range []string{"hash", "ordered", "grouped"} {
		t.Run(partitioner, func(t *testing.T) {
			ks := schema.Keyspace{Name: "scanned", Replication: "a=1,b=1", Partitioner: partitioner}
			c := startCluster(t, ks)
			ctx := testContext(t)
			co := c.Node("c2").Coordinator()
			var want []string
			for i := 0; i < 120; i++ {
				key := fmt.Sprintf("k%03d", i)
				if partitioner == "grouped" { // four tags, each a replica set of its own
					key += fmt.Sprintf("{t%d}", i%4)
				}
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

// TestScanRefusesAnAnswerOverTheLimit: a scan whose records pass Limits.AnswerBytesMax is
// refused with ErrAnswerFull, whether the replicas asked refuse it (each holding more
// than the limit) or the coordinator finds its merged answer over it, and whether the
// keyspace is replicated or erasure-coded; never answered in part as if the key space
// ended there. A smaller limit is answered.
func TestScanRefusesAnAnswerOverTheLimit(t *testing.T) {
	replicated := schema.Keyspace{Name: "big", Replication: "b=1"}
	coded := schema.Keyspace{Name: "bigcoded", Erasure: schema.Erasure{M: 5, K: 3}}
	c := startCluster(t, replicated, coded)
	ctx := testContext(t)
	co := c.Node("a1").Coordinator() // every replica of "big" is in DC b: all remote
	const keys, valueBytes = 30, 60 << 10
	value := make([]byte, valueBytes)
	for _, ks := range []string{replicated.Name, coded.Name} {
		for i := range keys {
			if _, err := co.Put(ctx, ks, []byte(fmt.Sprintf("k%02d", i)), value, 0, consistency.All); err != nil {
				t.Fatal(err)
			}
		}
		for _, level := range []consistency.Level{consistency.One, consistency.All} {
			recs, err := co.Scan(ctx, ks, nil, nil, keys, level)
			if !errors.Is(err, coord.ErrAnswerFull) || coord.Classify(err) != coord.ClassAnswerFull {
				t.Errorf("%s: scan of %d values of %d bytes at %v: %d records, %v; want ErrAnswerFull", ks, keys, valueBytes, level, len(recs), err)
			}
		}
		few := testAnswerBytesMax/valueBytes - 1
		recs, err := co.Scan(ctx, ks, nil, nil, few, consistency.One)
		if err != nil || len(recs) != few || string(recs[0].Key) != "k00" {
			t.Errorf("%s: scan of %d records under the limit: %d records, %v", ks, few, len(recs), err)
		}
	}
}
