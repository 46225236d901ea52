// Package backup keeps a node's snapshots: named, cheap copies of its storage (Pebble
// checkpoints, storage.Engine.Checkpoint) under snapshots/NAME in its data directory,
// each with a manifest saying whose, when, at which hybrid-logical-clock time, with
// which keyspaces and ring. It lists and deletes them, reads a snapshot's records for a
// keyspace restore (Visible, Merge), and swaps one in for a whole-node restore
// (RestoreNode) while the node is stopped. The procedures are in docs/backup.md.
package backup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/io/storage"
)

// SnapshotsDir is the directory of a node's snapshots inside its data directory.
const SnapshotsDir = "snapshots"

// ManifestFile names the manifest inside a snapshot's directory. It is written last, so
// a snapshot without one was cut short and is not listed as complete.
const ManifestFile = "kura-snapshot.json"

// ErrNoSnapshot means the node has no complete snapshot of that name.
var ErrNoSnapshot = errors.New("no such snapshot")

// ErrExists means the node has a snapshot of that name already.
var ErrExists = errors.New("snapshot exists already")

// ErrInvalidName refuses a snapshot name that is not a plain directory name.
var ErrInvalidName = errors.New("invalid snapshot name")

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// ValidateName refuses a name that could leave the snapshots directory or is not a
// plain name: 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit.
func ValidateName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("%w %q: use 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit", ErrInvalidName, name)
	}
	return nil
}

// Manifest describes one node's snapshot.
type Manifest struct {
	Name      string    `json:"name"`
	Node      string    `json:"node"`
	DC        string    `json:"dc"`
	CreatedAt time.Time `json:"created_at"`
	// Timestamp is the node's hybrid-logical-clock reading when the checkpoint was
	// taken: every write it had applied is older.
	Timestamp hlc.Timestamp `json:"timestamp"`
	// Cut, when set, is the time of a cluster snapshot (kura snapshot create --all):
	// the snapshot is the writes stamped at or before it, and a restore ignores any
	// newer record the checkpoint holds.
	Cut hlc.Timestamp `json:"cut,omitempty"`
	// Keyspaces are the definitions of the keyspaces the snapshot holds.
	Keyspaces []Keyspace `json:"keyspaces"`
	// KeyspacesOnly marks a snapshot taken of some keyspaces (kura snapshot create
	// --keyspace): it may lack the others' records, so it cannot replace a node's data.
	KeyspacesOnly bool `json:"keyspaces_only,omitempty"`
	// Ring is the members the node knew, with their ring status.
	Ring []Member `json:"ring"`
	// Before, when set, marks the data a whole-node restore set aside (RestoreNode):
	// the node's files as they were, not a checkpoint, named by the snapshot restored.
	Before string `json:"before_restore_of,omitempty"`
}

// Keyspace is a keyspace's definition as a snapshot keeps it.
type Keyspace struct {
	Name        string   `json:"name"`
	Replication string   `json:"replication"`
	Partitioner string   `json:"partitioner"`
	ErasureM    int      `json:"erasure_m,omitempty"`
	ErasureK    int      `json:"erasure_k,omitempty"`
	Splits      [][]byte `json:"splits,omitempty"`
	// Transactions is schema.Keyspace.Transactions ("partition"; empty for per-key
	// instances, as in snapshots taken before the option).
	Transactions string        `json:"transactions,omitempty"`
	Timestamp    hlc.Timestamp `json:"timestamp"`
	// TruncatedAt is the keyspace's truncation when the snapshot was taken: records at
	// or before it were already hidden then, and are not part of the snapshot.
	TruncatedAt hlc.Timestamp `json:"truncated_at,omitempty"`
}

// Member is one node of the ring a snapshot's node knew.
type Member struct {
	ID     string `json:"id"`
	DC     string `json:"dc"`
	Addr   string `json:"addr"`
	Status string `json:"status"`
	Tokens int    `json:"tokens,omitempty"`
}

// Keyspace returns the snapshot's definition of keyspace name.
func (m Manifest) Keyspace(name string) (Keyspace, bool) {
	i := slices.IndexFunc(m.Keyspaces, func(k Keyspace) bool { return k.Name == name })
	if i < 0 {
		return Keyspace{}, false
	}
	return m.Keyspaces[i], true
}

// Visible reports whether r, a record of keyspace ks read from the snapshot's checkpoint,
// belongs to the snapshot: newer than the keyspace's truncation then, and not newer than
// the cut of a cluster snapshot. Tombstones and expired records are visible: they
// shadow older versions of their key on other nodes (Merge).
func (m Manifest) Visible(ks Keyspace, r lww.Record) bool {
	return r.Timestamp > ks.TruncatedAt && (m.Cut == 0 || r.Timestamp <= m.Cut)
}

// Path is the directory of snapshot name in dataDir.
func Path(dataDir, name string) string {
	return filepath.Join(dataDir, SnapshotsDir, name)
}

// Create checkpoints engine, whose data directory is dataDir, as snapshot m.Name, then
// writes m as its manifest. With keyspaces named, the checkpoint may leave the others
// out (storage.Engine.Checkpoint), and the manifest says so (KeyspacesOnly). A snapshot
// of the name exists already: refused.
func Create(engine *storage.Engine, dataDir string, m Manifest, keyspaces []string) error {
	if err := ValidateName(m.Name); err != nil {
		return err
	}
	m.KeyspacesOnly = len(keyspaces) > 0
	dir := Path(dataDir, m.Name)
	if err := engine.Checkpoint(dir, keyspaces...); err != nil {
		if errors.Is(err, storage.ErrCheckpointExists) {
			return fmt.Errorf("%w: %s on %s: choose another name, or delete it first (kura snapshot delete %s)", ErrExists, m.Name, m.Node, m.Name)
		}
		return err
	}
	if err := writeManifest(dir, m); err != nil {
		return errors.Join(err, os.RemoveAll(dir))
	}
	return nil
}

// writeManifest writes m into dir atomically and durably: a temporary file synced, then
// renamed, then the directory synced.
func writeManifest(dir string, m Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ManifestFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write snapshot manifest: %w", err)
	}
	_, err = f.Write(append(data, '\n'))
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return fmt.Errorf("write snapshot manifest: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, ManifestFile)); err != nil {
		return fmt.Errorf("write snapshot manifest: %w", err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// Load reads the manifest of snapshot name in dataDir.
func Load(dataDir, name string) (Manifest, error) {
	if err := ValidateName(name); err != nil {
		return Manifest{}, err
	}
	data, err := os.ReadFile(filepath.Join(Path(dataDir, name), ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return Manifest{}, fmt.Errorf("%w %q in %s", ErrNoSnapshot, name, filepath.Join(dataDir, SnapshotsDir))
	}
	if err != nil {
		return Manifest{}, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, fmt.Errorf("snapshot %s: manifest: %w", name, err)
	}
	return m, nil
}

// List returns the complete snapshots in dataDir, oldest first, and the names of the
// directories there without a manifest (a snapshot cut short, which Delete removes).
func List(dataDir string) (snapshots []Manifest, incomplete []string, err error) {
	entries, err := os.ReadDir(filepath.Join(dataDir, SnapshotsDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		m, err := Load(dataDir, e.Name())
		switch {
		case errors.Is(err, ErrNoSnapshot) || errors.Is(err, ErrInvalidName):
			incomplete = append(incomplete, e.Name())
		case err != nil:
			return nil, nil, err
		default:
			snapshots = append(snapshots, m)
		}
	}
	slices.SortFunc(snapshots, func(a, b Manifest) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return snapshots, incomplete, nil
}

// Delete removes snapshot name from dataDir, complete or not.
func Delete(dataDir, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	dir := Path(dataDir, name)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w %q in %s", ErrNoSnapshot, name, filepath.Join(dataDir, SnapshotsDir))
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return syncDir(filepath.Join(dataDir, SnapshotsDir))
}

// Open opens snapshot name's checkpoint in dataDir read-only, with its manifest.
func Open(dataDir, name string) (Manifest, *storage.Engine, error) {
	m, err := Load(dataDir, name)
	if err != nil {
		return Manifest{}, nil, err
	}
	e, err := storage.OpenCheckpoint(nil, Path(dataDir, name), nil)
	if err != nil {
		return Manifest{}, nil, err
	}
	return m, e, nil
}

// RestoreNode makes snapshot name the data of the node whose data directory is dataDir,
// which must be stopped: the node's current files are moved aside, as a snapshot named
// before-restore-TIME whose manifest names the snapshot restored (so that the restore can
// be undone the same way), and the checkpoint's files take their place. It returns the
// name of the snapshot set aside.
func RestoreNode(dataDir, name string, now time.Time) (aside string, err error) {
	m, err := Load(dataDir, name)
	if err != nil {
		return "", err
	}
	if m.KeyspacesOnly {
		return "", fmt.Errorf("snapshot %s holds only some keyspaces, so it cannot replace the node's data: bring them back into the running cluster with kura restore keyspace", name)
	}
	aside = "before-restore-" + now.UTC().Format("20060102T150405.000Z")
	asideDir := Path(dataDir, aside)
	if err := storage.ReplaceWithCheckpoint(dataDir, Path(dataDir, name), asideDir, []string{SnapshotsDir}, []string{ManifestFile}); err != nil {
		return "", err
	}
	before := Manifest{Name: aside, Node: m.Node, DC: m.DC, CreatedAt: now.UTC(), Before: name}
	if err := writeManifest(asideDir, before); err != nil {
		return aside, fmt.Errorf("snapshot %s restored, but the manifest of the data set aside in %s: %w", name, asideDir, err)
	}
	return aside, nil
}

// Source is one node's records of a keyspace in key order, as Merge reads them.
type Source interface {
	// Next returns the next record, whose memory no later record shares; ok is false
	// once there is none.
	Next() (r lww.Record, ok bool, err error)
}

// Merge reads every source to its end and calls emit with each key's newest version
// among them (lww.Newer: a tombstone shadows an older value that another node still
// holds), in key order. It stops at the first error.
func Merge(sources []Source, emit func(lww.Record) error) error {
	heads := make([]lww.Record, len(sources))
	live := make([]bool, len(sources))
	advance := func(i int) error {
		r, ok, err := sources[i].Next()
		heads[i], live[i] = r, ok
		return err
	}
	for i := range sources {
		if err := advance(i); err != nil {
			return err
		}
	}
	for {
		first := -1
		for i, ok := range live {
			if ok && (first < 0 || bytes.Compare(heads[i].Key, heads[first].Key) < 0) {
				first = i
			}
		}
		if first < 0 {
			return nil
		}
		key := heads[first].Key
		newest := heads[first]
		for i, ok := range live {
			if !ok || !bytes.Equal(heads[i].Key, key) {
				continue
			}
			if lww.Newer(heads[i], newest) {
				newest = heads[i]
			}
			// key is heads[first].Key: advance first last, once every equal head is read.
			if i != first {
				if err := advance(i); err != nil {
					return err
				}
			}
		}
		if err := emit(newest); err != nil {
			return err
		}
		if err := advance(first); err != nil {
			return err
		}
	}
}
