// Package lww owns the versioned record every replica stores and the last-writer-wins
// order that reconciles two versions of a key. Storage keeps records, the coordinator
// and the replicas exchange them, and every layer agrees on which one wins through Newer.
package lww

import (
	"bytes"

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
}

// Live reports whether r is a value that exists at now: not a tombstone, and not
// expired. An expired record still takes part in reconciliation, as a tombstone would,
// so that it shadows the older values it replaced.
func (r Record) Live(now hlc.Timestamp) bool {
	return !r.Tombstone && (r.ExpiresAt == 0 || now < r.ExpiresAt)
}

// Newer reports whether a should replace b. The higher timestamp wins; on equal
// timestamps a tombstone beats a value, then the larger value (bytes.Compare) wins, then
// the later expiry (never being the latest). The order is total on (timestamp,
// tombstone, value, expiry), so replicas converge to the same record whatever order the
// writes arrive in. Keys are not compared.
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
	return expiryOrder(a.ExpiresAt) > expiryOrder(b.ExpiresAt)
}

// expiryOrder maps an expiry to its rank in Newer: zero (never) after every deadline.
func expiryOrder(expiresAt hlc.Timestamp) hlc.Timestamp {
	if expiresAt == 0 {
		return ^hlc.Timestamp(0)
	}
	return expiresAt
}
