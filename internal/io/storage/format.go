package storage

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// formatMajorVersion is the on-disk format a new store is created in and an older one
// (13 to 15) is ratcheted to as it opens: FormatVirtualSSTables (16), the newest that
// Pebble v1.1 reads, so that a node can still be rolled back to the last kura build on
// Pebble v1. Newer formats (columnar blocks, value separation...) would make that
// rollback impossible; a later release may move on once no build of Pebble v1 is
// supported. Pebble's own default would leave a store in the format it was created in.
const formatMajorVersion = pebble.FormatVirtualSSTables

// ErrFormatTooOld is returned when a data directory or checkpoint is in a Pebble format
// older than the oldest this build reads (pebble.FormatMinSupported, 13): it was written
// by a build older than the last one on Pebble v1, which converts it as it opens it.
var ErrFormatTooOld = errors.New("the data is in a Pebble format this build no longer reads")

// passThrough names the builds that convert a store of an older format, for the error
// an operator reads (docs/operations.md, "Upgrading from a build before Pebble v2").
const passThrough = "start a kura build on Pebble v1 from 7 December 2026 or later on it once (it converts the files as it opens them; see docs/operations.md), then this build"

// formatMarkerPrefix starts the name of the empty file whose suffix is a store's format
// (Pebble's atomic marker "format-version": marker.format-version.ITERATION.VERSION).
const formatMarkerPrefix = "marker.format-version."

// formatMostCompatible is Pebble v1's first format (FormatMostCompatible, which v2 no
// longer names): a store in it has no format marker.
const formatMostCompatible = 1

// checkFormat refuses, with ErrFormatTooOld, a Pebble store in dir that Pebble v2 cannot
// open: one whose format marker names a format older than pebble.FormatMinSupported, or
// one with a manifest but no format marker, which Pebble v1 left in format 1 (v2 would
// take it for a new store). It reads the directory's listing only, so it changes
// nothing; a directory that does not exist or holds no store passes.
func checkFormat(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	format, marked, store := uint64(0), false, false
	for _, name := range names {
		switch {
		case strings.HasPrefix(name, formatMarkerPrefix):
			// Pebble removes the markers it replaced; keep the newest if one was left.
			v, err := strconv.ParseUint(name[strings.LastIndexByte(name, '.')+1:], 10, 64)
			if err != nil {
				return fmt.Errorf("unreadable format marker %q: %w", name, err)
			}
			format, marked = max(format, v), true
		case name == "CURRENT" || strings.HasPrefix(name, "MANIFEST-"):
			store = true
		}
	}
	if !marked && store {
		format = formatMostCompatible
	}
	if (marked || store) && format < uint64(pebble.FormatMinSupported) {
		return fmt.Errorf("%w: it is in format %d, this build reads %d and newer: %s",
			ErrFormatTooOld, format, uint64(pebble.FormatMinSupported), passThrough)
	}
	return nil
}
