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
	eventually(t, stale+" is seen down", func() bool { return !co.View().Alive(stale) })
	if _, err := co.Coordinator().Put(ctx, "spread", key, []byte("new"), consistency.Quorum); err != nil {
		t.Fatal(err)
	}
	// Drop the hint path: the restarted replica is empty and only read repair or the
	// hint can fix it; reading at ALL must answer "new" either way and leave it repaired.
	if err := c.Restart(stale); err != nil {
		t.Fatal(err)
	}
	eventually(t, stale+" is back", func() bool { return co.View().Alive(stale) })
	rec, found, err := co.Coordinator().Get(ctx, "spread", key, consistency.All)
	if err != nil || !found || string(rec.Value) != "new" {
		t.Fatalf("ALL read = %q, %v, %v; want new", rec.Value, found, err)
	}
	eventually(t, stale+" holds the newest value", func() bool {
		rec, found, err := c.Node(stale).Coordinator().Get(ctx, "spread", key, consistency.One)
		return err == nil && found && string(rec.Value) == "new"
	})
}
