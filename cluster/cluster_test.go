package cluster

import "testing"

func TestDirectory(t *testing.T) {
	d := NewDirectory(Node{ID: "b", DC: "x", Addr: "127.0.0.1:1"})
	if !d.Alive("b") {
		t.Fatal("self must be alive")
	}
	if d.Alive("a") {
		t.Fatal("unknown node must not be alive")
	}
	v0 := d.Version()
	if !d.Upsert(Node{ID: "a", DC: "y", Addr: "127.0.0.1:2"}) {
		t.Fatal("Upsert of a new node reported no change")
	}
	if d.Upsert(Node{ID: "a", DC: "y", Addr: "127.0.0.1:2"}) {
		t.Fatal("Upsert of an identical node reported a change")
	}
	if d.Upsert(Node{ID: "b", DC: "z"}) {
		t.Fatal("the local node was overwritten")
	}
	if d.Version() != v0+1 {
		t.Fatalf("version = %d, want %d", d.Version(), v0+1)
	}
	nodes := d.Nodes()
	if len(nodes) != 2 || nodes[0].ID != "a" || nodes[1].ID != "b" {
		t.Fatalf("Nodes() = %v, want a, b sorted", nodes)
	}
	if !d.Alive("a") {
		t.Fatal("a known node starts alive")
	}
	if !d.SetAlive("a", false) || d.Alive("a") {
		t.Fatal("SetAlive(false) did not take")
	}
	if d.SetAlive("a", false) {
		t.Fatal("repeated SetAlive(false) reported a change")
	}
	if d.Version() != v0+1 {
		t.Fatal("liveness must not change the version")
	}
	if !d.SetAlive("a", true) || !d.Alive("a") {
		t.Fatal("SetAlive(true) did not take")
	}
	if d.SetAlive("b", false) || !d.Alive("b") {
		t.Fatal("self cannot be marked down")
	}
}
