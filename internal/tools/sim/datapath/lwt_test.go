package datapath

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/tools/nemesis"
	"github.com/kuradb/kura/internal/tools/sim"
)

// lwtCluster is a cluster for the lightweight-transaction races: nodes per DC, a short hop
// inside a DC and oneWay between DCs, jitter everywhere.
func lwtCluster(seed uint64, perDC map[string]int, oneWay time.Duration) Config {
	cfg := Config{Seed: seed, Links: sim.LinkFunc(func(from, to string) (sim.LinkSpec, error) {
		if from == to {
			return sim.LinkSpec{Latency: 500 * time.Microsecond, Jitter: 200 * time.Microsecond, BandwidthBps: 1e9}, nil
		}
		return sim.LinkSpec{Latency: oneWay, Jitter: time.Millisecond, BandwidthBps: 100e6}, nil
	})}
	for _, dc := range []string{"a", "b", "c"} {
		for i := 1; i <= perDC[dc]; i++ {
			cfg.Nodes = append(cfg.Nodes, NodeSpec{ID: fmt.Sprintf("%s%d", dc, i), DC: dc})
		}
	}
	return cfg
}

// outcome is one client's result, as the races print it.
type outcome struct {
	applied bool
	value   string // the value the client wrote, or found
	err     error
}

// race runs clients concurrently in virtual time, client i through coordinator
// coordinators[i % len], each starting 37 µs after the previous one so that no two stamp
// a ballot at the same instant, and returns their outcomes and a transcript of the run.
func race(t *testing.T, c *Cluster, clients int, coordinators []string, op func(ctx context.Context, i int, co *coord.Coordinator) outcome) []outcome {
	t.Helper()
	out := make([]outcome, clients)
	var wg sync.WaitGroup
	for i := range clients {
		co, err := c.Coordinator(coordinators[i%len(coordinators)])
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Run(time.Duration(i) * 37 * time.Microsecond) // virtual time: this client's start
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out[i] = op(ctx, i, co)
		}()
	}
	wg.Wait()
	return out
}

// transcript prints outcomes, one client a line, for comparing two runs of one seed.
func transcript(outcomes []outcome) string {
	var b strings.Builder
	for i, o := range outcomes {
		fmt.Fprintf(&b, "%d applied=%v value=%q err=%v\n", i, o.applied, o.value, o.err)
	}
	return b.String()
}

// putIfAbsent is SET NX: client i writes "client-i" unless the key has a value.
func putIfAbsent(level consistency.Level) func(ctx context.Context, i int, co *coord.Coordinator) outcome {
	return func(ctx context.Context, i int, co *coord.Coordinator) outcome {
		mine := fmt.Sprintf("client-%d", i)
		res, err := co.Update(ctx, "ks", []byte("lock"), level, func(cur lww.Record, found bool) (lww.Record, bool, error) {
			return lww.Record{Value: []byte(mine)}, !found, nil
		})
		if res.Applied {
			return outcome{applied: true, value: mine, err: err}
		}
		return outcome{value: string(res.Previous.Value), err: err}
	}
}

// increment adds one to a decimal counter and reports the value it wrote.
func increment(level consistency.Level) func(ctx context.Context, i int, co *coord.Coordinator) outcome {
	return func(ctx context.Context, i int, co *coord.Coordinator) outcome {
		res, err := co.Update(ctx, "ks", []byte("counter"), level, nemesis.Increment)
		return outcome{applied: res.Applied, value: string(res.Record.Value), err: err}
	}
}

// raceTwice runs one race scenario twice from its seed (seedRuns), with the nodes down
// crashed first, checks that the two runs agree outcome for outcome, and returns the
// outcomes and the key's serial value afterwards.
func raceTwice(t *testing.T, cfg Config, replication string, down []string, key string, level consistency.Level, clients int, coordinators []string,
	op func(ctx context.Context, i int, co *coord.Coordinator) outcome) ([]outcome, string) {
	t.Helper()
	runs := make([]string, seedRuns())
	var outcomes []outcome
	var final string
	for run := range runs {
		synctest.Test(t, func(t *testing.T) {
			c, err := Start(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := c.Close(); err != nil {
					t.Error(err)
				}
				synctest.Wait()
			}()
			if err := c.CreateKeyspace(schema.Keyspace{Name: "ks", Replication: replication}); err != nil {
				t.Fatal(err)
			}
			for _, id := range down {
				if err := c.Crash(id); err != nil {
					t.Fatal(err)
				}
				if err := c.SetState(id, cluster.StateDown); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			outcomes = race(t, c, clients, coordinators, op)
			took := time.Since(start)
			co, err := c.Coordinator(coordinators[0])
			if err != nil {
				t.Fatal(err)
			}
			rec, found, err := co.Get(context.Background(), "ks", []byte(key), level)
			if err != nil {
				t.Fatalf("serial read after the race: %v", err)
			}
			final = fmt.Sprintf("%s (found %v)", rec.Value, found)
			runs[run] = fmt.Sprintf("%s\nfinal %s after %v\n", transcript(outcomes), final, took)
		})
	}
	checkRunsAgree(t, t.Name(), runs)
	t.Logf("%s", runs[0])
	return outcomes, final
}

func TestLWTPutIfAbsentHasOneWinner(t *testing.T) {
	tests := []struct {
		name         string
		cfg          Config
		replication  string
		down         []string
		level        consistency.Level
		coordinators []string
	}{
		{"3 nodes, SERIAL", lwtCluster(1, map[string]int{"a": 3}, 0), "a=3", nil, consistency.Serial, []string{"a1", "a2", "a3"}},
		{"3 nodes, LOCAL_SERIAL", lwtCluster(2, map[string]int{"a": 3}, 0), "a=3", nil, consistency.LocalSerial, []string{"a1", "a2", "a3"}},
		{"2 DCs, SERIAL", lwtCluster(3, map[string]int{"a": 3, "b": 3}, 20*time.Millisecond), "a=3,b=3", nil, consistency.Serial,
			[]string{"a1", "b1", "a2", "b2", "a3", "b3"}},
		{"2 DCs, uneven, SERIAL", lwtCluster(4, map[string]int{"a": 3, "b": 2}, 20*time.Millisecond), "a=2,b=1", nil, consistency.Serial,
			[]string{"b1", "a1", "b2", "a2", "a3"}},
		{"2 DCs, a replica down in each, SERIAL", lwtCluster(8, map[string]int{"a": 3, "b": 3}, 20*time.Millisecond), "a=3,b=3",
			[]string{"a3", "b3"}, consistency.Serial, []string{"a1", "b1", "a2", "b2"}},
	}
	const clients = 12
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outcomes, final := raceTwice(t, tt.cfg, tt.replication, tt.down, "lock", tt.level, clients, tt.coordinators, putIfAbsent(tt.level))
			var winners []string
			for i, o := range outcomes {
				if o.applied {
					winners = append(winners, o.value)
				}
				if o.err != nil && !o.applied {
					// A loser that gave up cannot tell whether it won; only the
					// final value says, and it must then be its own.
					t.Logf("client %d: %v", i, o.err)
				}
			}
			if len(winners) != 1 {
				t.Fatalf("%d winners %v, want exactly 1", len(winners), winners)
			}
			if want := winners[0] + " (found true)"; final != want {
				t.Errorf("serial read after the race = %s, want the winner's %s", final, want)
			}
			for i, o := range outcomes {
				if !o.applied && o.err == nil && o.value != winners[0] {
					t.Errorf("client %d lost to %q, want it to have seen the winner %q", i, o.value, winners[0])
				}
			}
		})
	}
}

func TestLWTIncrementsLoseNothing(t *testing.T) {
	tests := []struct {
		name         string
		cfg          Config
		replication  string
		down         []string
		level        consistency.Level
		coordinators []string
	}{
		{"3 nodes, SERIAL", lwtCluster(5, map[string]int{"a": 3}, 0), "a=3", nil, consistency.Serial, []string{"a1", "a2", "a3"}},
		{"3 nodes, one down, SERIAL", lwtCluster(9, map[string]int{"a": 3}, 0), "a=3", []string{"a2"}, consistency.Serial, []string{"a1", "a3"}},
		{"2 DCs, SERIAL", lwtCluster(6, map[string]int{"a": 3, "b": 3}, 20*time.Millisecond), "a=3,b=3", nil, consistency.Serial,
			[]string{"a1", "b1", "a2", "b2", "a3", "b3"}},
		{"2 DCs, LOCAL_SERIAL in one", lwtCluster(7, map[string]int{"a": 3, "b": 3}, 20*time.Millisecond), "a=3,b=3", nil, consistency.LocalSerial,
			[]string{"a1", "a2", "a3"}},
	}
	const clients = 12
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outcomes, final := raceTwice(t, tt.cfg, tt.replication, tt.down, "counter", tt.level, clients, tt.coordinators, increment(tt.level))
			seen := map[string]int{}
			applied, unknown := 0, 0
			for i, o := range outcomes {
				switch {
				case o.applied:
					applied++
					if other, dup := seen[o.value]; dup {
						t.Errorf("clients %d and %d both wrote %s: an increment was lost", other, i, o.value)
					}
					seen[o.value] = i
				case o.err != nil:
					unknown++
					t.Logf("client %d: %v", i, o.err)
				}
			}
			total, err := strconv.Atoi(strings.TrimSuffix(final, " (found true)"))
			if err != nil {
				t.Fatalf("final counter %s: %v", final, err)
			}
			if total < applied || total > applied+unknown {
				t.Errorf("counter = %d after %d applied increments and %d of unknown outcome", total, applied, unknown)
			}
			if applied == 0 {
				t.Errorf("no increment applied")
			}
		})
	}
}

// TestLWTIncrementsSurviveACoordinatorCrash runs INCRs on one counter from clients in
// two DCs, each a few in a row. One client's coordinator crashes the moment an increment
// of its was acknowledged, with every commit dropped since that increment began: it was
// answered once a quorum accepted, and no commit of its reached anyone, so the rounds
// after must complete it. No two increments may write one value, none acknowledged may
// be lost, and the counter must count every acknowledged increment and at most the
// ones that failed.
func TestLWTIncrementsSurviveACoordinatorCrash(t *testing.T) {
	tests := []struct {
		name  string
		seed  uint64
		crash string
	}{
		{"a coordinator in b crashes", 21, "b1"},
		{"a coordinator in a crashes", 22, "a2"},
		{"another seed", 23, "b2"},
	}
	const perClient = 5
	coordinators := []string{"a1", "b1", "a2", "b2"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, err := Start(lwtCluster(tt.seed, map[string]int{"a": 3, "b": 3}, 20*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				defer func() {
					if err := c.Close(); err != nil {
						t.Error(err)
					}
					synctest.Wait()
				}()
				if err := c.CreateKeyspace(schema.Keyspace{Name: "ks", Replication: "a=3,b=3"}); err != nil {
					t.Fatal(err)
				}
				outcomes := make([][]outcome, len(coordinators))
				var crashed outcome // the increment acknowledged just before its coordinator crashed
				var wg sync.WaitGroup
				for i, id := range coordinators {
					co, err := c.Coordinator(id)
					if err != nil {
						t.Fatal(err)
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						c.Run(time.Duration(i) * 37 * time.Microsecond)
						for op := range perClient {
							// The crashing client's second increment on is the one
							// whose commits are lost, until one is acknowledged.
							crashing := id == tt.crash && op > 0
							if crashing {
								c.DropKinds("paxos_commit")
							}
							ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
							o := increment(consistency.Serial)(ctx, i, co)
							cancel()
							outcomes[i] = append(outcomes[i], o)
							if crashing {
								if o.applied {
									if err := c.Crash(id); err != nil {
										t.Error(err)
									}
									crashed = o
								}
								c.DropKinds()
								if o.applied {
									return
								}
							}
						}
					}()
				}
				wg.Wait()
				if !crashed.applied {
					t.Fatalf("no increment through %s was acknowledged with its commits dropped: the crash tested nothing", tt.crash)
				}
				co, err := c.Coordinator("a1")
				if err != nil {
					t.Fatal(err)
				}
				rec, found, err := co.Get(context.Background(), "ks", []byte("counter"), consistency.Serial)
				if err != nil || !found {
					t.Fatalf("serial read after the run: found %v, %v", found, err)
				}
				total, err := strconv.Atoi(string(rec.Value))
				if err != nil {
					t.Fatal(err)
				}
				seen := map[int]string{}
				applied, failed := 0, 0
				for i, client := range outcomes {
					for j, o := range client {
						if !o.applied {
							if o.err == nil {
								t.Errorf("client %d op %d: not applied and no error", i, j)
							}
							failed++
							continue
						}
						applied++
						n, err := strconv.Atoi(o.value)
						if err != nil {
							t.Fatal(err)
						}
						who := fmt.Sprintf("client %d op %d", i, j)
						if other, dup := seen[n]; dup {
							t.Errorf("%s and %s both wrote %d: an increment was lost", other, who, n)
						}
						seen[n] = who
						if n > total {
							t.Errorf("%s was answered %d, above the final counter %d: an acknowledged increment was lost", who, n, total)
						}
					}
				}
				if total < applied || total > applied+failed {
					t.Errorf("counter = %d after %d applied increments and %d failed", total, applied, failed)
				}
				t.Logf("counter %d: %d applied, %d failed; %s crashed after acknowledging %s", total, applied, failed, tt.crash, crashed.value)
			})
		})
	}
}
