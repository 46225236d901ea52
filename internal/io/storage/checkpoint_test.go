package storage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kuradb/kura/internal/core/lww"
)

// TestCheckpointIsAFrozenCopy checks that a checkpoint holds the records as they were
// when it was taken, tombstones and expiries included, that later writes, a drop and a
// compaction of the live engine do not reach it, that it reads without being written
// to, and that a second checkpoint into the same directory is refused.
func TestCheckpointIsAFrozenCopy(t *testing.T) {
	dir := t.TempDir()
	live, err := Open(Options{Dir: filepath.Join(dir, "db")})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	before := []lww.Record{put("a", "1", 10), del("b", 11), {Key: []byte("c"), Value: []byte("3"), Timestamp: 12, ExpiresAt: 99}}
	mustApply(t, live, "app", before...)
	mustApply(t, live, "other", put("x", "9", 13))
	// Half the records in table files, half in the log: a checkpoint must hold both.
	if err := live.db.Flush(); err != nil {
		t.Fatal(err)
	}
	mustApply(t, live, "app", put("d", "4", 14))
	before = append(before, put("d", "4", 14))

	cpDir := filepath.Join(dir, "db", "snapshots", "s1")
	if err := live.Checkpoint(cpDir, "app"); err != nil {
		t.Fatal(err)
	}
	if err := live.Checkpoint(cpDir); !errors.Is(err, ErrCheckpointExists) {
		t.Fatalf("second checkpoint into %s: %v, want ErrCheckpointExists", cpDir, err)
	}
	mustApply(t, live, "app", put("a", "new", 20), put("e", "5", 21))
	if err := live.DropKeyspace("app"); err != nil {
		t.Fatal(err)
	}
	if err := live.db.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
		t.Fatal(err)
	}
	filesBefore := listFiles(t, cpDir)

	cp, err := OpenCheckpoint(nil, cpDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []lww.Record
	if err := cp.Each("app", true, func(r lww.Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if describe(got...) != describe(before...) {
		t.Errorf("checkpoint holds %s, want %s", describe(got...), describe(before...))
	}
	if _, err := cp.Apply("app", put("z", "1", 30)); err == nil {
		t.Error("a write to an opened checkpoint succeeded; want it refused")
	}
	if err := cp.Close(); err != nil {
		t.Fatal(err)
	}
	// Pebble's LOCK file is created by the open; nothing else may change.
	if after := listFiles(t, cpDir); describeFiles(after, "LOCK") != describeFiles(filesBefore, "LOCK") {
		t.Errorf("reading the checkpoint changed its files: %v, then %v", filesBefore, after)
	}
	if r, found := mustGet(t, live, "other", "x"); !found || string(r.Value) != "9" {
		t.Errorf("live engine lost keyspace other after the checkpoint: %s, %v", describe(r), found)
	}
}

func TestOpenCheckpointRefusesAMissingDirectory(t *testing.T) {
	if _, err := OpenCheckpoint(nil, filepath.Join(t.TempDir(), "none"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenCheckpoint of a missing directory: %v, want os.ErrNotExist", err)
	}
}

// listFiles returns each file's name and size in dir.
func listFiles(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = info.Size()
	}
	return out
}

// describeFiles renders files without the one named skip, sorted by name.
func describeFiles(files map[string]int64, skip string) string {
	delete(files, skip)
	return fmt.Sprint(files)
}
