package node

import (
	"testing"

	"github.com/kuradb/kura/internal/core/schema"
)

// A node that missed a keyspace's announcement notices the gossiped schema digest and
// pulls the catalog.
func TestMissedKeyspaceArrivesThroughGossip(t *testing.T) {
	a := startNode(t, "a", "dc1")
	b := startNode(t, "b", "dc1", a.Addr())
	waitUntil(t, "a and b know each other", func() bool {
		return a.View().State("b").Reachable() && b.View().State("a").Reachable()
	})
	// Define the keyspace on a alone, as if the announcement to b had been lost.
	ks, err := schema.Keyspace{Name: "quiet", Replication: "simple=1", Timestamp: a.clock.Now()}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.catalog.Apply(ks); err != nil {
		t.Fatal(err)
	}
	a.schemas.Changed()
	waitUntil(t, "b learns the keyspace", func() bool {
		_, err := b.Keyspace("quiet")
		return err == nil
	})
}
