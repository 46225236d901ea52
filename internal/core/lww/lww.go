// Package lww owns the versioned record every replica stores and the last-writer-wins
// order that reconciles two versions of a key. Storage keeps records, the coordinator
// and the replicas exchange them, and every layer agrees on which one wins through Newer.
package lww

import (
	"bytes"
	"strconv"

	"github.com/kuradb/kura/hlc"
)

// Record is one versioned value of a key. Records of a key are reconciled by Newer,
// last writer wins.
type Record struct {
	Key       []byte
	Value     []byte // empty (possibly nil) for a tombstone
	Timestamp hlc.Timestamp
	Tombstone bool // a delete, kept so that it wins over older values on other replicas
	// ExpiresAt is the moment the value stops existing (a TTL), or zero for never. It is
	// part of the version, written by the coordinator: every replica compares the same
	// deadline with its clock, instead of counting down a TTL of its own.
	ExpiresAt hlc.Timestamp
	// Type is the Redis data type of the key the record holds: String (zero) for every
	// record written before types existed, and for a tombstone, which holds no type.
	Type Type
}

// Type is the Redis data type of a key (docs/redis-types.md). A collection's type is
// carried by the collection key's own record, so that GET and TYPE learn it from the one
// record they read.
type Type uint8

// The types, numbered as stored: storage keeps a type in bits of a value's flag byte and
// the internode record carries the number, so a number never changes meaning.
const (
	// String is a string value: the zero Type, so every record written before types
	// existed is one.
	String Type = iota
	// Hash is a hash's header record.
	Hash
	// Set is a set's header record.
	Set
	// SortedSet is a sorted set's header record.
	SortedSet
	// List is a list's header record.
	List
	// Counter is a conflict-free counter's header record (a PN-counter: its value is the
	// sum of its shards, docs/redis-types.md "Counters"). Redis has no such type: TYPE
	// answers string, as for the integer a Redis INCR makes.
	Counter
	// TypeMax is the largest Type this build knows; a larger number is refused where a
	// record is decoded.
	TypeMax = Counter
)

// String returns the type's name as Redis's TYPE command answers it.
func (t Type) String() string {
	switch t {
	case String, Counter:
		return "string"
	case Hash:
		return "hash"
	case Set:
		return "set"
	case SortedSet:
		return "zset"
	case List:
		return "list"
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// Live reports whether r is a value that exists at now: not a tombstone, and not
// expired. An expired record still takes part in reconciliation, as a tombstone would,
// so that it shadows the older values it replaced.
func (r Record) Live(now hlc.Timestamp) bool {
	return !r.Tombstone && (r.ExpiresAt == 0 || now < r.ExpiresAt)
}

// Newer reports whether a should replace b. The higher timestamp wins; on equal
// timestamps a tombstone beats a value, then the larger value (bytes.Compare) wins, then
// the later expiry (never being the latest), then the larger type. The order is total on
// (timestamp, tombstone, value, expiry, type), so replicas converge to the same record
// whatever order the writes arrive in. Keys are not compared. The type comes last so that
// every pair of string records orders as it did before types existed.
func Newer(a, b Record) bool {
	if a.Timestamp != b.Timestamp {
		return a.Timestamp > b.Timestamp
	}
	if a.Tombstone != b.Tombstone {
		return a.Tombstone
	}
	if c := bytes.Compare(a.Value, b.Value); c != 0 {
		return c > 0
	}
	if a.ExpiresAt != b.ExpiresAt {
		return expiryOrder(a.ExpiresAt) > expiryOrder(b.ExpiresAt)
	}
	return a.Type > b.Type
}

// expiryOrder maps an expiry to its rank in Newer: zero (never) after every deadline.
func expiryOrder(expiresAt hlc.Timestamp) hlc.Timestamp {
	if expiresAt == 0 {
		return ^hlc.Timestamp(0)
	}
	return expiresAt
}
