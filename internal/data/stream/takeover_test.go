package stream

import (
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/data/placement"
)

// TestTakeover: a gainer pulls from the copy it takes over, in its own DC with a per-DC
// strategy, so that a join where the DC already holds the range crosses no WAN; it falls
// back to a quorum of the holders (nil) when that copy cannot serve or it has none.
func TestTakeover(t *testing.T) {
	up := func(id, dc string) placement.Member { return placement.Member{ID: id, DC: dc, State: cluster.StateUp} }
	pending := func(id, dc string) placement.Member {
		return placement.Member{ID: id, DC: dc, State: cluster.StateJoining, Pending: true}
	}
	tests := []struct {
		name    string
		self    cluster.Node
		move    placement.Move
		exclude string
		want    []string
	}{
		{"join, one DC", cluster.Node{ID: "d", DC: "dc1"},
			placement.Move{Gainers: []placement.Member{pending("d", "dc1")}, Holders: []placement.Member{up("a", "dc1"), up("b", "dc1")}, Losers: []placement.Member{up("b", "dc1")}},
			"", []string{"b"}},
		{"join in a DC that holds the range (dc1=2,dc2=2)", cluster.Node{ID: "e", DC: "dc1"},
			placement.Move{Gainers: []placement.Member{pending("e", "dc1")},
				Holders: []placement.Member{up("c", "dc2"), up("a", "dc1"), up("d", "dc2"), up("b", "dc1")}, Losers: []placement.Member{up("a", "dc1")}},
			"", []string{"a"}},
		{"two joins in two DCs at once", cluster.Node{ID: "f", DC: "dc2"},
			placement.Move{Gainers: []placement.Member{pending("e", "dc1"), pending("f", "dc2")},
				Holders: []placement.Member{up("a", "dc1"), up("b", "dc1"), up("c", "dc2"), up("d", "dc2")}, Losers: []placement.Member{up("a", "dc1"), up("d", "dc2")}},
			"", []string{"d"}},
		{"decommission: the leaving node hands over", cluster.Node{ID: "c", DC: "dc1"},
			placement.Move{Gainers: []placement.Member{{ID: "c", DC: "dc1", State: cluster.StateUp, Pending: true}},
				Holders: []placement.Member{up("a", "dc1"), {ID: "b", DC: "dc1", State: cluster.StateLeaving}}, Losers: []placement.Member{{ID: "b", DC: "dc1", State: cluster.StateLeaving}}},
			"", []string{"b"}},
		{"simple strategy: the copy moves between DCs", cluster.Node{ID: "e", DC: "dc1"},
			placement.Move{Gainers: []placement.Member{pending("e", "dc1")}, Holders: []placement.Member{up("a", "dc1"), up("c", "dc2")}, Losers: []placement.Member{up("c", "dc2")}},
			"", []string{"c"}},
		{"removal of a dead node: quorum", cluster.Node{ID: "c", DC: "dc1"},
			placement.Move{Gainers: []placement.Member{{ID: "c", DC: "dc1", State: cluster.StateUp, Pending: true}},
				Holders: []placement.Member{up("a", "dc1"), {ID: "b", DC: "dc1", State: cluster.StateDown}}, Losers: []placement.Member{{ID: "b", DC: "dc1", State: cluster.StateDown}}},
			"b", nil},
		{"the copy taken over is down: quorum", cluster.Node{ID: "d", DC: "dc1"},
			placement.Move{Gainers: []placement.Member{pending("d", "dc1")}, Holders: []placement.Member{up("a", "dc1"), {ID: "b", DC: "dc1", State: cluster.StateDown}}, Losers: []placement.Member{{ID: "b", DC: "dc1", State: cluster.StateDown}}},
			"", nil},
		{"rebuilding: no copy to take over", cluster.Node{ID: "a", DC: "dc1"},
			placement.Move{Gainers: []placement.Member{{ID: "a", DC: "dc1", State: cluster.StateRebuilding}}, Holders: []placement.Member{{ID: "a", DC: "dc1", State: cluster.StateRebuilding}, up("b", "dc1")}},
			"", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, m := range takeover(tt.move, tt.self, tt.exclude) {
				got = append(got, m.ID)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("takeover = %v, want %v", got, tt.want)
			}
		})
	}
}
