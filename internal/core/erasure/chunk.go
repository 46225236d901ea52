package erasure

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// A chunk on the wire and on disk is a fixed header followed by its shard:
//
//	version u8 | m u8 | k u8 | index u8 | value length u32 | timestamp u64 | crc32c u32 | shard
//
// (big endian). The checksum covers the 16 header bytes before it and the shard, so a
// flipped bit anywhere, including in the timestamp or the index, is caught.
const (
	// HeaderBytes is the size of a chunk's header: the metadata every chunk carries.
	HeaderBytes = 20

	chunkVersion   = 1
	checksumOffset = 16
)

// castagnoli is CRC-32C, computed in hardware on common CPUs.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt reports a chunk that fails its checksum or cannot be parsed; a reader
// treats it as missing.
var ErrCorrupt = errors.New("erasure: corrupt chunk")

// Chunk is one of the m pieces of a value, as Parse returns it.
type Chunk struct {
	Index     int    // 0 <= Index < M; the first K chunks hold the value's bytes
	M, K      int    // the code the value was encoded with
	Length    int    // the value's length in bytes
	Timestamp uint64 // the write's timestamp, so chunks of different writes never mix
	Shard     []byte // ShardBytes(Length, K) bytes; aliases the parsed buffer
}

// ShardBytes is the size of each shard of a value of length bytes split k ways: the value
// is padded with zeros up to a multiple of k (and to at least one byte per shard, since
// the codec cannot encode empty shards).
func ShardBytes(length, k int) int {
	return max(1, (length+k-1)/k)
}

// Parse decodes a chunk and verifies its checksum. Errors wrap ErrCorrupt.
func Parse(raw []byte) (Chunk, error) {
	if len(raw) < HeaderBytes {
		return Chunk{}, fmt.Errorf("%w: %d bytes is shorter than the %d-byte header", ErrCorrupt, len(raw), HeaderBytes)
	}
	if raw[0] != chunkVersion {
		return Chunk{}, fmt.Errorf("%w: unknown format version %d", ErrCorrupt, raw[0])
	}
	want := binary.BigEndian.Uint32(raw[checksumOffset:HeaderBytes])
	if got := checksum(raw); got != want {
		return Chunk{}, fmt.Errorf("%w: checksum %08x, header says %08x", ErrCorrupt, got, want)
	}
	c := Chunk{
		M:         int(raw[1]),
		K:         int(raw[2]),
		Index:     int(raw[3]),
		Length:    int(binary.BigEndian.Uint32(raw[4:8])),
		Timestamp: binary.BigEndian.Uint64(raw[8:16]),
		Shard:     raw[HeaderBytes:],
	}
	// A checksum that matches garbage is unlikely but not impossible; the header must
	// also make sense.
	switch {
	case c.K < 1 || c.K > c.M || c.Index >= c.M:
		return Chunk{}, fmt.Errorf("%w: chunk %d of an (m=%d, k=%d) code", ErrCorrupt, c.Index, c.M, c.K)
	case len(c.Shard) != ShardBytes(c.Length, c.K):
		return Chunk{}, fmt.Errorf("%w: shard of %d bytes, want %d for a %d-byte value", ErrCorrupt, len(c.Shard), ShardBytes(c.Length, c.K), c.Length)
	}
	return c, nil
}

// HeaderTimestamp returns the write timestamp a chunk's header names, without verifying
// the chunk (Parse does): a chunk sent without its record is filed under this version,
// then parsed. ok is false when raw is too short to hold a header.
func HeaderTimestamp(raw []byte) (timestamp uint64, ok bool) {
	if len(raw) < HeaderBytes {
		return 0, false
	}
	return binary.BigEndian.Uint64(raw[8:16]), true
}

// putHeader writes the header of chunk index into raw, whose shard is already in place.
func putHeader(raw []byte, m, k, index, length int, timestamp uint64) {
	raw[0] = chunkVersion
	raw[1], raw[2], raw[3] = byte(m), byte(k), byte(index)
	binary.BigEndian.PutUint32(raw[4:8], uint32(length))
	binary.BigEndian.PutUint64(raw[8:16], timestamp)
	binary.BigEndian.PutUint32(raw[checksumOffset:HeaderBytes], checksum(raw))
}

// checksum is the CRC-32C of a chunk without its checksum field.
func checksum(raw []byte) uint32 {
	sum := crc32.Checksum(raw[:checksumOffset], castagnoli)
	return crc32.Update(sum, castagnoli, raw[HeaderBytes:])
}
