package ring

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// tieredRing builds evenRing's layout (member i is "n<i+1>" in dcs[i], owning the i-th of
// len(dcs) evenly spaced tokens) with member i in tiers[i].
func tieredRing(t testing.TB, dcs []string, tiers []int) *Ring {
	t.Helper()
	tokens := EvenTokens(len(dcs))
	members := make([]Member, len(dcs))
	for i, dc := range dcs {
		members[i] = Member{ID: fmt.Sprintf("n%d", i+1), DC: dc, Tier: tiers[i], Tokens: []Token{tokens[i]}}
	}
	return mustRing(t, members...)
}

func TestReplicasForKeepsAnAlwaysOnReplica(t *testing.T) {
	// Walking from token 0 the ring meets n1 n2 n3 n4 n5 n6.
	dcs := []string{"a", "a", "b", "a", "b", "c"}
	tokens := EvenTokens(len(dcs))
	tests := []struct {
		name     string
		tiers    []int
		strategy Strategy
		token    Token
		want     []string
	}{
		{"simple: the last replica gives way to the next tier-0 member",
			[]int{1, 1, 1, 0, 1, 0}, Simple(3), tokens[0], []string{"n1", "n2", "n4"}},
		{"simple: a set with a tier-0 member stays",
			[]int{1, 1, 1, 0, 1, 0}, Simple(3), tokens[1], []string{"n2", "n3", "n4"}},
		{"simple: the tier-0 member found first wins, wrapping past the top",
			[]int{0, 1, 1, 1, 1, 1}, Simple(2), tokens[4], []string{"n5", "n1"}},
		{"simple: one replica is replaced by the next tier-0 member",
			[]int{1, 1, 1, 0, 1, 0}, Simple(1), tokens[0], []string{"n4"}},
		{"simple: a tier-1 set stays when no member is tier 0",
			[]int{1, 1, 2, 1, 1, 3}, Simple(3), tokens[0], []string{"n1", "n2", "n3"}},
		{"simple: a ring of tier-0 members places as the strategy",
			[]int{0, 0, 0, 0, 0, 0}, Simple(3), tokens[0], []string{"n1", "n2", "n3"}},
		{"network: each DC's last replica gives way, the primary stays",
			[]int{1, 1, 1, 0, 0, 0}, Network(map[string]int{"a": 2, "b": 1}), tokens[0], []string{"n1", "n4", "n5"}},
		{"network: a DC without a tier-0 member keeps its replicas",
			[]int{1, 1, 1, 0, 1, 0}, Network(map[string]int{"a": 2, "b": 1}), tokens[0], []string{"n1", "n4", "n3"}},
		{"network: a DC that keeps a tier-0 replica is left alone",
			[]int{0, 1, 1, 1, 0, 0}, Network(map[string]int{"a": 2, "b": 1}), tokens[0], []string{"n1", "n2", "n5"}},
		{"each: every DC's scope is checked on its own",
			[]int{1, 1, 1, 0, 0, 0}, Each(1), tokens[0], []string{"n4", "n5", "n6"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tieredRing(t, dcs, tt.tiers)
			if got := ids(r.ReplicasFor(tt.strategy, tt.token)); !slices.Equal(got, tt.want) {
				t.Errorf("ReplicasFor(%s, %d) = %v, want %v", tt.strategy, tt.token, got, tt.want)
			}
			if got := ids(r.Placement(tt.strategy).ReplicasFor(tt.token)); !slices.Equal(got, tt.want) {
				t.Errorf("Placement(%s).ReplicasFor(%d) = %v, want %v", tt.strategy, tt.token, got, tt.want)
			}
		})
	}
}

// TestUntieredRingsPlaceAsTheStrategies: a ring with no member above tier 0, and a ring
// with no member of tier 0, give exactly the strategy's own sets, members and all.
func TestUntieredRingsPlaceAsTheStrategies(t *testing.T) {
	dcNames := []string{"a", "b", "c"}
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 0x74696572))
		r := randomRing(t, rng, dcNames[:1+rng.IntN(len(dcNames))])
		members := r.Members()
		for i := range members {
			members[i].Tier = 1 + rng.IntN(3)
		}
		asleep := mustRing(t, members...)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			for _, s := range []Strategy{Simple(1 + rng.IntN(5)), randomNetwork(rng, r.DCs()), Each(1 + rng.IntN(3))} {
				for _, tok := range probes(rng, r) {
					if got, want := r.ReplicasFor(s, tok), s.Replicas(r, tok); !reflect.DeepEqual(got, want) {
						t.Fatalf("tier 0: %s: ReplicasFor(%d) = %+v, Replicas = %+v", s, tok, got, want)
					}
					if got, want := asleep.ReplicasFor(s, tok), s.Replicas(asleep, tok); !reflect.DeepEqual(got, want) {
						t.Fatalf("no tier 0: %s: ReplicasFor(%d) = %+v, Replicas = %+v", s, tok, got, want)
					}
				}
			}
		})
	}
}

// TestTieredRingInvariants builds seeded random rings with random tiers and checks every
// replica set: distinct members, the strategy's counts, a tier-0 member in every scope
// whose DC (or ring) has one, the strategy's set changed only at each such scope's last
// place and only for the nearest tier-0 member, the same answer from a ring built from
// the members in another order, and a placement that agrees.
func TestTieredRingInvariants(t *testing.T) {
	dcNames := []string{"a", "b", "c"}
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 0x706f776572))
		members := randomRing(t, rng, dcNames[:1+rng.IntN(len(dcNames))]).Members()
		for i := range members {
			if rng.IntN(3) > 0 {
				members[i].Tier = 1 + rng.IntN(2)
			}
		}
		r := mustRing(t, members...)
		rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		shuffled := mustRing(t, members...)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			for _, s := range []Strategy{Simple(1 + rng.IntN(5)), randomNetwork(rng, r.DCs()), Each(1 + rng.IntN(3))} {
				p := r.Placement(s)
				for _, tok := range probes(rng, r) {
					got := r.ReplicasFor(s, tok)
					checkAlwaysOn(t, r, s, tok, got)
					if again := shuffled.ReplicasFor(s, tok); !slices.Equal(ids(again), ids(got)) {
						t.Fatalf("%s: ReplicasFor(%d) = %v, and %v on the same ring built in another order", s, tok, ids(got), ids(again))
					}
					if fromPlacement := p.ReplicasFor(tok); !slices.Equal(ids(fromPlacement), ids(got)) {
						t.Fatalf("%s: Placement.ReplicasFor(%d) = %v, ReplicasFor = %v", s, tok, ids(fromPlacement), ids(got))
					}
				}
				sets, ranges := p.Sets(), r.Ranges()
				if len(sets) != len(ranges) {
					t.Fatalf("%s: %d sets for %d ranges", s, len(sets), len(ranges))
				}
				for i, rg := range ranges {
					if want := r.ReplicasFor(s, rg.End); !slices.Equal(ids(sets[i]), ids(want)) {
						t.Fatalf("%s: Sets()[%d] = %v, ReplicasFor(%d) = %v", s, i, ids(sets[i]), rg.End, ids(want))
					}
				}
			}
		})
	}
}

// probes returns tokens worth asking about: both ends of the ring, the end of every
// range (every token of a range has the same set) and a few random ones.
func probes(rng *rand.Rand, r *Ring) []Token {
	out := []Token{0, math.MaxUint64}
	for _, rg := range r.Ranges() {
		out = append(out, rg.End)
	}
	for range 10 {
		out = append(out, Token(rng.Uint64()))
	}
	return out
}

// checkAlwaysOn asserts that got, tok's set under s, is the strategy's set with the
// always-on rule applied, computing the rule's replacements from byDistance instead of a
// walk.
func checkAlwaysOn(t *testing.T, r *Ring, s Strategy, tok Token, got []Member) {
	t.Helper()
	base := s.Replicas(r, tok)
	if len(got) != len(base) {
		t.Fatalf("%s at %d: %d replicas %v, the strategy gives %d", s, tok, len(got), ids(got), len(base))
	}
	perDC := s.Name() != simpleName
	scopeOf := func(m Member) string {
		if perDC {
			return m.DC
		}
		return ""
	}
	seen := map[string]bool{}
	for _, m := range got {
		if seen[m.ID] {
			t.Fatalf("%s at %d: member %s twice in %v", s, tok, m.ID, ids(got))
		}
		seen[m.ID] = true
	}
	order := byDistance(r, tok)
	for i := range got {
		scope := scopeOf(base[i])
		nearest := slices.IndexFunc(order, func(m Member) bool { return m.Tier == 0 && scopeOf(m) == scope })
		lastInScope := !slices.ContainsFunc(base[i+1:], func(m Member) bool { return scopeOf(m) == scope })
		scopeCovered := slices.ContainsFunc(base, func(m Member) bool { return m.Tier == 0 && scopeOf(m) == scope })
		want := base[i]
		if lastInScope && !scopeCovered && nearest >= 0 {
			want = order[nearest]
		}
		if got[i].ID != want.ID {
			t.Fatalf("%s at %d: replicas %v, want %s in place %d (the strategy gives %v)", s, tok, ids(got), want.ID, i, ids(base))
		}
		if perDC && got[i].DC != base[i].DC {
			t.Fatalf("%s at %d: place %d moved from dc %s to dc %s", s, tok, i, base[i].DC, got[i].DC)
		}
	}
	for _, m := range order {
		if m.Tier == 0 && slices.ContainsFunc(got, func(g Member) bool { return scopeOf(g) == scopeOf(m) }) &&
			!slices.ContainsFunc(got, func(g Member) bool { return g.Tier == 0 && scopeOf(g) == scopeOf(m) }) {
			t.Fatalf("%s at %d: replicas %v have no tier-0 member in scope %q, which has %s", s, tok, ids(got), scopeOf(m), m.ID)
		}
	}
}
