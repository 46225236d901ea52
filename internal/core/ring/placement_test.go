package ring

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPlacementMatchesStrategy(t *testing.T) {
	rings := map[string]*Ring{
		"small":  smallRing(t),
		"mixed":  mixedRing(t),
		"vnodes": mustRing(t, vnodeMembers(12, 8, "a", "b", "c")...),
	}
	strategies := []Strategy{
		Simple(1), Simple(3), Simple(20),
		Network(map[string]int{"a": 2, "b": 1}),
		Network(map[string]int{"a": 1, "b": 5, "x": 1}),
	}
	for name, r := range rings {
		for _, s := range strategies {
			t.Run(name+"/"+s.String(), func(t *testing.T) {
				p := r.Placement(s)
				if p.Ring() != r || p.Strategy() != s {
					t.Fatalf("placement does not report its ring and strategy")
				}
				probes := []Token{0, math.MaxUint64}
				for _, rg := range r.Ranges() {
					probes = append(probes, rg.Start, rg.Start+1, rg.End, rg.End+1)
				}
				for _, tok := range probes {
					got, want := ids(p.ReplicasFor(tok)), ids(s.Replicas(r, tok))
					if !slices.Equal(got, want) {
						t.Errorf("ReplicasFor(%d) = %v, Replicas = %v", tok, got, want)
					}
				}
			})
		}
	}
}

func TestPlacementSetsAreIndependent(t *testing.T) {
	p := smallRing(t).Placement(Simple(1))
	first := p.ReplicasFor(100)
	_ = append(first, Member{ID: "intruder"})
	if got := ids(p.ReplicasFor(200)); !slices.Equal(got, []string{"n2"}) {
		t.Errorf("after appending to one set, the next set is %v, want [n2]", got)
	}
}

// BenchmarkReplicas measures the request-path lookup on a 100-node, 16-vnode, 3-DC ring,
// both walking the ring per call and answering from a precomputed Placement.
func BenchmarkReplicas(b *testing.B) {
	r := mustRing(b, vnodeMembers(100, 16, "a", "b", "c")...)
	rng := rand.New(rand.NewPCG(1, 2))
	tokens := make([]Token, 1024)
	for i := range tokens {
		tokens[i] = Token(rng.Uint64())
	}
	for _, s := range []Strategy{Simple(3), Network(map[string]int{"a": 2, "b": 2, "c": 1})} {
		b.Run(s.String()+"/walk", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				s.Replicas(r, tokens[i%len(tokens)])
			}
		})
		p := r.Placement(s)
		b.Run(s.String()+"/placement", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				p.ReplicasFor(tokens[i%len(tokens)])
			}
		})
	}
}

// Effective ownership adds up to the replicas each range has, and the primary shares of
// Simple(1) are Ring.Share.
func TestPlacementOwnership(t *testing.T) {
	r := mustRing(t, vnodeMembers(12, 8, "a", "b", "c")...)
	for _, s := range []Strategy{Simple(1), Simple(3), Network(map[string]int{"a": 2, "b": 1})} {
		t.Run(s.String(), func(t *testing.T) {
			p := r.Placement(s)
			owned := p.Ownership()
			var total, want float64
			for _, rg := range r.Ranges() {
				want += rg.Fraction() * float64(len(p.ReplicasFor(rg.End)))
			}
			for id, share := range owned {
				total += share
				if s.String() == Simple(1).String() && math.Abs(share-r.Share(id)) > 1e-9 {
					t.Errorf("Simple(1) ownership of %s = %v, Share = %v", id, share, r.Share(id))
				}
			}
			if math.Abs(total-want) > 1e-9 {
				t.Errorf("ownership adds up to %v, want %v", total, want)
			}
		})
	}
}
