package storage

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kuradb/kura/internal/core/lww"
)

// paxosKeyspace holds the Paxos acceptor state of every key that took part in a
// lightweight transaction: one entry per (keyspace, key), keyed by the keyspace's name,
// 0x00 and the key (keyspace names never contain 0x00, so the two parts split
// unambiguously). Its name takes schema's reserved "system" prefix, so no user keyspace
// can collide with it; it is node-local and never replicated.
const paxosKeyspace = "system_paxos"

// paxosStateTimestamp is the timestamp of every stored acceptor state. The state is kept
// in the record format so that walks of the whole database (CollectGarbage) read it like
// any record; its version lives inside the state (its ballots), so the timestamp is never
// compared and only has to be a valid one.
const paxosStateTimestamp = 1

// PaxosState returns the acceptor state stored for key of keyspace ks, nil if none;
// with partition, for the partition key names (a keyspace whose transactions run per
// partition), which is stored apart from every key's.
func (e *Engine) PaxosState(ks string, key []byte, partition bool) ([]byte, error) {
	if err := validateKeyspace(ks); err != nil {
		return nil, err
	}
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.closeMu.RUnlock()
	pk := paxosKey(ks, key, partition)
	r, found, err := readRecord(e.db, pk, encodeKey(paxosKeyspace, pk))
	if err != nil || !found {
		return nil, err
	}
	return r.Value, nil
}

// UpdatePaxos reads the acceptor state of key in keyspace ks (of the partition key names
// with partition; nil if none), passes it to fn, and stores the state fn returns, synced to the write-ahead log, unless fn returns
// nil. The key is locked throughout, so two concurrent updates of one key (two prepares)
// run one after the other, the second seeing the first's state.
func (e *Engine) UpdatePaxos(ks string, key []byte, partition bool, fn func(state []byte) (next []byte, err error)) error {
	if err := validateKeyspace(ks); err != nil {
		return err
	}
	if err := e.enter(); err != nil {
		return err
	}
	defer e.closeMu.RUnlock()
	pk := paxosKey(ks, key, partition)
	encoded := encodeKey(paxosKeyspace, pk)
	unlock := e.lockKeys([][]byte{encoded})
	defer unlock()
	r, _, err := readRecord(e.db, pk, encoded)
	if err != nil {
		return fmt.Errorf("storage: read paxos state of key %q in keyspace %q: %w", key, ks, err)
	}
	next, err := fn(r.Value)
	if err != nil || next == nil {
		return err
	}
	err = e.db.Set(encoded, encodeValue(lww.Record{Value: next, Timestamp: paxosStateTimestamp}), pebble.Sync)
	e.invalidateRows([][]byte{encoded})
	if err != nil {
		return fmt.Errorf("storage: store paxos state of key %q in keyspace %q: %w", key, ks, err)
	}
	return nil
}

// paxosKey is the key of (ks, key)'s acceptor state inside paxosKeyspace. A partition's
// is under ks followed by partitionMark, which no keyspace name holds, so that a
// partition never shares its state with a key of the same bytes (a keyspace dropped and
// created again with the other kind of instance).
func paxosKey(ks string, key []byte, partition bool) []byte {
	if partition {
		ks += partitionMark
	}
	return encodeKey(ks, key)
}

// partitionMark ends the keyspace part of a partition's acceptor state key.
const partitionMark = "\x01"
