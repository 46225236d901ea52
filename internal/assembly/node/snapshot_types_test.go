package node

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/replica"
)

// TestSnapshotCarriesRecordType: a snapshot's records keep their type on the wire
// (kurav1.LocalVersion's type), so a restore writes a hash's header back as a hash, not as
// a string.
func TestSnapshotCarriesRecordType(t *testing.T) {
	n, err := Start(Config{
		ID: "n1", DC: "dc1", Listen: "127.0.0.1:0", ClientAddr: "127.0.0.1:0", DataDir: t.TempDir(),
		GossipInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	waitUntil(t, "the node counts itself as reading typed records", n.RecordTypesRead)
	for key, typ := range map[string]lww.Type{"h": lww.Hash, "s": lww.String} {
		res, err := n.Coordinator().Update(ctx, "default", []byte(key), consistency.Serial, func(lww.Record, bool) (lww.Record, bool, error) {
			return lww.Record{Type: typ}, true, nil
		})
		if err != nil || !res.Applied {
			t.Fatalf("write %s: %+v, %v", key, res, err)
		}
		// The commit follows the answer; a read through the same coordinator waits for
		// it, so that the snapshot below finds the record on disk.
		if _, found, err := n.Coordinator().Get(ctx, "default", []byte(key), consistency.One); err != nil || !found {
			t.Fatalf("read %s after its write: found %v, %v", key, found, err)
		}
	}
	if _, err := n.CreateSnapshot("s1", nil, 0, ""); err != nil {
		t.Fatal(err)
	}
	got := map[string]lww.Type{}
	err = apiBackend{n}.ReadSnapshot(ctx, "s1", "default", func(page []*kurav1.LocalVersion) error {
		for _, v := range page {
			got[string(v.GetKey())] = replica.TypeFromWire(v.GetType())
		}
		return nil
	})
	if err != nil || got["h"] != lww.Hash || got["s"] != lww.String {
		t.Fatalf("snapshot's types = %v, %v; want h a hash, s a string", got, err)
	}
}
