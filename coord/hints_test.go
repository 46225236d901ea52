package coord_test

import (
	"errors"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/coord"
	"github.com/kuradb/kura/schema"
)

func TestQuorumWriteWithReplicaDownLeavesHintThatConverges(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	key := []byte("hinted-key")
	replicas := replicasOf(t, c, spread, key)
	co := coordinatorOutside(c, replicas)
	down := replicas[len(replicas)-1]
	if err := c.Stop(down); err != nil {
		t.Fatal(err)
	}
	eventually(t, down+" is seen down", func() bool { return !co.View().State(down).Reachable() })

	if _, err := co.Coordinator().Put(ctx, "spread", key, []byte("v1"), consistency.Quorum); err != nil {
		t.Fatalf("QUORUM put with one of %d replicas down: %v", len(replicas), err)
	}
	if _, err := co.Coordinator().Put(ctx, "spread", key, []byte("v1"), consistency.All); !errors.Is(err, coord.ErrUnavailable) {
		t.Fatalf("ALL put with a replica down: err = %v, want unavailable", err)
	}
	if n, _ := co.Coordinator().HintsPending(); n != 1 {
		t.Fatalf("hints pending = %d, want 1", n)
	}

	if err := c.Restart(down); err != nil { // back empty: its memory died with it
		t.Fatal(err)
	}
	eventually(t, "the hint is delivered", func() bool {
		n, _ := co.Coordinator().HintsPending()
		return n == 0
	})
	// ONE through the restarted replica reads its own copy first.
	rec, found, err := c.Node(down).Coordinator().Get(ctx, "spread", key, consistency.One)
	if err != nil || !found || string(rec.Value) != "v1" {
		t.Fatalf("restarted replica reads %q, %v, %v; want v1", rec.Value, found, err)
	}
}

func TestAnySucceedsWithEveryReplicaDown(t *testing.T) {
	single := schema.Keyspace{Name: "single", Replication: "b=1"}
	c := startCluster(t, single)
	ctx := testContext(t)
	key := []byte("lonely")
	replica := replicasOf(t, c, single, key)[0]
	co := c.Node("a1")
	if err := c.Stop(replica); err != nil {
		t.Fatal(err)
	}
	eventually(t, replica+" is seen down", func() bool { return !co.View().State(replica).Reachable() })

	if _, err := co.Coordinator().Put(ctx, "single", key, []byte("kept"), consistency.One); !errors.Is(err, coord.ErrUnavailable) {
		t.Fatalf("ONE with the only replica down: err = %v, want unavailable", err)
	}
	if _, err := co.Coordinator().Put(ctx, "single", key, []byte("kept"), consistency.Any); err != nil {
		t.Fatalf("ANY with the only replica down: %v", err)
	}
	if err := c.Restart(replica); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ANY write reaches the replica", func() bool {
		rec, found, err := co.Coordinator().Get(ctx, "single", key, consistency.One)
		return err == nil && found && string(rec.Value) == "kept"
	})
}
