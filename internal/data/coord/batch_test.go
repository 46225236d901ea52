package coord_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
)

// PutAll gives each write the outcome Put one after the other would: the writes of one
// key in order, an invalid write refused alone, whether this node is the keys' only
// replica (one synced batch), one of them, their replicas are elsewhere, or both; and
// each key's last write reaches every replica of the key.
func TestPutAllWritesInOrder(t *testing.T) {
	solo := schema.Keyspace{Name: "solo", Replication: "a=1"}
	c := startCluster(t, spread, solo)
	ctx := testContext(t)
	co := c.Node("a1").Coordinator()
	var here, elsewhere [][]byte // solo's keys whose one replica is a1, and is not
	for i := 0; len(here) < 4 || len(elsewhere) < 2 || !slices.Contains(replicasOf(t, c, spread, here[0]), "a1"); i++ {
		key := []byte(fmt.Sprintf("k%d", i))
		if replicasOf(t, c, solo, key)[0] == "a1" {
			here = append(here, key)
		} else {
			elsewhere = append(elsewhere, key)
		}
	}
	put := func(key []byte, value string) lww.Record { return lww.Record{Key: key, Value: []byte(value)} }
	oversized := string(make([]byte, 64<<10+1))
	for _, tc := range []struct {
		name     string
		keyspace string
		level    consistency.Level
		puts     []lww.Record
		invalid  []int // the puts refused as invalid
	}{
		{"only replica here", "solo", consistency.One, []lww.Record{
			put(here[0], "1"), put(here[1], "2"), put(here[0], "3"), put(here[2], "4"), put(here[0], "5")}, nil},
		{"only replica here, at ALL", "solo", consistency.All, []lww.Record{put(here[3], "1"), put(here[3], "2")}, nil},
		{"replicas elsewhere", "spread", consistency.Quorum, []lww.Record{
			put(here[0], "6"), put(here[1], "7"), put(here[0], "8")}, nil},
		{"a replica here among others, at ONE", "spread", consistency.One, []lww.Record{
			put(here[0], "6a"), put(here[0], "8a")}, nil},
		{"some here, some elsewhere", "solo", consistency.One, []lww.Record{
			put(here[1], "9"), put(elsewhere[0], "10"), put(here[1], "11"), put(elsewhere[1], "12")}, nil},
		{"an invalid write among them", "solo", consistency.One, []lww.Record{
			put(here[2], "13"), put(here[3], oversized), put(here[2], "14")}, []int{1}},
		{"a serial level", "solo", consistency.Serial, []lww.Record{put(here[0], "15"), put(here[1], "16")}, []int{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := co.PutAll(ctx, tc.keyspace, tc.puts, tc.level)
			if len(errs) != len(tc.puts) {
				t.Fatalf("%d errors for %d puts", len(errs), len(tc.puts))
			}
			last := map[string][]byte{}
			for i, err := range errs {
				wantInvalid := false
				for _, j := range tc.invalid {
					wantInvalid = wantInvalid || i == j
				}
				switch {
				case wantInvalid && !errors.Is(err, coord.ErrInvalidArgument):
					t.Errorf("put %d: %v, want invalid argument", i, err)
				case !wantInvalid && err != nil:
					t.Errorf("put %d: %v", i, err)
				case !wantInvalid:
					last[string(tc.puts[i].Key)] = tc.puts[i].Value
				}
			}
			ks := map[string]schema.Keyspace{"solo": solo, "spread": spread}[tc.keyspace]
			for key, want := range last {
				// Each replica, asked at ONE, answers with its own copy; before any read
				// at ALL, whose read repair would hide a replica the write missed.
				for _, id := range replicasOf(t, c, ks, []byte(key)) {
					eventually(t, fmt.Sprintf("replica %s holds %s=%s", id, key, want), func() bool {
						rec, _, err := c.Node(id).Coordinator().Get(ctx, tc.keyspace, []byte(key), consistency.One)
						return err == nil && bytes.Equal(rec.Value, want)
					})
				}
				rec, found, err := co.Get(ctx, tc.keyspace, []byte(key), consistency.All)
				if err != nil || !found || !bytes.Equal(rec.Value, want) {
					t.Errorf("get %s = %q, %v, %v; want %q", key, rec.Value, found, err, want)
				}
			}
		})
	}
}

// GetAll answers every key as Get does, whether this node is the keys' only replica or
// one of them at a level its answer alone meets (one read of its storage), their
// replicas are elsewhere or several must answer (one read_many per replica), or both:
// values, missing, deleted and expired keys, an invalid key among them, and levels it
// refuses.
func TestGetAllAnswersAsGet(t *testing.T) {
	solo := schema.Keyspace{Name: "solo", Replication: "a=1"}
	c := startCluster(t, spread, solo)
	ctx := testContext(t)
	co := c.Node("a1").Coordinator()
	var here, elsewhere [][]byte
	for i := 0; len(here) < 4 || len(elsewhere) < 2 || !slices.Contains(replicasOf(t, c, spread, here[0]), "a1"); i++ {
		key := []byte(fmt.Sprintf("g%d", i))
		if replicasOf(t, c, solo, key)[0] == "a1" {
			here = append(here, key)
		} else {
			elsewhere = append(elsewhere, key)
		}
	}
	// spread's keys among them that a1 holds a replica of, here[0] the first.
	var spreadHere [][]byte
	for _, key := range append(slices.Clone(here), elsewhere...) {
		if slices.Contains(replicasOf(t, c, spread, key), "a1") {
			spreadHere = append(spreadHere, key)
		}
	}
	past, err := co.ExpiresAt(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, ks := range []string{"solo", "spread"} {
		for i, key := range append(here[:2:2], elsewhere[0]) {
			if _, err := co.Put(ctx, ks, key, []byte(fmt.Sprint("v", i)), 0, consistency.All); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := co.Put(ctx, ks, here[2], []byte("expired"), past, consistency.All); err != nil {
			t.Fatal(err)
		}
		if _, err := co.Delete(ctx, ks, here[1], consistency.All); err != nil {
			t.Fatal(err)
		}
	}
	tooLong := bytes.Repeat([]byte("k"), 1025)
	for _, tc := range []struct {
		name     string
		keyspace string
		level    consistency.Level
		keys     [][]byte
	}{
		{"only replica here", "solo", consistency.One, [][]byte{here[0], here[1], here[2], here[3], here[0]}},
		{"only replica here, at ALL", "solo", consistency.All, [][]byte{here[0], here[3]}},
		{"replicas elsewhere", "spread", consistency.Quorum, [][]byte{here[0], here[1], here[2], elsewhere[0]}},
		{"replicas elsewhere, at ALL", "spread", consistency.All, [][]byte{here[0], here[1], here[2], here[3], elsewhere[0]}},
		{"replicas elsewhere, at EACH_QUORUM", "spread", consistency.EachQuorum, [][]byte{here[0], elsewhere[0], here[2]}},
		{"replicas elsewhere, at LOCAL_QUORUM", "spread", consistency.LocalQuorum, [][]byte{here[0], elsewhere[0], here[1]}},
		{"a replica here among others, at ONE", "spread", consistency.One, append(spreadHere, spreadHere[0])},
		{"a replica here among others, at LOCAL_ONE", "spread", consistency.LocalOne, append(spreadHere, spreadHere[0])},
		{"a replica here among others, at TWO", "spread", consistency.Two, append(spreadHere, spreadHere[0])},
		{"some here, some elsewhere", "solo", consistency.One, [][]byte{here[0], elsewhere[0], elsewhere[1]}},
		{"an invalid key among them", "solo", consistency.One, [][]byte{here[0], tooLong, here[3]}},
		{"a write level", "solo", consistency.Any, [][]byte{here[0], here[3]}},
		{"a serial level", "solo", consistency.Serial, [][]byte{here[0], here[3]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results := co.GetAll(ctx, tc.keyspace, tc.keys, tc.level)
			if len(results) != len(tc.keys) {
				t.Fatalf("%d results for %d keys", len(results), len(tc.keys))
			}
			for i, key := range tc.keys {
				rec, found, err := co.Get(ctx, tc.keyspace, key, tc.level)
				got := results[i]
				if got.Found != found || !bytes.Equal(got.Record.Value, rec.Value) || got.Record.Timestamp != rec.Timestamp ||
					(got.Err == nil) != (err == nil) || (err != nil && got.Err.Error() != err.Error()) {
					t.Errorf("key %d: GetAll %q, %v, %v; Get %q, %v, %v", i, got.Record.Value, got.Found, got.Err, rec.Value, found, err)
				}
			}
		})
	}
}

// TestGetAllStopsAtItsAnswerLimit: once the values read reach Limits.AnswerBytesMax,
// GetAll reads no further key and answers each ErrAnswerFull, both where this node's
// answer alone serves the keys (the only replica, or one of them at ONE: one read of
// its storage) and where another replica's must (one read_many, which stops there
// too); the keys read are answered as Get answers them.
func TestGetAllStopsAtItsAnswerLimit(t *testing.T) {
	solo := schema.Keyspace{Name: "solo", Replication: "a=1"}
	c := startCluster(t, solo, spread)
	ctx := testContext(t)
	co := c.Node("a1").Coordinator()
	var here, elsewhere, spreadHere []byte
	for i := 0; here == nil || elsewhere == nil || spreadHere == nil; i++ {
		key := []byte(fmt.Sprintf("big%d", i))
		if replicasOf(t, c, solo, key)[0] == "a1" {
			here = key
		} else {
			elsewhere = key
		}
		if slices.Contains(replicasOf(t, c, spread, key), "a1") {
			spreadHere = key
		}
	}
	const valueBytes = 60 << 10
	value := bytes.Repeat([]byte("v"), valueBytes)
	for _, w := range []struct {
		keyspace string
		key      []byte
	}{{"solo", here}, {"solo", elsewhere}, {"spread", spreadHere}} {
		if _, err := co.Put(ctx, w.keyspace, w.key, value, 0, consistency.All); err != nil {
			t.Fatal(err)
		}
	}
	// The fifth value takes the answer past the limit: four are under it.
	readAtLeast := testAnswerBytesMax/valueBytes + 1
	for _, tc := range []struct {
		name       string
		keyspace   string
		key        []byte
		readAtMost int
	}{
		{"only replica here", "solo", here, readAtLeast},
		{"a replica here among others", "spread", spreadHere, readAtLeast},
		{"replica elsewhere", "solo", elsewhere, readAtLeast},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys := slices.Repeat([][]byte{tc.key}, 64)
			results := co.GetAll(ctx, tc.keyspace, keys, consistency.One)
			read := 0
			for read < len(results) && results[read].Err == nil {
				if !results[read].Found || !bytes.Equal(results[read].Record.Value, value) {
					t.Fatalf("key %d: found %v, %d bytes; want the %d-byte value", read, results[read].Found, len(results[read].Record.Value), valueBytes)
				}
				read++
			}
			if read < readAtLeast || read > tc.readAtMost {
				t.Errorf("%d keys read, want %d to %d", read, readAtLeast, tc.readAtMost)
			}
			for i, r := range results[read:] {
				if !errors.Is(r.Err, coord.ErrAnswerFull) || coord.Classify(r.Err) != coord.ClassAnswerFull {
					t.Fatalf("key %d after the answer filled: %v, want ErrAnswerFull", read+i, r.Err)
				}
			}
		})
	}
}

// TestGetAllAsksAnotherReplicaWhenOneFails: with a replica of every key gone, GetAll at
// QUORUM still answers each key from the replicas left, as Get does, its gathering
// asking another replica in place of the one that failed.
func TestGetAllAsksAnotherReplicaWhenOneFails(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	co := c.Node("a1").Coordinator()
	var keys [][]byte
	for i := 0; len(keys) < 6; i++ {
		key := []byte(fmt.Sprintf("f%d", i))
		if slices.Contains(replicasOf(t, c, spread, key), "a2") {
			keys = append(keys, key)
		}
	}
	for i, key := range keys {
		if _, err := co.Put(ctx, "spread", key, []byte(fmt.Sprint("v", i)), 0, consistency.All); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Stop("a2"); err != nil {
		t.Fatal(err)
	}
	results := co.GetAll(ctx, "spread", keys, consistency.Quorum)
	for i, r := range results {
		if want := fmt.Sprint("v", i); r.Err != nil || !r.Found || string(r.Record.Value) != want {
			t.Errorf("key %s: %q, found %v, %v; want %s", keys[i], r.Record.Value, r.Found, r.Err, want)
		}
	}
}
