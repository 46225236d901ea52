package coord_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/core/erasure"
	"github.com/kuradb/kura/internal/data/coord"
)

func TestLDREveryLevelWritesReadsAndDeletes(t *testing.T) {
	c := startLDRCluster(t, "")
	ctx := testContext(t)
	for i, level := range consistency.Levels() {
		for _, via := range []string{"a2", "b3"} {
			co := coordOf(c, via)
			key := []byte(fmt.Sprintf("key\x00%d-%s", i, via))
			value := bytes.Repeat([]byte(level.String()), 100+i)
			if _, err := co.Put(ctx, coded.Name, key, value, 0, level); err != nil {
				t.Fatalf("put at %v via %s: %v", level, via, err)
			}
			// ANY promises the write exists somewhere, not where nor when: its other
			// chunks may still be in flight, so it is read back at ALL, eventually.
			readLevel, settle := level, func(what string, cond func() bool) {
				if !cond() {
					t.Fatalf("%s at %v via %s", what, level, via)
				}
			}
			if level == consistency.Any {
				readLevel, settle = consistency.All, func(what string, cond func() bool) { eventually(t, what, cond) }
			}
			settle("read back", func() bool {
				rec, found, err := co.Get(ctx, coded.Name, key, readLevel)
				return err == nil && found && bytes.Equal(rec.Value, value)
			})
			if _, err := co.Delete(ctx, coded.Name, key, level); err != nil {
				t.Fatalf("delete at %v via %s: %v", level, via, err)
			}
			settle("read as deleted", func() bool {
				_, found, err := co.Get(ctx, coded.Name, key, readLevel)
				return err == nil && !found
			})
		}
	}
	if _, found, err := coordOf(c, "a1").Get(ctx, coded.Name, []byte("never written"), consistency.Quorum); err != nil || found {
		t.Fatalf("get of a key never written: found %v, err %v", found, err)
	}
}

// storedBytes sums what every running node stores for the coded keyspace.
func storedBytes(t *testing.T, c *embedded.Cluster) (records int, total int64) {
	t.Helper()
	for _, n := range c.Nodes {
		r, b, err := n.StoredBytes(coded.Name)
		if err != nil {
			t.Fatal(err)
		}
		records += r
		total += b
	}
	return records, total
}

func TestLDRPutStoresEachChunkOnce(t *testing.T) {
	c := startLDRCluster(t, "")
	ctx := testContext(t)
	code, err := erasure.New(coded.Erasure.M, coded.Erasure.K)
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("sized")
	value := bytes.Repeat([]byte("x"), 10240)
	if _, err := coordOf(c, "b1").Put(ctx, coded.Name, key, value, 0, consistency.All); err != nil {
		t.Fatal(err)
	}
	records, total := storedBytes(t, c)
	// Each chunk key is the key, a 2-byte terminator and the index byte.
	want := int64(code.M() * (len(key) + 3 + code.ChunkBytes(len(value))))
	if records != code.M() || total != want {
		t.Fatalf("stored %d records of %d bytes, want %d of %d (m/k = %.3f of the value plus headers)",
			records, total, code.M(), want, float64(code.M())/float64(code.K()))
	}
}

func TestLDRWriteLevelsCountChunksAndHintDownOwners(t *testing.T) {
	c := startLDRCluster(t, "")
	ctx := testContext(t)
	// Chunk 0's owner holds no other chunk of the key, and the others lie on distinct
	// nodes, so stopping one owner removes one chunk and stopping three removes three.
	key := findKey(t, c, "hinted", func(p chunkPlacement) bool { return len(p.perNode) == coded.Erasure.M })
	p := placementOf(t, c, key)
	writer := nodeIn(c, "a", p)
	if writer == nil {
		writer = nodeIn(c, "b", p)
	}
	co := writer.Coordinator()
	one := p.owners[0].ID
	stopAndWait(t, c, writer, one)

	if _, err := co.Put(ctx, coded.Name, key, []byte("v"), 0, consistency.All); !errors.Is(err, coord.ErrUnavailable) {
		t.Fatalf("ALL put with a chunk owner down: err = %v, want unavailable", err)
	}
	if _, err := co.Put(ctx, coded.Name, key, []byte("v"), 0, consistency.Quorum); err != nil {
		t.Fatalf("QUORUM put (4 of 5 chunks) with one owner down: %v", err)
	}
	if n, _ := co.HintsPending(); n != 1 {
		t.Fatalf("hints pending = %d, want 1 (the down owner's chunk)", n)
	}
	more := []string{p.owners[1].ID, p.owners[2].ID}
	stopAndWait(t, c, writer, more...)
	if _, err := co.Put(ctx, coded.Name, key, []byte("w"), 0, consistency.One); !errors.Is(err, coord.ErrUnavailable) {
		t.Fatalf("ONE put with 2 of 5 chunk owners up (k = 3): err = %v, want unavailable", err)
	}
	if _, err := co.Put(ctx, coded.Name, key, []byte("w"), 0, consistency.Any); err != nil {
		t.Fatalf("ANY put with 2 of 5 chunk owners up: %v", err)
	}
	if n, _ := co.HintsPending(); n != 1+3 {
		t.Fatalf("hints pending = %d, want 4", n)
	}

	for _, id := range append(more, one) {
		if err := c.Restart(id); err != nil { // back empty: memory died with them
			t.Fatal(err)
		}
	}
	eventually(t, "the hints are delivered", func() bool {
		n, _ := co.HintsPending()
		return n == 0
	})
	rec, found, err := co.Get(ctx, coded.Name, key, consistency.All)
	if err != nil || !found || string(rec.Value) != "w" {
		t.Fatalf("ALL get after hint replay = %q, %v, %v; want w", rec.Value, found, err)
	}
}
