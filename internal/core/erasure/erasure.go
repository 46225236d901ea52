// Package erasure turns a value into m Reed-Solomon chunks, any k of which rebuild it
// (paper 000's LDR data layer), over github.com/klauspost/reedsolomon. Each chunk carries
// the value's timestamp, m, k, its index, the value's length and a checksum, so a chunk is
// self-describing and a damaged one is recognised and treated as missing.
package erasure

import (
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/reedsolomon"
)

// MaxChunks is the largest m: the codec works over GF(2^8), and a chunk's index is a byte.
const MaxChunks = 255

// Errors callers distinguish with errors.Is.
var (
	// ErrInvalidCode reports an (m, k) outside 1 <= k <= m <= MaxChunks.
	ErrInvalidCode = errors.New("erasure: invalid code")
	// ErrTooFewChunks reports a Decode with fewer than k usable chunks.
	ErrTooFewChunks = errors.New("erasure: too few chunks")
	// ErrMixedChunks reports chunks that do not belong to one encoding of one value
	// (another code, length or timestamp, or an index given twice).
	ErrMixedChunks = errors.New("erasure: chunks of different encodings")
)

// Code is an (m, k) erasure code. It is immutable and safe for concurrent use.
type Code struct {
	m, k  int
	coder reedsolomon.Encoder
}

// codes shares one Code per (m, k): building one inverts matrices, and the codec caches
// the inversions it needs for reconstruction, which pays off only if the code is reused.
var codes sync.Map // [2]int -> *Code

// New returns the (m, k) code: m chunks, any k of which rebuild a value. k == m is plain
// striping with no redundancy (every chunk is needed), kept for comparisons.
func New(m, k int) (*Code, error) {
	if k < 1 || k > m || m > MaxChunks {
		return nil, fmt.Errorf("%w: (m=%d, k=%d): want 1 <= k <= m <= %d", ErrInvalidCode, m, k, MaxChunks)
	}
	if c, ok := codes.Load([2]int{m, k}); ok {
		return c.(*Code), nil
	}
	coder, err := reedsolomon.New(k, m-k)
	if err != nil {
		return nil, fmt.Errorf("erasure: (m=%d, k=%d): %w", m, k, err)
	}
	c, _ := codes.LoadOrStore([2]int{m, k}, &Code{m: m, k: k, coder: coder})
	return c.(*Code), nil
}

// M is the number of chunks a value is stored as.
func (c *Code) M() int { return c.m }

// K is the number of chunks that rebuild a value.
func (c *Code) K() int { return c.k }

// ChunkBytes is the size of each chunk of a value of length bytes.
func (c *Code) ChunkBytes(length int) int {
	return HeaderBytes + ShardBytes(length, c.k)
}

// Encode returns the m chunks of value written at timestamp, chunk i at index i. The
// result is deterministic, so a chunk can be rebuilt and rewritten from the value alone.
func (c *Code) Encode(value []byte, timestamp uint64) ([][]byte, error) {
	if uint64(len(value)) > 1<<32-1 {
		return nil, fmt.Errorf("erasure: value of %d bytes exceeds the 4 GiB chunk format", len(value))
	}
	shardBytes := ShardBytes(len(value), c.k)
	chunkBytes := HeaderBytes + shardBytes
	// One allocation holds every chunk; the data shards are the value laid out in
	// order, zero-padded, and the codec fills the parity shards in place.
	buf := make([]byte, c.m*chunkBytes)
	chunks := make([][]byte, c.m)
	shards := make([][]byte, c.m)
	for i := range c.m {
		chunks[i] = buf[i*chunkBytes : (i+1)*chunkBytes : (i+1)*chunkBytes]
		shards[i] = chunks[i][HeaderBytes:]
	}
	for i := 0; i < c.k && i*shardBytes < len(value); i++ {
		copy(shards[i], value[i*shardBytes:])
	}
	if err := c.coder.Encode(shards); err != nil {
		return nil, fmt.Errorf("erasure: encode (m=%d, k=%d): %w", c.m, c.k, err)
	}
	for i := range c.m {
		putHeader(chunks[i], c.m, c.k, i, len(value), timestamp)
	}
	return chunks, nil
}

// Decode rebuilds a value from parsed chunks of one encoding, in any order. It needs k
// distinct chunks; more are ignored once the data shards are known.
func (c *Code) Decode(chunks []Chunk) ([]byte, error) {
	if len(chunks) == 0 {
		return nil, fmt.Errorf("%w: none of %d", ErrTooFewChunks, c.k)
	}
	first := chunks[0]
	shards := make([][]byte, c.m)
	present := 0
	for _, ch := range chunks {
		switch {
		case ch.M != c.m || ch.K != c.k:
			return nil, fmt.Errorf("%w: chunk %d is of an (m=%d, k=%d) code, not (m=%d, k=%d)", ErrMixedChunks, ch.Index, ch.M, ch.K, c.m, c.k)
		case ch.Length != first.Length || ch.Timestamp != first.Timestamp:
			return nil, fmt.Errorf("%w: chunk %d is of a %d-byte value written at %d, chunk %d of a %d-byte value written at %d",
				ErrMixedChunks, ch.Index, ch.Length, ch.Timestamp, first.Index, first.Length, first.Timestamp)
		case ch.Index < 0 || ch.Index >= c.m || len(ch.Shard) != ShardBytes(ch.Length, c.k):
			return nil, fmt.Errorf("%w: chunk %d with a %d-byte shard does not fit the code", ErrMixedChunks, ch.Index, len(ch.Shard))
		case shards[ch.Index] != nil:
			return nil, fmt.Errorf("%w: chunk %d given twice", ErrMixedChunks, ch.Index)
		}
		shards[ch.Index] = ch.Shard
		present++
	}
	if present < c.k {
		return nil, fmt.Errorf("%w: %d of the %d needed", ErrTooFewChunks, present, c.k)
	}
	if err := c.coder.ReconstructData(shards); err != nil {
		return nil, fmt.Errorf("erasure: rebuild (m=%d, k=%d) from %d chunks: %w", c.m, c.k, present, err)
	}
	value := make([]byte, 0, first.Length)
	for _, shard := range shards[:c.k] {
		value = append(value, shard[:min(len(shard), first.Length-len(value))]...)
	}
	return value, nil
}
