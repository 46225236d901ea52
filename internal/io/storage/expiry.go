package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
)

// The expiry index lets garbage collection find expired records without reading the
// whole store. Each entry is a Pebble key
//
//	0x00 'x' <due, 8 bytes big-endian> <record key: ks 0x00 userKey>
//
// whose value is the record's ExpiresAt (8 bytes big-endian). Entries sort by due, so
// a collection seeks the entries due up to now and stops. An entry is due when its
// record needs work: at ExpiresAt, to rewrite the expired value as a tombstone; then a
// tombstone grace after the record stopped existing, to remove it. Apply writes the
// first entry in the batch that writes the record, so a crash keeps both or neither.
// An entry whose record was overwritten since (another deadline, or none) is stale,
// and the collection that meets it deletes it.
const expiryIndexTag = 'x'

// expiryIndexPrefix starts every key of the expiry index.
var expiryIndexPrefix = []byte{internalKeyPrefix, expiryIndexTag}

// expiryIndexKey returns the index key due at due for the record stored at recordKey.
func expiryIndexKey(due hlc.Timestamp, recordKey []byte) []byte {
	key := make([]byte, 0, len(expiryIndexPrefix)+8+len(recordKey))
	key = append(key, expiryIndexPrefix...)
	key = binary.BigEndian.AppendUint64(key, uint64(due))
	return append(key, recordKey...)
}

// expiryIndexValue returns the value of an index entry for a record expiring at expiresAt.
func expiryIndexValue(expiresAt hlc.Timestamp) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64(expiresAt))
}

// expiryEntry is one entry of the expiry index.
type expiryEntry struct {
	key       []byte // the index key
	recordKey []byte
	expiresAt hlc.Timestamp
}

// parseExpiryEntry decodes an index entry; the result aliases neither argument.
func parseExpiryEntry(key, value []byte) (expiryEntry, error) {
	header := len(expiryIndexPrefix) + 8
	if len(key) <= header || !bytes.HasPrefix(key, expiryIndexPrefix) || len(value) != 8 {
		return expiryEntry{}, fmt.Errorf("%w: expiry index entry %x = %x", ErrCorrupt, key, value)
	}
	return expiryEntry{
		key:       bytes.Clone(key),
		recordKey: bytes.Clone(key[header:]),
		expiresAt: hlc.Timestamp(binary.BigEndian.Uint64(value)),
	}, nil
}

// goneAt returns when r stopped existing, and whether it did: a tombstone or a record
// with an expiry is gone since the later of its timestamp and its deadline (a deadline
// before the write itself makes the write a delete). A value without expiry never is.
// A record is collected once it has been gone for a tombstone grace, the time replicas
// have to learn of a delete through hints and repair.
func goneAt(r lww.Record) (hlc.Timestamp, bool) {
	if !r.Tombstone && r.ExpiresAt == 0 {
		return 0, false
	}
	return max(r.Timestamp, r.ExpiresAt), true
}

// goneBefore reports whether r stopped existing before cutoff.
func goneBefore(r lww.Record, cutoff hlc.Timestamp) bool {
	at, gone := goneAt(r)
	return gone && at < cutoff
}

// collectExpired works through the expiry index entries due at or before now: an expired
// value is rewritten as a tombstone with the same timestamp (its value dropped, so the
// space returns; a tombstone wins a tie, so every replica converges on it, whichever
// rewrote it first), and a record gone before cutoff is removed. It returns how many
// values it rewrote and records it removed, and the keyspaces it removed records from.
func (e *Engine) collectExpired(now, cutoff, grace hlc.Timestamp) (expired, removed int, touched map[string]bool, err error) {
	touched = map[string]bool{}
	upper := expiryIndexKey(now+1, nil)
	iter, err := e.db.NewIter(&pebble.IterOptions{LowerBound: expiryIndexPrefix, UpperBound: upper})
	if err != nil {
		return 0, 0, nil, err
	}
	// Entries are handled in chunks while the iterator, a consistent view, moves on; the
	// entries a chunk writes are due after now, beyond the iterator's bound.
	var chunk []expiryEntry
	handleChunk := func() error {
		x, r, err := e.expireChunk(chunk, cutoff, grace, touched)
		expired += x
		removed += r
		chunk = chunk[:0]
		return err
	}
	for valid := iter.First(); valid && err == nil; valid = iter.Next() {
		var entry expiryEntry
		if entry, err = parseExpiryEntry(iter.Key(), iter.Value()); err != nil {
			break
		}
		chunk = append(chunk, entry)
		if len(chunk) == gcChunkKeys {
			err = handleChunk()
		}
	}
	if err == nil && len(chunk) > 0 {
		err = handleChunk()
	}
	return expired, removed, touched, errors.Join(err, iter.Error(), iter.Close())
}

// expireChunk handles index entries under their records' stripe locks, reading each
// record as it is now, so a concurrent Apply is never undone. Each entry is deleted, and
// replaced by one due later when its record still needs work.
func (e *Engine) expireChunk(entries []expiryEntry, cutoff, grace hlc.Timestamp, touched map[string]bool) (expired, removed int, err error) {
	keys := make([][]byte, len(entries))
	for i, entry := range entries {
		keys[i] = entry.recordKey
	}
	unlock := e.lockKeys(keys)
	defer unlock()
	// Indexed, so that a record with two entries in the chunk is read as the first left it.
	batch := e.db.NewIndexedBatch()
	defer batch.Close()
	for _, entry := range entries {
		ks, userKey, err := splitKey(entry.recordKey)
		if err != nil {
			return 0, 0, err
		}
		r, found, err := readRecord(batch, userKey, entry.recordKey)
		if err != nil {
			return 0, 0, fmt.Errorf("keyspace %q: %w", ks, err)
		}
		if err := batch.Delete(entry.key, nil); err != nil {
			return 0, 0, err
		}
		switch {
		case !found || r.ExpiresAt != entry.expiresAt:
			continue // stale: the record was overwritten or removed since
		case goneBefore(r, cutoff):
			err = batch.Delete(entry.recordKey, nil)
			if err == nil && !r.Tombstone {
				err = e.unindexLive(batch, ks, userKey)
			}
			removed++
			touched[ks] = true
		default:
			if !r.Tombstone {
				// A tombstone holds no type: the key is absent, whatever it was.
				r.Tombstone, r.Value, r.Type = true, nil, lww.String
				if err := batch.Set(entry.recordKey, encodeValue(r), nil); err != nil {
					return 0, 0, err
				}
				if err := e.unindexLive(batch, ks, userKey); err != nil {
					return 0, 0, err
				}
				expired++
			}
			at, _ := goneAt(r)
			err = batch.Set(expiryIndexKey(purgeDue(at, grace), entry.recordKey), expiryIndexValue(r.ExpiresAt), nil)
		}
		if err != nil {
			return 0, 0, err
		}
	}
	err = batch.Commit(pebble.Sync)
	e.invalidateRows(keys)
	if err != nil {
		return 0, 0, err
	}
	return expired, removed, nil
}

// purgeDue is when a record gone at goneAt may be removed: the first moment a collection's
// cutoff (now minus grace) passes goneAt.
func purgeDue(goneAt, grace hlc.Timestamp) hlc.Timestamp {
	if goneAt > ^hlc.Timestamp(0)-grace-1 {
		return ^hlc.Timestamp(0)
	}
	return goneAt + grace + 1
}
