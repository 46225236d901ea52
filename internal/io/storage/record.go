package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
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
	if r.Tombstone && r.Type != lww.String {
		return fmt.Errorf("%w: tombstone for key %q carries type %v", ErrInvalidRecord, r.Key, r.Type)
	}
	if r.Type > lww.TypeMax {
		return fmt.Errorf("%w: key %q has unknown type %d", ErrInvalidRecord, r.Key, r.Type)
	}
	return nil
}

// On-disk value layout. A record without an expiry is written in version 1:
//
//	byte 0      format version: 1
//	byte 1      flags: bit 0 set for a tombstone; bits 1-3 the record's lww.Type (zero
//	            for a string and for every tombstone); bits 4-7 must be zero
//	bytes 2-9   hlc.Timestamp, big-endian uint64
//	bytes 10-   the value bytes (none for a tombstone)
//
// A record with an expiry (lww.Record.ExpiresAt set) is written in version 2, which adds
// the deadline after the timestamp:
//
//	byte 0      format version: 2
//	bytes 1-9   as version 1
//	bytes 10-17 ExpiresAt, big-endian uint64, never zero
//	bytes 18-   the value bytes (none for a tombstone)
//
// Records without an expiry keep the version 1 bytes, so data written before expiry
// existed reads unchanged and each record has exactly one encoding. The type took bits
// that were zero before it existed, so a string record's bytes are what they always were;
// a build from before types refuses a typed record's flags (ErrCorrupt), which is why
// typed records are written only once every node reads them (docs/redis-types.md).
const (
	valueVersion         = 1
	valueVersionExpiring = 2
	flagTombstone        = 1 << 0
	flagTypeShift        = 1
	flagTypeMask         = 0b111 << flagTypeShift
	valueHeaderSize      = 10
	expiringHeaderSize   = valueHeaderSize + 8
)

// encodeValue returns the on-disk form of r's timestamp, tombstone flag, expiry and value.
func encodeValue(r lww.Record) []byte {
	size := valueHeaderSize
	if r.ExpiresAt != 0 {
		size = expiringHeaderSize
	}
	encoded := make([]byte, valueHeaderSize, size+len(r.Value))
	encoded[0] = valueVersion
	if r.Tombstone {
		encoded[1] = flagTombstone
	}
	encoded[1] |= byte(r.Type) << flagTypeShift
	binary.BigEndian.PutUint64(encoded[2:valueHeaderSize], uint64(r.Timestamp))
	if r.ExpiresAt != 0 {
		encoded[0] = valueVersionExpiring
		encoded = binary.BigEndian.AppendUint64(encoded, uint64(r.ExpiresAt))
	}
	return append(encoded, r.Value...)
}

// decodeValue parses an on-disk value into a Record for key, copying the bytes so the
// result outlives Pebble's buffer. Malformed input yields an error wrapping ErrCorrupt
// that names the key.
func decodeValue(key, encoded []byte) (lww.Record, error) {
	r, value, err := decodeHeader(key, encoded)
	if err != nil {
		return lww.Record{}, err
	}
	r.Key = bytes.Clone(key)
	if len(value) > 0 {
		r.Value = bytes.Clone(value)
	}
	return r, nil
}

// decodeHeader parses an on-disk value's header into a Record without its key and value,
// and returns the value's bytes, still Pebble's: for walks that need only the timestamps
// and the tombstone flag, at no allocation. key names the record in errors.
func decodeHeader(key, encoded []byte) (r lww.Record, value []byte, err error) {
	if len(encoded) < valueHeaderSize {
		return lww.Record{}, nil, fmt.Errorf("%w: key %q: value is %d bytes, shorter than the %d-byte header", ErrCorrupt, key, len(encoded), valueHeaderSize)
	}
	headerSize := valueHeaderSize
	switch encoded[0] {
	case valueVersion:
	case valueVersionExpiring:
		headerSize = expiringHeaderSize
		if len(encoded) < headerSize {
			return lww.Record{}, nil, fmt.Errorf("%w: key %q: value is %d bytes, shorter than the %d-byte header of version %d", ErrCorrupt, key, len(encoded), headerSize, valueVersionExpiring)
		}
	default:
		return lww.Record{}, nil, fmt.Errorf("%w: key %q: unknown value format version %d", ErrCorrupt, key, encoded[0])
	}
	flags := encoded[1]
	if flags&^(flagTombstone|flagTypeMask) != 0 {
		return lww.Record{}, nil, fmt.Errorf("%w: key %q: unknown flags %#x", ErrCorrupt, key, flags)
	}
	r = lww.Record{
		Timestamp: hlc.Timestamp(binary.BigEndian.Uint64(encoded[2:valueHeaderSize])),
		Tombstone: flags&flagTombstone != 0,
		Type:      lww.Type(flags&flagTypeMask) >> flagTypeShift,
	}
	if r.Type > lww.TypeMax {
		return lww.Record{}, nil, fmt.Errorf("%w: key %q: unknown type %d", ErrCorrupt, key, r.Type)
	}
	if r.Tombstone && r.Type != lww.String {
		return lww.Record{}, nil, fmt.Errorf("%w: key %q: tombstone carries type %v", ErrCorrupt, key, r.Type)
	}
	if headerSize == expiringHeaderSize {
		r.ExpiresAt = hlc.Timestamp(binary.BigEndian.Uint64(encoded[valueHeaderSize:headerSize]))
		if r.ExpiresAt == 0 {
			// Version 2 exists for a deadline: a zero one would be a second encoding of
			// a version 1 record.
			return lww.Record{}, nil, fmt.Errorf("%w: key %q: version %d value has no expiry", ErrCorrupt, key, valueVersionExpiring)
		}
	}
	value = encoded[headerSize:]
	if r.Tombstone && len(value) > 0 {
		return lww.Record{}, nil, fmt.Errorf("%w: key %q: tombstone carries a %d-byte value", ErrCorrupt, key, len(value))
	}
	return r, value, nil
}
