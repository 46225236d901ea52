package bench

import (
	"testing"

	_ "github.com/kuradb/kura/internal/data/replica" // registers stream_range
	"github.com/kuradb/kura/internal/io/transport"
)

// TestWireStreamBytes: only stream_range frames count, as deltas between snapshots, and
// inter-DC sums the pairs between distinct DCs.
func TestWireStreamBytes(t *testing.T) {
	stream, ok := transport.KindByName("stream_range")
	if !ok {
		t.Fatal("stream_range is not registered")
	}
	gossip, _ := transport.KindByName("gossip")
	before := map[transport.Flow]transport.Counter{
		{FromDC: "dc1", ToDC: "dc1", Kind: stream}: {Messages: 1, Bytes: 100},
	}
	after := map[transport.Flow]transport.Counter{
		{FromDC: "dc1", ToDC: "dc1", Kind: stream}: {Messages: 3, Bytes: 400},
		{FromDC: "dc1", ToDC: "dc2", Kind: stream}: {Messages: 1, Bytes: 50},
		{FromDC: "dc1", ToDC: "dc2", Kind: gossip}: {Messages: 9, Bytes: 9000},
	}
	pairs, total, inter := wireStreamBytes(before, after)
	if total != 350 || inter != 50 || pairs["dc1_to_dc1"] != 300 || pairs["dc1_to_dc2"] != 50 || len(pairs) != 2 {
		t.Fatalf("pairs %v, total %d, inter-DC %d; want dc1_to_dc1=300 dc1_to_dc2=50, 350, 50", pairs, total, inter)
	}
}
