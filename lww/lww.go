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
}

// Newer reports whether a should replace b. The higher timestamp wins; on equal
// timestamps a tombstone beats a value, then the larger value (bytes.Compare) wins.
// The order is total on (timestamp, tombstone, value), so replicas converge to the same
// record whatever order the writes arrive in. Keys are not compared.
func Newer(a, b Record) bool {
	if a.Timestamp != b.Timestamp {
		return a.Timestamp > b.Timestamp
	}
	if a.Tombstone != b.Tombstone {
		return a.Tombstone
	}
	return bytes.Compare(a.Value, b.Value) > 0
}
