package replica

import (
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
)

// KeysRequest asks one replica for its live keys of Keyspace at the positions of Spans,
// in position order. A key's position is the hash partitioner's token of the key
// (storage.KeyPosition), whatever the keyspace's partitioner.
type KeysRequest struct {
	Keyspace string
	// Spans are ascending and disjoint.
	Spans []Span
	// Ranges, when set, keeps only the keys whose token under the keyspace's partitioner
	// lies in one of them: with the ordered partitioner, positions and tokens differ.
	Ranges []ring.Range
	// Limit bounds the live keys answered, VisitMax the index entries visited, live or
	// not (storage.LiveScan).
	Limit, VisitMax int
	// CountOnly counts the live keys instead of answering them.
	CountOnly bool
	// Now is the time the keys must be live at, the coordinator's, so that every replica
	// asked judges expiry at the same time.
	Now hlc.Timestamp
}

// Span is the positions From..To, both included.
type Span struct {
	From, To uint64
}

// KeysPage is a replica's answer to a KeysRequest.
type KeysPage struct {
	// Records are the live records met, in position order, without their values.
	Records []lww.Record
	// Live and Expiring count the live keys met and those of them with an expiry;
	// Visited counts the index entries visited.
	Live, Expiring, Visited int
	// Done reports that the walk reached the end of its spans; otherwise it visited
	// every entry of its spans before position Next, and none at or after it.
	Done bool
	Next uint64
}
