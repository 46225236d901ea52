package ring

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"

	"github.com/kuradb/kura/internal/core/element"
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

// GroupedPartitioner is HashPartitioner applied to a key's hash tag when it has one
// (HashTag), so that the keys of one tag ({user42}:cart, {user42}:profile) share a token
// and therefore a replica set, as keys of one tag share a hash slot in Redis Cluster.
// An element record's key (package element: a field of a hash, a member of a set...)
// takes its collection key's token, so a collection's records share its replica set.
// Any other key without a tag gets exactly its HashPartitioner token. Its output decides
// where stored data lives, so it must never change between versions.
func GroupedPartitioner() Partitioner {
	return groupedPartitioner{}
}

// HashTag returns the part of key that decides its token under GroupedPartitioner:
// Redis Cluster's rule (keyHashSlot in Redis's src/cluster.c; "Hash tags" in the Redis
// Cluster specification), so that keys grouped for Redis Cluster are grouped alike
// here. The tag is the bytes between the first '{' and the first '}' after it, when
// they are at least one; otherwise (no '{', no '}' after it, or "{}" first) it is the
// whole key. So "{}{a}" hashes whole and "{a}{b}" by "a".
func HashTag(key []byte) []byte {
	open := bytes.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	closing := bytes.IndexByte(key[open+1:], '}')
	if closing <= 0 {
		return key
	}
	return key[open+1 : open+1+closing]
}

// PartitionerByName returns the partitioner named "hash", "grouped" or "ordered".
func PartitionerByName(name string) (Partitioner, error) {
	for _, p := range []Partitioner{HashPartitioner(), GroupedPartitioner(), OrderedPartitioner()} {
		if p.Name() == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%w %q (want \"hash\", \"grouped\" or \"ordered\")", ErrUnknownPartitioner, name)
}

type hashPartitioner struct{}

func (hashPartitioner) Name() string { return "hash" }

func (hashPartitioner) Token(key []byte) Token { return Token(xxhash.Sum64(key)) }

type groupedPartitioner struct{}

func (groupedPartitioner) Name() string { return "grouped" }

func (groupedPartitioner) Token(key []byte) Token {
	return Token(xxhash.Sum64(GroupTag(key)))
}

// GroupTag returns the part of key that decides its token under GroupedPartitioner: the
// hash tag (HashTag) of key, or of its collection key when key is an element record's
// (package element), so that a collection's records share its tag.
func GroupTag(key []byte) []byte {
	// A collection key may itself look like an element key (front ends refuse such
	// keys once collections are served, but a key written before is stored): unwrapping
	// until none is left gives a key and its element records one tag. Each step
	// shortens the key, so the loop ends.
	for {
		collection, _, _, ok := element.Parse(key)
		if !ok {
			break
		}
		key = collection
	}
	return HashTag(key)
}

type orderedPartitioner struct{}

func (orderedPartitioner) Name() string { return "ordered" }

func (orderedPartitioner) Token(key []byte) Token {
	var prefix [8]byte
	copy(prefix[:], key)
	return Token(binary.BigEndian.Uint64(prefix[:]))
}
