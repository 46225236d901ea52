package storage

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kuradb/kura/hlc"
)

func TestTombstoneWatermark(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	grace := time.Hour
	cutoff := hlc.FromTime(now.Add(-grace))
	fs := vfs.NewMem()
	e, err := Open(Options{Dir: "db", FS: fs, TombstoneGrace: grace})
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, e, "live", put("k", "v", hlc.FromTime(now)))
	mustApply(t, e, "dead", del("k", hlc.FromTime(now.Add(-2*grace))))
	if _, err := e.CollectGarbage(now, nil); err != nil {
		t.Fatal(err)
	}
	// A later collection with an earlier clock must not lower a watermark.
	if _, err := e.CollectGarbage(now.Add(-time.Minute), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(Options{Dir: "db", FS: fs, TombstoneGrace: grace})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	tests := []struct {
		keyspace string
		want     hlc.Timestamp
	}{
		{"live", cutoff - 1},   // walked, though nothing was collected in it
		{"dead", cutoff - 1},   // walked and emptied: its tombstone is gone
		{"never", 0},           // no record, nothing collected
		{watermarkKeyspace, 0}, // the watermarks have none of their own
	}
	for _, tt := range tests {
		got, err := e.TombstoneWatermark(tt.keyspace)
		if err != nil || got != tt.want {
			t.Errorf("TombstoneWatermark(%q) = %v, %v; want %v", tt.keyspace, got, err, tt.want)
		}
	}
}
