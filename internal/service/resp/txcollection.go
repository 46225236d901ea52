package resp

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// Collections inside EXEC: the hash, set, sorted-set and list commands run unchanged over
// the transaction's records, as the string commands do. The round read each collection
// a queued command names whole (coord.UpdateBatch's collections), and txView serves the
// reads the collection helpers make (loadCollection, readElements, readMembers) from that
// read and keeps their writes (writeCollection, resetReplaced, updateElement, take),
// stamped with the round's timestamp, element tags and reset points computed as
// coord.WriteCollection computes them, so that a collection's records merge by the same
// rules whichever path wrote them (docs/redis-types.md). One difference: a reset point a
// transaction writes to delete or replace a key is just below its timestamp, not at it,
// so that what a later command of the same transaction writes to the key, stamped at
// that timestamp too, survives.

// txCollection is a collection key's state as a transaction's commands see it.
type txCollection struct {
	// reset is the reset point the commands see; elems the live element records, by key.
	reset hlc.Timestamp
	elems map[string]lww.Record
}

// collectionCommands are the commands that run inside a transaction over collections,
// by name: those of the collection types, the geo commands' (sorted sets) included, and
// SORT's, which reads a list, set or sorted set and stores a list.
func collectionCommands() map[string]bool {
	out := map[string]bool{}
	for _, cmds := range [][]*command{hashCommands(), setCommands(), zsetCommands(), listCommands(), geoCommands(), sortCommands()} {
		for _, cmd := range cmds {
			out[cmd.name] = true
		}
	}
	return out
}

// collection returns key's records as coord.ReadCollection would, from the transaction's.
func (v *txView) collection(key []byte) (coord.Collection, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.collectionLocked(key, func([]byte) bool { return true })
}

// collectionLocked is collection with v.mu held, keeping the elements whose keys keep
// accepts.
func (v *txView) collectionLocked(key []byte, keep func(elemKey []byte) bool) (coord.Collection, error) {
	r, ok := v.recordLocked(key)
	if !ok {
		return coord.Collection{}, fmt.Errorf("resp: key %q is not among the transaction's keys", key)
	}
	out := coord.Collection{Header: r.Record, Found: r.Found, Ended: r.Ended}
	if !r.Found || r.Record.Type == lww.String {
		return out, nil
	}
	coll, ok := v.colls[string(key)]
	if !ok {
		return coord.Collection{}, fmt.Errorf("resp: collection %q was not read by the transaction", key)
	}
	out.Reset = coll.reset
	for _, k := range slices.Sorted(maps.Keys(coll.elems)) {
		if keep([]byte(k)) {
			out.Elements = append(out.Elements, coll.elems[k])
		}
	}
	return out, nil
}

// elements returns key's header and the element records elemKeys, as
// coord.ReadElements would, from the transaction's.
func (v *txView) elements(key []byte, elemKeys [][]byte) (coord.Collection, []coord.GetResult, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	coll, err := v.collectionLocked(key, func([]byte) bool { return false })
	if err != nil {
		return coll, nil, err
	}
	results := make([]coord.GetResult, len(elemKeys))
	if c, ok := v.colls[string(key)]; ok && coll.Found && coll.Header.Type != lww.String {
		for i, k := range elemKeys {
			results[i].Record, results[i].Found = c.elems[string(k)]
		}
	}
	return coll, results, nil
}

// prefixes returns key's header and the element records under prefixes, as
// coord.ReadPrefixes would, from the transaction's.
func (v *txView) prefixes(key []byte, prefixes [][]byte) (coord.Collection, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.collectionLocked(key, func(k []byte) bool {
		return slices.ContainsFunc(prefixes, func(p []byte) bool { return bytes.HasPrefix(k, p) })
	})
}

// writeCollection keeps w's records of collection key as coord.WriteCollection would
// write them, at the transaction's timestamp, which it returns.
func (v *txView) writeCollection(key []byte, w coord.CollectionWrite) (hlc.Timestamp, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	coll, ok := v.colls[string(key)]
	if !ok {
		return 0, fmt.Errorf("resp: collection %q was not read by the transaction", key)
	}
	for _, e := range slices.Concat(w.Elements, w.Tagged) {
		if c, _, _, ok := element.Parse(e.Key); !ok || !bytes.Equal(c, key) {
			return 0, fmt.Errorf("resp: key %q is not an element record of collection %q", e.Key, key)
		}
	}
	switch w.Reset {
	case coord.ResetReplace, coord.ResetAt:
		v.replaceLocked(key)
	case coord.ResetCreate:
		v.resetLocked(key, v.records[string(key)].Ended)
	case coord.ResetEnded:
		v.resetLocked(key, w.Ended)
	}
	for _, e := range w.Elements {
		v.keepElement(coll, lww.Record{Key: e.Key, Value: e.Value, Tombstone: e.Tombstone, Timestamp: v.at})
	}
	if len(w.Tagged) > 0 {
		tag := element.Tag(v.at, v.node)
		for _, e := range w.Tagged {
			v.keepElement(coll, lww.Record{Key: slices.Concat(e.Key, tag), Value: e.Value, Tombstone: e.Tombstone, Timestamp: v.at})
		}
	}
	if w.Header != nil {
		header := *w.Header
		header.Key, header.Timestamp = key, v.at
		if header.Tombstone {
			header.Value, header.Type, header.ExpiresAt = nil, lww.String, 0
		}
		v.keep(key, header)
	}
	return v.at, nil
}

// keepElement keeps rec, an element record of coll the transaction writes.
func (v *txView) keepElement(coll *txCollection, rec lww.Record) {
	if rec.Tombstone {
		rec.Value = nil
		delete(coll.elems, string(rec.Key))
	} else {
		coll.elems[string(rec.Key)] = rec
	}
	v.elemWrites[string(rec.Key)] = rec
}

// reset moves key's reset point to just below the transaction's timestamp: the key was
// deleted or replaced (resetReplaced), and no element written before survives, nor one
// an earlier command of the transaction wrote.
func (v *txView) reset(key []byte) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.records[string(key)]; !ok {
		return fmt.Errorf("resp: key %q is not among the transaction's keys", key)
	}
	v.replaceLocked(key)
	return nil
}

// replaceLocked is reset with v.mu held.
func (v *txView) replaceLocked(key []byte) {
	v.resetLocked(key, v.at-1)
	prefix := element.Prefix(key)
	for k := range v.elemWrites {
		if bytes.HasPrefix([]byte(k), prefix) {
			delete(v.elemWrites, k)
		}
	}
	if coll, ok := v.colls[string(key)]; ok {
		clear(coll.elems)
	}
}

// resetLocked raises key's reset point to at, when above the one it has: the elements
// written at or before it are gone. Zero (a key that never existed) writes none.
func (v *txView) resetLocked(key []byte, at hlc.Timestamp) {
	coll, read := v.colls[string(key)]
	if at == 0 || at <= v.resets[string(key)] || (read && at <= coll.reset) {
		return
	}
	v.resets[string(key)] = at
	if read {
		coll.reset = at
		for k, rec := range coll.elems {
			if rec.Timestamp <= at {
				delete(coll.elems, k)
			}
		}
	}
}

// updateElement runs fn on element record key of a collection the transaction read, as
// a lightweight transaction on the record would (updateElement, take), and keeps what it
// writes.
func (v *txView) updateElement(key []byte, fn coord.UpdateFunc) (coord.UpdateResult, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	collKey, _, _, _ := element.Parse(key)
	coll, ok := v.colls[string(collKey)]
	if !ok {
		return coord.UpdateResult{}, fmt.Errorf("resp: collection %q was not read by the transaction", collKey)
	}
	// Outside a transaction this command is a lightweight transaction on the element's
	// record (coord.Coordinator.Update). Unless that runs on this transaction's instance,
	// the two are not serialized: an increment could be lost, an item popped twice.
	// Refused instead. This transaction runs on its collection key's partition instance.
	if !v.ks.PartitionTransactions() || !bytes.Equal(v.ks.TransactionPartition(key), v.ks.TransactionPartition(collKey)) {
		return coord.UpdateResult{}, redisError(fmt.Sprintf("ERR kura: a command that reads and rewrites one element of %q (a pop, HINCRBY, HSETNX, ZINCRBY...) runs outside a transaction on the element's own Paxos instance, which EXEC is not serialized with; inside MULTI it needs a keyspace created with --transactions partition, and a key with a hash tag unless the keyspace runs element records on their collection's instance (docs/lwt.md)", collKey))
	}
	cur, found := coll.elems[string(key)]
	res := coord.UpdateResult{Previous: cur, PreviousFound: found}
	next, write, err := fn(cur, found)
	if err != nil || !write {
		return res, err
	}
	next.Key, next.Timestamp = key, v.at
	v.keepElement(coll, next)
	res.Applied, res.Record = true, next
	return res, nil
}
