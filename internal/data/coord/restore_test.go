package coord_test

import (
	"errors"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// TestRestoreNeverUndoesALaterWrite restores records from before and after a truncation
// and checks Restore's rule: a record newer than the truncation is written with its own
// timestamp (and loses to a newer version), one hidden by the truncation comes back
// unless its key was written or deleted since.
func TestRestoreNeverUndoesALaterWrite(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	co := c.Nodes[0].Coordinator()
	put := func(key, value string) hlc.Timestamp {
		t.Helper()
		ts, err := co.Put(ctx, spread.Name, []byte(key), []byte(value), 0, consistency.All)
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	before := map[string]hlc.Timestamp{}
	for _, k := range []string{"untouched", "rewritten", "deleted"} {
		before[k] = put(k, "old-"+k)
	}
	truncatedAt, err := c.Nodes[1].Truncate(ctx, spread.Name)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "every node learns the truncation", func() bool {
		for _, n := range c.Nodes {
			if ks, err := n.Keyspace(spread.Name); err != nil || ks.TruncatedAt != truncatedAt {
				return false
			}
		}
		return true
	})
	put("rewritten", "new")
	if _, err := co.Delete(ctx, spread.Name, []byte("deleted"), consistency.All); err != nil {
		t.Fatal(err)
	}
	after := put("later", "v1")
	put("later", "v2")

	tests := []struct {
		key, value string
		ts         hlc.Timestamp
		want       coord.RestoreOutcome
		read       string // the value read at ALL afterwards; "" for not found
	}{
		{key: "untouched", value: "old-untouched", ts: before["untouched"], want: coord.RestoredRestamped, read: "old-untouched"},
		{key: "rewritten", value: "old-rewritten", ts: before["rewritten"], want: coord.RestoreKeptNewer, read: "new"},
		{key: "deleted", value: "old-deleted", ts: before["deleted"], want: coord.RestoreKeptNewer, read: ""},
		{key: "later", value: "v1", ts: after, want: coord.RestoredAsIs, read: "v2"},
		{key: "fresh", value: "f", ts: after, want: coord.RestoredAsIs, read: "f"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, err := co.Restore(ctx, spread.Name, lww.Record{Key: []byte(tt.key), Value: []byte(tt.value), Timestamp: tt.ts}, consistency.Quorum)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Restore = %v, want %v", got, tt.want)
			}
			rec, found, err := c.Nodes[2].Coordinator().Get(ctx, spread.Name, []byte(tt.key), consistency.All)
			if err != nil {
				t.Fatal(err)
			}
			if read := string(rec.Value); found != (tt.read != "") || read != tt.read {
				t.Errorf("after the restore the key reads %q (found %v), want %q", read, found, tt.read)
			}
		})
	}
}

func TestRestoreRefusesWhatIsNotARecordToRestore(t *testing.T) {
	c := startCluster(t, spread)
	ctx := testContext(t)
	co := c.Nodes[0].Coordinator()
	tests := []struct {
		name string
		rec  lww.Record
		cl   consistency.Level
	}{
		{name: "tombstone", rec: lww.Record{Key: []byte("k"), Tombstone: true, Timestamp: 5}, cl: consistency.Quorum},
		{name: "no timestamp", rec: lww.Record{Key: []byte("k"), Value: []byte("v")}, cl: consistency.Quorum},
		{name: "serial level", rec: lww.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 5}, cl: consistency.Serial},
		{name: "empty key", rec: lww.Record{Value: []byte("v"), Timestamp: 5}, cl: consistency.Quorum},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := co.Restore(ctx, spread.Name, tt.rec, tt.cl); !errors.Is(err, coord.ErrInvalidArgument) {
				t.Fatalf("Restore: %v, want ErrInvalidArgument", err)
			}
		})
	}
}
