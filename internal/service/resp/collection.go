package resp

import (
	"bytes"
	"math"
	"strconv"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/data/coord"
)

// Redis's replies shared by the collection commands.
const (
	// errCrossSlot refuses, inside EXEC, a command whose keys are of more than one hash
	// tag, as Redis Cluster does: a transaction covers one tag's partition.
	errCrossSlot   = "CROSSSLOT Keys in request don't hash to the same slot"
	errNotPositive = "ERR value is out of range, must be positive"
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
	return c.readTyped(key, typ, false)
}

// readWaited is readCollection for the collection a pop takes from: while the client
// waits in a blocking command (c.waiting), a key of another type reads as missing, as
// Redis 7.0 keeps such a client waiting for a key of its type.
func (c *conn) readWaited(key []byte, typ lww.Type) (coll coord.Collection, ok bool) {
	return c.readTyped(key, typ, c.waiting)
}

// readTyped is readCollection, a key of another type read as missing when otherMissing.
func (c *conn) readTyped(key []byte, typ lww.Type, otherMissing bool) (coll coord.Collection, ok bool) {
	coll, err := c.loadCollection(key)
	switch {
	case err != nil:
		c.w.Error(errorReply(err))
		return coll, false
	case coll.Found && coll.Header.Type != typ && otherMissing:
		return coord.Collection{}, true
	case coll.Found && coll.Header.Type != typ:
		c.w.Error(errWrongType)
		return coll, false
	}
	return coll, true
}

// loadCollection reads collection key whole, header and elements, whatever its type: the
// read of readCollection, for callers that take more than one type or reply themselves.
func (c *conn) loadCollection(key []byte) (coord.Collection, error) {
	if c.txn != nil {
		coll, err := c.txn.collection(key)
		c.countLookup(coll.Found, err)
		return coll, err
	}
	start, level := time.Now(), c.collectionLevel()
	coll, err := c.s.cfg.Backend.ReadCollection(c.ctx, c.keyspace, key, level)
	c.observe("get", level, start, err)
	c.countLookup(coll.Found, err)
	return coll, err
}

// readElements reads the element records elemKeys of collection key, with its header:
// one result per key. ok is false when the reply is written already (an error,
// WRONGTYPE for a key of another type than typ).
func (c *conn) readElements(key []byte, typ lww.Type, elemKeys [][]byte) (coll coord.Collection, results []coord.GetResult, ok bool) {
	var err error
	if c.txn != nil {
		coll, results, err = c.txn.elements(key, elemKeys)
	} else {
		start, level := time.Now(), c.collectionLevel()
		coll, results, err = c.s.cfg.Backend.ReadElements(c.ctx, c.keyspace, key, elemKeys, level)
		c.observe("get", level, start, err)
		if coll, err = c.settleCollection(key, typ, coll, err); !coll.Found {
			clear(results)
		}
	}
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

// settleCollection is settle for a read of a few elements of collection key, whose
// caller takes type typ: coll, found with another type or an expiry, is read absent when
// it holds no member, so that a write of typ creates the key anew (no WRONGTYPE, no
// inherited deadline). Of typ and without an expiry, an emptied collection answers as an
// absent one does (its elements read are not live), and its members are not read.
func (c *conn) settleCollection(key []byte, typ lww.Type, coll coord.Collection, err error) (coord.Collection, error) {
	if err != nil || !coll.Found || (coll.Header.Type == typ && coll.Header.ExpiresAt == 0) {
		return coll, err
	}
	if _, found, err := c.settle(key, coll.Header, coll.Found, nil); err != nil || !found {
		return coord.Collection{Reset: coll.Reset}, err
	}
	return coll, nil
}

// writeCollection writes w to collection key of type typ; the header, when w has one,
// keeps the expiry coll's header had, and a key that did not exist starts a new life (a
// reset point at the end of the previous one, coord.ResetCreate, unless w sets another)
// so that no element of an earlier one comes back.
func (c *conn) writeCollection(key []byte, typ lww.Type, coll coord.Collection, w coord.CollectionWrite) (hlc.Timestamp, error) {
	if w.Header != nil && !w.Header.Tombstone {
		w.Header.Type = typ
		if coll.Found {
			w.Header.ExpiresAt = coll.Header.ExpiresAt
		} else if w.Reset == coord.NoReset {
			w.Reset = coord.ResetCreate
		}
	}
	if c.txn != nil {
		return c.txn.writeCollection(key, w)
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
	if c.txn != nil {
		return c.txn.reset(key)
	}
	start, level := time.Now(), c.collectionLevel()
	err := c.s.cfg.Backend.ResetCollection(c.ctx, c.keyspace, key, res.Record.Timestamp, level)
	c.observe("put", level, start, err)
	return err
}

// copyCollection is COPY of collection src, of type typ, to dst: 1 when dst now holds
// src's elements, type and expiry (storeCollection), 0 when src is gone or dst exists
// and replace is false.
func (c *conn) copyCollection(src, dst []byte, typ lww.Type, replace bool) {
	if typ == lww.Counter {
		c.w.Error(errCopyCounter)
		return
	}
	coll, ok := c.readCollection(src, typ)
	if !ok {
		return
	}
	if !coll.Found {
		c.w.Int(0)
		return
	}
	applied, err := c.storeCollection(dst, typ, coll.Header.ExpiresAt, copiedElements(coll, dst), replace)
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.w.Int(boolInt(applied))
}

// copiedElements is the write of coll's live element records under key dst, each at the
// same kind and suffix (so a list's items keep their order, a set's adds their tags).
func copiedElements(coll coord.Collection, dst []byte) coord.CollectionWrite {
	var w coord.CollectionWrite
	for _, rec := range coll.Elements {
		if _, kind, suffix, ok := element.Parse(rec.Key); ok && !rec.Tombstone && kind != element.Reset {
			w.Elements = append(w.Elements, lww.Record{Key: element.Key(dst, kind, suffix), Value: rec.Value})
		}
	}
	return w
}

// renameCollection is RENAME (RENAMENX when nx) of src, a list or a set (typ), to dst,
// of any hash tag (each step reads or writes its own key): dst is made a copy of src as
// one read saw it (storeCollection), then exactly the records copied are removed from
// src, so that an element written to src meanwhile, which the read did not see, stays
// there rather than vanish. A list's items are taken one by one by the pop's transaction
// (takeRenamed); a set's adds, which no other write ever rewrites (each add's key is its
// own), are tombstoned. src keeps its header, as an emptied list or set does: a header
// tombstone could hide such a write. Hashes and sorted sets are refused: their fields and
// members are rewritten in place, and the removal of one read could hide a concurrent
// write to it.
func (c *conn) renameCollection(src, dst []byte, typ lww.Type, nx bool) {
	if typ != lww.List && typ != lww.Set {
		c.w.Error(errMoveCollection)
		return
	}
	coll, ok := c.readCollection(src, typ)
	switch {
	case !ok:
		return
	case !coll.Found:
		c.w.Error(errNoSuchKey)
		return
	}
	applied, err := c.claimCollection(dst, typ, coll.Header.ExpiresAt, copiedElements(coll, dst), !nx)
	if err == nil && applied {
		if typ == lww.List {
			err = c.takeRenamed(src, dst, coll)
			c.wakeBlocked(dst)
		} else {
			removed := coord.CollectionWrite{}
			for _, rec := range coll.Elements {
				if _, kind, _, ok := element.Parse(rec.Key); ok && !rec.Tombstone && kind != element.Reset {
					removed.Elements = append(removed.Elements, lww.Record{Key: rec.Key, Tombstone: true})
				}
			}
			_, err = c.writeCollection(src, typ, coll, removed)
		}
	}
	switch {
	case err != nil:
		c.replyTransactError(err)
	case nx:
		c.w.Int(boolInt(applied))
	default:
		c.w.SimpleString("OK")
	}
}

// storeCollection makes key a collection of type typ with the deadline expiresAt and
// w's elements (COPY, RESTORE); applied is false when key exists and replace is false.
// key is first claimed by a transaction on its header (exact against another client
// creating it), and a reset point at the claim's timestamp drops what it held; then the
// elements are written, with the header. A failure between the two leaves key an empty
// collection of typ, and the error answered. Elements another client writes to key
// after the claim survive.
func (c *conn) storeCollection(key []byte, typ lww.Type, expiresAt hlc.Timestamp, w coord.CollectionWrite, replace bool) (applied bool, err error) {
	applied, err = c.claimCollection(key, typ, expiresAt, w, replace)
	if applied && err == nil && typ == lww.List {
		c.wakeBlocked(key)
	}
	return applied, err
}

// claimCollection is storeCollection without waking the clients blocked on key: for
// RENAME, which wakes them once the items are taken from the source.
func (c *conn) claimCollection(key []byte, typ lww.Type, expiresAt hlc.Timestamp, w coord.CollectionWrite, replace bool) (applied bool, err error) {
	claim, err := c.transact(key, writeIf(
		func(_ lww.Record, found bool) bool { return replace || !found },
		func(lww.Record, bool) lww.Record { return lww.Record{Type: typ, ExpiresAt: expiresAt} }))
	if err == nil {
		err = c.resetReplaced(key, claim)
	}
	if err != nil || !claim.Applied {
		return false, err
	}
	w.Header, w.Reset, w.Ended = &lww.Record{}, coord.ResetEnded, claim.Record.Timestamp
	_, err = c.writeCollection(key, typ, coord.Collection{Header: lww.Record{ExpiresAt: expiresAt}, Found: true}, w)
	return true, err
}

// reservedKey reports whether a key argument of cmd in args starts with the bytes that
// mark element records (element.IsKey's marker): refused in a keyspace of collections,
// where such a key would be taken for an element of another key.
func reservedKey(cmd *command, args [][]byte) bool {
	for key := range keyArgs(cmd, args) {
		if bytes.HasPrefix(key, []byte{0x00, 0x01}) {
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

// updateElement runs fn on element record elemKey of collection key, of type typ, as a
// lightweight transaction on that record, exact under races as INCR is, and then writes
// the header. fn sees the element's value of the key's current life (found false when
// absent, or left from a life before the reset point). When the key does not exist, the
// reset point of its new life is written first (coord.ResetCreate), so that no element of
// an earlier life counts. ok is false when the reply is written already.
func (c *conn) updateElement(key []byte, typ lww.Type, elemKey []byte, fn func(cur []byte, found bool) (next []byte, write bool, err error),
	after func(coord.UpdateResult) []lww.Record) (res coord.UpdateResult, ok bool) {
	coll, _, ok := c.readElements(key, typ, nil)
	if !ok {
		return res, false
	}
	if !coll.Found {
		if _, err := c.writeCollection(key, typ, coll, coord.CollectionWrite{Reset: coord.ResetCreate}); err != nil {
			c.w.Error(errorReply(err))
			return res, false
		}
		// The reset point the new life starts from, which another writer creating the
		// key at the same moment may have written too.
		if coll, _, ok = c.readElements(key, typ, nil); !ok {
			return res, false
		}
	}
	reset := coll.Reset
	res, err := c.transact(elemKey, func(cur lww.Record, found bool) (lww.Record, bool, error) {
		live := found && cur.Timestamp > reset
		if !live {
			cur.Value = nil
		}
		next, write, err := fn(cur.Value, live)
		return lww.Record{Value: next}, write, err
	})
	if err != nil {
		c.replyTransactError(err)
		return res, false
	}
	if res.PreviousFound && res.Previous.Timestamp <= reset {
		res.PreviousFound, res.Previous = false, lww.Record{}
	}
	if res.Applied {
		// Written after the element, so that the header is newer than a delete the
		// element's transaction did not see; it keeps the expiry of a key that existed.
		// The records after gives go with it, as elements of the same write.
		var expiresAt hlc.Timestamp
		if coll.Found {
			expiresAt = coll.Header.ExpiresAt
		}
		w := coord.CollectionWrite{Header: &lww.Record{}}
		if after != nil {
			w.Elements = after(res)
		}
		if _, err := c.writeCollection(key, typ, coord.Collection{Header: lww.Record{ExpiresAt: expiresAt}, Found: true}, w); err != nil {
			c.w.Error(errorReply(err))
			return res, false
		}
	}
	return res, true
}

// take runs rule, a pop rule (list.Take, zset.Take), on element record elemKey as a
// lightweight transaction at popSerial: of two pops of one element, through any nodes,
// one applies it.
func (c *conn) take(elemKey []byte, rule coord.UpdateFunc) (coord.UpdateResult, error) {
	if c.txn != nil {
		return c.txn.update(elemKey, rule)
	}
	start := time.Now()
	res, err := c.s.cfg.Backend.Update(c.ctx, c.keyspace, elemKey, popSerial, rule)
	c.observe("cas", popSerial, start, err)
	return res, err
}

// parseMultiPop reads numkeys key [key ...] END [COUNT count], the arguments of LMPOP,
// BLMPOP, ZMPOP and BZMPOP from numkeys on, with Redis 7.0's errors in its order: numkeys,
// then the end word (isEnd says which words are ends: LEFT|RIGHT, MIN|MAX), then COUNT.
// count is 1 without COUNT. ok is false when the reply is written.
func (c *conn) parseMultiPop(args [][]byte, isEnd func(word []byte) bool) (keys [][]byte, end []byte, count int64, ok bool) {
	numkeys, ok := parseInt(args[0])
	switch {
	case !ok || numkeys < 1:
		c.w.Error(errNumkeys)
		return nil, nil, 0, false
	case numkeys >= int64(len(args)-1):
		c.w.Error(errSyntax)
		return nil, nil, 0, false
	}
	keys, end = args[1:1+numkeys], args[1+numkeys]
	if !isEnd(end) {
		c.w.Error(errSyntax)
		return nil, nil, 0, false
	}
	count = 0 // none given
	for rest := args[2+numkeys:]; len(rest) > 0; rest = rest[2:] {
		if count != 0 || upper(rest[0]) != "COUNT" || len(rest) == 1 {
			c.w.Error(errSyntax)
			return nil, nil, 0, false
		}
		if count, ok = parseInt(rest[1]); !ok || count < 1 {
			c.w.Error(errCountPositive)
			return nil, nil, 0, false
		}
	}
	return keys, end, max(count, 1), true
}

// popFirst runs pop on each of keys, in the order named, until one pops something, as
// the multi-key pops do (BLPOP, LMPOP, BZPOPMIN, ZMPOP...): that key and what it popped,
// none when every key is empty or missing. ok is false when the reply is written (an
// error, or WRONGTYPE for the first key, in that order, of another type), as in Redis.
func popFirst[T any](keys [][]byte, pop func(key []byte) ([]T, bool)) (key []byte, popped []T, ok bool) {
	for _, key := range keys {
		if popped, ok = pop(key); !ok || len(popped) > 0 {
			return key, popped, ok
		}
	}
	return nil, nil, true
}

// blocking marks cmd as a command that may block (BLPOP, BZPOPMIN...): watched for the
// client hanging up, which frees its wait at once.
func blocking(cmd *command) *command {
	cmd.walks = true
	cmd.flags = append(cmd.flags, "noscript", "blocking")
	return cmd
}

// parseRandomCount reads the arguments of HRANDFIELD and ZRANDMEMBER, key [count
// [option]]: the count (1 without one) and whether one was given. ok is false when the
// reply is written already: Redis's errors for a bad count or option.
func (c *conn) parseRandomCount(args [][]byte, option string) (count int64, withCount, ok bool) {
	if len(args) > 4 || (len(args) == 4 && upper(args[3]) != option) {
		c.w.Error(errSyntax)
		return 0, false, false
	}
	if len(args) < 3 {
		return 1, false, true
	}
	if count, ok = parseInt(args[2]); !ok {
		c.w.Error(errNotInt)
		return 0, false, false
	}
	if count < -math.MaxInt64/2 {
		c.w.Error("ERR value is out of range")
		return 0, false, false
	}
	return count, true, true
}

// storeNothing is a *STORE command's empty result: dst deleted as DEL deletes it (its
// elements too, by a reset point), and the count 0 answered.
func (c *conn) storeNothing(dst []byte) {
	res, err := c.transact(dst, deleteIfFound)
	if err == nil {
		err = c.resetReplaced(dst, res)
	}
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.w.Int(0)
}

// sameSlot refuses inside EXEC, as Redis Cluster's CROSSSLOT, a command whose keys are
// of more than one hash tag: the transaction's round reads and writes one tag's
// partition. EXEC refuses such keys before it runs, as its command table finds them; this
// holds the rule where a command's own parsing finds another key (GEORADIUS's last STORE
// of two). Outside a transaction every key is its own read or write, on its own replica
// set, whatever the tags (docs/redis.md), so keys of any tags are taken. ok is false when
// the reply is written already.
func (c *conn) sameSlot(keys [][]byte) bool {
	if c.txn == nil {
		return true
	}
	for _, key := range keys[1:] {
		if !bytes.Equal(ring.HashTag(key), ring.HashTag(keys[0])) {
			c.w.Error(errCrossSlot)
			return false
		}
	}
	return true
}

// parseElementScan reads HSCAN, SSCAN and ZSCAN's key cursor [MATCH pattern] [COUNT
// count]. The cursor is checked and not used: kura answers a collection whole, with
// cursor 0, as Redis answers a small one, since it reads it whole anyway. ok is false
// when the reply is written already.
func (c *conn) parseElementScan(args [][]byte) (scanOptions, bool) {
	if _, err := strconv.ParseUint(string(args[2]), 10, 64); err != nil {
		c.w.Error("ERR invalid cursor")
		return scanOptions{}, false
	}
	return c.parseScanOptions(args[3:], false)
}

// writeElementScan answers a *SCAN of a whole collection: cursor 0, then each element
// whose name matches pattern (every one when nil), its name followed by value's bytes
// when value is not nil (a hash's value, a sorted set's score).
func writeElementScan[E any](c *conn, elems []E, pattern []byte, name, value func(E) []byte) {
	var matched []E
	for _, e := range elems {
		if pattern == nil || matchGlob(pattern, name(e)) {
			matched = append(matched, e)
		}
	}
	per := 1
	if value != nil {
		per = 2
	}
	c.w.ArrayHeader(2)
	c.w.BulkString("0")
	c.w.ArrayHeader(per * len(matched))
	for _, e := range matched {
		c.w.Bulk(name(e))
		if value != nil {
			c.w.Bulk(value(e))
		}
	}
}
