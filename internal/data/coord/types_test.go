package coord

import (
	"context"
	"errors"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/paxos"
)

// TestTypedRecordsWaitForEveryNode: a typed record (a collection's header) is written
// only when Parts.TypedRecords says every node reads them; until then the write is
// refused as unavailable and no replica is asked. A string record is written whatever
// it says, and a type this build does not know is an invalid argument.
func TestTypedRecordsWaitForEveryNode(t *testing.T) {
	typedReadable := func(v bool) func(lww.Type) bool { return func(lww.Type) bool { return v } }
	// A cluster whose nodes read the collection types but not the counter's.
	beforeCounters := func(t lww.Type) bool { return t < lww.Counter }
	tests := []struct {
		name    string
		gate    func(lww.Type) bool
		typ     lww.Type
		wantErr error // nil: written
	}{
		{"string, no gate", nil, lww.String, nil},
		{"string, gate closed", typedReadable(false), lww.String, nil},
		{"hash, no gate", nil, lww.Hash, ErrUnavailable},
		{"hash, gate closed", typedReadable(false), lww.Hash, ErrUnavailable},
		{"hash, gate open", typedReadable(true), lww.Hash, nil},
		{"list, gate open", typedReadable(true), lww.List, nil},
		{"list, a node before counters", beforeCounters, lww.List, nil},
		{"counter, a node before counters", beforeCounters, lww.Counter, ErrUnavailable},
		{"counter, gate open", typedReadable(true), lww.Counter, nil},
		{"unknown type, gate open", typedReadable(true), lww.TypeMax + 1, ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, parts := stubCoordinator(t, "a=3", "n1", "n2", "n3")
			c.typedRecords = tt.gate
			rec := lww.Record{Key: []byte("k"), Value: []byte("header"), Type: tt.typ}
			_, err := c.write(context.Background(), "ks", rec, consistency.All)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("write = %v, want %v", err, tt.wantErr)
			}
			for id, r := range parts.replicas {
				writes := r.writes()
				switch {
				case tt.wantErr != nil && len(writes) > 0:
					t.Errorf("replica %s was written %v after a refusal", id, writes)
				case tt.wantErr == nil && (len(writes) != 1 || writes[0].Type != tt.typ):
					t.Errorf("replica %s was written %v, want one record of type %v", id, writes, tt.typ)
				}
			}
		})
	}
}

// TestTransactionRecordType: the record a lightweight transaction proposes keeps the
// type its update gave, behind the same gate as a write, and a tombstone carries none.
func TestTransactionRecordType(t *testing.T) {
	c, _ := stubCoordinator(t, "a=3", "n1", "n2", "n3")
	key := []byte("k")
	l := &lwt{c: c, keys: [][]byte{key}}
	ballot := paxos.Ballot{Time: 10, Node: "n1"}
	if _, err := l.proposal([]lww.Record{{Key: key, Value: []byte("v"), Type: lww.Hash}}, ballot.Time, ballot, paxos.Proposal{}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("typed proposal with the gate closed: %v, want unavailable", err)
	}
	// A tombstone is absent whatever the update left in its type, so the gate does not
	// hold it.
	p, err := l.proposal([]lww.Record{{Key: key, Tombstone: true, Value: []byte("x"), Type: lww.Hash}}, ballot.Time, ballot, paxos.Proposal{})
	if rec := p.Record; err != nil || rec.Type != lww.String || rec.Value != nil {
		t.Fatalf("tombstone proposal = %+v, %v; want a tombstone without value or type", rec, err)
	}
	c.typedRecords = func(lww.Type) bool { return true }
	p, err = l.proposal([]lww.Record{{Key: key, Value: []byte("v"), Type: lww.Hash}}, ballot.Time, ballot, paxos.Proposal{})
	if rec := p.Record; err != nil || rec.Type != lww.Hash || rec.Timestamp != ballot.Time {
		t.Fatalf("typed proposal with the gate open = %+v, %v; want a hash at the ballot's time", rec, err)
	}
}

// TestRestoreRefusesElementsHiddenByTruncation: a collection's element record that a
// truncation hides would be restamped by a restore, newer than the reset point that had
// removed it; it is refused, and no replica is written. A header (a typed record) is
// restored as any value.
func TestRestoreRefusesElementsHiddenByTruncation(t *testing.T) {
	c, parts := stubCoordinator(t, "a=3", "n1", "n2", "n3")
	c.typedRecords = func(lww.Type) bool { return true }
	ks := parts.keyspaces["ks"]
	ks.TruncatedAt = 100
	parts.keyspaces["ks"] = ks
	field := lww.Record{Key: element.Key([]byte("h"), element.HashField, []byte("f")), Value: []byte("v"), Timestamp: 50}
	if _, err := c.Restore(context.Background(), "ks", field, consistency.All); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Restore of a hidden element record = %v, want invalid argument", err)
	}
	for id, r := range parts.replicas {
		if writes := r.writes(); len(writes) > 0 {
			t.Errorf("replica %s was written %v", id, writes)
		}
	}
	header := lww.Record{Key: []byte("h"), Type: lww.Hash, Timestamp: 150}
	if outcome, err := c.Restore(context.Background(), "ks", header, consistency.All); err != nil || outcome != RestoredAsIs {
		t.Fatalf("Restore of a header = %v, %v; want restored as it is", outcome, err)
	}
}

// TestCollectionWriteWaitsForEveryNode: a collection write whose header is typed is
// refused before any of its elements is written while not every node reads typed records.
func TestCollectionWriteWaitsForEveryNode(t *testing.T) {
	c, parts := stubCoordinator(t, "a=3", "n1", "n2", "n3")
	ks := parts.keyspaces["ks"]
	ks.Partitioner = "grouped"
	ks, err := ks.Compile()
	if err != nil {
		t.Fatal(err)
	}
	parts.keyspaces["ks"] = ks
	w := CollectionWrite{Header: &lww.Record{Type: lww.Hash}, Reset: ResetCreate,
		Elements: []lww.Record{{Key: element.Key([]byte("h"), element.HashField, []byte("f")), Value: []byte("v")}}}
	if _, err := c.WriteCollection(context.Background(), "ks", []byte("h"), w, consistency.All); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("WriteCollection with the gate closed = %v, want unavailable", err)
	}
	for id, r := range parts.replicas {
		if writes := r.writes(); len(writes) > 0 {
			t.Errorf("replica %s was written %v", id, writes)
		}
	}
}
