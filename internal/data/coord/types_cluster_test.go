package coord_test

import (
	"bytes"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/lww"
)

// TestTypedRecordCrossesTheCluster: once every node has heard in gossip that every other
// reads typed records, as every node of this build announces, a transaction
// writes a hash header through a coordinator outside the key's replicas, and every
// replica, asked at ALL through that coordinator (which waits for the transaction's
// commit, answered after the client), answers it with its type.
func TestTypedRecordCrossesTheCluster(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	key := []byte("{user42}:cart")
	replicas := replicasOf(t, c, spread, key)
	via := coordinatorOutside(c, replicas)
	for _, n := range c.Nodes {
		eventually(t, "node "+n.ID()+" counts every node as reading typed records", n.RecordTypesRead)
	}
	res, err := via.Coordinator().Update(ctx, "spread", key, consistency.Serial, func(lww.Record, bool) (lww.Record, bool, error) {
		return lww.Record{Value: []byte("header"), Type: lww.Hash}, true, nil
	})
	if err != nil || !res.Applied {
		t.Fatalf("Update = %+v, %v; want applied", res, err)
	}
	rec, found, err := via.Coordinator().Get(ctx, "spread", key, consistency.All)
	if err != nil || !found || rec.Type != lww.Hash || !bytes.Equal(rec.Value, []byte("header")) {
		t.Fatalf("Get at ALL = %+v, %t, %v; want the hash header", rec, found, err)
	}
}
