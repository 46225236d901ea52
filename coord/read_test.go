package coord_test

import (
	"testing"

	"github.com/kuradb/kura/consistency"
)

func TestReadRepairsStaleReplica(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	key := []byte("repaired")
	replicas := replicasOf(t, c, spread, key)
	co := coordinatorOutside(c, replicas)
	if _, err := co.Coordinator().Put(ctx, "spread", key, []byte("old"), consistency.All); err != nil {
		t.Fatal(err)
	}
	stale := replicas[0]
	if err := c.Stop(stale); err != nil {
		t.Fatal(err)
	}
	eventually(t, stale+" is seen down", func() bool { return !co.View().State(stale).Reachable() })
	if _, err := co.Coordinator().Put(ctx, "spread", key, []byte("new"), consistency.Quorum); err != nil {
		t.Fatal(err)
	}
	// The writer holds the only hint for the stale replica; stopping it (its memory dies
	// with it) leaves read repair as the only way the replica can learn "new".
	if err := c.Stop(co.ID()); err != nil {
		t.Fatal(err)
	}
	reader := coordinatorOutside(c, append(replicas, co.ID()))
	if err := c.Restart(stale); err != nil {
		t.Fatal(err)
	}
	eventually(t, stale+" is back", func() bool { return reader.View().State(stale).Reachable() })
	rec, found, err := reader.Coordinator().Get(ctx, "spread", key, consistency.All)
	if err != nil || !found || string(rec.Value) != "new" {
		t.Fatalf("ALL read = %q, %v, %v; want new", rec.Value, found, err)
	}
	eventually(t, stale+" holds the newest value", func() bool {
		rec, found, err := c.Node(stale).Coordinator().Get(ctx, "spread", key, consistency.One)
		return err == nil && found && string(rec.Value) == "new"
	})
}
