package power

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/ring"
)

// atOne is the sleep rule at level ONE: a node may sleep when every range it holds keeps
// another awake replica, so every key stays readable and writable. It is what the
// ring's tiers guarantee, whatever else a keyspace's levels ask.
var atOne = []consistency.Level{consistency.One}

// greedySleepers puts candidates to sleep in their order, each one when the sleep rule at
// levels allows it beside those asleep before, and returns those it put to sleep: a group
// that may sleep at once and that no other candidate may join, though not always the
// largest such group (a hitting-set problem).
func greedySleepers(sets [][]ring.Member, levels []consistency.Level, candidates []string) []string {
	var asleep []string
	for _, id := range candidates {
		if len(ShortOfAwake(sets, levels, id, func(x string) bool { return !slices.Contains(asleep, x) })) == 0 {
			asleep = append(asleep, id)
		}
	}
	return asleep
}

// anyMaySleep is how many of candidates may sleep at once at level ONE whichever they
// are: the largest k such that any k of them may. A group is refused exactly when it
// holds every replica of a range; a range whose replicas are all candidates, m of them,
// is lost to the k candidates that include those m (and any others, for k > m), so
// k < m. Hence the smallest such range's size − 1, or every candidate when no range is
// made of candidates only: with plain consistent hashing and replication factor r (every
// node a candidate) that is r − 1; once every range keeps a tier-0 replica, it is every
// tier-1 node. A range without replicas changes nothing: no sleep touches it.
func anyMaySleep(sets [][]ring.Member, candidates []string) int {
	k := len(candidates)
	for _, set := range sets {
		ids := make([]string, len(set))
		for i, m := range set {
			ids[i] = m.ID
		}
		ids = slices.Compact(slices.Sorted(slices.Values(ids)))
		if len(ids) > 0 && !slices.ContainsFunc(ids, func(id string) bool { return !slices.Contains(candidates, id) }) {
			k = min(k, len(ids)-1)
		}
	}
	return k
}

// keepsAnAwakeReplica is the rule at level ONE by its definition: with the nodes asleep
// says asleep, every range that has replicas keeps one awake.
func keepsAnAwakeReplica(sets [][]ring.Member, asleep func(id string) bool) bool {
	for _, set := range sets {
		if len(set) > 0 && !slices.ContainsFunc(set, func(m ring.Member) bool { return !asleep(m.ID) }) {
			return false
		}
	}
	return true
}

func TestRuleAtOneKeepsAnAwakeReplica(t *testing.T) {
	// Three ranges on {a b c}, one on {c d}, one with a repeated id and one with none.
	sets := [][]ring.Member{set("a", "b", "c"), set("c", "b", "a"), set("a", "b", "c"), set("c", "d"), set("e", "e"), set()}
	tests := []struct {
		name     string
		asleep   []string
		maySleep map[string]bool
	}{
		{"all awake", nil, map[string]bool{"a": true, "c": true, "d": true, "e": false, "z": true}},
		{"a and b asleep", []string{"a", "b"}, map[string]bool{"c": false, "d": true, "a": true}},
		{"a, b and c asleep", []string{"a", "b", "c"}, map[string]bool{"d": false, "a": false}},
		{"e asleep", []string{"e"}, map[string]bool{"a": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for id, want := range tt.maySleep {
				short := len(ShortOfAwake(sets, atOne, id, func(x string) bool { return !slices.Contains(tt.asleep, x) })) > 0
				if short == want {
					t.Errorf("%s may sleep: %v, want %v", id, !short, want)
				}
			}
		})
	}
}

func TestSleepersAtOne(t *testing.T) {
	tests := []struct {
		name       string
		sets       [][]ring.Member
		candidates []string
		guaranteed int
		chosen     []string
	}{
		{"overlapping triples", [][]ring.Member{set("a", "b", "c"), set("b", "c", "d")},
			[]string{"a", "b", "c", "d"}, 2, []string{"a", "b", "d"}},
		{"a range with a replica that is no candidate never limits",
			[][]ring.Member{set("a", "b", "c"), set("b", "c", "d")},
			[]string{"b", "c", "d"}, 2, []string{"b", "c"}},
		{"every range keeps a replica that is no candidate", [][]ring.Member{set("a", "b", "c"), set("a", "c", "d")},
			[]string{"b", "c", "d"}, 3, []string{"b", "c", "d"}},
		{"pairs allow one", [][]ring.Member{set("a", "b"), set("c", "d")},
			[]string{"a", "b", "c", "d"}, 1, []string{"a", "c"}},
		{"a range without replicas changes nothing", [][]ring.Member{set("a", "b"), set()},
			[]string{"a", "b"}, 1, []string{"a"}},
		{"no candidate", [][]ring.Member{set("a", "b")}, nil, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			guaranteed, chosen := anyMaySleep(tt.sets, tt.candidates), greedySleepers(tt.sets, atOne, tt.candidates)
			if guaranteed != tt.guaranteed || !slices.Equal(chosen, tt.chosen) {
				t.Errorf("any %d may sleep, greedy chooses %v; want %d, %v", guaranteed, chosen, tt.guaranteed, tt.chosen)
			}
		})
	}
}

// TestSleepersAtOneAgainstBruteForce checks, on small random placements, that the sleep
// rule at ONE lets a group sleep one by one exactly when every range keeps an awake
// replica, that anyMaySleep is what every group of candidates says, and that the greedy
// group is one no other candidate may join.
func TestSleepersAtOneAgainstBruteForce(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 0x636f76))
		n := 1 + rng.IntN(8)
		nodes := make([]string, n)
		for i := range nodes {
			nodes[i] = fmt.Sprintf("n%d", i)
		}
		sets := make([][]ring.Member, 1+rng.IntN(6))
		for i := range sets {
			for _, id := range nodes {
				if rng.IntN(3) == 0 {
					sets[i] = append(sets[i], ring.Member{ID: id, DC: "dc1"})
				}
			}
		}
		var candidates []string
		for _, id := range nodes {
			if rng.IntN(4) > 0 {
				candidates = append(candidates, id)
			}
		}
		// safeAt[k]: every group of k candidates may sleep.
		safeAt := make([]bool, len(candidates)+1)
		for k := range safeAt {
			safeAt[k] = true
		}
		for mask := range uint(1) << len(candidates) {
			var group []string
			for i, id := range candidates {
				if mask&(1<<i) != 0 {
					group = append(group, id)
				}
			}
			mayAll := len(greedySleepers(sets, atOne, group)) == len(group)
			if want := keepsAnAwakeReplica(sets, func(x string) bool { return slices.Contains(group, x) }); mayAll != want {
				t.Fatalf("seed %d: sets %v: the rule at ONE lets %v sleep: %v; every range keeps an awake replica: %v", seed, sets, group, mayAll, want)
			}
			if !mayAll {
				safeAt[bits.OnesCount(mask)] = false
			}
		}
		want := 0
		for k := len(candidates); k >= 0; k-- {
			if !slices.Contains(safeAt[:k+1], false) {
				want = k
				break
			}
		}
		if got := anyMaySleep(sets, candidates); got != want {
			t.Fatalf("seed %d: sets %v, candidates %v: anyMaySleep %d, brute force %d", seed, sets, candidates, got, want)
		}
		chosen := greedySleepers(sets, atOne, candidates)
		for _, id := range candidates {
			short := len(ShortOfAwake(sets, atOne, id, func(x string) bool { return !slices.Contains(chosen, x) })) > 0
			if !slices.Contains(chosen, id) && !short {
				t.Fatalf("seed %d: sets %v: chosen %v is not maximal, %s could join", seed, sets, chosen, id)
			}
		}
	}
}

// TestSixteenNodes is the paper's setting, docs/power.md's table: 16 nodes, 3 replicas
// (simple=3), 16 vnodes each, the rule at ONE. On a plain ring (every node tier 1) any 2
// nodes may sleep, not 3, though a chosen group of 5 may. Once some nodes are tier 0,
// every set keeps a tier-0 member, so every tier-1 node may sleep at once: one tier-0
// node is enough for an awake replica per range. Load asks for more: m tier-0 nodes hold
// a replica of every range between them, at least 1/m of the key space each on average,
// against 3/16 for the average node of a plain ring, so 6 is the smallest m (16/3
// rounded up) for which tier-0 nodes need hold no more than the average.
func TestSixteenNodes(t *testing.T) {
	tests := []struct {
		alwaysOn   int // nodes n00.. of tier 0
		guaranteed int
		chosen     int
	}{
		{0, 2, 5},
		{1, 15, 15},
		{5, 11, 11},
		{6, 10, 10},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("tier-0=%d", tt.alwaysOn), func(t *testing.T) {
			ids, r := sixteenNodeRing(t, tt.alwaysOn)
			sets := r.Placement(ring.Simple(3)).Sets()
			tier1 := ids[tt.alwaysOn:]
			guaranteed, chosen := anyMaySleep(sets, tier1), greedySleepers(sets, atOne, tier1)
			if guaranteed != tt.guaranteed || len(chosen) != tt.chosen {
				t.Errorf("any %d may sleep, greedy chooses %d %v; want %d, %d", guaranteed, len(chosen), chosen, tt.guaranteed, tt.chosen)
			}
		})
	}
}

// sixteenNodeRing returns the ids n00..n15 and their ring, 16 vnodes each from
// ring.TokensFor, with the first alwaysOn of them tier 0 and the others tier 1.
func sixteenNodeRing(t *testing.T, alwaysOn int) ([]string, *ring.Ring) {
	t.Helper()
	members := make([]ring.Member, 16)
	ids := make([]string, len(members))
	for i := range members {
		ids[i] = fmt.Sprintf("n%02d", i)
		members[i] = ring.Member{ID: ids[i], DC: "dc", Tier: 1, Tokens: ring.TokensFor(ids[i], 16)}
		if i < alwaysOn {
			members[i].Tier = 0
		}
	}
	r, err := ring.New(members)
	if err != nil {
		t.Fatal(err)
	}
	return ids, r
}

func TestSetsOf(t *testing.T) {
	r, err := ring.New([]ring.Member{
		{ID: "a", Tokens: []ring.Token{100}},
		{ID: "b", Tokens: []ring.Token{200}},
		{ID: "c", Tokens: []ring.Token{300}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := SetsOf(r.Placement(ring.Simple(2)))
	want := [][]string{{"a", "b"}, {"b", "c"}, {"c", "a"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("SetsOf = %v, want %v", got, want)
	}
}
