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

// TestLearnDeparture: a member's word that a node left or was removed is taken where this
// directory still holds that node as a member, in that generation or an older one, and
// nowhere else.
func TestLearnDeparture(t *testing.T) {
	tests := []struct {
		name string
		held Node // this directory's entry; empty ID: none
		told Node
		want Status
	}{
		{"left, held leaving", Node{ID: "a", Status: StatusLeaving, Generation: 5}, Node{ID: "a", Status: StatusLeft, Generation: 5}, StatusLeft},
		{"removed, held normal in an older life", Node{ID: "a", Status: StatusNormal, Generation: 4}, Node{ID: "a", Status: StatusRemoved, Generation: 5}, StatusRemoved},
		{"left in an older life than the one held", Node{ID: "a", Status: StatusNormal, Generation: 6}, Node{ID: "a", Status: StatusLeft, Generation: 5}, StatusNormal},
		{"not a departure", Node{ID: "a", Status: StatusLeaving, Generation: 5}, Node{ID: "a", Status: StatusNormal, Generation: 5}, StatusLeaving},
		{"already removed stays removed", Node{ID: "a", Status: StatusRemoved, Generation: 5}, Node{ID: "a", Status: StatusLeft, Generation: 5}, StatusRemoved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDirectory(Node{ID: "self", DC: "x"})
			upsert(t, d, tt.held)
			if _, err := d.LearnDeparture(RingEntry{Node: tt.told}); err != nil {
				t.Fatal(err)
			}
			if got, _ := d.Node("a"); got.Status != tt.want {
				t.Errorf("status %v, want %v", got.Status, tt.want)
			}
		})
	}
	d := NewDirectory(Node{ID: "self", DC: "x"})
	if changed, _ := d.LearnDeparture(RingEntry{Node: Node{ID: "z", Status: StatusLeft, Generation: 1}}); changed {
		t.Error("a node never heard of was recorded: Learn adds those")
	}
}

// TestRemove: a removal at a generation takes off the life it names, every older one and
// every later life on the same data dir; a data dir begun after it is a new node under
// the same id, which stays.
func TestRemove(t *testing.T) {
	tests := []struct {
		name    string
		held    Node
		gen     uint64
		want    Status
		changed bool
	}{
		{"the life named", Node{ID: "a", Status: StatusJoining, Generation: 5, Born: 5}, 5, StatusRemoved, true},
		{"an older life", Node{ID: "a", Status: StatusNormal, Generation: 4, Born: 2}, 5, StatusRemoved, true},
		{"a later life on the same data dir", Node{ID: "a", Status: StatusJoining, Generation: 8, Born: 5}, 5, StatusRemoved, true},
		{"a later life, born unknown", Node{ID: "a", Status: StatusJoining, Generation: 8}, 5, StatusRemoved, true},
		{"a data dir begun since", Node{ID: "a", Status: StatusBooting, Generation: 9, Born: 9}, 5, StatusBooting, false},
		{"a data dir begun since, normal", Node{ID: "a", Status: StatusNormal, Generation: 12, Born: 9}, 5, StatusNormal, false},
		{"removed already", Node{ID: "a", Status: StatusRemoved, Generation: 5, Born: 5}, 5, StatusRemoved, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDirectory(Node{ID: "self", DC: "x"})
			upsert(t, d, tt.held)
			changed, err := d.Remove("a", tt.gen)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := d.Node("a")
			if got.Status != tt.want || changed != tt.changed {
				t.Errorf("status %v, changed %v; want %v, %v", got.Status, changed, tt.want, tt.changed)
			}
			if got.Status == StatusRemoved && got.Generation < tt.held.Generation {
				t.Errorf("removed at generation %d, under the life held (%d)", got.Generation, tt.held.Generation)
			}
		})
	}
}

// TestSetBorn: the local node's data dir keeps the generation it was begun in.
func TestSetBorn(t *testing.T) {
	d := NewDirectory(Node{ID: "self", DC: "x"})
	for _, gen := range []uint64{0, 7, 9} {
		if err := d.SetBorn(gen); err != nil {
			t.Fatal(err)
		}
	}
	if got := d.Self().Born; got != 7 {
		t.Errorf("born %d, want 7: the first generation recorded", got)
	}
}
