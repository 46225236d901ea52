package ring

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// Partitioner maps a key to its token.
type Partitioner interface {
	// Name returns the name PartitionerByName accepts for this partitioner.
	Name() string
	// Token returns the key's position on the ring.
	Token(key []byte) Token
}

// ErrUnknownPartitioner is returned by PartitionerByName for a name it does not know.
var ErrUnknownPartitioner = errors.New("ring: unknown partitioner")

// HashPartitioner spreads keys uniformly over the ring with xxhash64. Its output decides
// where stored data lives, so it must never change between versions.
func HashPartitioner() Partitioner {
	return hashPartitioner{}
}

// OrderedPartitioner preserves key order so that a key range maps to a contiguous token
// range and a scan touches few consecutive nodes. The token is the key's first 8 bytes,
// big-endian, zero-padded: keys sharing an 8-byte prefix share a token, and a short key
// shares its token with itself followed by zero bytes ("a" and "a\x00"). Order is thus
// preserved weakly: a < b implies Token(a) <= Token(b).
func OrderedPartitioner() Partitioner {
	return orderedPartitioner{}
}

// PartitionerByName returns the partitioner named "hash" or "ordered".
func PartitionerByName(name string) (Partitioner, error) {
	for _, p := range []Partitioner{HashPartitioner(), OrderedPartitioner()} {
		if p.Name() == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w %q (want \"hash\" or \"ordered\")", ErrUnknownPartitioner, name)
}

type hashPartitioner struct{}

func (hashPartitioner) Name() string { return "hash" }

func (hashPartitioner) Token(key []byte) Token { return Token(xxhash.Sum64(key)) }

type orderedPartitioner struct{}

func (orderedPartitioner) Name() string { return "ordered" }

func (orderedPartitioner) Token(key []byte) Token {
	var prefix [8]byte
	copy(prefix[:], key)
	return Token(binary.BigEndian.Uint64(prefix[:]))
}
