package coord_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
)

// fieldsOf returns a collection's hash fields, by name.
func fieldsOf(coll coord.Collection) map[string]string {
	fields := map[string]string{}
	for _, rec := range coll.Elements {
		if _, kind, name, ok := element.Parse(rec.Key); ok && kind == element.HashField {
			fields[string(name)] = string(rec.Value)
		}
	}
	return fields
}

func hashWrite(key []byte, reset coord.ResetPoint, fields ...string) coord.CollectionWrite {
	w := coord.CollectionWrite{Header: &lww.Record{Type: lww.Hash}, Reset: reset}
	for i := 0; i+1 < len(fields); i += 2 {
		w.Elements = append(w.Elements, lww.Record{Key: element.Key(key, element.HashField, []byte(fields[i])), Value: []byte(fields[i+1])})
	}
	return w
}

// TestCollectionsMergePerFieldAndResetOnDelete: two coordinators in different DCs write
// different fields of one hash at once, and both survive; a field both write holds the
// later write's value on every replica. A delete (the header's tombstone by a transaction,
// then the reset point at its timestamp) ends every field, and the hash written again
// holds only its new fields, read whole at ALL through a third node.
func TestCollectionsMergePerFieldAndResetOnDelete(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	for _, n := range c.Nodes {
		eventually(t, "node "+n.ID()+" counts every node as reading typed records", n.RecordTypesRead)
	}
	key := []byte("{user7}:profile")
	a, b, reader := c.Nodes[0].Coordinator(), c.Nodes[len(c.Nodes)-1].Coordinator(), c.Nodes[1].Coordinator()
	if _, err := a.WriteCollection(ctx, "spread", key, hashWrite(key, coord.ResetCreate, "name", "ann"), consistency.Quorum); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	stamps := make([]hlc.Timestamp, 2)
	for i, w := range []struct {
		via    *coord.Coordinator
		fields []string
	}{{a, []string{"city", "oslo", "both", "from a"}}, {b, []string{"mail", "a@b", "both", "from b"}}} {
		wg.Go(func() {
			ts, err := w.via.WriteCollection(ctx, "spread", key, hashWrite(key, coord.NoReset, w.fields...), consistency.LocalOne)
			if err != nil {
				t.Error(err)
			}
			stamps[i] = ts
		})
	}
	wg.Wait()
	want := map[string]string{"name": "ann", "city": "oslo", "mail": "a@b", "both": "from a"}
	// Last writer wins, as lww.Newer orders the two versions (two nodes may stamp one
	// timestamp: then the larger value).
	if lww.Newer(lww.Record{Timestamp: stamps[1], Value: []byte("from b")}, lww.Record{Timestamp: stamps[0], Value: []byte("from a")}) {
		want["both"] = "from b"
	}
	coll, err := reader.ReadCollection(ctx, "spread", key, consistency.All)
	if err != nil || !coll.Found || coll.Header.Type != lww.Hash {
		t.Fatalf("ReadCollection = %+v, %v; want the hash", coll, err)
	}
	if got := fieldsOf(coll); !equalFields(got, want) {
		t.Fatalf("fields after concurrent writes = %v, want %v", got, want)
	}

	del, err := b.Update(ctx, "spread", key, consistency.Serial, func(_ lww.Record, found bool) (lww.Record, bool, error) {
		return lww.Record{Tombstone: true}, found, nil
	})
	if err != nil || !del.Applied {
		t.Fatalf("delete = %+v, %v", del, err)
	}
	if err := b.ResetCollection(ctx, "spread", key, del.Record.Timestamp, consistency.Quorum); err != nil {
		t.Fatal(err)
	}
	// The transaction's commit reaches the replicas after it answers: another
	// coordinator's read sees the delete once it has.
	eventually(t, "the hash reads as absent after its delete", func() bool {
		coll, err := reader.ReadCollection(ctx, "spread", key, consistency.All)
		return err == nil && !coll.Found && len(coll.Elements) == 0
	})
	if _, err := a.WriteCollection(ctx, "spread", key, hashWrite(key, coord.ResetCreate, "fresh", "1"), consistency.Quorum); err != nil {
		t.Fatal(err)
	}
	coll, err = reader.ReadCollection(ctx, "spread", key, consistency.All)
	if got := fieldsOf(coll); err != nil || !equalFields(got, map[string]string{"fresh": "1"}) {
		t.Fatalf("fields after delete and write = %v, %v; want only the new field", got, err)
	}
	old := element.Key(key, element.HashField, []byte("name"))
	if _, results, err := reader.ReadElements(ctx, "spread", key, [][]byte{old}, consistency.All); err != nil || results[0].Found {
		t.Fatalf("a field from before the delete reads %+v, %v; want absent", results, err)
	}
}

// TestTwoWritersCreatingOneHashKeepBoth: two coordinators each find a hash absent and
// create it, one after the other, neither having seen the other's write; each write
// creates the key (ResetCreate). Both fields survive: a reset point at the later writer's
// own time would remove the earlier one's acknowledged field (it did, before the reset
// point became the end of the key's previous life).
func TestTwoWritersCreatingOneHashKeepBoth(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	for _, n := range c.Nodes {
		eventually(t, "node "+n.ID()+" counts every node as reading typed records", n.RecordTypesRead)
	}
	key := []byte("{user8}:session")
	a, b := c.Nodes[0].Coordinator(), c.Nodes[len(c.Nodes)-1].Coordinator()
	for _, w := range []struct {
		via    *coord.Coordinator
		fields []string
	}{{a, []string{"first", "1"}}, {b, []string{"second", "2"}}} {
		if _, err := w.via.WriteCollection(ctx, "spread", key, hashWrite(key, coord.ResetCreate, w.fields...), consistency.Quorum); err != nil {
			t.Fatal(err)
		}
	}
	coll, err := c.Nodes[1].Coordinator().ReadCollection(ctx, "spread", key, consistency.All)
	if got := fieldsOf(coll); err != nil || !equalFields(got, map[string]string{"first": "1", "second": "2"}) {
		t.Fatalf("fields after two creating writes = %v, %v; want both", got, err)
	}
}

func equalFields(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestCollectionsRefusedOutsideGroupedKeyspaces: a keyspace with the hash partitioner
// would scatter a collection's elements, an erasure-coded one does not carry a record's
// type in its chunks, and a collection key that is itself an element key is refused.
func TestCollectionsRefusedOutsideGroupedKeyspaces(t *testing.T) {
	hashed := schema.Keyspace{Name: "hashed", Replication: "a=1", Partitioner: "hash"}
	coded := schema.Keyspace{Name: "coded", Replication: "simple=1", Erasure: schema.Erasure{M: 3, K: 2}}
	c := startCluster(t, spread, hashed, coded)
	ctx := testContext(t)
	co := c.Nodes[0].Coordinator()
	tests := []struct {
		keyspace, key, want string
	}{
		{"hashed", "h", "hash partitioner"},
		{"coded", "h", "erasure-coded"},
		{"spread", string(element.Key([]byte("h"), element.HashField, []byte("f"))), "reserved"},
	}
	for _, tt := range tests {
		_, err := co.ReadCollection(ctx, tt.keyspace, []byte(tt.key), consistency.One)
		if !errors.Is(err, coord.ErrInvalidArgument) || !bytes.Contains([]byte(err.Error()), []byte(tt.want)) {
			t.Errorf("ReadCollection in %s: %v, want an invalid argument naming %q", tt.keyspace, err, tt.want)
		}
		_, err = co.WriteCollection(ctx, tt.keyspace, []byte(tt.key), hashWrite([]byte(tt.key), coord.ResetCreate, "f", "v"), consistency.One)
		if !errors.Is(err, coord.ErrInvalidArgument) {
			t.Errorf("WriteCollection in %s: %v, want an invalid argument", tt.keyspace, err)
		}
	}
}

// TestHasMembersStopsAtTheFirstLiveMember: a collection whose header is live holds a
// member only while an element record of its type's member kind is live and newer than
// its reset point (docs/redis-types.md, "An emptied collection reads as absent"). One
// live field after many tombstones is found across pages; a sorted set's stale score
// entry is no member; ReadCollection answers an emptied collection not found.
func TestHasMembersStopsAtTheFirstLiveMember(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	for _, n := range c.Nodes {
		eventually(t, "node "+n.ID()+" counts every node as reading typed records", n.RecordTypesRead)
	}
	co := c.Nodes[0].Coordinator()
	fields := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("f%02d", i), "v")
		}
		return out
	}
	tombstones := func(key []byte, kind element.Kind, names ...string) coord.CollectionWrite {
		w := coord.CollectionWrite{}
		for _, name := range names {
			w.Elements = append(w.Elements, lww.Record{Key: element.Key(key, kind, []byte(name)), Tombstone: true})
		}
		return w
	}
	tests := []struct {
		name  string
		typ   lww.Type
		write func(key []byte) error
		want  bool
	}{
		{"live fields", lww.Hash, func(key []byte) error {
			_, err := co.WriteCollection(ctx, "spread", key, hashWrite(key, coord.ResetCreate, fields(2)...), consistency.All)
			return err
		}, true},
		{"one live field after 19 tombstones", lww.Hash, func(key []byte) error {
			if _, err := co.WriteCollection(ctx, "spread", key, hashWrite(key, coord.ResetCreate, fields(20)...), consistency.All); err != nil {
				return err
			}
			var names []string
			for i := range 19 {
				names = append(names, fmt.Sprintf("f%02d", i))
			}
			_, err := co.WriteCollection(ctx, "spread", key, tombstones(key, element.HashField, names...), consistency.All)
			return err
		}, true},
		{"every field removed", lww.Hash, func(key []byte) error {
			if _, err := co.WriteCollection(ctx, "spread", key, hashWrite(key, coord.ResetCreate, fields(3)...), consistency.All); err != nil {
				return err
			}
			_, err := co.WriteCollection(ctx, "spread", key, tombstones(key, element.HashField, "f00", "f01", "f02"), consistency.All)
			return err
		}, false},
		{"every field before the reset point", lww.Hash, func(key []byte) error {
			at, err := co.WriteCollection(ctx, "spread", key, hashWrite(key, coord.ResetCreate, fields(3)...), consistency.All)
			if err != nil {
				return err
			}
			return co.ResetCollection(ctx, "spread", key, at, consistency.All)
		}, false},
		{"a sorted set's stale score entry is no member", lww.SortedSet, func(key []byte) error {
			w := coord.CollectionWrite{Header: &lww.Record{Type: lww.SortedSet}, Reset: coord.ResetCreate, Elements: []lww.Record{
				{Key: element.Key(key, element.SortedMember, []byte("m")), Value: []byte("score")},
				{Key: element.Key(key, element.SortedScore, []byte("stale-entry")), Value: nil},
			}}
			if _, err := co.WriteCollection(ctx, "spread", key, w, consistency.All); err != nil {
				return err
			}
			_, err := co.WriteCollection(ctx, "spread", key, tombstones(key, element.SortedMember, "m"), consistency.All)
			return err
		}, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := []byte(fmt.Sprintf("{members%d}:k", i))
			if err := tt.write(key); err != nil {
				t.Fatal(err)
			}
			has, err := co.HasMembers(ctx, "spread", key, tt.typ, consistency.All)
			if err != nil || has != tt.want {
				t.Fatalf("HasMembers = %v, %v, want %v", has, err, tt.want)
			}
			coll, err := co.ReadCollection(ctx, "spread", key, consistency.All)
			if err != nil || coll.Found != tt.want {
				t.Fatalf("ReadCollection found %v, %v, want %v", coll.Found, err, tt.want)
			}
			if rec, found, err := co.Get(ctx, "spread", key, consistency.All); err != nil || !found || rec.Type != tt.typ {
				t.Fatalf("the header reads %+v, %v, %v: want it kept, live", rec, found, err)
			}
		})
	}
	if has, err := co.HasMembers(ctx, "spread", []byte("{members}:string"), lww.String, consistency.All); err != nil || !has {
		t.Fatalf("HasMembers of a string = %v, %v, want true: it holds its value", has, err)
	}
}
