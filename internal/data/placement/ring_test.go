package placement

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/schema"
)

// TestRingPendingReplicas: while nodes join, leave or replace a dead one, a key's
// replicas are its current ones, then the future-only ones marked pending; Moves names
// every range that changes hands, with who gains it.
func TestRingPendingReplicas(t *testing.T) {
	tests := []struct {
		name  string
		nodes []cluster.Node
		// gainer is the node every move must name as gaining (empty: nothing moves).
		gainer string
	}{
		{"still", []cluster.Node{{ID: "b"}, {ID: "c"}}, ""},
		{"joining", []cluster.Node{{ID: "b"}, {ID: "c"}, {ID: "d", Status: cluster.StatusJoining}}, "d"},
		{"booting nodes own nothing", []cluster.Node{{ID: "b"}, {ID: "c"}, {ID: "d", Status: cluster.StatusBooting}}, ""},
		{"leaving", []cluster.Node{{ID: "b"}, {ID: "c", Status: cluster.StatusLeaving}, {ID: "d"}}, ""},
		{"replacing", []cluster.Node{{ID: "b"}, {ID: "c"}, {ID: "d", Status: cluster.StatusJoining, Replaces: "c", Tokens: tokensOf("c")}}, "d"},
		{"left", []cluster.Node{{ID: "b"}, {ID: "c", Status: cluster.StatusLeft}}, ""},
		// A second replacement of one dead node, refused or waiting, keeps the dead node's
		// tokens off the future ring, in either order of ids: else they are there twice.
		{"a second replacement after the first", []cluster.Node{{ID: "b"}, {ID: "c"}, {ID: "d", Status: cluster.StatusJoining, Replaces: "c", Tokens: tokensOf("c")},
			{ID: "e", Status: cluster.StatusBooting, Replaces: "c"}}, "d"},
		{"a second replacement before the first", []cluster.Node{{ID: "b"}, {ID: "c"}, {ID: "d", Status: cluster.StatusBooting, Replaces: "c"},
			{ID: "e", Status: cluster.StatusJoining, Replaces: "c", Tokens: tokensOf("c")}}, "e"},
	}
	ks, err := schema.Keyspace{Name: "ks", Replication: "dc=2"}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := cluster.NewDirectory(cluster.Node{ID: "a", DC: "dc"})
			for _, n := range tt.nodes {
				n.DC = "dc"
				if _, err := dir.Upsert(n); err != nil {
					t.Fatal(err)
				}
			}
			p := NewRing(dir, 16)
			moves, err := p.Moves(ks)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range moves {
				for _, h := range m.Holders {
					if h.Pending {
						t.Errorf("range %v: holder %s is pending", m.Range, h.ID)
					}
				}
				if tt.gainer != "" && (len(m.Gainers) != 1 || m.Gainers[0].ID != tt.gainer) {
					t.Errorf("range %v: gainers %v, want %s", m.Range, m.Gainers, tt.gainer)
				}
				// The gainers take over the copies of as many losers, holders the future
				// ring drops (what streaming pulls from).
				if len(m.Losers) != len(m.Gainers) {
					t.Errorf("range %v: losers %v for gainers %v, want as many", m.Range, m.Losers, m.Gainers)
				}
				for _, l := range m.Losers {
					if !slices.ContainsFunc(m.Holders, func(h Member) bool { return h.ID == l.ID }) || l.ID == tt.gainer {
						t.Errorf("range %v: loser %s is not a holder, or is the gainer", m.Range, l.ID)
					}
				}
			}
			if tt.gainer != "" && len(moves) == 0 {
				t.Fatalf("nothing moves, want ranges gained by %s", tt.gainer)
			}
			for _, key := range []string{"k1", "k2", "k3", "k4", "k5", "k6"} {
				members, err := p.Replicas(context.Background(), ks, []byte(key), nil)
				if err != nil {
					t.Fatal(err)
				}
				counted := 0
				for _, m := range members {
					if m.Pending && (m.Counts() || m.Reads()) {
						t.Errorf("%s: pending %s counts or reads", key, m.ID)
					}
					if !m.Pending {
						counted++
						if m.ID == tt.gainer {
							t.Errorf("%s: gainer %s is a current replica", key, m.ID)
						}
					}
				}
				if counted != 2 {
					t.Errorf("%s: %d current replicas %v, want 2", key, counted, members)
				}
			}
		})
	}
}

// tokensOf returns the tokens a node derives from its id, as uint64s.
func tokensOf(id string) []uint64 {
	var out []uint64
	for _, t := range (cluster.Node{ID: id}).RingTokens(16) {
		out = append(out, uint64(t))
	}
	return out
}

// TestRingPendingReplicasUnderNextSplits: during a rebalance a key's replicas are those
// of its token under the current split keys, then those under the next ones that differ,
// pending; with no rebalance, only the current ones.
func TestRingPendingReplicasUnderNextSplits(t *testing.T) {
	dir := cluster.NewDirectory(cluster.Node{ID: "a", DC: "dc"})
	for _, id := range []string{"b", "c", "d", "e"} {
		if _, err := dir.Upsert(cluster.Node{ID: id, DC: "dc"}); err != nil {
			t.Fatal(err)
		}
	}
	p := NewRing(dir, 16)
	still, err := schema.Keyspace{Name: "ks", Replication: "dc=2", Partitioner: "ordered"}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	moving := still
	moving.Moving = true
	moving.NextSplits = [][]byte{[]byte("user2"), []byte("user4"), []byte("user6"), []byte("user8")}
	if moving, err = moving.Compile(); err != nil {
		t.Fatal(err)
	}
	r, err := p.Ring()
	if err != nil {
		t.Fatal(err)
	}
	pl := r.Placement(moving.Strategy())
	pendingSeen := 0
	for i := range 50 {
		key := []byte(fmt.Sprintf("user%d", i*1999))
		now, err := p.Replicas(context.Background(), still, key, nil)
		if err != nil {
			t.Fatal(err)
		}
		during, err := p.Replicas(context.Background(), moving, key, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(during[:len(now)], now) {
			t.Fatalf("%s: current replicas %v during the move, %v before", key, during[:len(now)], now)
		}
		var want []string
		for _, m := range pl.ReplicasFor(moving.NextPartition().Token(key)) {
			if !slices.ContainsFunc(now, func(c Member) bool { return c.ID == m.ID }) {
				want = append(want, m.ID)
			}
		}
		var got []string
		for _, m := range during[len(now):] {
			if !m.Pending {
				t.Errorf("%s: extra replica %s is not pending", key, m.ID)
			}
			got = append(got, m.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: pending replicas %v, want %v (its replicas under the next splits, less the current ones)", key, got, want)
		}
		pendingSeen += len(got)
	}
	if pendingSeen == 0 {
		t.Error("no key has a pending replica: the test moves nothing")
	}
}

// TestRingPendingReplicasUnderNextReplication: during a change of replication a key's
// replicas are those of the current strategy, then those the next strategy adds, pending
// (one per DC it raises by one); a lowering adds none until the switch, after which the
// replicas it drops are the pending ones.
func TestRingPendingReplicasUnderNextReplication(t *testing.T) {
	dir := cluster.NewDirectory(cluster.Node{ID: "a", DC: "dc1"})
	for _, n := range []cluster.Node{{ID: "b", DC: "dc1"}, {ID: "c", DC: "dc1"}, {ID: "d", DC: "dc1"}, {ID: "x", DC: "dc2"}, {ID: "y", DC: "dc2"}} {
		if _, err := dir.Upsert(n); err != nil {
			t.Fatal(err)
		}
	}
	p := NewRing(dir, 16)
	tests := []struct {
		name, replication, next string
		// current and pending replicas per DC, for every key
		wantCurrent, wantPending map[string]int
	}{
		{"raise dc1 and add dc2", "dc1=2", "dc1=3,dc2=1", map[string]int{"dc1": 2}, map[string]int{"dc1": 1, "dc2": 1}},
		{"lower before the switch", "dc1=3,dc2=1", "dc1=2", map[string]int{"dc1": 3, "dc2": 1}, map[string]int{}},
		{"lower after the switch", "dc1=2", "dc1=3,dc2=1", map[string]int{"dc1": 2}, map[string]int{"dc1": 1, "dc2": 1}},
		{"not moving", "dc1=2", "", map[string]int{"dc1": 2}, map[string]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ks, err := schema.Keyspace{Name: "ks", Replication: tt.replication, Moving: tt.next != "", NextReplication: tt.next}.Compile()
			if err != nil {
				t.Fatal(err)
			}
			for i := range 50 {
				key := []byte(fmt.Sprintf("key%d", i))
				members, err := p.Replicas(context.Background(), ks, key, nil)
				if err != nil {
					t.Fatal(err)
				}
				current, pending := map[string]int{}, map[string]int{}
				seen := map[string]bool{}
				for _, m := range members {
					if seen[m.ID] {
						t.Errorf("%s: %s listed twice in %v", key, m.ID, members)
					}
					seen[m.ID] = true
					if m.Pending {
						pending[m.DC]++
					} else {
						current[m.DC]++
					}
				}
				if !maps.Equal(current, tt.wantCurrent) || !maps.Equal(pending, tt.wantPending) {
					t.Fatalf("%s: current %v pending %v, want %v and %v", key, current, pending, tt.wantCurrent, tt.wantPending)
				}
			}
		})
	}
}

// TestRingKeepsTheWholeRingScanPlan: the plan of a scan of every range is made once and
// returned again while nothing it holds changes; a replica's new state, or a new ring,
// makes a new plan that shows it.
// A scan's plan gives ranges with the same replicas, in the same order, one list, and
// ranges with other replicas lists of their own (coord groups ranges by their list).
func TestRingScanPlanSharesEqualReplicaLists(t *testing.T) {
	dir := cluster.NewDirectory(cluster.Node{ID: "a", DC: "dc1"})
	for _, n := range []cluster.Node{{ID: "b", DC: "dc1"}, {ID: "c", DC: "dc1"}, {ID: "d", DC: "dc2"}, {ID: "e", DC: "dc2"}} {
		if _, err := dir.Upsert(n); err != nil {
			t.Fatal(err)
		}
		dir.SetState(n.ID, cluster.StateUp)
	}
	p := NewRing(dir, 16)
	for _, partitioner := range []string{"hash", "ordered"} {
		ks, err := schema.Keyspace{Name: "ks", Replication: "dc1=2,dc2=1", Partitioner: partitioner}.Compile()
		if err != nil {
			t.Fatal(err)
		}
		ranges, err := p.ScanRanges(context.Background(), ks, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		lists := map[*Member][]Member{}
		for _, rr := range ranges {
			if len(rr.Replicas) != 3 {
				t.Fatalf("%s: range %v has %d replicas, want 3", partitioner, rr.Range, len(rr.Replicas))
			}
			lists[&rr.Replicas[0]] = rr.Replicas
		}
		for i, a := range ranges {
			for _, b := range ranges[i+1:] {
				equal, shared := slices.Equal(a.Replicas, b.Replicas), &a.Replicas[0] == &b.Replicas[0]
				if equal != shared {
					t.Fatalf("%s: ranges %v and %v: equal replicas %t, one list %t", partitioner, a.Range, b.Range, equal, shared)
				}
			}
		}
		if len(lists) < 2 || len(lists) >= len(ranges) {
			t.Errorf("%s: %d lists for %d ranges, want a few shared ones", partitioner, len(lists), len(ranges))
		}
	}
}

func TestRingKeepsTheWholeRingScanPlan(t *testing.T) {
	ks, err := schema.Keyspace{Name: "ks", Replication: "dc=2"}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	dir := cluster.NewDirectory(cluster.Node{ID: "a", DC: "dc"})
	for _, id := range []string{"b", "c"} {
		if _, err := dir.Upsert(cluster.Node{ID: id, DC: "dc"}); err != nil {
			t.Fatal(err)
		}
		dir.SetState(id, cluster.StateUp)
	}
	p := NewRing(dir, 16)
	ctx := context.Background()
	plan := func() []RangeReplicas {
		t.Helper()
		ranges, err := p.ScanRanges(ctx, ks, []byte("from"), []byte("to"))
		if err != nil {
			t.Fatal(err)
		}
		return ranges
	}
	statesOf := func(ranges []RangeReplicas, id string) (states []cluster.State) {
		for _, rr := range ranges {
			for _, m := range rr.Replicas {
				if m.ID == id {
					states = append(states, m.State)
				}
			}
		}
		return states
	}
	first := plan()
	if len(first) != 48 || len(statesOf(first, "b")) == 0 {
		t.Fatalf("plan of %d ranges, b a replica of %d, want 48 ranges, b among the replicas", len(first), len(statesOf(first, "b")))
	}
	if again := plan(); &again[0] != &first[0] {
		t.Error("a second scan got a new plan of an unchanged ring")
	}
	dir.SetState("b", cluster.StateDown)
	down := plan()
	for _, st := range statesOf(down, "b") {
		if st != cluster.StateDown {
			t.Fatalf("b is down, the plan says %v", st)
		}
	}
	if _, err := dir.Upsert(cluster.Node{ID: "d", DC: "dc"}); err != nil {
		t.Fatal(err)
	}
	if grown := plan(); len(grown) != 64 || len(statesOf(grown, "d")) == 0 {
		t.Fatalf("a fourth node: plan of %d ranges, d a replica of %d, want 64, d among the replicas", len(grown), len(statesOf(grown, "d")))
	}
}
