package backup

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/io/storage"
)

// records is a Source over a slice.
type records []lww.Record

func (rs *records) Next() (lww.Record, bool, error) {
	if len(*rs) == 0 {
		return lww.Record{}, false, nil
	}
	r := (*rs)[0]
	*rs = (*rs)[1:]
	return r, true, nil
}

// failing is a Source whose first Next fails.
type failing struct{}

func (failing) Next() (lww.Record, bool, error) { return lww.Record{}, false, errors.New("node gone") }

func val(key, value string, ts uint64) lww.Record {
	return lww.Record{Key: []byte(key), Value: []byte(value), Timestamp: hlcTS(ts)}
}

func tomb(key string, ts uint64) lww.Record {
	return lww.Record{Key: []byte(key), Tombstone: true, Timestamp: hlcTS(ts)}
}

func show(rs []lww.Record) string {
	var parts []string
	for _, r := range rs {
		if r.Tombstone {
			parts = append(parts, fmt.Sprintf("%s@%d:deleted", r.Key, r.Timestamp))
		} else {
			parts = append(parts, fmt.Sprintf("%s@%d=%s", r.Key, r.Timestamp, r.Value))
		}
	}
	return strings.Join(parts, " ")
}

func TestMerge(t *testing.T) {
	tests := []struct {
		name    string
		sources [][]lww.Record
		want    string
	}{
		{name: "no source", want: ""},
		{name: "one node", sources: [][]lww.Record{{val("a", "1", 1), val("b", "2", 2)}}, want: "a@1=1 b@2=2"},
		{
			name:    "replicas agree",
			sources: [][]lww.Record{{val("a", "1", 1)}, {val("a", "1", 1)}, {val("a", "1", 1)}},
			want:    "a@1=1",
		},
		{
			name:    "newest wins whichever node holds it",
			sources: [][]lww.Record{{val("a", "old", 1), val("c", "new", 9)}, {val("a", "new", 5), val("c", "old", 3)}},
			want:    "a@5=new c@9=new",
		},
		{
			name:    "a tombstone shadows a value a node that missed the delete holds",
			sources: [][]lww.Record{{val("a", "1", 1), val("b", "2", 2)}, {tomb("a", 4)}},
			want:    "a@4:deleted b@2=2",
		},
		{
			name:    "keys only some nodes hold interleave in order",
			sources: [][]lww.Record{{val("b", "2", 2), val("d", "4", 4)}, {val("a", "1", 1), val("c", "3", 3), val("e", "5", 5)}, {}},
			want:    "a@1=1 b@2=2 c@3=3 d@4=4 e@5=5",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sources []Source
			for _, s := range tt.sources {
				rs := records(s)
				sources = append(sources, &rs)
			}
			var got []lww.Record
			if err := Merge(sources, func(r lww.Record) error { got = append(got, r); return nil }); err != nil {
				t.Fatal(err)
			}
			if show(got) != tt.want {
				t.Errorf("Merge = %s, want %s", show(got), tt.want)
			}
		})
	}
	rs := records{val("a", "1", 1)}
	if err := Merge([]Source{&rs, failing{}}, func(lww.Record) error { return nil }); err == nil {
		t.Error("Merge with a failing source succeeded")
	}
}

func TestVisible(t *testing.T) {
	ks := Keyspace{Name: "app", TruncatedAt: hlcTS(10)}
	tests := []struct {
		name string
		cut  uint64
		r    lww.Record
		want bool
	}{
		{name: "truncated before the snapshot", r: val("a", "1", 10), want: false},
		{name: "after the truncation", r: val("a", "1", 11), want: true},
		{name: "tombstone", r: tomb("a", 11), want: true},
		{name: "at the cut", cut: 20, r: val("a", "1", 20), want: true},
		{name: "after the cut", cut: 20, r: val("a", "1", 21), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Manifest{Cut: hlcTS(tt.cut)}
			if got := m.Visible(ks, tt.r); got != tt.want {
				t.Errorf("Visible = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValidateName(t *testing.T) {
	for _, name := range []string{"nightly-2026.12.06", "a", "A_1"} {
		if err := ValidateName(name); err != nil {
			t.Errorf("ValidateName(%q) = %v", name, err)
		}
	}
	for _, name := range []string{"", "..", "../x", "a/b", ".hidden", "-x", strings.Repeat("a", 101)} {
		if err := ValidateName(name); !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidateName(%q) = %v, want ErrInvalidName", name, err)
		}
	}
}

// TestCreateListDeleteRestore takes two snapshots of an engine, lists them, restores
// the first into the stopped engine's directory (the data set aside as a snapshot of its
// own), and deletes one.
func TestCreateListDeleteRestore(t *testing.T) {
	dir := t.TempDir()
	e, err := storage.Open(storage.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Close() }()
	apply := func(rs ...lww.Record) {
		t.Helper()
		for _, r := range rs {
			if _, err := e.Apply("app", r); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply(val("a", "1", 1), val("b", "2", 2))
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	first := Manifest{Name: "first", Node: "n1", DC: "dc1", CreatedAt: now, Timestamp: hlcTS(2), Keyspaces: []Keyspace{{Name: "app", Replication: "simple=1"}}}
	if err := Create(e, dir, first, nil); err != nil {
		t.Fatal(err)
	}
	if err := Create(e, dir, first, nil); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("second Create of %s: %v, want refused as existing", first.Name, err)
	}
	apply(val("a", "changed", 3), tomb("b", 4), val("c", "3", 5))
	second := first
	second.Name, second.CreatedAt = "second", now.Add(time.Minute)
	if err := Create(e, dir, second, []string{"app"}); err != nil {
		t.Fatal(err)
	}
	listed, incomplete, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || listed[0].Name != "first" || listed[1].Name != "second" || len(incomplete) != 0 {
		t.Fatalf("List = %v, incomplete %v; want first, second", listed, incomplete)
	}
	if _, err := RestoreNode(dir, "first", now); !errors.Is(err, storage.ErrDirInUse) {
		t.Fatalf("RestoreNode with the engine open: %v, want ErrDirInUse", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	aside, err := RestoreNode(dir, "first", now.Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if e, err = storage.Open(storage.Options{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	got, err := e.Scan("app", nil, nil, 0, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "a@1=1 b@2=2"; show(got) != want {
		t.Errorf("after restoring %s the node holds %s, want %s", first.Name, show(got), want)
	}
	m, before, err := Open(dir, aside)
	if err != nil {
		t.Fatal(err)
	}
	got, err = before.Scan("app", nil, nil, 0, true, nil)
	_ = before.Close()
	if err != nil {
		t.Fatal(err)
	}
	if want := "a@3=changed b@4:deleted c@5=3"; show(got) != want || m.Before != "first" {
		t.Errorf("the data set aside holds %s (before_restore_of %q), want %s (first)", show(got), m.Before, want)
	}
	if _, err := RestoreNode(dir, "second", now); err == nil || !strings.Contains(err.Error(), "only some keyspaces") {
		t.Errorf("RestoreNode of a snapshot of some keyspaces: %v, want refused", err)
	}
	if err := Delete(dir, "second"); err != nil {
		t.Fatal(err)
	}
	if err := Delete(dir, "second"); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("second Delete: %v, want ErrNoSnapshot", err)
	}
	if _, err := Load(dir, "second"); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("Load of a deleted snapshot: %v, want ErrNoSnapshot", err)
	}
	if _, err := Load(filepath.Join(dir, "none"), "first"); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("Load from a directory without snapshots: %v, want ErrNoSnapshot", err)
	}
}

func hlcTS(ts uint64) hlc.Timestamp { return hlc.Timestamp(ts) }
