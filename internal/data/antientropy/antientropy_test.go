package antientropy

import (
	"context"
	"errors"
	"testing"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/placement"
)

// catalog is a fixed set of keyspaces.
type catalog []schema.Keyspace

func (c catalog) Get(name string) (schema.Keyspace, error) {
	for _, ks := range c {
		if ks.Name == name {
			return ks, nil
		}
	}
	return schema.Keyspace{}, schema.ErrNoKeyspace
}

func (c catalog) List() []schema.Keyspace { return c }

func TestPlanTakesTheRangesThisNodeHolds(t *testing.T) {
	compile := func(ks schema.Keyspace) schema.Keyspace {
		t.Helper()
		compiled, err := ks.Compile()
		if err != nil {
			t.Fatal(err)
		}
		return compiled
	}
	keyspaces := catalog{
		compile(schema.Keyspace{Name: "coded", Erasure: schema.Erasure{M: 3, K: 2}}),
		compile(schema.Keyspace{Name: "one", Replication: "simple=1"}),
		compile(schema.Keyspace{Name: "two", Replication: "simple=2"}),
	}
	dir := cluster.NewDirectory(cluster.Node{ID: "n1", DC: "a"})
	dir.Upsert(cluster.Node{ID: "n2", DC: "a"})
	dir.Upsert(cluster.Node{ID: "n3", DC: "a"})
	place := placement.NewRing(dir, 4)
	r := New(Config{}, Parts{View: dir, Keyspaces: keyspaces, Placement: place})
	ctx := context.Background()
	all, err := place.ScanRanges(ctx, keyspaces[2], nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	holds := func(ks schema.Keyspace) int {
		ranges, err := place.ScanRanges(ctx, ks, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, rr := range ranges {
			if holdsRange(rr, "n1") {
				n++
			}
		}
		return n
	}
	tests := []struct {
		keyspace      string
		wantSteps     int
		wantKeyspaces int
	}{
		{"", 1 + holds(keyspaces[1]) + holds(keyspaces[2]), 3},
		{"coded", 1, 1},
		{"two", holds(keyspaces[2]), 1},
	}
	for _, tt := range tests {
		steps, n, err := r.plan(ctx, tt.keyspace)
		if err != nil || len(steps) != tt.wantSteps || n != tt.wantKeyspaces {
			t.Errorf("plan(%q) = %d steps over %d keyspaces, %v; want %d over %d", tt.keyspace, len(steps), n, err, tt.wantSteps, tt.wantKeyspaces)
		}
		for _, s := range steps {
			if !s.coded && !holdsRange(s.rng, "n1") {
				t.Errorf("plan(%q) took range %v, whose replicas %v do not include n1", tt.keyspace, s.rng.Range, s.rng.Replicas)
			}
		}
	}
	if got := holds(keyspaces[2]); got <= holds(keyspaces[1]) || got >= len(all) {
		t.Errorf("n1 holds %d of %d ranges at RF 2, %d at RF 1: the plan test proves little", got, len(all), holds(keyspaces[1]))
	}
	if _, _, err := r.plan(ctx, "nope"); !errors.Is(err, schema.ErrNoKeyspace) {
		t.Errorf("plan of an unknown keyspace: %v", err)
	}
}

func holdsRange(rr placement.RangeReplicas, id string) bool {
	for _, m := range rr.Replicas {
		if m.ID == id {
			return true
		}
	}
	return false
}
