package explore

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/synctest"
)

// seeds are the seeds TestExplore runs; CI runs the default, `go test ./internal/tools/sim/explore
// -seeds 1-200` more (kura simulate runs thousands).
var seeds = flag.String("seeds", "1-32", "seeds TestExplore runs, A-B")

// TestExplore runs the explorer over a fixed set of seeds: each draws a cluster, a
// workload and operator actions and faults, and must break no promise.
func TestExplore(t *testing.T) {
	from, to, err := ParseSeeds(*seeds)
	if err != nil {
		t.Fatal(err)
	}
	for seed := from; seed <= to; seed++ {
		explore(t, seed)
	}
}

// fixedSeeds failed once, beyond the seeds CI runs, and were fixed: 2191 (a removal
// asked a gainer cut off by a DC partition to stream, and waited for it for ever), 2742
// (a decommission asked a dead gainer to stream, and never finished after it came back),
// and the explorer's own faults 2474 and 2522 (new nodes were given a seed that was gone
// or died at once, learned nobody and stayed booting) and 2721 (a replacement rightly
// refused to take over the node heal had restarted), and the checker's 4108 (an
// increment acknowledged at LOCAL_SERIAL on dc1's one copy, lost with its node, was
// counted again from the other DC's copy: a repeat the level allows, as it allows a
// value below), and 4218 (a decommission's request to its gainer, lost to a one-way cut
// while gossip held the gainer up, was waited for until the operator's timeout), and
// 5235 (a node restarted while a DC partition cut it off never learned that a node
// decommissioned meanwhile had left: Ferry reported no member first heard of down or
// gone, so its directory kept the node normal on the ring, and QUORUM through it failed
// after the heal), and 5692 (a join completed and its joiner, now dc1's one replica of a
// key, coordinated a write to itself alone; the old owner, just restarted and not yet
// told, then read its own older copy: reads during a move now ask the pending replicas
// too), and 6505 (the decommission of dc2's only node under app dc1=1,dc2=1 was accepted
// and left every range one copy, dc1's; n2 then lost its disk, and with it the counters
// it alone held: such a decommission is now refused unless --force; the planner now
// draws a decommission the rule allows there, n1's, so 6505 no longer runs that
// situation, which the decommissions drawn short of replicas cover instead). Each is run
// again here, as are 9015 and 9118, found once the planner drew alters: kura keyspace
// alter asked n3 for its drop step while a DC partition dropped the request (9015), or
// for its sample while a one-way cut n1->n3 did (9118), and waited for the answer until
// the operator's timeout; a step not answered in six ring delays is now asked again
// (seed 26, among those CI runs, was another). Since the planner draws alters, 2191,
// 2522, 2742 (two, one short of nodes), 5235 (short of nodes) and 6505 also plan one;
// each is refused before it changes anything, as a ring change is in progress (n4
// leaving and down, n6 joining, n5 leaving, n1 leaving) or a node rebuilds (6505's n2),
// so these seeds still run the situation they were kept for.
var fixedSeeds = []uint64{2191, 2474, 2522, 2721, 2742, 4108, 4218, 5235, 5692, 6505, 9015, 9118}

// TestExploreFixedSeeds runs the seeds of defects found and fixed, so that they stay
// fixed.
func TestExploreFixedSeeds(t *testing.T) {
	for _, seed := range fixedSeeds {
		explore(t, seed)
	}
}

// alterSeed plans two changes of replication of app (dc1=1,dc2=1 at QUORUM; n1, n2, n5
// in dc1, n3, n4 in dc2): at 14.9s dc1=1,dc2=3, more copies than dc2's two nodes, to be
// refused; at 19.3s dc1=1,dc2=2, followed by a settle at 59.3s; then four joins into
// dc1 (two at once) and a joiner that dies and is removed.
const alterSeed = 9058

// TestExploreAlterSeed runs alterSeed twice: its schedule must be the same byte for
// byte, each run must break no promise, and the operator commands' outcomes must be the
// same byte for byte: the alter short of nodes refused, the other accepted, nothing
// left to settle. (Runs are the same in their schedule and outcomes, not in every
// event: the interleaving of goroutines within one virtual instant is the scheduler's.)
func TestExploreAlterSeed(t *testing.T) {
	var plans, outcomes [2]string
	for i := range 2 {
		synctest.Test(t, func(t *testing.T) {
			s := Generate(alterSeed)
			res := Run(s)
			plans[i], outcomes[i] = s.String(), strings.Join(res.Outcomes, "\n")
			if len(res.Violations) > 0 {
				t.Errorf("run %d: violations %v\n%s\nlog:\n  %s", i+1, res.Violations, s, strings.Join(res.Log, "\n  "))
			}
		})
	}
	if plans[0] != plans[1] {
		t.Errorf("the schedule differs between two runs:\n%s\n---\n%s", plans[0], plans[1])
	}
	if outcomes[0] != outcomes[1] {
		t.Errorf("the outcomes differ between two runs:\n%s\n---\n%s", outcomes[0], outcomes[1])
	}
	for _, want := range []string{
		"alter app to dc1=1,dc2=3 through n1 at 14.919316078s: refused or failed: keyspace alter: invalid argument: replication dc1=1,dc2=3 asks for 3 replicas in dc2, which has 2 normal nodes",
		"alter app to dc1=1,dc2=2 through n1 at 19.280760864s: accepted: replication dc1=1,dc2=2",
		"settle app through n1 at 59.280760864s: app is not moving: nothing to settle",
	} {
		if !strings.Contains(outcomes[0], want) {
			t.Errorf("outcomes lack %q:\n%s", want, outcomes[0])
		}
	}
}

// explore runs one seed as a subtest, in parallel with the others, and fails it with the
// schedule, the violations, the log and the nodes' warnings when it breaks a promise.
func explore(t *testing.T, seed uint64) {
	t.Run(fmt.Sprint(seed), func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			s := Generate(seed)
			res := Run(s)
			if len(res.Violations) == 0 {
				return
			}
			if key := os.Getenv("KURA_EXPLORE_KEY"); key != "" {
				for _, e := range res.Events {
					if e.Key == key {
						t.Logf("%v %s op=%d c=%d node=%s %s %q found=%v ts=%d %s", e.Time.Sub(res.Events[0].Time), e.Type, e.Op, e.Client, e.Node, e.F, e.Value, e.Found, e.Timestamp, e.Error)
					}
				}
			}
			var why []string
			for _, v := range res.Violations {
				why = append(why, v.Check+": "+v.Reason)
			}
			t.Errorf("%s\nviolations:\n  %s\nlog:\n  %s\nnodes' warnings:\n%s", s, strings.Join(why, "\n  "), strings.Join(res.Log, "\n  "), res.NodeLog)
		})
	})
}
