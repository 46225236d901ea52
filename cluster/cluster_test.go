package cluster

import "testing"

func TestDirectory(t *testing.T) {
	d := NewDirectory(Node{ID: "b", DC: "x", Addr: "127.0.0.1:1"})
	if d.State("b") != StateUp {
		t.Fatal("self must be alive")
	}
	if d.State("a") != StateDown {
		t.Fatal("unknown node must be down")
	}
	v0 := d.Version()
	if !upsert(t, d, Node{ID: "a", DC: "y", Addr: "127.0.0.1:2"}) {
		t.Fatal("Upsert of a new node reported no change")
	}
	if upsert(t, d, Node{ID: "a", DC: "y", Addr: "127.0.0.1:2"}) {
		t.Fatal("Upsert of an identical node reported a change")
	}
	if upsert(t, d, Node{ID: "b", DC: "z"}) {
		t.Fatal("the local node was overwritten")
	}
	if d.Version() != v0+1 {
		t.Fatalf("version = %d, want %d", d.Version(), v0+1)
	}
	nodes := d.Nodes()
	if len(nodes) != 2 || nodes[0].ID != "a" || nodes[1].ID != "b" {
		t.Fatalf("Nodes() = %v, want a, b sorted", nodes)
	}
	if d.State("a") != StateUp {
		t.Fatal("a known node starts up")
	}
	if !d.SetState("a", StateDown) || d.State("a") != StateDown {
		t.Fatal("SetState(down) did not take")
	}
	if d.SetState("a", StateDown) {
		t.Fatal("repeated SetState(down) reported a change")
	}
	if d.Version() != v0+1 {
		t.Fatal("a state change must not change the version")
	}
	if !d.SetState("a", StateJoining) || d.State("a") != StateJoining {
		t.Fatal("SetState(joining) did not take")
	}
	if d.SetState("b", StateDown) || d.State("b") != StateUp {
		t.Fatal("self cannot be marked down")
	}
	if !d.SetState("b", StateAsleep) || d.State("b") != StateAsleep {
		t.Fatal("self may fall asleep")
	}
	if d.SetState("nosuch", StateUp) {
		t.Fatal("an unknown node took a state")
	}
}

func TestStateDecisions(t *testing.T) {
	tests := []struct {
		state                                  State
		name                                   string
		readable, writable, pending, reachable bool
	}{
		{StateDown, "down", false, false, false, false},
		{StateUp, "up", true, true, false, true},
		{StateJoining, "joining", false, false, true, true},
		{StateLeaving, "leaving", true, true, false, true},
		{StateAsleep, "asleep", false, false, false, false},
	}
	for _, tt := range tests {
		if tt.state.String() != tt.name || tt.state.Readable() != tt.readable || tt.state.Writable() != tt.writable ||
			tt.state.Pending() != tt.pending || tt.state.Reachable() != tt.reachable {
			t.Errorf("%v: readable %t writable %t pending %t reachable %t, want %s %t %t %t %t", tt.state,
				tt.state.Readable(), tt.state.Writable(), tt.state.Pending(), tt.state.Reachable(),
				tt.name, tt.readable, tt.writable, tt.pending, tt.reachable)
		}
	}
}

func upsert(t *testing.T, d *Directory, n Node) bool {
	t.Helper()
	changed, err := d.Upsert(n)
	if err != nil {
		t.Fatal(err)
	}
	return changed
}
