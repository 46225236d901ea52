package node

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/service/rebalance"
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

// TestPartitionTransactionsWaitForEveryMember: a keyspace whose transactions run per
// partition is refused while a member announces nothing (an older build would run it per
// key), and created once that member is removed.
func TestPartitionTransactionsWaitForEveryMember(t *testing.T) {
	a := startNode(t, "a", "dc1")
	waitUntil(t, "a alone runs partition transactions", a.PartitionTransactionsRead)
	if _, err := a.directory.Upsert(cluster.Node{ID: "old", DC: "dc1", Addr: "127.0.0.9:1", Status: cluster.StatusNormal}); err != nil {
		t.Fatal(err)
	}
	a.directory.SetState("old", cluster.StateDown)
	ks := schema.Keyspace{Name: "tx", Replication: "dc1=1", Transactions: schema.TransactionsPartition}
	if err := a.CreateKeyspace(context.Background(), ks); !errors.Is(err, schema.ErrInvalidKeyspace) {
		t.Fatalf("create with a member that announced nothing: %v, want refused", err)
	}
	if _, err := a.Keyspace("tx"); err == nil {
		t.Fatal("the refused keyspace exists")
	}
	if _, err := a.directory.Upsert(cluster.Node{ID: "old", DC: "dc1", Addr: "127.0.0.9:1", Status: cluster.StatusRemoved}); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateKeyspace(context.Background(), ks); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Keyspace("tx"); err != nil || !got.PartitionTransactions() {
		t.Fatalf("Keyspace(tx) = %+v, %v; want transactions partition", got, err)
	}
}

// TestAlterWaitsForEveryMember: kura keyspace alter is refused, naming the member, while
// one announces nothing (an older build would place the keyspace's writes under the old
// replication only), even while it is down, and nothing changes.
func TestAlterWaitsForEveryMember(t *testing.T) {
	a := startNode(t, "a", "dc1")
	waitUntil(t, "a alone reads typed records", a.RecordTypesRead)
	if err := a.CreateKeyspace(context.Background(), schema.Keyspace{Name: "app", Replication: "dc1=1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.directory.Upsert(cluster.Node{ID: "old", DC: "dc1", Addr: "127.0.0.9:1", Status: cluster.StatusNormal}); err != nil {
		t.Fatal(err)
	}
	a.directory.SetState("old", cluster.StateDown)
	err := a.AlterKeyspace(context.Background(), "app", "dc1=2", false, func(p rebalance.Progress) { t.Errorf("reported %q", p.Step) })
	if !errors.Is(err, coord.ErrUnavailable) || !strings.Contains(err.Error(), "node old does not announce") {
		t.Fatalf("alter with a member that announced nothing: %v, want refused naming it", err)
	}
	if ks, err := a.Keyspace("app"); err != nil || ks.Moving || ks.Replication != "dc1=1" {
		t.Fatalf("Keyspace(app) = %+v, %v; want dc1=1, not moving", ks, err)
	}
}

// TestRecordTypesVersionFor: the collection types need a member announcing record_types
// 1, the PN counter's type 2, which a build of version 1 refuses as an unknown type; and
// this build announces the newest.
func TestRecordTypesVersionFor(t *testing.T) {
	tests := []struct {
		typ  lww.Type
		want int
	}{
		{lww.Hash, 1},
		{lww.Set, 1},
		{lww.SortedSet, 1},
		{lww.List, 1},
		{lww.Counter, 2},
	}
	for _, tt := range tests {
		if got := recordTypesVersionFor(tt.typ); got != tt.want {
			t.Errorf("recordTypesVersionFor(%v) = %d, want %d", tt.typ, got, tt.want)
		}
	}
	if got := announced()[keyRecordTypes]; got != strconv.Itoa(recordTypesVersionFor(lww.TypeMax)) {
		t.Errorf("announced record_types %q, want the version of every type this build knows", got)
	}
}
