package coord_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/erasure"
	"github.com/kuradb/kura/internal/data/coord"
)

func TestLDRGetAsksLocalChunksFirst(t *testing.T) {
	c := startLDRCluster(t, "")
	ctx := testContext(t)
	k := coded.Erasure.K
	tests := []struct {
		name       string
		readerDC   string
		localCount func(int) bool // the reader DC's chunk count the key must have
		level      consistency.Level
		wantRemote func(local int) uint64
	}{
		{"k local chunks: nothing leaves the DC", "a", func(n int) bool { return n >= k }, consistency.One, func(int) uint64 { return 0 }},
		{"all local chunks at LOCAL_QUORUM", "a", func(n int) bool { return n == 5 }, consistency.LocalQuorum, func(int) uint64 { return 0 }},
		{"k local chunks at LOCAL_ONE", "b", func(n int) bool { return n >= k }, consistency.LocalOne, func(int) uint64 { return 0 }},
		{"fewer than k local: exactly the missing ones", "a", func(n int) bool { return n > 0 && n < k }, consistency.One, func(local int) uint64 { return uint64(k - local) }},
		{"no local chunk: k remote", "b", func(n int) bool { return n == 0 }, consistency.One, func(int) uint64 { return uint64(k) }},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := findKey(t, c, fmt.Sprintf("local-first-%d", i), func(p chunkPlacement) bool { return tt.localCount(p.perDC[tt.readerDC]) })
			p := placementOf(t, c, key)
			value := bytes.Repeat([]byte{byte(i)}, 3000)
			if _, err := coordOf(c, "a1").Put(ctx, coded.Name, key, value, 0, consistency.All); err != nil {
				t.Fatal(err)
			}
			reader := nodeIn(c, tt.readerDC, p)
			if reader == nil {
				t.Fatal("every node of the reader DC holds a chunk of the key: pick another key prefix")
			}
			before, _ := chunkReadTraffic(c, tt.readerDC)
			rec, found, err := reader.Coordinator().Get(ctx, coded.Name, key, tt.level)
			if err != nil || !found || !bytes.Equal(rec.Value, value) {
				t.Fatalf("get = %d bytes, %v, %v; want the %d-byte value", len(rec.Value), found, err, len(value))
			}
			after, _ := chunkReadTraffic(c, tt.readerDC)
			remote := after - before
			if want := tt.wantRemote(p.perDC[tt.readerDC]); remote != want {
				t.Fatalf("get from %s with %d local chunks sent %d inter-DC chunk requests, want %d", reader.ID(), p.perDC[tt.readerDC], remote, want)
			}
		})
	}
}

// TestLDRRemoteChunkCostsTheChunkAndItsFraming checks that a chunk fetched across the
// WAN carries nothing but the chunk (header and shard), one status byte, the request
// (keyspace and chunk key), two transport frame headers and the response's wall-clock
// stamp.
func TestLDRRemoteChunkCostsTheChunkAndItsFraming(t *testing.T) {
	c := startLDRCluster(t, "")
	ctx := testContext(t)
	const frameHeaderBytes = 14 // the transport's: length u32, kind u8, type u8, id u64
	const stampBytes = 8        // the responder's wall clock, on every response
	k := coded.Erasure.K
	for _, valueBytes := range []int{3000, 1} {
		t.Run(fmt.Sprintf("%d-byte value", valueBytes), func(t *testing.T) {
			// No chunk in b: a get from b fetches exactly k chunks from a.
			key := findKey(t, c, fmt.Sprintf("framing-%d", valueBytes), func(p chunkPlacement) bool { return p.perDC["b"] == 0 })
			value := bytes.Repeat([]byte{'v'}, valueBytes)
			if _, err := coordOf(c, "a1").Put(ctx, coded.Name, key, value, 0, consistency.All); err != nil {
				t.Fatal(err)
			}
			requests0, bytes0 := chunkReadTraffic(c, "b")
			rec, found, err := coordOf(c, "b1").Get(ctx, coded.Name, key, consistency.One)
			if err != nil || !found || !bytes.Equal(rec.Value, value) {
				t.Fatalf("get = %d bytes, %v, %v; want the %d-byte value", len(rec.Value), found, err, valueBytes)
			}
			requests1, bytes1 := chunkReadTraffic(c, "b")
			chunkBytes := erasure.HeaderBytes + erasure.ShardBytes(valueBytes, k)
			chunkKeyBytes := len(key) + 3 // the key has no 0x00 byte: terminator and index
			request := proto.Size(&kurav1.ReadRequest{Keyspace: coded.Name, Key: make([]byte, chunkKeyBytes)})
			overhead := request + 1 + 2*frameHeaderBytes + stampBytes
			perChunk := float64(bytes1-bytes0) / float64(k)
			if requests1-requests0 != uint64(k) || perChunk < float64(chunkBytes) || perChunk > float64(chunkBytes+overhead) {
				t.Fatalf("%d remote chunk reads of %.1f bytes each; want %d of %d-byte chunks plus at most %d bytes of request and framing",
					requests1-requests0, perChunk, k, chunkBytes, overhead)
			}
		})
	}
}

func TestLDRDegradedReadsWithMMinusKOwnersDown(t *testing.T) {
	c := startLDRCluster(t, "")
	ctx := testContext(t)
	down := coded.Erasure.M - coded.Erasure.K
	// A key whose chunks lie on m distinct nodes, so that stopping m-k of them removes
	// exactly m-k chunks.
	key := findKey(t, c, "degraded", func(p chunkPlacement) bool { return len(p.perNode) == coded.Erasure.M })
	p := placementOf(t, c, key)
	reader := nodeIn(c, "a", p)
	if reader == nil {
		reader = nodeIn(c, "b", p)
	}
	value := []byte("still readable with m-k chunk owners down")
	if _, err := reader.Coordinator().Put(ctx, coded.Name, key, value, 0, consistency.All); err != nil {
		t.Fatal(err)
	}
	var stopped []string
	for _, o := range p.owners[:down] {
		stopped = append(stopped, o.ID)
	}
	stopAndWait(t, c, reader, stopped...)

	rec, found, err := reader.Coordinator().Get(ctx, coded.Name, key, consistency.One)
	if err != nil || !found || !bytes.Equal(rec.Value, value) {
		t.Fatalf("ONE get with %v down = %q, %v, %v; want the value", stopped, rec.Value, found, err)
	}
	// QUORUM needs ceil((5+3)/2) = 4 chunks and ALL 5: only 3 owners are left.
	for _, level := range []consistency.Level{consistency.Quorum, consistency.All} {
		if _, _, err := reader.Coordinator().Get(ctx, coded.Name, key, level); !errors.Is(err, coord.ErrUnavailable) {
			t.Fatalf("%v get with %d of 5 chunk owners up: err = %v, want unavailable", level, coded.Erasure.M-down, err)
		}
	}
}

func TestLDRGetServesNewestVersionAndRepairsAnOlderChunk(t *testing.T) {
	c := startLDRCluster(t, t.TempDir()) // on disk: a restarted node keeps its old chunk
	ctx := testContext(t)
	key := findKey(t, c, "versions", func(p chunkPlacement) bool { return len(p.perNode) == coded.Erasure.M })
	p := placementOf(t, c, key)
	stale := p.owners[0].ID
	writer := nodeIn(c, "a", p)
	if writer == nil {
		writer = nodeIn(c, "b", p)
	}
	reader := nodeIn(c, "a", p, writer.ID())
	if reader == nil {
		reader = nodeIn(c, "b", p, writer.ID())
	}
	if _, err := writer.Coordinator().Put(ctx, coded.Name, key, []byte("v1"), 0, consistency.All); err != nil {
		t.Fatal(err)
	}
	// Chunk 0's owner misses v2; the writer's hint for it is lost with the writer, so the
	// owner comes back holding v1's chunk 0 beside four chunks of v2.
	stopAndWait(t, c, writer, stale)
	if _, err := writer.Coordinator().Put(ctx, coded.Name, key, []byte("v2"), 0, consistency.Quorum); err != nil {
		t.Fatal(err)
	}
	stopAndWait(t, c, reader, writer.ID())
	if err := c.Restart(stale); err != nil {
		t.Fatal(err)
	}
	eventually(t, stale+" is back", func() bool { return reader.View().State(stale).Reachable() })

	rec, found, err := reader.Coordinator().Get(ctx, coded.Name, key, consistency.All)
	if err != nil || !found || string(rec.Value) != "v2" {
		t.Fatalf("ALL get over mixed versions = %q, %v, %v; want v2", rec.Value, found, err)
	}
	// With chunks 1 and 2 gone, v2 can be rebuilt only if chunk 0 was repaired to v2.
	stopAndWait(t, c, reader, p.owners[1].ID, p.owners[2].ID)
	eventually(t, "chunk 0 is repaired to v2", func() bool {
		rec, found, err := reader.Coordinator().Get(ctx, coded.Name, key, consistency.One)
		return err == nil && found && string(rec.Value) == "v2"
	})
}
