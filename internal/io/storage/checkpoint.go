package storage

import (
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// ErrCheckpointExists is returned by Checkpoint when its directory exists already.
var ErrCheckpointExists = errors.New("storage: the checkpoint directory exists already")

// Checkpoint writes a consistent copy of the database as it is now into dir, which must
// not exist: Pebble's checkpoint, which hard-links the immutable table files (so it costs
// little space until compactions replace them) and copies the write-ahead log and the
// manifest. Every write acknowledged before Checkpoint was called is in it, since writes
// are synced before they return. With keyspaces named, table files that hold none of
// their records, nor of the node's own keyspaces (schema, ring: system*), are left out;
// a checkpoint may still hold records of other keyspaces, which its readers ignore.
func (e *Engine) Checkpoint(dir string, keyspaces ...string) error {
	if err := e.enter(); err != nil {
		return err
	}
	defer e.closeMu.RUnlock()
	var opts []pebble.CheckpointOption
	if len(keyspaces) > 0 {
		// The node's own keyspaces all start with "system" (schema.SystemPrefix), so one
		// span holds them: from "system" up to "systen", the next prefix.
		spans := []pebble.CheckpointSpan{{Start: []byte("system"), End: []byte("systen")}}
		for _, ks := range keyspaces {
			if err := validateKeyspace(ks); err != nil {
				return err
			}
			lower, upper := keyspaceBounds(ks)
			spans = append(spans, pebble.CheckpointSpan{Start: lower, End: upper})
		}
		opts = append(opts, pebble.WithRestrictToSpans(spans))
	}
	err := e.db.Checkpoint(dir, opts...)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w: %s", ErrCheckpointExists, dir)
	}
	if err != nil {
		return fmt.Errorf("storage: checkpoint into %s: %w", dir, err)
	}
	return nil
}

// OpenCheckpoint opens a checkpoint that Checkpoint wrote, read-only: its records are
// read with Scan, ScanPage, Each and Get as a live engine's, and every write fails. The
// checkpoint's files are not changed (Pebble replays its log in memory). fs is the
// filesystem it lives on, nil for the operating system's. Close it when done.
func OpenCheckpoint(fs vfs.FS, dir string, logger *slog.Logger) (*Engine, error) {
	if fs == nil {
		fs = vfs.Default
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if _, err := fs.Stat(dir); err != nil {
		return nil, fmt.Errorf("storage: open checkpoint %s: %w", dir, err)
	}
	if err := checkFormat(fs, dir); err != nil {
		return nil, fmt.Errorf("storage: open checkpoint %s: %w", dir, err)
	}
	db, err := pebble.Open(dir, &pebble.Options{
		FS:               fs,
		ReadOnly:         true,
		ErrorIfNotExists: true,
		Logger:           pebbleLogger{logger: logger},
		EventListener:    eventListener(logger),
	})
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, fmt.Errorf("storage: open checkpoint %s: %w: another reader has it open", dir, ErrDirInUse)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: open checkpoint %s: %w", dir, err)
	}
	return &Engine{
		db:             db,
		logger:         logger,
		tombstoneGrace: DefaultTombstoneGrace,
		stripeSeed:     maphash.MakeSeed(),
		rows:           newRowCache(-1),
	}, nil
}

// ReplaceWithCheckpoint makes checkpoint, a directory Checkpoint wrote, the database in
// dir, which no process may have open (refused with ErrDirInUse): every entry of dir but
// Pebble's LOCK file and those named in keep is moved into aside (created), then the
// checkpoint's files are linked (the immutable table files) or copied (the log, the
// manifest and the rest, which Pebble writes to or reuses) into dir, except LOCK and
// those named in skip. The checkpoint is left as it was. A failure part way leaves what
// was moved in aside, and says so.
func ReplaceWithCheckpoint(dir, checkpoint, aside string, keep, skip []string) error {
	fs := vfs.Default
	// Before anything is moved: the node could not open an older checkpoint's files.
	if err := checkFormat(fs, checkpoint); err != nil {
		return fmt.Errorf("storage: restore from %s: %w", checkpoint, err)
	}
	lock, err := fs.Lock(fs.PathJoin(dir, "LOCK"))
	if err != nil {
		// Another process's lock fails the fcntl; this process's own, Pebble's check
		// before it, which has no sentinel error.
		if errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EACCES) || strings.Contains(err.Error(), "held by current process") {
			return fmt.Errorf("storage: restore into %s: %w: stop the node first", dir, ErrDirInUse)
		}
		return fmt.Errorf("storage: restore into %s: %w", dir, err)
	}
	defer lock.Close()
	files, err := fs.List(checkpoint)
	if err != nil {
		return fmt.Errorf("storage: restore from %s: %w", checkpoint, err)
	}
	entries, err := fs.List(dir)
	if err != nil {
		return fmt.Errorf("storage: restore into %s: %w", dir, err)
	}
	if err := fs.MkdirAll(aside, 0o755); err != nil {
		return fmt.Errorf("storage: restore into %s: %w", dir, err)
	}
	for _, name := range entries {
		if name == "LOCK" || slices.Contains(keep, name) {
			continue
		}
		if err := fs.Rename(fs.PathJoin(dir, name), fs.PathJoin(aside, name)); err != nil {
			return fmt.Errorf("storage: restore into %s: set %s aside: %w (what was set aside is in %s)", dir, name, err, aside)
		}
	}
	for _, name := range files {
		if name == "LOCK" || slices.Contains(skip, name) {
			continue
		}
		src, dst := fs.PathJoin(checkpoint, name), fs.PathJoin(dir, name)
		if strings.HasSuffix(name, ".sst") {
			err = vfs.LinkOrCopy(fs, src, dst)
		} else {
			err = vfs.Copy(fs, src, dst)
		}
		if err != nil {
			return fmt.Errorf("storage: restore into %s: %s: %w (the node's files before the restore are in %s)", dir, name, err, aside)
		}
	}
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
