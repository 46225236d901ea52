package ringstore

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/io/storage"
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
	self := cluster.Node{ID: "a", DC: "x"}
	d, err := cluster.Open(self, New(engine))
	if err != nil {
		t.Fatal(err)
	}
	if d.Trusted() {
		t.Fatal("a directory over an empty store is trusted")
	}
	for _, n := range []cluster.Node{{ID: "b", DC: "x", Generation: 7}, {ID: "c", DC: "y", Status: cluster.StatusJoining}} {
		if _, err := d.Upsert(n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Remove("b", 7); err != nil {
		t.Fatal(err)
	}
	if err := d.SetSelf(cluster.StatusLeaving, []uint64{1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := d.SetBorn(11); err != nil {
		t.Fatal(err)
	}

	again, err := cluster.Open(self, New(engine))
	if err != nil {
		t.Fatal(err)
	}
	if !again.Trusted() {
		t.Error("a directory reopened with its ring is not trusted")
	}
	if got := again.Self(); got.Status != cluster.StatusLeaving || !slices.Equal(got.Tokens, []uint64{1, 2}) || got.Born != 11 {
		t.Errorf("self after reopening = %+v, want leaving with tokens 1, 2, born 11", got)
	}
	tests := []struct {
		id     string
		status cluster.Status
		state  cluster.State
	}{
		{"b", cluster.StatusRemoved, cluster.StateDown},
		{"c", cluster.StatusJoining, cluster.StateDown},
	}
	for _, tt := range tests {
		n, ok := again.Node(tt.id)
		if !ok || n.Status != tt.status || again.State(tt.id) != tt.state {
			t.Errorf("%s after reopening: %+v (known %v), state %v; want %v, %v", tt.id, n, ok, again.State(tt.id), tt.status, tt.state)
		}
	}
	if changed, _ := again.Upsert(cluster.Node{ID: "b", DC: "x", Generation: 7}); changed {
		t.Error("gossip of a removed node's old generation brought it back")
	}
	if changed, _ := again.Upsert(cluster.Node{ID: "b", DC: "x", Generation: 8}); !changed {
		t.Error("a removed node that restarted with a new generation stays removed")
	}
}

// TestDirectoryForgetsForGood: a node the directory forgot is gone after a reopen too,
// and comes back when heard of again; the directory cannot forget itself.
func TestDirectoryForgetsForGood(t *testing.T) {
	engine, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	self := cluster.Node{ID: "a", DC: "x"}
	d, err := cluster.Open(self, New(engine))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []cluster.Node{{ID: "b", DC: "x", Status: cluster.StatusBooting}, {ID: "c", DC: "x"}} {
		if _, err := d.Upsert(n); err != nil {
			t.Fatal(err)
		}
	}
	if known, err := d.Forget("b"); !known || err != nil {
		t.Fatalf("Forget(b) = %v, %v; want true, nil", known, err)
	}
	if known, err := d.Forget("b"); known || err != nil {
		t.Errorf("Forget(b) again = %v, %v; want false, nil", known, err)
	}
	if _, err := d.Forget("a"); err == nil {
		t.Error("the directory forgot itself")
	}
	again, err := cluster.Open(self, New(engine))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range again.Nodes() {
		ids = append(ids, n.ID)
	}
	if !slices.Equal(ids, []string{"a", "c"}) {
		t.Errorf("nodes after reopening = %v, want [a c]", ids)
	}
	if changed, _ := again.Upsert(cluster.Node{ID: "b", DC: "x", Status: cluster.StatusBooting}); !changed {
		t.Error("a forgotten node heard of again is not known again")
	}
}

// TestStoreKeepsTheTier: a node's power tier survives the store and the ring a seed
// sends, and an entry stored before tiers existed (no "tier" field) reads as tier 0.
func TestStoreKeepsTheTier(t *testing.T) {
	engine, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	store := New(engine)
	old := `{"id":"old","dc":"x","addr":"127.0.0.1:1","status":"normal"}`
	if _, err := engine.Apply(ringKeyspace, lww.Record{Key: []byte("old"), Value: []byte(old), Timestamp: 1}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []cluster.Node{{ID: "sleepy", DC: "x", Tier: 2}, {ID: "steady", DC: "x"}} {
		if err := store.SaveNode(n); err != nil {
			t.Fatal(err)
		}
	}
	nodes, err := store.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	entries := make([]cluster.RingEntry, len(nodes))
	for i, n := range nodes {
		entries[i] = cluster.RingEntry{Node: n, Up: true}
	}
	data, err := cluster.EncodeRing(entries)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := cluster.DecodeRing(data)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"old": 0, "sleepy": 2, "steady": 0}
	for _, e := range decoded {
		if tier, ok := want[e.ID]; !ok || e.Tier != tier {
			t.Errorf("%s: tier %d after the store and the wire, want %d (known %v)", e.ID, e.Tier, tier, ok)
		}
	}
	if len(decoded) != len(want) {
		t.Errorf("%d entries after the store and the wire, want %d", len(decoded), len(want))
	}
}

// TestReopenRefusesAnotherDC: a node reopened over its data dir with another DC than
// the one stored is refused with ErrMovedDC, naming both; with its own DC it opens, and
// the refusal changed nothing stored.
func TestReopenRefusesAnotherDC(t *testing.T) {
	engine, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	d, err := cluster.Open(cluster.Node{ID: "a", DC: "dc1"}, New(engine))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SetSelf(cluster.StatusNormal, []uint64{1, 2}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dc      string
		refused bool
	}{
		{"dc2", true},
		{"dc1", false},
	}
	for _, tt := range tests {
		again, err := cluster.Open(cluster.Node{ID: "a", DC: tt.dc}, New(engine))
		switch {
		case tt.refused && !errors.Is(err, cluster.ErrMovedDC):
			t.Errorf("reopened in %s: err %v, want ErrMovedDC", tt.dc, err)
		case tt.refused && !strings.Contains(err.Error(), "is in DC dc1") || tt.refused && !strings.Contains(err.Error(), "--dc dc2"):
			t.Errorf("the refusal does not name both DCs: %v", err)
		case !tt.refused && err != nil:
			t.Errorf("reopened in %s: %v", tt.dc, err)
		case !tt.refused && (again.Self().DC != "dc1" || !slices.Equal(again.Self().Tokens, []uint64{1, 2})):
			t.Errorf("reopened in %s: self %+v, want dc1 with tokens 1, 2", tt.dc, again.Self())
		}
	}
}

// TestPromisesSurviveAReopen: the joins saved as promised read back as the last save
// left them, from a new store over the same engine too, apart from the ring's entries;
// a store that saved none reads none.
func TestPromisesSurviveAReopen(t *testing.T) {
	engine, err := storage.Open(storage.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	s := New(engine)
	if got, err := s.LoadPromises(); err != nil || len(got) != 0 {
		t.Fatalf("nothing saved: %v, %v; want none", got, err)
	}
	if err := s.SaveNode(cluster.Node{ID: "a", DC: "x"}); err != nil {
		t.Fatal(err)
	}
	saves := []map[string]uint64{{"j": 3}, {"j": 3, "k": 1}, {"k": 1}, {}, {"l": 9}}
	for _, marks := range saves {
		if err := s.SavePromises(marks); err != nil {
			t.Fatal(err)
		}
		for _, from := range []*Store{s, New(engine)} {
			if got, err := from.LoadPromises(); err != nil || !maps.Equal(got, marks) {
				t.Fatalf("after saving %v: loaded %v, %v", marks, got, err)
			}
		}
	}
	again := New(engine)
	if err := again.SavePromises(map[string]uint64{"m": 2}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.LoadPromises(); err != nil || !maps.Equal(got, map[string]uint64{"m": 2}) {
		t.Errorf("a new store's save after a reopen: loaded %v, %v; want m@2", got, err)
	}
	if nodes, err := s.Nodes(); err != nil || len(nodes) != 1 || nodes[0].ID != "a" {
		t.Errorf("ring entries beside the promises: %+v, %v; want a alone", nodes, err)
	}
}
