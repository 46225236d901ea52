package resp

import (
	"bytes"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/coord"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/ring"
)

// Collections (docs/redis-types.md): what every collection type's commands share. A
// collection is a header (the key's own record, of the collection's type, holding the
// key's expiry) and element records of its own, placed on the key's replica set.

// collectionLevel is the level of a collection's reads and writes: the connection's, or
// for a serial one the quorum it is made of (a collection's records are not written by
// transactions, but reads at that quorum see every acknowledged write of it).
func (c *conn) collectionLevel() consistency.Level {
	switch c.level {
	case consistency.Serial:
		return consistency.Quorum
	case consistency.LocalSerial:
		return consistency.LocalQuorum
	}
	return c.level
}

// readCollection reads collection key whole, header and elements. ok is false when the
// reply is written already: an error, or WRONGTYPE for a key of another type than typ.
// A missing key is an empty collection (Found false).
func (c *conn) readCollection(key []byte, typ lww.Type) (coll coord.Collection, ok bool) {
	start, level := time.Now(), c.collectionLevel()
	coll, err := c.s.cfg.Backend.ReadCollection(c.ctx, c.keyspace, key, level)
	c.observe("get", level, start, err)
	c.countLookup(coll.Found, err)
	switch {
	case err != nil:
		c.w.Error(errorReply(err))
		return coll, false
	case coll.Found && coll.Header.Type != typ:
		c.w.Error(errWrongType)
		return coll, false
	}
	return coll, true
}

// readElements reads the element records elemKeys of collection key, with its header:
// one result per key. ok is false when the reply is written already (an error,
// WRONGTYPE for a key of another type than typ).
func (c *conn) readElements(key []byte, typ lww.Type, elemKeys [][]byte) (coll coord.Collection, results []coord.GetResult, ok bool) {
	start, level := time.Now(), c.collectionLevel()
	coll, results, err := c.s.cfg.Backend.ReadElements(c.ctx, c.keyspace, key, elemKeys, level)
	c.observe("get", level, start, err)
	c.countLookup(coll.Found, err)
	switch {
	case err != nil:
		c.w.Error(errorReply(err))
		return coll, nil, false
	case coll.Found && coll.Header.Type != typ:
		c.w.Error(errWrongType)
		return coll, nil, false
	}
	return coll, results, true
}

// writeCollection writes w to collection key of type typ; the header, when w has one,
// keeps the expiry coll's header had, and a key that did not exist starts a new life (a
// reset point before the write) so that no element of an earlier one comes back.
func (c *conn) writeCollection(key []byte, typ lww.Type, coll coord.Collection, w coord.CollectionWrite) (hlc.Timestamp, error) {
	if w.Header != nil && !w.Header.Tombstone {
		w.Header.Type = typ
		if coll.Found {
			w.Header.ExpiresAt = coll.Header.ExpiresAt
		} else {
			w.Reset = coord.ResetBefore
		}
	}
	start, level := time.Now(), c.collectionLevel()
	t, err := c.s.cfg.Backend.WriteCollection(c.ctx, c.keyspace, key, w, level)
	c.observe("put", level, start, err)
	return t, err
}

// resetReplaced moves the reset point of key when res replaced a collection (a DEL, an
// expiry in the past, a SET or RENAME over it): to the replacing write's timestamp, so
// that no element of the collection comes back if the key becomes one again. A PN
// counter's shards are instead removed as a read finds them (resetCounter).
func (c *conn) resetReplaced(key []byte, res coord.UpdateResult) error {
	if !res.Applied || !res.PreviousFound || res.Previous.Type == lww.String ||
		(!res.Record.Tombstone && res.Record.Type == res.Previous.Type) {
		return nil
	}
	if res.Previous.Type == lww.Counter {
		return c.resetCounter(key)
	}
	start, level := time.Now(), c.collectionLevel()
	err := c.s.cfg.Backend.ResetCollection(c.ctx, c.keyspace, key, res.Record.Timestamp, level)
	c.observe("put", level, start, err)
	return err
}

// reservedKey reports whether a key argument of cmd in args starts with the bytes that
// mark element records (element.IsKey's marker): refused in a keyspace of collections,
// where such a key would be taken for an element of another key.
func reservedKey(cmd *command, args [][]byte) bool {
	if cmd.firstKey <= 0 {
		return false
	}
	last := cmd.lastKey
	if last < 0 {
		last = len(args) + last
	}
	for i := cmd.firstKey; i <= last && i < len(args); i += max(cmd.keyStep, 1) {
		if bytes.HasPrefix(args[i], []byte{0x00, 0x01}) {
			return true
		}
	}
	return false
}

// collectionsServed reports whether the connection's keyspace serves collections (its
// partitioner is grouped), where keys starting with element records' marker are reserved.
func (c *conn) collectionsServed() bool {
	ks, err := c.s.cfg.Backend.Keyspace(c.keyspace)
	return err == nil && ks.Partitioner == ring.GroupedPartitioner().Name()
}
