package cluster

import (
	"slices"
	"testing"

	"github.com/kuradb/kura/storage"
)

// TestDirectoryPersistsTheRing: a directory reopened on the same engine knows the nodes,
// statuses and removals it knew, with every other node down until heard from, and is
// trusted; a directory over an empty store is not.
func TestDirectoryPersistsTheRing(t *testing.T) {
	engine, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	self := Node{ID: "a", DC: "x"}
	d, err := Open(self, NewEngineStore(engine))
	if err != nil {
		t.Fatal(err)
	}
	if d.Trusted() {
		t.Fatal("a directory over an empty store is trusted")
	}
	for _, n := range []Node{{ID: "b", DC: "x", Generation: 7}, {ID: "c", DC: "y", Status: StatusJoining}} {
		if _, err := d.Upsert(n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Remove("b", 7); err != nil {
		t.Fatal(err)
	}
	if err := d.SetSelf(StatusLeaving, []uint64{1, 2}); err != nil {
		t.Fatal(err)
	}

	again, err := Open(self, NewEngineStore(engine))
	if err != nil {
		t.Fatal(err)
	}
	if !again.Trusted() {
		t.Error("a directory reopened with its ring is not trusted")
	}
	if got := again.Self(); got.Status != StatusLeaving || !slices.Equal(got.Tokens, []uint64{1, 2}) {
		t.Errorf("self after reopening = %+v, want leaving with tokens 1, 2", got)
	}
	tests := []struct {
		id     string
		status Status
		state  State
	}{
		{"b", StatusRemoved, StateDown},
		{"c", StatusJoining, StateDown},
	}
	for _, tt := range tests {
		n, ok := again.Node(tt.id)
		if !ok || n.Status != tt.status || again.State(tt.id) != tt.state {
			t.Errorf("%s after reopening: %+v (known %v), state %v; want %v, %v", tt.id, n, ok, again.State(tt.id), tt.status, tt.state)
		}
	}
	if changed, _ := again.Upsert(Node{ID: "b", DC: "x", Generation: 7}); changed {
		t.Error("gossip of a removed node's old generation brought it back")
	}
	if changed, _ := again.Upsert(Node{ID: "b", DC: "x", Generation: 8}); !changed {
		t.Error("a removed node that restarted with a new generation stays removed")
	}
}
