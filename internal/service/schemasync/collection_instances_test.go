package schemasync

import (
	"context"
	"testing"

	"github.com/kuradb/kura/internal/core/schema"
)

// TestCollectionInstancesTravel: a definition whose element records run on their
// collection's instance reaches another node with the field, as the wire carries it.
func TestCollectionInstancesTravel(t *testing.T) {
	p := &peers{syncers: map[string]*Syncer{}}
	a, b := newNode(t, "a", cluster3(), p), newNode(t, "b", cluster3(), p)
	ks := schema.Keyspace{Name: "tx", Replication: "dc1=2", Transactions: schema.TransactionsPartition, CollectionInstances: true}
	if got := KeyspaceFromProto(KeyspaceProto(ks)); !got.CollectionInstances || got.Transactions != ks.Transactions {
		t.Fatalf("round trip: %+v", got)
	}
	if err := a.CreateKeyspace(context.Background(), ks); err != nil {
		t.Fatal(err)
	}
	if got, err := b.catalog.Get("tx"); err != nil || !got.CollectionInstances {
		t.Fatalf("b holds %+v, %v; want element records on their collection's instance", got, err)
	}
}

// TestCreateKeyspaceAgainKeepsElementInstances: a create re-run over an existing
// keyspace of partition transactions is the no-op it was, whichever element instances the
// build creating it now would choose, and the keyspace keeps its own.
func TestCreateKeyspaceAgainKeepsElementInstances(t *testing.T) {
	a := newNode(t, "a", cluster3(), &peers{syncers: map[string]*Syncer{}})
	ctx := context.Background()
	old := schema.Keyspace{Name: "tx", Replication: "dc1=2", Transactions: schema.TransactionsPartition}
	if err := a.CreateKeyspace(ctx, old); err != nil {
		t.Fatal(err)
	}
	again := old
	again.CollectionInstances = true
	if err := a.CreateKeyspace(ctx, again); err != nil {
		t.Fatalf("re-running the create: %v", err)
	}
	if got, _ := a.catalog.Get("tx"); got.CollectionInstances {
		t.Errorf("the re-run create switched the keyspace's element records to their collection's instance: %+v", got)
	}
}
