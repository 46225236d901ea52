package datapath

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/tools/sim"
)

// estimates are row estimates a test steers: exact counts, or counts wrong on purpose so
// that a parallel scan asks too many ranges or too few and must go on.
type estimates struct {
	exact exactRows
	// mode: "exact", "double" and "half" (twice and half the exact counts: a parallel
	// round's per-range limits then cut it short, or ask more than needed), "low" (1 row
	// per node), "high" (a billion), "none".
	mode string
}

func (e *estimates) Rows(node, keyspace string) (int64, bool) {
	switch e.mode {
	case "low":
		return 1, true
	case "high":
		return 1e9, true
	case "none":
		return 0, false
	}
	rows, ok := e.exact.Rows(node, keyspace)
	switch e.mode {
	case "double":
		rows *= 2
	case "half":
		rows /= 2
	}
	return rows, ok
}

// TestParallelScansReturnWhatSequentialScansReturn checks paper 004's P and RaS against
// the sequential scan on an ordered keyspace: for random starts (existing keys and
// points between them, so that scans start mid-range), ends and limits, over two bands of
// keys with nothing between them (empty ranges), with tombstones, with exact
// row estimates and wrong ones, at ONE on one replica and at QUORUM on two. Every
// variant must return exactly the live keys in range, in order, at most limit.
func TestParallelScansReturnWhatSequentialScansReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		est := &estimates{mode: "exact"}
		cfg := Config{Seed: 4, Vnodes: 2, Rows: est, Links: sim.LinkFunc(func(from, to string) (sim.LinkSpec, error) {
			return sim.LinkSpec{Latency: 200 * time.Microsecond, Jitter: 100 * time.Microsecond, BandwidthBps: 1e9}, nil
		})}
		for i := 1; i <= 6; i++ {
			cfg.Nodes = append(cfg.Nodes, NodeSpec{ID: fmt.Sprintf("a%d", i), DC: "a"})
		}
		c, err := Start(cfg)
		if err != nil {
			t.Fatal(err)
		}
		est.exact = exactRows{c}
		defer func() {
			if err := c.Close(); err != nil {
				t.Error(err)
			}
			synctest.Wait()
		}()
		rng := rand.New(rand.NewPCG(4, 15))
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		co, err := c.Coordinator("a1")
		if err != nil {
			t.Fatal(err)
		}
		for _, ks := range []schema.Keyspace{
			{Name: "one", Replication: "simple=1", Partitioner: "ordered"},
			{Name: "two", Replication: "simple=2", Partitioner: "ordered"},
		} {
			if err := c.CreateKeyspace(ks); err != nil {
				t.Fatal(err)
			}
			// Keys spread over two bands of first bytes, low and high, so that they span
			// the ranges at both ends of the ring (the wrapping one among them) and the
			// ranges between the bands hold nothing.
			var live []string
			for i := range 400 {
				first := byte(0x10 + rng.IntN(0x50))
				if i%2 == 1 {
					first = byte(0xb0 + rng.IntN(0x50))
				}
				key := string([]byte{first}) + fmt.Sprintf("%07d", i)
				if _, err := co.Put(ctx, ks.Name, []byte(key), []byte("v"+key), 0, consistency.All); err != nil {
					t.Fatal(err)
				}
				if i%7 == 0 {
					if _, err := co.Delete(ctx, ks.Name, []byte(key), consistency.All); err != nil {
						t.Fatal(err)
					}
					continue
				}
				live = append(live, key)
			}
			slices.Sort(live)
			for trial := range 40 {
				start := live[rng.IntN(len(live))]
				if trial%2 == 1 {
					start = string([]byte{byte(rng.IntN(256))}) // between keys, or past them all
				}
				end := ""
				if trial%3 == 0 {
					end = string([]byte{byte(1 + rng.IntN(255))})
				}
				limit := 1 + rng.IntN(300)
				want := expectedKeys(live, start, end, limit)
				level := consistency.One
				if ks.Name == "two" {
					level = consistency.Quorum
				}
				for _, policy := range []string{"fifo", "parallel", "res+parallel+ras", "kura"} {
					p, err := sched.ParsePolicy(policy)
					if err != nil {
						t.Fatal(err)
					}
					c.SetReadPolicy(p)
					for _, mode := range []string{"exact", "double", "half", "low", "high", "none"} {
						est.mode = mode
						got, err := co.Scan(ctx, ks.Name, []byte(start), bytesOrNil(end), limit, level)
						if err != nil {
							t.Fatalf("%s: scan [%q, %q) limit %d, %s, estimates %s: %v", ks.Name, start, end, limit, policy, mode, err)
						}
						keys := make([]string, len(got))
						for i, r := range got {
							keys[i] = string(r.Key)
							if string(r.Value) != "v"+keys[i] {
								t.Fatalf("%s: key %q has value %q", ks.Name, r.Key, r.Value)
							}
						}
						if !slices.Equal(keys, want) {
							t.Fatalf("%s: scan [%q, %q) limit %d, %s, estimates %s:\ngot  %d keys %v\nwant %d keys %v",
								ks.Name, start, end, limit, policy, mode, len(keys), keys, len(want), want)
						}
					}
				}
			}
		}
	})
}

func bytesOrNil(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// expectedKeys is the model: the sorted keys in [start, end), at most limit.
func expectedKeys(sorted []string, start, end string, limit int) []string {
	var out []string
	for _, k := range sorted {
		if k >= start && (end == "" || k < end) && len(out) < limit {
			out = append(out, k)
		}
	}
	return out
}
