package node

import (
	"context"
	"testing"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/schema"
)

func TestAnnouncesTransactions(t *testing.T) {
	tests := []struct {
		announced string
		need      int
		want      bool
	}{
		{"", partitionTransactionsVersion, false},
		{"x", partitionTransactionsVersion, false},
		{"1", partitionTransactionsVersion, true},
		{"1", collectionInstancesVersion, false},
		{"2", partitionTransactionsVersion, true},
		{"2", collectionInstancesVersion, true},
		{"3", collectionInstancesVersion, true},
	}
	for _, tt := range tests {
		state := map[string]string{}
		if tt.announced != "" {
			state[keyTransactions] = tt.announced
		}
		if got := announcesTransactions(state, tt.need); got != tt.want {
			t.Errorf("announcesTransactions(%q, %d) = %v, want %v", tt.announced, tt.need, got, tt.want)
		}
	}
	if !announcesTransactions(announced(), collectionInstancesVersion) {
		t.Errorf("this build announces %q, below collection instances", announced()[keyTransactions])
	}
}

// TestCreateKeyspaceChoosesCollectionInstances: a node of this build alone creates a
// keyspace of partition transactions with element records on their collection's
// instance, whatever the request says, and defines its default keyspace so; a keyspace
// of per-key transactions has no such instance. A member that announced nothing closes
// the switch, even while down.
func TestCreateKeyspaceChoosesCollectionInstances(t *testing.T) {
	a := startNode(t, "a", "dc1")
	waitUntil(t, "a alone runs element records on their collection's instance", a.CollectionInstancesRead)
	ctx := context.Background()
	for _, tt := range []struct {
		ks   schema.Keyspace
		want bool
	}{
		{schema.Keyspace{Name: "tx", Replication: "dc1=1", Transactions: schema.TransactionsPartition}, true},
		{schema.Keyspace{Name: "perkey", Replication: "dc1=1", CollectionInstances: true}, false},
	} {
		if err := a.CreateKeyspace(ctx, tt.ks); err != nil {
			t.Fatalf("create %s: %v", tt.ks.Name, err)
		}
		if got, err := a.Keyspace(tt.ks.Name); err != nil || got.CollectionInstances != tt.want {
			t.Errorf("Keyspace(%s) = %+v, %v; want collection instances %v", tt.ks.Name, got, err, tt.want)
		}
	}
	if ks, err := a.Keyspace(schema.DefaultKeyspace); err != nil || !ks.PartitionTransactions() || !ks.CollectionInstances {
		t.Errorf("a new node's default keyspace = %+v, %v; want partition transactions, element records on their collection's instance", ks, err)
	}
	if _, err := a.directory.Upsert(cluster.Node{ID: "old", DC: "dc1", Addr: "127.0.0.9:1", Status: cluster.StatusNormal}); err != nil {
		t.Fatal(err)
	}
	a.directory.SetState("old", cluster.StateDown)
	if a.CollectionInstancesRead() {
		t.Fatal("a counts a member that announced nothing as running element records on their collection's instance")
	}
}
