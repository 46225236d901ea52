package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/lww"
)

// ErrInvalidRecord reports a record the engine refuses to store.
var ErrInvalidRecord = errors.New("storage: invalid record")

// ErrCorrupt reports a stored key or value that cannot be decoded.
var ErrCorrupt = errors.New("storage: corrupt record")

// validateRecord refuses records that would break reconciliation: a zero timestamp means
// "none" and cannot be ordered, and a tombstone carrying a value would compare
// differently on replicas that dropped it.
func validateRecord(r lww.Record) error {
	if r.Timestamp == 0 {
		return fmt.Errorf("%w: key %q has no timestamp", ErrInvalidRecord, r.Key)
	}
	if r.Tombstone && len(r.Value) > 0 {
		return fmt.Errorf("%w: tombstone for key %q carries a %d-byte value", ErrInvalidRecord, r.Key, len(r.Value))
	}
	return nil
}

// On-disk value layout, version 1:
//
//	byte 0      format version (valueVersion)
//	byte 1      flags: bit 0 set for a tombstone; other bits must be zero
//	bytes 2-9   hlc.Timestamp, big-endian uint64
//	bytes 10-   the value bytes (none for a tombstone)
//
// The version byte lets a later format be read beside this one without a migration.
const (
	valueVersion    = 1
	flagTombstone   = 1 << 0
	valueHeaderSize = 10
)

// encodeValue returns the on-disk form of r's timestamp, tombstone flag and value.
func encodeValue(r lww.Record) []byte {
	encoded := make([]byte, valueHeaderSize, valueHeaderSize+len(r.Value))
	encoded[0] = valueVersion
	if r.Tombstone {
		encoded[1] = flagTombstone
	}
	binary.BigEndian.PutUint64(encoded[2:valueHeaderSize], uint64(r.Timestamp))
	return append(encoded, r.Value...)
}

// decodeValue parses an on-disk value into a Record for key, copying the bytes so the
// result outlives Pebble's buffer. Malformed input yields an error wrapping ErrCorrupt
// that names the key.
func decodeValue(key, encoded []byte) (lww.Record, error) {
	if len(encoded) < valueHeaderSize {
		return lww.Record{}, fmt.Errorf("%w: key %q: value is %d bytes, shorter than the %d-byte header", ErrCorrupt, key, len(encoded), valueHeaderSize)
	}
	if encoded[0] != valueVersion {
		return lww.Record{}, fmt.Errorf("%w: key %q: unknown value format version %d", ErrCorrupt, key, encoded[0])
	}
	flags := encoded[1]
	if flags&^flagTombstone != 0 {
		return lww.Record{}, fmt.Errorf("%w: key %q: unknown flags %#x", ErrCorrupt, key, flags)
	}
	r := lww.Record{
		Key:       bytes.Clone(key),
		Timestamp: hlc.Timestamp(binary.BigEndian.Uint64(encoded[2:valueHeaderSize])),
		Tombstone: flags&flagTombstone != 0,
	}
	if value := encoded[valueHeaderSize:]; len(value) > 0 {
		if r.Tombstone {
			return lww.Record{}, fmt.Errorf("%w: key %q: tombstone carries a %d-byte value", ErrCorrupt, key, len(value))
		}
		r.Value = bytes.Clone(value)
	}
	return r, nil
}
