package storage

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidKeyspace reports a keyspace name the engine cannot encode: empty, or
// containing the 0x00 byte that separates it from the user key.
var ErrInvalidKeyspace = errors.New("storage: invalid keyspace")

// keySeparator ends the keyspace name inside a Pebble key. Because keyspace names
// never contain it, each keyspace is one contiguous range [ks+0x00, ks+0x01) and no
// keyspace is a prefix of another's range ("a\x00…" sorts apart from "ab\x00…").
const keySeparator = 0x00

// Pebble keys of the engine's own indexes start with internalKeyPrefix, followed by a
// byte naming the index ('x': expiry, 's': live keys). A record's key starts with its keyspace's name,
// never empty, so no record key starts with 0x00, and a walk of every record starts at
// firstRecordKey.
const internalKeyPrefix = 0x00

// firstRecordKey is the lowest possible record key: past every internal key.
var firstRecordKey = []byte{internalKeyPrefix + 1}

// validateKeyspace returns an error wrapping ErrInvalidKeyspace when ks cannot be encoded.
func validateKeyspace(ks string) error {
	if ks == "" {
		return fmt.Errorf("%w: empty name", ErrInvalidKeyspace)
	}
	if i := strings.IndexByte(ks, keySeparator); i >= 0 {
		return fmt.Errorf("%w: %q contains a 0x00 byte at offset %d", ErrInvalidKeyspace, ks, i)
	}
	return nil
}

// encodeKey returns the Pebble key of userKey in keyspace ks: ks, 0x00, userKey.
func encodeKey(ks string, userKey []byte) []byte {
	return appendKey(make([]byte, 0, len(ks)+1+len(userKey)), ks, userKey)
}

// appendKey appends the Pebble key of userKey in keyspace ks to dst.
func appendKey(dst []byte, ks string, userKey []byte) []byte {
	dst = append(dst, ks...)
	dst = append(dst, keySeparator)
	return append(dst, userKey...)
}

// keyspaceBounds returns the Pebble key range [lower, upper) that holds exactly the
// records of ks.
func keyspaceBounds(ks string) (lower, upper []byte) {
	lower = encodeKey(ks, nil)
	upper = bytes.Clone(lower)
	upper[len(upper)-1] = keySeparator + 1
	return lower, upper
}

// splitKey parses a Pebble key into its keyspace and user key. The user key aliases
// encoded.
func splitKey(encoded []byte) (ks string, userKey []byte, err error) {
	i := bytes.IndexByte(encoded, keySeparator)
	if i <= 0 {
		return "", nil, fmt.Errorf("%w: pebble key %q has no keyspace", ErrCorrupt, encoded)
	}
	return string(encoded[:i]), encoded[i+1:], nil
}
