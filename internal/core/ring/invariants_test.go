package ring

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRandomRingInvariants builds many seeded random rings and checks ranges, shares,
// strategies and placements against an independent oracle: the members sorted by the
// clockwise distance from the token to their nearest vnode.
func TestRandomRingInvariants(t *testing.T) {
	dcNames := []string{"a", "b", "c"}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 0x6b757261))
		r := randomRing(t, rng, dcNames[:1+rng.IntN(len(dcNames))])
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			checkRangesCoverRingOnce(t, r)
			checkSharesSumToOne(t, r)

			probes := []Token{0, math.MaxUint64}
			for _, rg := range r.Ranges() {
				probes = append(probes, rg.Start+1, rg.End)
			}
			for range 20 {
				probes = append(probes, Token(rng.Uint64()))
			}
			for _, s := range []Strategy{Simple(1 + rng.IntN(5)), randomNetwork(rng, r.DCs())} {
				p := r.Placement(s)
				for _, tok := range probes {
					got := s.Replicas(r, tok)
					want := oracleReplicas(r, s, tok)
					if !slices.Equal(ids(got), ids(want)) {
						t.Fatalf("%s.Replicas(%d) = %v, oracle %v", s, tok, ids(got), ids(want))
					}
					if fromPlacement := p.ReplicasFor(tok); !slices.Equal(ids(fromPlacement), ids(got)) {
						t.Fatalf("%s: ReplicasFor(%d) = %v, Replicas = %v", s, tok, ids(fromPlacement), ids(got))
					}
					checkReplicaCounts(t, r, s, got)
				}
			}
		})
	}
}

// randomRing returns a ring of 1..30 members over dcs: either one evenly spaced token each
// or 1..8 random tokens each.
func randomRing(t *testing.T, rng *rand.Rand, dcs []string) *Ring {
	n := 1 + rng.IntN(30)
	even := rng.IntN(4) == 0
	vnodes := 1 + rng.IntN(8)
	evenTokens := EvenTokens(n)
	members := make([]Member, n)
	for i := range members {
		members[i] = Member{ID: fmt.Sprintf("m%02d", i), DC: dcs[rng.IntN(len(dcs))]}
		if even {
			members[i].Tokens = []Token{evenTokens[i]}
			continue
		}
		for range vnodes {
			members[i].Tokens = append(members[i].Tokens, Token(rng.Uint64()))
		}
	}
	return mustRing(t, members...)
}

// randomNetwork asks for 0..3 replicas in each of dcs (at least one in all), sometimes
// adding a DC the ring lacks.
func randomNetwork(rng *rand.Rand, dcs []string) Strategy {
	rfPerDC := make(map[string]int)
	for _, dc := range dcs {
		if rf := rng.IntN(4); rf > 0 {
			rfPerDC[dc] = rf
		}
	}
	if len(rfPerDC) == 0 {
		rfPerDC[dcs[0]] = 1
	}
	if rng.IntN(4) == 0 {
		rfPerDC["ghost"] = 1
	}
	return Network(rfPerDC)
}

// oracleReplicas computes the replica set without walking the ring: members ordered by
// the clockwise distance from tok to their nearest token, then filtered by what the
// strategy still needs.
func oracleReplicas(r *Ring, s Strategy, tok Token) []Member {
	members := byDistance(r, tok)
	needed := map[string]int{}
	total := s.ReplicationFactor()
	if dcs, ok := s.(DCStrategy); ok {
		needed = dcs.RFPerDC()
	}
	var replicas []Member
	for _, m := range members {
		if len(replicas) == total {
			break
		}
		if _, ok := s.(DCStrategy); ok {
			if needed[m.DC] == 0 {
				continue
			}
			needed[m.DC]--
		}
		replicas = append(replicas, m)
	}
	return replicas
}

// byDistance returns the members ordered by the clockwise distance from tok to their
// nearest token: the order a walk from tok meets them, computed without walking.
func byDistance(r *Ring, tok Token) []Member {
	members := r.Members()
	distance := func(m Member) Token {
		nearest := Token(math.MaxUint64)
		for _, own := range m.Tokens {
			nearest = min(nearest, own-tok) // unsigned wrap gives the clockwise distance
		}
		return nearest
	}
	slices.SortFunc(members, func(a, b Member) int { return cmp.Compare(distance(a), distance(b)) })
	return members
}

// checkReplicaCounts asserts that replicas are distinct and that each DC (or the ring,
// for a simple strategy) got min(asked, available).
func checkReplicaCounts(t *testing.T, r *Ring, s Strategy, replicas []Member) {
	t.Helper()
	seen := make(map[string]bool)
	perDC := make(map[string]int)
	for _, m := range replicas {
		if seen[m.ID] {
			t.Fatalf("%s: member %s appears twice in %v", s, m.ID, ids(replicas))
		}
		seen[m.ID] = true
		perDC[m.DC]++
	}
	dcs, ok := s.(DCStrategy)
	if !ok {
		if want := min(s.ReplicationFactor(), r.Len()); len(replicas) != want {
			t.Fatalf("%s: %d replicas, want %d", s, len(replicas), want)
		}
		return
	}
	for dc, rf := range dcs.RFPerDC() {
		if want := min(rf, r.nodesIn(dc)); perDC[dc] != want {
			t.Fatalf("%s: dc %s has %d replicas, want %d", s, dc, perDC[dc], want)
		}
	}
}

// checkSharesSumToOne asserts that the members' primary shares cover the key space.
func checkSharesSumToOne(t *testing.T, r *Ring) {
	t.Helper()
	var total float64
	for _, m := range r.Members() {
		total += r.Share(m.ID)
	}
	if math.Abs(total-1) > 1e-9 {
		t.Errorf("shares sum to %v, want 1", total)
	}
}
