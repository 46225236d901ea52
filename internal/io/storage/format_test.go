package storage

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// The stores in testdata/pebble-v1-format-* were written by Pebble v1.1.5 in formats 1
// (FormatMostCompatible, every kura build before 7 December 2026 created its stores in
// it), 12 and 13 (FormatFlushableIngest, the format the last builds on Pebble v1 ratchet
// to), each holding one record: key "k" of keyspace "ks", value "v" at timestamp 8.

// copyFixture copies testdata/name into a new temporary directory and returns it.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", name))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// listFixture returns each file of dir with its contents.
func listFixture(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, entry := range entries {
		data, err := os.ReadFile(filepath.Join(dir, entry.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[entry.Name()] = string(data)
	}
	return files
}

// TestOpenRefusesFormatsBeforeV2: a store older than the oldest format Pebble v2 reads is
// refused with ErrFormatTooOld, naming the build to pass through, as Open, OpenCheckpoint
// and ReplaceWithCheckpoint (before it moves anything) see it; its files are left as
// they were.
func TestOpenRefusesFormatsBeforeV2(t *testing.T) {
	for _, fixture := range []string{"pebble-v1-format-1", "pebble-v1-format-12"} {
		t.Run(fixture, func(t *testing.T) {
			dir := copyFixture(t, fixture)
			before := listFixture(t, dir)
			if _, err := Open(Options{Dir: dir}); !errors.Is(err, ErrFormatTooOld) || !strings.Contains(err.Error(), "Pebble v1 from 7 December 2026") {
				t.Errorf("Open = %v, want ErrFormatTooOld naming the build to pass through", err)
			}
			if _, err := OpenCheckpoint(nil, dir, nil); !errors.Is(err, ErrFormatTooOld) {
				t.Errorf("OpenCheckpoint = %v, want ErrFormatTooOld", err)
			}
			if got := listFixture(t, dir); !reflect.DeepEqual(got, before) {
				t.Errorf("the refused store's files changed: %q, were %q", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(before)))
			}

			live := filepath.Join(t.TempDir(), "live")
			e, err := Open(Options{Dir: live})
			if err != nil {
				t.Fatal(err)
			}
			mustApply(t, e, "ks", put("k", "live", 9))
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			aside := filepath.Join(t.TempDir(), "aside")
			if err := ReplaceWithCheckpoint(live, dir, aside, nil, nil); !errors.Is(err, ErrFormatTooOld) {
				t.Errorf("ReplaceWithCheckpoint from it = %v, want ErrFormatTooOld", err)
			}
			if _, err := os.Stat(aside); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the refused restore set files aside: %v", err)
			}
			e, err = Open(Options{Dir: live})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if r, found := mustGet(t, e, "ks", "k"); !found || string(r.Value) != "live" {
				t.Errorf("after the refused restore the node reads %s (found %t), want its own record", describe(r), found)
			}
		})
	}
}

// TestOpenRatchetsTheFormat: a store the last builds on Pebble v1 left (format 13) opens
// with its record and is ratcheted to formatMajorVersion, the newest Pebble v1.1 reads;
// a new store is created in it.
func TestOpenRatchetsTheFormat(t *testing.T) {
	for _, dir := range []string{copyFixture(t, "pebble-v1-format-13"), filepath.Join(t.TempDir(), "new")} {
		e, err := Open(Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(dir, "13") {
			if r, found := mustGet(t, e, "ks", "k"); !found || string(r.Value) != "v" || r.Timestamp != 8 {
				t.Errorf("Get after the ratchet = %s (found %t), want v@8", describe(r), found)
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		desc, err := pebble.Peek(dir, vfs.Default)
		if err != nil {
			t.Fatal(err)
		}
		if desc.FormatMajorVersion != formatMajorVersion {
			t.Errorf("%s: format %d, want %d", dir, desc.FormatMajorVersion, formatMajorVersion)
		}
	}
}

// TestCheckFormat reads format markers as Pebble names them.
func TestCheckFormat(t *testing.T) {
	tests := []struct {
		name  string
		files []string // nil: no directory
		// tooOld: refused with ErrFormatTooOld; failed: refused with another error.
		tooOld, failed bool
	}{
		{name: "no directory"},
		{name: "empty directory", files: []string{}},
		{name: "format 1: a manifest, no marker", files: []string{"CURRENT", "MANIFEST-000001"}, tooOld: true},
		{name: "format 12", files: []string{"CURRENT", "MANIFEST-000001", "marker.format-version.000011.012"}, tooOld: true},
		{name: "format 13", files: []string{"MANIFEST-000001", "marker.format-version.000012.013"}},
		{name: "a replaced marker left behind", files: []string{"marker.format-version.000011.012", "marker.format-version.000012.016"}},
		{name: "newer than this build knows (Pebble refuses it)", files: []string{"marker.format-version.000030.030"}},
		{name: "unreadable marker", files: []string{"marker.format-version.000001.x13"}, failed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := vfs.NewMem()
			if tt.files != nil {
				if err := fs.MkdirAll("db", 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, name := range tt.files {
				f, err := fs.Create(fs.PathJoin("db", name), vfs.WriteCategoryUnspecified)
				if err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			err := checkFormat(fs, "db")
			if errors.Is(err, ErrFormatTooOld) != tt.tooOld || (err != nil) != (tt.tooOld || tt.failed) {
				t.Errorf("checkFormat = %v, want too old %t, failed %t", err, tt.tooOld, tt.failed)
			}
		})
	}
}
