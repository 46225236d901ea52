package stream

import (
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/data/placement"
)

// TestSources: a range is pulled from a quorum of its readable holders, nearest first;
// when rebuilding holders are why a quorum is not readable, they serve too and every
// source must (two replicas rebuilding at once would otherwise wait on each other for
// ever); a holder that is down is waited for; and a quorum of the holders of self's DC
// must serve too, so that what a local level acknowledged there alone is pulled.
func TestSources(t *testing.T) {
	holder := func(id, dc string, state cluster.State) placement.Member {
		return placement.Member{ID: id, DC: dc, State: state}
	}
	up, down, rebuilding := cluster.StateUp, cluster.StateDown, cluster.StateRebuilding
	tests := []struct {
		name     string
		self     string
		holders  []placement.Member
		exclude  string
		wantFrom []string
		wantNeed int
		// wantHere is how many of the sources must be of self's DC (dc1).
		wantHere int
	}{
		{"rebuilding, every other holder up: a quorum, own DC first", "a",
			[]placement.Member{holder("a", "dc1", rebuilding), holder("c", "dc2", up), holder("b", "dc1", up)}, "",
			[]string{"b", "c"}, 2, 1},
		{"two rebuilding at once: the readable one and the other rebuilding one, both", "a",
			[]placement.Member{holder("a", "dc1", rebuilding), holder("b", "dc1", rebuilding), holder("c", "dc1", up)}, "",
			[]string{"c", "b"}, 2, 2},
		{"a quorum readable: the rebuilding holder is not asked", "a",
			[]placement.Member{holder("a", "dc1", rebuilding), holder("b", "dc1", rebuilding), holder("c", "dc1", up), holder("d", "dc1", up), holder("e", "dc1", up)}, "",
			[]string{"c", "d", "e"}, 3, 3},
		{"one readable, the other down: wait for it", "a",
			[]placement.Member{holder("a", "dc1", rebuilding), holder("b", "dc1", down), holder("c", "dc1", up)}, "",
			[]string{"c"}, 2, 2},
		{"down and rebuilding: still short, wait", "a",
			[]placement.Member{holder("a", "dc1", rebuilding), holder("b", "dc1", rebuilding), holder("c", "dc1", down)}, "",
			nil, 2, 2},
		{"the dead node being replaced is never a source", "a",
			[]placement.Member{holder("b", "dc1", down), holder("c", "dc1", up)}, "b",
			[]string{"c"}, 1, 1},
		{"this DC's only other holder down: the other DCs' quorum is not enough, wait", "a",
			[]placement.Member{holder("b", "dc1", down), holder("c", "dc2", up), holder("d", "dc2", up)}, "",
			[]string{"c", "d"}, 2, 1},
		{"no holder of this DC but the dead one replaced: the other DCs' quorum", "a",
			[]placement.Member{holder("b", "dc1", down), holder("c", "dc2", up), holder("d", "dc2", up)}, "b",
			[]string{"c", "d"}, 2, 0},
		{"this DC's other holder rebuilding too, the other DC's quorum readable: it serves beside them", "a",
			[]placement.Member{holder("a", "dc1", rebuilding), holder("b", "dc1", rebuilding), holder("c", "dc2", up), holder("d", "dc2", up), holder("e", "dc2", up)}, "",
			[]string{"c", "d", "e", "b"}, 3, 1},
		{"no other holder", "a",
			[]placement.Member{holder("a", "dc1", rebuilding)}, "",
			nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Config{})
			from, need, here := s.sources(tt.holders, cluster.Node{ID: tt.self, DC: "dc1"}, tt.exclude)
			var got []string
			for _, h := range from {
				got = append(got, h.ID)
			}
			if !slices.Equal(got, tt.wantFrom) || need != tt.wantNeed || here != tt.wantHere {
				t.Errorf("sources = %v need %d (%d here), want %v need %d (%d here)", got, need, here, tt.wantFrom, tt.wantNeed, tt.wantHere)
			}
		})
	}
}
