package power

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kuradb/kura/ring"
)

// asleepSet returns an asleep predicate for ids.
func asleepSet(ids ...string) func(string) bool {
	return func(id string) bool { return slices.Contains(ids, id) }
}

func TestCoverageUncoveredAndCanSleep(t *testing.T) {
	// Three ranges on {a b c}, one on {c d}, one with a repeated id and one with none.
	c := NewCoverage([][]string{{"a", "b", "c"}, {"c", "b", "a"}, {"a", "b", "c"}, {"c", "d"}, {"e", "e"}, {}})
	tests := []struct {
		name      string
		asleep    []string
		uncovered int
		canSleep  map[string]bool
	}{
		{"all awake: only the empty range is uncovered", nil, 1,
			map[string]bool{"a": true, "c": true, "d": true, "e": false, "z": true}},
		{"a and b asleep", []string{"a", "b"}, 1,
			map[string]bool{"c": false, "d": true, "a": true}},
		{"a, b and c asleep lose three ranges", []string{"a", "b", "c"}, 4,
			map[string]bool{"d": false, "a": false}},
		{"e asleep loses its range", []string{"e"}, 2,
			map[string]bool{"a": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asleep := asleepSet(tt.asleep...)
			if got := c.Uncovered(asleep); got != tt.uncovered {
				t.Errorf("Uncovered = %d, want %d", got, tt.uncovered)
			}
			for id, want := range tt.canSleep {
				if got := c.CanSleep(asleep, id); got != want {
					t.Errorf("CanSleep(%s) = %v, want %v", id, got, want)
				}
			}
		})
	}
}

func TestSafeSleepers(t *testing.T) {
	tests := []struct {
		name       string
		sets       [][]string
		nodes      []string
		sleepable  []string
		guaranteed int
		chosen     []string
	}{
		{"overlapping triples", [][]string{{"a", "b", "c"}, {"b", "c", "d"}},
			[]string{"a", "b", "c", "d"}, []string{"a", "b", "c", "d"}, 2, []string{"a", "b", "d"}},
		{"a set with a node that cannot sleep never limits",
			[][]string{{"a", "b", "c"}, {"b", "c", "d"}},
			[]string{"a", "b", "c", "d"}, []string{"b", "c", "d"}, 2, []string{"b", "c"}},
		{"every set keeps a node that cannot sleep", [][]string{{"a", "b", "c"}, {"a", "c", "d"}},
			[]string{"a", "b", "c", "d"}, []string{"b", "c", "d"}, 3, []string{"b", "c", "d"}},
		{"pairs allow one", [][]string{{"a", "b"}, {"c", "d"}},
			[]string{"d", "c", "b", "a", "a"}, []string{"a", "b", "c", "d"}, 1, []string{"a", "c"}},
		{"a member outside nodes cannot sleep", [][]string{{"a", "x"}},
			[]string{"a"}, []string{"a", "x"}, 1, []string{"a"}},
		{"a range without replicas allows none", [][]string{{"a", "b"}, {}},
			[]string{"a", "b"}, []string{"a", "b"}, 0, []string{"a"}},
		{"nobody sleepable", [][]string{{"a", "b"}},
			[]string{"a", "b"}, nil, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			guaranteed, chosen := NewCoverage(tt.sets).SafeSleepers(tt.nodes, asleepSet(tt.sleepable...))
			if guaranteed != tt.guaranteed || !slices.Equal(chosen, tt.chosen) {
				t.Errorf("SafeSleepers = %d, %v; want %d, %v", guaranteed, chosen, tt.guaranteed, tt.chosen)
			}
		})
	}
}

// TestSafeSleepersAgainstBruteForce checks guaranteed against every group of sleepable
// nodes on small random coverages, and that chosen is safe and maximal.
func TestSafeSleepersAgainstBruteForce(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 0x636f76))
		n := 1 + rng.IntN(8)
		nodes := make([]string, n)
		for i := range nodes {
			nodes[i] = fmt.Sprintf("n%d", i)
		}
		sets := make([][]string, 1+rng.IntN(6))
		for i := range sets {
			for _, id := range nodes {
				if rng.IntN(3) == 0 {
					sets[i] = append(sets[i], id)
				}
			}
		}
		sleepable := map[string]bool{}
		for _, id := range nodes {
			sleepable[id] = rng.IntN(4) > 0
		}
		c := NewCoverage(sets)
		guaranteed, chosen := c.SafeSleepers(nodes, func(id string) bool { return sleepable[id] })

		var candidates []string
		for _, id := range nodes {
			if sleepable[id] {
				candidates = append(candidates, id)
			}
		}
		// safeAt[k]: every group of k candidates leaves every range covered.
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
			if c.Uncovered(asleepSet(group...)) > 0 {
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
		if guaranteed != want {
			t.Fatalf("seed %d: sets %v, sleepable %v: guaranteed %d, brute force %d", seed, sets, candidates, guaranteed, want)
		}
		asleep := asleepSet(chosen...)
		if c.Uncovered(asleep) > NewCoverage(sets).Uncovered(asleepSet()) {
			t.Fatalf("seed %d: sets %v: chosen %v uncovers a range", seed, sets, chosen)
		}
		for _, id := range candidates {
			if !slices.Contains(chosen, id) && c.CanSleep(asleep, id) {
				t.Fatalf("seed %d: sets %v: chosen %v is not maximal, %s could join", seed, sets, chosen, id)
			}
		}
	}
}

// TestSixteenNodes is the paper's setting: 16 nodes, 3 replicas (simple=3), 16 vnodes
// each. On a plain ring (every node tier 1) any 2 nodes may sleep, not 3, though a
// chosen group of 5 may. Once some nodes are tier 0, every set keeps a tier-0 member,
// so every tier-1 node may sleep at once: one tier-0 node is enough for coverage. Load
// asks for more: m tier-0 nodes hold a replica of every range between them, at least
// 1/m of the key space each on average, against 3/16 for the average node of a plain
// ring, so 6 is the smallest m (16/3 rounded up) for which tier-0 nodes need hold no
// more than the average.
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
			c := NewCoverage(SetsOf(r.Placement(ring.Simple(3))))
			guaranteed, chosen := c.SafeSleepers(ids, func(id string) bool {
				m, _ := r.Member(id)
				return m.Tier > 0
			})
			if guaranteed != tt.guaranteed || len(chosen) != tt.chosen {
				t.Errorf("guaranteed %d, chosen %d %v; want %d, %d", guaranteed, len(chosen), chosen, tt.guaranteed, tt.chosen)
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
