package coord_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/collection/set"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// TestSetAddsAreTaggedAndReadByPrefix: two coordinators in different DCs add one member
// to a set at once; each write completes its add's key with its own tag (its timestamp
// and node), so both adds are kept, and a read of the member's prefix finds both and
// nothing of another member. After a delete, a read of the absent key reports when its
// previous life ended: the delete's timestamp, the reset point a new life takes.
func TestSetAddsAreTaggedAndReadByPrefix(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	for _, n := range c.Nodes {
		eventually(t, "node "+n.ID()+" counts every node as reading typed records", n.RecordTypesRead)
	}
	key := []byte("{t}:s")
	a, b, reader := c.Nodes[0].Coordinator(), c.Nodes[len(c.Nodes)-1].Coordinator(), c.Nodes[1].Coordinator()
	add := func(via *coord.Coordinator, members ...string) {
		t.Helper()
		var names [][]byte
		for _, m := range members {
			names = append(names, []byte(m))
		}
		w := coord.CollectionWrite{Header: &lww.Record{Type: lww.Set}, Tagged: set.Set{}.Add(key, names)}
		if _, err := via.WriteCollection(ctx, "spread", key, w, consistency.Quorum); err != nil {
			t.Error(err)
		}
	}
	add(a, "other")
	var wg sync.WaitGroup
	for _, via := range []*coord.Coordinator{a, b} {
		wg.Go(func() { add(via, "m") })
	}
	wg.Wait()

	coll, err := reader.ReadPrefixes(ctx, "spread", key, [][]byte{set.AddPrefix(key, []byte("m"))}, consistency.All)
	if err != nil || !coll.Found || len(coll.Elements) != 2 {
		t.Fatalf("ReadPrefixes of m = %+v, %v; want the header and two adds", coll, err)
	}
	if bytes.Equal(coll.Elements[0].Key, coll.Elements[1].Key) {
		t.Fatalf("two adds through two nodes share the key %q", coll.Elements[0].Key)
	}
	for _, rec := range coll.Elements {
		member, tag, ok := set.ParseAdd(rec.Key)
		at, tagged := element.ParseTag(tag)
		if !ok || string(member) != "m" || !tagged || at != rec.Timestamp {
			t.Fatalf("add %q at %v: member %q, tag %x; want m, tagged with its timestamp", rec.Key, rec.Timestamp, member, tag)
		}
	}
	if s := set.Fold(coll.Elements); s.Len() != 1 || !s.Has([]byte("m")) {
		t.Fatalf("the read of m folds into %q", s.Names())
	}

	del, err := b.Update(ctx, "spread", key, consistency.Serial, func(_ lww.Record, found bool) (lww.Record, bool, error) {
		return lww.Record{Tombstone: true}, found, nil
	})
	if err != nil || !del.Applied {
		t.Fatalf("delete = %+v, %v", del, err)
	}
	eventually(t, "an absent set's read reports the delete's timestamp as the end of its life", func() bool {
		coll, err := reader.ReadPrefixes(ctx, "spread", key, nil, consistency.All)
		return err == nil && !coll.Found && coll.Ended == del.Record.Timestamp
	})
	never, err := reader.ReadPrefixes(ctx, "spread", []byte("{t}:never"), nil, consistency.All)
	if err != nil || never.Found || never.Ended != 0 {
		t.Fatalf("ReadPrefixes of a key never written = %+v, %v; want absent, no end", never, err)
	}
	if _, err := reader.ReadPrefixes(ctx, "spread", key, [][]byte{element.Prefix([]byte("{t}:x"))}, consistency.All); err == nil {
		t.Fatal("ReadPrefixes took a prefix of another collection")
	}
}
