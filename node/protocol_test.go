package node

import (
	"testing"

	"github.com/kuradb/kura/cluster"
)

// TestRecordTypesReadWaitsForEveryMember: a node of this build alone reads typed
// records; a member that has announced nothing (a build from before types, or one gossip
// has not told of yet) closes the switch, even while down; one that left or was removed
// no longer counts.
func TestRecordTypesReadWaitsForEveryMember(t *testing.T) {
	a := startNode(t, "a", "dc1")
	waitUntil(t, "a alone reads typed records", a.RecordTypesRead)
	if _, err := a.directory.Upsert(cluster.Node{ID: "old", DC: "dc1", Addr: "127.0.0.9:1", Status: cluster.StatusNormal}); err != nil {
		t.Fatal(err)
	}
	a.directory.SetState("old", cluster.StateDown)
	if a.RecordTypesRead() {
		t.Fatal("a counts a member that announced nothing as reading typed records")
	}
	if _, err := a.directory.Upsert(cluster.Node{ID: "old", DC: "dc1", Addr: "127.0.0.9:1", Status: cluster.StatusRemoved}); err != nil {
		t.Fatal(err)
	}
	if !a.RecordTypesRead() {
		t.Fatal("a still counts a removed member")
	}
}
