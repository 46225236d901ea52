package coord_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// PutEach acknowledges each write as Put would, at every level: the writes of many
// replica sets sent together, an invalid write refused alone, and every replica of each
// key holding its newest acknowledged write, with the timestamp PutEach answered. A key
// written twice keeps the write PutEach stamped later, not the later in the call: the
// writes run in no order among themselves (at ANY each goes through Put, concurrently).
func TestPutEachAnswersAsPut(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	co := c.Node("a1").Coordinator()
	keys := make([][]byte, 12)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("e%d", i))
	}
	oversized := make([]byte, 64<<10+1)
	for _, cl := range []consistency.Level{consistency.Any, consistency.One, consistency.LocalOne, consistency.Two,
		consistency.Quorum, consistency.LocalQuorum, consistency.EachQuorum, consistency.All} {
		t.Run(cl.String(), func(t *testing.T) {
			var puts []lww.Record
			for i, key := range keys {
				puts = append(puts, lww.Record{Key: key, Value: []byte(fmt.Sprint(cl, "-", i))})
			}
			puts = append(puts, lww.Record{Key: keys[0], Value: []byte(fmt.Sprint(cl, "-again"))},
				lww.Record{Key: nil, Value: []byte("no key")}, lww.Record{Key: keys[1], Value: oversized})
			invalid := []int{len(puts) - 2, len(puts) - 1}
			results := co.PutEach(ctx, "spread", puts, cl)
			if len(results) != len(puts) {
				t.Fatalf("%d results for %d puts", len(results), len(puts))
			}
			newest := map[string]int{} // the index of each key's newest acknowledged write
			for i, r := range results {
				switch {
				case slices.Contains(invalid, i):
					if !errors.Is(r.Err, coord.ErrInvalidArgument) {
						t.Errorf("put %d: %v, want invalid argument", i, r.Err)
					}
				case r.Err != nil || r.Timestamp == 0:
					t.Errorf("put %d: timestamp %d, %v; want acknowledged", i, r.Timestamp, r.Err)
				default:
					if j, ok := newest[string(puts[i].Key)]; !ok || r.Timestamp > results[j].Timestamp {
						newest[string(puts[i].Key)] = i
					}
				}
			}
			for key, i := range newest {
				for _, id := range replicasOf(t, c, spread, []byte(key)) {
					// What the replica held last, and the coordinator's hints, are logged
					// if it never holds the write.
					var held string
					defer func() {
						if t.Failed() && held != "" {
							t.Logf("replica %s held %s", id, held)
						}
					}()
					eventually(t, fmt.Sprintf("replica %s holds %s=%s", id, key, puts[i].Value), func() bool {
						rec, found, err := c.Node(id).Coordinator().Get(ctx, "spread", []byte(key), consistency.One)
						pending, hintsErr := co.HintsPending()
						held = fmt.Sprintf("%q at %d (found %v, %v); a1 holds %d hints (%v); the write's timestamp is %d",
							rec.Value, rec.Timestamp, found, err, pending, hintsErr, results[i].Timestamp)
						return err == nil && bytes.Equal(rec.Value, puts[i].Value) && rec.Timestamp == results[i].Timestamp
					})
				}
			}
		})
	}
	if results := co.PutEach(ctx, "spread", []lww.Record{{Key: keys[0]}, {Key: keys[1]}}, consistency.Serial); !errors.Is(results[0].Err, coord.ErrInvalidArgument) || !errors.Is(results[1].Err, coord.ErrInvalidArgument) {
		t.Errorf("PutEach at SERIAL = %v, want invalid arguments", results)
	}
}

// PutEach splits a call whose keys and values pass 4 MiB into rounds, each replica's
// mutation within an internode frame, and still answers each write with its own
// timestamp.
func TestPutEachSplitsLargeCallsIntoRounds(t *testing.T) {
	// Each round is 4 MiB to every replica, synced: on a loaded machine (CI ran it
	// beside the race detector's builds) that took more than startCluster's 2 s.
	c := startClusterTimeout(t, time.Minute, spread)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	co := c.Node("a1").Coordinator()
	value := bytes.Repeat([]byte("v"), 64<<10) // the test cluster's largest
	var puts []lww.Record
	for i := range 80 { // 5 MiB of values: two rounds
		puts = append(puts, lww.Record{Key: []byte(fmt.Sprintf("r%d", i)), Value: append([]byte(fmt.Sprint(i)), value[:64<<10-8]...)})
	}
	results := co.PutEach(ctx, "spread", puts, consistency.Quorum)
	for i, r := range results {
		if r.Err != nil {
			t.Fatalf("put %d: %v", i, r.Err)
		}
		rec, found, err := co.Get(ctx, "spread", puts[i].Key, consistency.All)
		if err != nil || !found || !bytes.Equal(rec.Value, puts[i].Value) || rec.Timestamp != r.Timestamp {
			t.Fatalf("get %s = %d bytes at %d, %v, %v; want its write, at %d", puts[i].Key, len(rec.Value), rec.Timestamp, found, err, r.Timestamp)
		}
	}
}

// An invalid write among valid ones changes nothing for the others: each valid write but
// the first follows an oversized value for its key, whose replica set differs from the
// write before's, and still reaches its own key's replicas, not the write before's.
func TestPutEachInvalidWriteBetweenKeys(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	co := c.Node("a1").Coordinator()
	oversized := make([]byte, 64<<10+1)
	var puts []lww.Record
	var keys [][]byte
	for i := 0; len(keys) < 8; i++ {
		key := []byte(fmt.Sprintf("between%d", i))
		if len(keys) > 0 && slices.Equal(replicasOf(t, c, spread, key), replicasOf(t, c, spread, keys[len(keys)-1])) {
			continue
		}
		if len(keys) > 0 {
			puts = append(puts, lww.Record{Key: key, Value: oversized})
		}
		keys = append(keys, key)
		puts = append(puts, lww.Record{Key: key, Value: []byte(fmt.Sprint(i))})
	}
	results := co.PutEach(ctx, "spread", puts, consistency.All)
	for i, r := range results {
		if i%2 == 1 {
			if !errors.Is(r.Err, coord.ErrInvalidArgument) {
				t.Errorf("put %d (oversized): %v, want invalid argument", i, r.Err)
			}
			continue
		}
		if r.Err != nil {
			t.Fatalf("put %d: %v", i, r.Err)
		}
		// At ALL every replica acknowledged: each holds the write now.
		for _, id := range replicasOf(t, c, spread, puts[i].Key) {
			rec, found, err := c.Node(id).Coordinator().Get(ctx, "spread", puts[i].Key, consistency.One)
			if err != nil || !found || !bytes.Equal(rec.Value, puts[i].Value) || rec.Timestamp != r.Timestamp {
				t.Errorf("replica %s holds %s = %q at %d (found %v, %v); want %q at %d", id, puts[i].Key, rec.Value, rec.Timestamp, found, err, puts[i].Value, r.Timestamp)
			}
		}
	}
}
