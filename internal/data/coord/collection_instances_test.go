package coord

import (
	"context"
	"fmt"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/paxos"
	"github.com/kuradb/kura/internal/core/schema"
)

// TestElementInstances: the instance a pop's take of a list item runs on outside a
// transaction (Update of the item's record), against the one a transaction over the list
// runs on (UpdateBatch with the list among its collections), and the in-flight id each
// locks. With CollectionInstances they are one, whether the key has a tag or not; in a
// keyspace of partition transactions without it (every one created before), the item of
// an untagged list keeps its own instance, as before; in one of per-key transactions it
// is the item's key's.
func TestElementInstances(t *testing.T) {
	c, parts := stubCoordinator(t, "a=3", "n1", "n2", "n3")
	for _, ks := range []schema.Keyspace{
		{Name: "collection", Replication: "a=3", Transactions: schema.TransactionsPartition, CollectionInstances: true},
		{Name: "own", Replication: "a=3", Transactions: schema.TransactionsPartition},
		{Name: "perkey", Replication: "a=3"},
	} {
		compiled, err := ks.Compile()
		if err != nil {
			t.Fatal(err)
		}
		parts.keyspaces[ks.Name] = compiled
	}
	item := func(list string) []byte { return element.Key([]byte(list), element.ListItem, []byte{0x80}) }
	describe := func(in paxos.Instance, id string) string {
		kind := "key"
		if in.Partition {
			kind = "partition"
		}
		return fmt.Sprintf("%s %q, id %q", kind, in.Key, id)
	}
	tests := []struct {
		keyspace, list string
		pop, exec      string
	}{
		{"collection", "xlist", `partition "xlist", id "collection\x01xlist"`, `partition "xlist", id "collection\x01xlist"`},
		{"collection", "{t}l", `partition "t", id "collection\x01t"`, `partition "t", id "collection\x01t"`},
		{"own", "{t}l", `partition "t", id "own\x01t"`, `partition "t", id "own\x01t"`},
		{"own", "xlist", describe(paxos.Instance{Key: item("xlist"), Partition: true}, "own\x01"+string(item("xlist"))), `partition "xlist", id "own\x01xlist"`},
		{"perkey", "xlist", describe(paxos.Instance{Key: item("xlist")}, "perkey\x00"+string(item("xlist"))), `partition "xlist", id "perkey\x01xlist"`},
	}
	ctx := context.Background()
	for _, tt := range tests {
		pop, err := c.newLWT(ctx, tt.keyspace, [][]byte{item(tt.list)}, consistency.Serial)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.keyspace, tt.list, err)
		}
		if got := describe(pop.instance(), pop.id); got != tt.pop {
			t.Errorf("%s: the pop of an item of %s runs on %s, want %s", tt.keyspace, tt.list, got, tt.pop)
		}
		list := [][]byte{[]byte(tt.list)}
		exec, err := c.newBatchLWT(ctx, tt.keyspace, list, list, consistency.Serial)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.keyspace, tt.list, err)
		}
		if got := describe(exec.instance(), exec.id); got != tt.exec {
			t.Errorf("%s: a transaction over %s runs on %s, want %s", tt.keyspace, tt.list, got, tt.exec)
		}
	}
}
