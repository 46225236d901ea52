package coord

import (
	"context"
	"errors"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/paxos"
	"github.com/kuradb/kura/internal/core/schema"
)

// TestUpdateBatchRefusesWhatIsNotOnePartition: a transaction over several keys needs a
// keyspace of partition instances and keys of one hash tag; each refusal says why and
// happens before any round.
func TestUpdateBatchRefusesWhatIsNotOnePartition(t *testing.T) {
	c, parts := stubCoordinator(t, "a=3", "n1", "n2", "n3")
	tx, err := schema.Keyspace{Name: "tx", Replication: "a=3", Transactions: schema.TransactionsPartition}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	parts.keyspaces[tx.Name] = tx
	none := func(hlc.Timestamp, []KeyRecord) ([]lww.Record, bool, any, error) { return nil, false, nil, nil }
	tests := []struct {
		name, keyspace string
		keys           []string
		want           string
	}{
		{"per-key keyspace, two keys", "ks", []string{"{t}a", "{t}b"}, "keyspace ks runs its lightweight transactions per key: a transaction over several keys needs a keyspace created with transactions partition"},
		{"two tags", "tx", []string{"{t}a", "{u}b"}, `keys "{t}a" and "{u}b" have different hash tags: a transaction covers the keys of one partition`},
		{"no key", "tx", nil, "a lightweight transaction names no key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var keys [][]byte
			for _, k := range tt.keys {
				keys = append(keys, []byte(k))
			}
			_, err := c.UpdateBatch(context.Background(), tt.keyspace, keys, nil, consistency.Serial, none)
			if !errors.Is(err, ErrInvalidArgument) || err.Error() != "invalid argument: "+tt.want {
				t.Fatalf("UpdateBatch = %v, want invalid argument: %s", err, tt.want)
			}
		})
	}
	// One key is a transaction in either kind of keyspace.
	for _, ks := range []string{"ks", "tx"} {
		l, err := c.newLWT(context.Background(), ks, [][]byte{[]byte("{t}a")}, consistency.Serial)
		if err != nil {
			t.Fatalf("one key in %s: %v", ks, err)
		}
		if got := l.instance(); got.Partition != (ks == "tx") {
			t.Errorf("instance in %s = %+v", ks, got)
		}
	}
}

// TestBatchProposal: a partition's proposal stamps every record with one timestamp above
// each record it replaces, refuses a key the transaction did not read or writes twice,
// and carries the records of this coordinator's batch still committing for the keys it
// does not write itself.
func TestBatchProposal(t *testing.T) {
	c, _ := stubCoordinator(t, "a=3", "n1", "n2", "n3")
	a, b, w := []byte("{t}a"), []byte("{t}b"), []byte("{t}w")
	l := &lwt{c: c, keys: [][]byte{a, b}, partition: []byte("t")}
	ballot := paxos.Ballot{Time: 100, Node: "n1"}
	s := paxos.Summary{Reads: []paxos.Read{
		{Key: a, Record: lww.Record{Key: a, Value: []byte("1"), Timestamp: 50}, Found: true},
		{Key: b, Record: lww.Record{Key: b, Value: []byte("ahead"), Timestamp: 140}, Found: true},
	}}
	inFlight := paxos.Proposal{Ballot: paxos.Ballot{Time: 90, Node: "n1"}, Partition: []byte("t"),
		Batch: []lww.Record{{Key: a, Value: []byte("old"), Timestamp: 90}, {Key: w, Value: []byte("w"), Timestamp: 90}}}
	at, err := l.readCollections(context.Background(), s, ballot, nil)
	if err != nil || at != 141 {
		t.Fatalf("round's timestamp = %v, %v; want 141, past b's record stamped ahead", at, err)
	}
	p, err := l.proposal([]lww.Record{{Key: a, Value: []byte("2")}, {Key: b, Tombstone: true, Value: []byte("x")}}, at, ballot, inFlight)
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Partition) != "t" || len(p.Batch) != 3 {
		t.Fatalf("proposal = %+v, want a's, b's and the in-flight w's records", p)
	}
	for _, rec := range p.Batch[:2] {
		if rec.Timestamp != 141 {
			t.Errorf("record of %q stamped %v, want 141, past b's record stamped ahead", rec.Key, rec.Timestamp)
		}
	}
	if p.Batch[1].Value != nil || !p.Batch[1].Tombstone {
		t.Errorf("b's tombstone = %+v, want no value", p.Batch[1])
	}
	if got := p.Batch[2]; string(got.Key) != "{t}w" || got.Timestamp != 90 {
		t.Errorf("carried record = %+v, want w's as the in-flight batch wrote it", got)
	}
	for _, next := range [][]lww.Record{
		{{Key: w, Value: []byte("v")}},
		{{Key: a, Value: []byte("1")}, {Key: a, Value: []byte("2")}},
		nil,
		// an element of a key not read as a collection
		{{Key: element.Key(a, element.HashField, []byte("f")), Value: []byte("v")}},
		// reset records: of a key not read, past the round's timestamp, not holding
		// their own timestamp
		{ResetRecord(w, 100)},
		{ResetRecord(a, 142)},
		{{Key: element.Key(a, element.Reset, nil), Value: element.ResetValue(90), Timestamp: 100}},
	} {
		if _, err := l.proposal(next, at, ballot, paxos.Proposal{}); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("proposal of %+v: %v, want invalid argument", next, err)
		}
	}
	// A transaction that reads a as a collection writes its elements at the round's
	// timestamp, and a reset record at the point it holds.
	l.collections = [][]byte{a}
	field := element.Key(a, element.HashField, []byte("f"))
	p, err = l.proposal([]lww.Record{{Key: field, Value: []byte("v")}, ResetRecord(a, at-1)}, at, ballot, paxos.Proposal{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Batch[0].Timestamp != at || p.Batch[1].Timestamp != at-1 {
		t.Errorf("batch = %+v, want the field at %v and the reset record at %v", p.Batch, at, at-1)
	}
}
