package model

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/io/topology"
)

func TestLayouts(t *testing.T) {
	topo := paperTwoDCs(t)
	tests := []struct {
		name       string
		layout     string
		tokensEach int
		shareEach  float64 // 0: not evenly shared
	}{
		{"even", "even", 1, 1. / 6},
		{"vnodes", "vnodes", 8, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			layout, err := ParseLayout(tt.layout, topo, 8)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Ring(topo, layout)
			if err != nil {
				t.Fatal(err)
			}
			for _, node := range topo.Nodes() {
				member, ok := r.Member(node.ID)
				if !ok || member.DC != node.DC || len(member.Tokens) != tt.tokensEach {
					t.Errorf("member %s = %+v, want DC %s and %d tokens", node.ID, member, node.DC, tt.tokensEach)
				}
				if share := r.Share(node.ID); tt.shareEach > 0 && math.Abs(share-tt.shareEach) > 1e-12 {
					t.Errorf("%s owns %v of the ring, want %v", node.ID, share, tt.shareEach)
				}
			}
		})
	}
}

func TestLayoutTokens(t *testing.T) {
	node := topology.NodeInDC{ID: "node-3", DC: "dc1"}
	if got, want := VnodeLayout(4)(2, node), ring.TokensFor("node-3", 4); !slices.Equal(got, want) {
		t.Errorf("VnodeLayout = %v, want kura's own tokens %v", got, want)
	}
	if got, want := EvenLayout(3)(1, node), []ring.Token{ring.EvenTokens(3)[1]}; !slices.Equal(got, want) {
		t.Errorf("EvenLayout = %v, want %v", got, want)
	}
	if got := EvenLayout(3)(3, node); got != nil {
		t.Errorf("EvenLayout past the last node = %v, want none", got)
	}
}

func TestLayoutErrors(t *testing.T) {
	topo := paperTwoDCs(t)
	if _, err := ParseLayout("random", topo, 8); !errors.Is(err, ErrUnknownLayout) {
		t.Errorf("ParseLayout(random): %v, want ErrUnknownLayout", err)
	}
	// Laid out for fewer nodes than the topology has, the last ones get no token.
	if _, err := Ring(topo, EvenLayout(3)); !errors.Is(err, ring.ErrNoTokens) {
		t.Errorf("Ring with nodes left without tokens: %v, want ErrNoTokens", err)
	}
}
