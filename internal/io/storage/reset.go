package storage

import (
	"bytes"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
)

// resetPoints tells the collection which element records a reset left behind
// (docs/redis-types.md): a record of a collection's elements written at or before the
// collection's reset point R, its reset record (element.Reset) holding R. Such a record
// is no longer part of its collection, and is removed once R is older than the tombstone
// grace: by then every replica has had the grace to learn of the reset, and the
// keyspace's watermark, raised to the collection's cutoff, keeps a repair from bringing
// the record back, as for a tombstone.
//
// It remembers the reset point of the last collection asked about: a sweep walks keys in
// order, and a collection's element records are contiguous, so it reads each reset
// record once per collection met. A remembered point can only be older than the stored
// one, since a reset record is rewritten only with a larger point (its writes are
// ordered by timestamp, each written at the time of the reset it records), so it never
// removes a record the stored point keeps.
type resetPoints struct {
	e *Engine
	// ks and collection name the collection remembered, at its reset point, 0 when it
	// has none.
	ks         string
	collection []byte
	at         hlc.Timestamp
}

// covers reports whether record r of keyspace ks is an element record at or before its
// collection's reset point, that point before cutoff (as a tombstone is removed once gone
// before it, goneBefore). A reset record is never covered: it must outlive the elements
// it hides.
func (p *resetPoints) covers(ks string, r lww.Record, cutoff hlc.Timestamp) (bool, error) {
	collection, kind, _, ok := element.Parse(r.Key)
	if !ok || kind == element.Reset || r.Timestamp >= cutoff {
		return false, nil
	}
	if p.collection == nil || p.ks != ks || !bytes.Equal(p.collection, collection) {
		at, err := p.read(ks, collection)
		if err != nil {
			return false, err
		}
		p.ks, p.collection, p.at = ks, bytes.Clone(collection), at
	}
	return p.at != 0 && p.at < cutoff && r.Timestamp <= p.at, nil
}

// read returns collection's reset point as keyspace ks stores it, 0 when none: no reset
// record, a tombstone, one with an expiry (which the reset register never has), or a
// value that is no reset point. Anything but a well-formed point removes nothing.
func (p *resetPoints) read(ks string, collection []byte) (hlc.Timestamp, error) {
	key := element.Key(collection, element.Reset, nil)
	r, found, err := readRecord(p.e.db, key, encodeKey(ks, key))
	if err != nil || !found || r.Tombstone || r.ExpiresAt != 0 {
		return 0, err
	}
	at, _ := element.ParseResetValue(r.Value)
	return at, nil
}
