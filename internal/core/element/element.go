// Package element encodes the keys of a collection's element records: a Redis hash, set,
// sorted set, list or counter is stored as one record per element beside the collection
// key's own record (docs/redis-types.md), and each element record's key names its
// collection, so that the grouped partitioner (ring.GroupedPartitioner) places it on the
// collection key's replicas.
//
// An element record's key is
//
//	0x00 0x01 | uvarint(len(collection)) | collection | kind | suffix
//
// The two leading bytes mark the encoding and its version; the length prefix makes the
// keys of two collections never prefixes of each other, so a prefix scan reads exactly
// one collection's records, which storage keeps contiguous.
package element

import (
	"bytes"
	"encoding/binary"
	"hash/fnv"

	"github.com/kuradb/kura/hlc"
)

// Kind says which record of a collection an element key names: one byte after the
// collection key.
type Kind byte

// The kinds of element records (docs/redis-types.md, "Key encoding").
const (
	// Reset is the collection's reset point: elements written at or before it are gone.
	// Its suffix is empty and its value ResetValue's.
	Reset Kind = 'r'
	// HashField is one field of a hash; the suffix is the field.
	HashField Kind = 'h'
	// CounterShard is one datacenter's share of a counter field.
	CounterShard Kind = 'c'
	// SetAdd is one add of a set member; the suffix names the member and the add's tag.
	SetAdd Kind = 's'
	// SortedMember is a sorted-set member; the suffix is the member, the value its score.
	SortedMember Kind = 'z'
	// SortedScore is a sorted-set member's entry in score order.
	SortedScore Kind = 'o'
	// ListItem is a list item; the suffix is its position.
	ListItem Kind = 'l'
)

// marker starts every element key: a zero byte, which starts no key a client is likely
// to write, then the encoding's version.
var marker = []byte{0x00, 0x01}

// Key returns the key of collection's element record of kind with suffix.
func Key(collection []byte, kind Kind, suffix []byte) []byte {
	key := make([]byte, 0, len(marker)+binary.MaxVarintLen64+len(collection)+1+len(suffix))
	key = appendCollection(key, collection)
	key = append(key, byte(kind))
	return append(key, suffix...)
}

// Prefix returns the prefix shared by every element record of collection, whatever its
// kind, and by no other key Key returns.
func Prefix(collection []byte) []byte {
	return appendCollection(make([]byte, 0, len(marker)+binary.MaxVarintLen64+len(collection)), collection)
}

// PrefixEnd returns the least key after every key that starts with Prefix(collection):
// the end of a scan of collection's element records.
func PrefixEnd(collection []byte) []byte {
	return End(Prefix(collection))
}

// End returns the least key after every key that starts with prefix, a prefix of element
// keys (Prefix, KindPrefix, or longer): the end of a scan of the keys under it.
func End(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	// The prefix starts with the marker's 0x00, so the carry stops inside it.
	for i := len(end) - 1; ; i-- {
		if end[i]++; end[i] != 0 {
			return end[:i+1]
		}
	}
}

// KindPrefix returns the prefix shared by collection's element records of kind.
func KindPrefix(collection []byte, kind Kind) []byte {
	return append(Prefix(collection), byte(kind))
}

func appendCollection(dst, collection []byte) []byte {
	dst = append(dst, marker...)
	dst = binary.AppendUvarint(dst, uint64(len(collection)))
	return append(dst, collection...)
}

// Parse splits an element record's key into its collection, kind and suffix, which
// alias key. ok is false for a key Key cannot return: without the marker, with a
// malformed or overlong length, shorter than its length says, or without a kind; such a
// key is an ordinary key. Parse checks the structure only, not the kind, so that a kind
// added later places its keys as Parse placed them before.
func Parse(key []byte) (collection []byte, kind Kind, suffix []byte, ok bool) {
	rest, found := bytes.CutPrefix(key, marker)
	if !found {
		return nil, 0, nil, false
	}
	length, n := binary.Uvarint(rest)
	// n <= 0: truncated or past 64 bits. An encoding longer than the shortest one
	// would give two keys for one record, so it is not an element key.
	if n <= 0 || n != uvarintLen(length) || length >= uint64(len(rest)-n) {
		return nil, 0, nil, false
	}
	rest = rest[n:]
	return rest[:length], Kind(rest[length]), rest[length+1:], true
}

// resetValueBytes is the size of a reset record's value.
const resetValueBytes = 8

// ResetValue returns the value of a reset record holding reset point at: the timestamp,
// big-endian. Every element record of the collection written at or before at is gone.
func ResetValue(at hlc.Timestamp) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, resetValueBytes), uint64(at))
}

// ParseResetValue returns the reset point a reset record's value holds; ok is false for
// a value ResetValue cannot return.
func ParseResetValue(value []byte) (at hlc.Timestamp, ok bool) {
	if len(value) != resetValueBytes {
		return 0, false
	}
	return hlc.Timestamp(binary.BigEndian.Uint64(value)), true
}

// IsKey reports whether key is an element record's key: one Parse accepts, which the
// grouped partitioner therefore places by its collection. A key that fails at the first
// byte costs one comparison.
func IsKey(key []byte) bool {
	_, _, _, ok := Parse(key)
	return ok
}

// uvarintLen is the length of the shortest uvarint encoding of v.
func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// TagBytes is the size of a set add's tag: the add's HLC timestamp and its writing node.
const TagBytes = 12

// Tag returns the tag of an add stamped at by node: the timestamp (8 bytes, big-endian)
// then a 32-bit FNV-1a hash of the node's ID. A node's HLC never issues a timestamp twice,
// so the tag is unique unless two nodes whose IDs hash alike stamp adds of one member with
// the same timestamp.
func Tag(at hlc.Timestamp, node string) []byte {
	h := fnv.New32a()
	h.Write([]byte(node))
	return h.Sum(binary.BigEndian.AppendUint64(make([]byte, 0, TagBytes), uint64(at)))
}

// ParseTag returns the timestamp of an add's tag; ok is false for bytes Tag cannot return.
func ParseTag(tag []byte) (at hlc.Timestamp, ok bool) {
	if len(tag) != TagBytes {
		return 0, false
	}
	return hlc.Timestamp(binary.BigEndian.Uint64(tag)), true
}
