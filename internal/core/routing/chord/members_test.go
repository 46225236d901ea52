package chord

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// memberList prints members as "id@dc roles", nearest first.
func memberList(members []Member) string {
	var parts []string
	for _, m := range members {
		parts = append(parts, m.Peer.String()+" "+m.Roles.String())
	}
	return strings.Join(parts, ", ")
}

// TestMembers lists the partial membership of stabilised nodes on a 4-bit ring: nodes
// 1, 5, 10, 12 in DC A; 3, 7, 9, 15 in B; 14 in C. Members run nearest first; a node
// that keeps gateways adds the nearest node of each other DC clockwise.
func TestMembers(t *testing.T) {
	layout := smallLayout(t, map[string][]ID{"A": {1, 5, 10, 12}, "B": {3, 7, 9, 15}, "C": {14}})
	tests := []struct {
		self         ID
		protocol     Protocol
		keepGateways bool
		want         string
	}{
		// Fingers start at 2, 3, 5, 9: nodes 3, 3, 5, 9. C is in none of the tables.
		{1, ProtocolChord, false, "3@B successor+finger, 5@A successor+finger, 9@B finger, 15@B predecessor"},
		// The gateway to C is the only member for C.
		{1, ProtocolChord, true, "3@B successor+finger+gateway, 5@A successor+finger, 9@B finger, 14@C gateway, 15@B predecessor"},
		// The local ring (1, 5, 10, 12) adds 10 and 12; 5 is on both rings.
		{1, ProtocolMLChord, true, "3@B successor+finger+gateway, 5@A successor+finger+local, 9@B finger, 10@A successor+finger+local, 12@A predecessor+local, 14@C gateway, 15@B predecessor"},
		// Fingers start at 13, 14, 0, 4: nodes 14, 14, 1, 5.
		{12, ProtocolChord, true, "14@C successor+finger+gateway, 15@B successor+gateway, 1@A finger, 5@A finger, 10@A predecessor"},
	}
	for _, tt := range tests {
		self := Peer{ID: tt.self, Name: fmt.Sprintf("n%d", tt.self), DC: "A"}
		n, err := layout.StableNode(Config{Self: self, Protocol: tt.protocol, IDBits: 4, SuccessorListLen: 2, KeepGateways: tt.keepGateways, Rand: rand.New(rand.NewPCG(1, 1))})
		if err != nil {
			t.Fatal(err)
		}
		if got := memberList(n.Members()); got != tt.want {
			t.Errorf("%s %s: Members\n got %s\nwant %s", self, tt.protocol, got, tt.want)
		}
		if got, want := n.RoutingEntries(), strings.Count(tt.want, "@"); got != want {
			t.Errorf("%s %s: RoutingEntries = %d, want %d", self, tt.protocol, got, want)
		}
	}
}

// TestMembersLeaveOutSuspects: a peer taken for failed is no member, even while a table
// still names it.
func TestMembersLeaveOutSuspects(t *testing.T) {
	layout := smallLayout(t, map[string][]ID{"A": {1, 5, 10, 12}, "B": {3, 7, 9, 15}})
	n, err := layout.StableNode(Config{Self: Peer{ID: 1, Name: "n1", DC: "A"}, Protocol: ProtocolChord, IDBits: 4, SuccessorListLen: 2, KeepGateways: true, Rand: rand.New(rand.NewPCG(1, 1))})
	if err != nil {
		t.Fatal(err)
	}
	n.suspects["n3"] = suspicion{until: time.Minute}
	if got, want := memberList(n.Members()), "5@A successor+finger, 9@B finger, 15@B predecessor"; got != want {
		t.Errorf("Members\n got %s\nwant %s", got, want)
	}
}

// TestStabilisationRepairsMembers: nodes that join one by one through the protocol, then
// the crash of some of them, then more joins; after each phase stabilize and fix_fingers
// alone (no directory) bring every live node's partial membership to what a stabilised
// ring over the live nodes gives it: the same fingers, successors, predecessors and
// gateways, and no crashed node among them.
func TestStabilisationRepairsMembers(t *testing.T) {
	type phase struct {
		name    string
		joins   int
		crashes int
	}
	phases := []phase{
		{"joins", 24, 0},
		{"failures", 0, 5},
		{"joins after failures", 6, 0},
		{"joins and failures at once", 4, 4},
	}
	for _, protocol := range []Protocol{ProtocolChord, ProtocolMLChord} {
		t.Run(protocol.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, uint64(protocol)))
			pool := randomPeers(rng, []int{15, 10, 6, 3, 4})
			rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
			cfg := Config{Protocol: protocol, SuccessorListLen: 3, KeepGateways: true}
			tn := newTestNet(t)
			var live []Peer
			for _, ph := range phases {
				for range ph.crashes {
					i := rng.IntN(len(live))
					tn.down[live[i].Name] = true
					live = slices.Delete(live, i, i+1)
				}
				for range ph.joins {
					p := pool[0]
					pool = pool[1:]
					c := cfg
					c.Self, c.Rand = p, rand.New(rand.NewPCG(rng.Uint64(), 3))
					n, err := New(c)
					if err != nil {
						t.Fatal(err)
					}
					tn.nodes[p.Name] = n
					var known []Peer
					if len(live) > 0 {
						known = append(known, live[rng.IntN(len(live))])
					}
					if i := slices.IndexFunc(live, func(l Peer) bool { return l.DC == p.DC }); i >= 0 {
						known = append(known, live[i])
					}
					tn.take(n.Join(tn.now, known...))
					tn.deliverAll()
					live = append(live, p)
					tn.tickAll(100 * time.Millisecond)
				}
				// Two minutes: fix_fingers refreshes one slot a second, 64 slots.
				for range 1200 {
					tn.tickAll(100 * time.Millisecond)
				}
				checkMembers(t, tn, cfg, live, ph.name)
			}
		})
	}
}

// checkMembers fails for every live node whose partial membership differs from the one
// a stabilised ring over the live nodes gives it.
func checkMembers(t *testing.T, tn *testNet, cfg Config, live []Peer, phase string) {
	t.Helper()
	layout, err := NewLayout(live)
	if err != nil {
		t.Fatal(err)
	}
	dcs := map[string]bool{}
	for _, p := range live {
		dcs[p.DC] = true
	}
	for _, p := range layout.Peers() {
		c := cfg
		c.Self, c.Rand = p, rand.New(rand.NewPCG(1, 1))
		want, err := layout.StableNode(c)
		if err != nil {
			t.Fatal(err)
		}
		got := tn.nodes[p.Name].Members()
		if g, w := memberList(got), memberList(want.Members()); g != w {
			t.Errorf("%s: %s: Members\n got %s\nwant %s", phase, p, g, w)
		}
		for _, m := range got {
			if tn.down[m.Name] {
				t.Errorf("%s: %s keeps crashed %s (%s)", phase, p, m.Peer, m.Roles)
			}
		}
		if gateways := tn.nodes[p.Name].Gateways(); len(gateways) != len(dcs)-1 {
			t.Errorf("%s: %s has gateways to %d DCs, want all %d others", phase, p, len(gateways), len(dcs)-1)
		}
	}
}
