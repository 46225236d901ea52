package experiment

import (
	"errors"
	"testing"

	"github.com/kuradb/kura/internal/core/routing/chord"
)

// TestRunMembership: at 90 nodes in 3 DCs with 5 nodes crashed and 5 joined, every DHT
// node ends with the partial membership of a stabilised ring and a live gateway to each
// other DC, every lookup finds the true owner, and a node holds fewer entries and bytes
// than onehop's full directory; the largest size, above ProtocolMaxNodes, is measured on
// tables only.
func TestRunMembership(t *testing.T) {
	res, err := RunMembership(MembershipConfig{
		Sizes: []int{90, 150}, DCs: 3, Lookups: 300, ChurnFraction: 0.05, ProtocolMaxNodes: 100, Seed: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		nodes      int
		protocol   string
		tablesOnly bool
	}{
		{90, "onehop", false}, {90, "chord", false}, {90, "mlchord", false},
		{150, "onehop", false}, {150, "chord", true}, {150, "mlchord", true},
	}
	if len(res.Rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(res.Rows), len(want), res.Rows)
	}
	var directory MembershipRow
	for i, row := range res.Rows {
		w := want[i]
		if row.Nodes != w.nodes || row.Protocol != w.protocol || row.TablesOnly != w.tablesOnly {
			t.Fatalf("row %d is %d %s tables-only %v, want %d %s %v", i, row.Nodes, row.Protocol, row.TablesOnly, w.nodes, w.protocol, w.tablesOnly)
		}
		if row.Protocol == "onehop" {
			directory = row
			if row.MembersPerNode != float64(row.Nodes-1) || row.MembershipBytesPerNode < row.MembersPerNode*res.EntryBytesMean*0.9 {
				t.Errorf("%d onehop: %.0f members, %.0f bytes; want every other node at about %.0f bytes each", row.Nodes, row.MembersPerNode, row.MembershipBytesPerNode, res.EntryBytesMean)
			}
			continue
		}
		if row.CorrectFraction != 1 || row.Lookups != 300 {
			t.Errorf("%d %s: %d lookups, correct %v, want 300 all correct", row.Nodes, row.Protocol, row.Lookups, row.CorrectFraction)
		}
		if row.MembersPerNode >= directory.MembersPerNode || row.MembershipBytesPerNode >= directory.MembershipBytesPerNode {
			t.Errorf("%d %s: %.1f members, %.0f bytes, not fewer than the directory's %.0f, %.0f",
				row.Nodes, row.Protocol, row.MembersPerNode, row.MembershipBytesPerNode, directory.MembersPerNode, directory.MembershipBytesPerNode)
		}
		if row.TablesOnly {
			if row.MaintenanceBpsPerNode != 0 || row.Crashed != 0 {
				t.Errorf("%d %s on tables only: maintenance %v bit/s, %d crashed; want neither", row.Nodes, row.Protocol, row.MaintenanceBpsPerNode, row.Crashed)
			}
			continue
		}
		if row.Crashed != 5 || row.Joined != 5 || row.MembersExactFraction != 1 || row.GatewaysFraction != 1 || row.MaintenanceBpsPerNode <= 0 {
			t.Errorf("%d %s: crashed %d, joined %d, exact %v, gateways %v, maintenance %v bit/s; want 5, 5, 1, 1, > 0",
				row.Nodes, row.Protocol, row.Crashed, row.Joined, row.MembersExactFraction, row.GatewaysFraction, row.MaintenanceBpsPerNode)
		}
	}
}

func TestRunMembershipRejects(t *testing.T) {
	good := MembershipConfig{Sizes: []int{30}, DCs: 3, Lookups: 10}
	tests := map[string]func(*MembershipConfig){
		"no sizes":          func(c *MembershipConfig) { c.Sizes = nil },
		"no DCs":            func(c *MembershipConfig) { c.DCs = 0 },
		"no lookups":        func(c *MembershipConfig) { c.Lookups = 0 },
		"churn of half":     func(c *MembershipConfig) { c.ChurnFraction = 0.5 },
		"negative churn":    func(c *MembershipConfig) { c.ChurnFraction = -0.1 },
		"one node a DC":     func(c *MembershipConfig) { c.Sizes = []int{5} },
		"unknown protocol":  func(c *MembershipConfig) { c.Protocols = []chord.Protocol{9} },
		"negative settle":   func(c *MembershipConfig) { c.Settle = -1 },
		"negative size cap": func(c *MembershipConfig) { c.ProtocolMaxNodes = -1 },
	}
	for name, change := range tests {
		cfg := good
		change(&cfg)
		if _, err := RunMembership(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: error %v, want ErrBadConfig", name, err)
		}
	}
}
