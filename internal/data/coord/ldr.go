package coord

import (
	"bytes"
	"context"
	"fmt"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/erasure"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/placement"
)

// LDR (local-first data rebuilding, paper 000) serves the erasure-coded keyspaces; the
// replicated paths branch here when a keyspace has an erasure code. docs/ldr.md tells
// the whole design; in short:
//
//   - A value of key K becomes m chunks (package erasure), any k of which rebuild it.
//   - Chunk i is stored once, under its chunk key esc(K) 0x00 0x01 i, in the keyspace's
//     own storage namespace, on the primary owner of the chunk key's hash token (the
//     keyspace's "simple=1" placement applied to the chunk key). Hashing the chunk key,
//     whatever the keyspace's partitioner, spreads the m chunks of a key independently
//     and uniformly over the ring, so each DC holds chunks in proportion to its share of
//     the ring, as the paper's "<key>_i" does.
//   - esc doubles every 0x00 of K as 0x00 0xFF and 0x00 0x01 ends it, so chunk keys sort
//     exactly as their user keys do and no user key is a prefix of another's chunk keys:
//     a scan of [esc(start), esc(end)) finds exactly the chunks of keys in [start, end).
//     An erasure-coded namespace holds only chunk keys, so they cannot collide with user
//     keys; scans decode them back and list every user key once.
//   - Consistency levels count chunks; chunkRequirement has the table.

// Chunk keys end the escaped user key with chunkKeyTerminator, then one index byte.
const (
	chunkKeyEscape     = 0xFF
	chunkKeyTerminator = 0x01
)

// chunkKeyBound returns esc(key): chunk keys of keys >= key sort at or after it, those of
// keys < key before it.
func chunkKeyBound(key []byte) []byte {
	out := make([]byte, 0, len(key)+bytes.Count(key, []byte{0})+3)
	for _, b := range key {
		out = append(out, b)
		if b == 0 {
			out = append(out, chunkKeyEscape)
		}
	}
	return out
}

// chunkKey returns the storage key of chunk index of key.
func chunkKey(key []byte, index int) []byte {
	return append(chunkKeyBound(key), 0, chunkKeyTerminator, byte(index))
}

// parseChunkKey returns the user key and chunk index a chunk key encodes.
func parseChunkKey(stored []byte) (key []byte, index int, ok bool) {
	key = make([]byte, 0, len(stored))
	for i := 0; i < len(stored); i++ {
		if stored[i] != 0 {
			key = append(key, stored[i])
			continue
		}
		if i+1 >= len(stored) {
			return nil, 0, false
		}
		switch stored[i+1] {
		case chunkKeyEscape:
			key = append(key, 0)
			i++
		case chunkKeyTerminator:
			if i+3 != len(stored) {
				return nil, 0, false
			}
			return key, int(stored[i+2]), true
		default:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// chunkSlot is where chunk index of a key lives.
type chunkSlot struct {
	index int
	key   []byte // the chunk key
	owner placement.Member
}

// chunkSlots returns the keyspace's code and the m slots of key, by index, each with the
// owner Placement names for its chunk key.
func (c *Coordinator) chunkSlots(ctx context.Context, ks schema.Keyspace, key []byte) (*erasure.Code, []chunkSlot, error) {
	code, err := erasure.New(ks.Erasure.M, ks.Erasure.K)
	if err != nil {
		return nil, nil, fmt.Errorf("keyspace %s: %w", ks.Name, err)
	}
	keys := make([][]byte, code.M())
	for i := range keys {
		keys[i] = chunkKey(key, i)
	}
	owners, err := c.placement.ChunkOwners(ctx, ks, keys)
	if err != nil {
		return nil, nil, routed(err)
	}
	slots := make([]chunkSlot, code.M())
	for i := range slots {
		slots[i] = chunkSlot{index: i, key: keys[i], owner: owners[i]}
	}
	return code, slots, nil
}

// ChunkOwners returns, for a key of an erasure-coded keyspace, the node that stores each
// of its chunks, by chunk index: where a get will look.
func (c *Coordinator) ChunkOwners(ctx context.Context, keyspace string, key []byte) ([]placement.Member, error) {
	ks, layout, err := c.keyspace(keyspace)
	if err != nil {
		return nil, err
	}
	if layout.whole() {
		return nil, invalid("keyspace %s is replicated, not erasure-coded", keyspace)
	}
	_, slots, err := c.chunkSlots(ctx, ks, key)
	if err != nil {
		return nil, err
	}
	owners := make([]placement.Member, len(slots))
	for i, s := range slots {
		owners[i] = s.owner
	}
	return owners, nil
}

// slotCounts tallies slots per owner datacenter: consistency levels count chunks, so an
// owner holding two chunks of a key counts twice.
func slotCounts(slots []chunkSlot) map[string]int {
	counts := map[string]int{}
	for _, s := range slots {
		counts[s.owner.DC]++
	}
	return counts
}

// readableSlots returns the slots whose owners may be asked for reads, as targets, the
// nearest owner first (by index among equals).
func (c *Coordinator) readableSlots(slots []chunkSlot) []target {
	var out []target
	for _, s := range slots {
		if s.owner.Reads() {
			out = append(out, target{Member: s.owner, slot: s.index})
		}
	}
	return c.nearestFirst(out)
}

// chunkRequirement translates level cl into chunks for an (m, k) code whose m chunks lie
// chunksPerDC[dc] in each datacenter, for a coordinator in localDC. It is the same for
// writes (acknowledgements) and reads (answers); L is the local DC's chunk count:
//
//	ANY           1, or a stored hint (writes only)
//	ONE           k: the value can be rebuilt
//	TWO           k+1 (at most m): rebuildable after losing any one chunk
//	QUORUM        ceil((m+k)/2): two quorums share >= k chunks, so a QUORUM read
//	              rebuilds what a QUORUM write wrote
//	LOCAL_ONE     k, all in the local DC, when L >= k; else as ONE
//	LOCAL_QUORUM  ceil((L+k)/2), all in the local DC, when L >= k (two such quorums share
//	              >= k local chunks); else as QUORUM
//	EACH_QUORUM   QUORUM overall, and ceil((L_d+k)/2) in each DC d with L_d >= k, so a
//	              LOCAL_QUORUM read in any DC sees the write
//	ALL           m
//
// A LOCAL level cannot stay inside a DC that holds fewer than k chunks: the value cannot
// be rebuilt there alone, so the level falls back to its global counterpart.
func chunkRequirement(cl consistency.Level, code *erasure.Code, chunksPerDC map[string]int, localDC string) consistency.Requirement {
	m, k := code.M(), code.K()
	quorum := func(n int) int { return (n + k + 1) / 2 }
	local := chunksPerDC[localDC]
	switch cl {
	case consistency.Any:
		return consistency.Requirement{Total: 1, Hinted: true}
	case consistency.One:
		return consistency.Requirement{Total: k}
	case consistency.Two:
		return consistency.Requirement{Total: min(k+1, m)}
	case consistency.Quorum:
		return consistency.Requirement{Total: quorum(m)}
	case consistency.LocalOne:
		if local < k {
			return consistency.Requirement{Total: k}
		}
		return consistency.Requirement{Total: k, PerDC: map[string]int{localDC: k}}
	case consistency.LocalQuorum:
		if local < k {
			return consistency.Requirement{Total: quorum(m)}
		}
		return consistency.Requirement{Total: quorum(local), PerDC: map[string]int{localDC: quorum(local)}}
	case consistency.EachQuorum:
		r := consistency.Requirement{Total: quorum(m), PerDC: map[string]int{}}
		sum := 0
		for dc, n := range chunksPerDC {
			if n >= k {
				r.PerDC[dc] = quorum(n)
				sum += quorum(n)
			}
		}
		r.Total = max(r.Total, sum)
		return r
	case consistency.All:
		perDC := make(map[string]int, len(chunksPerDC))
		for dc, n := range chunksPerDC {
			perDC[dc] = n
		}
		return consistency.Requirement{Total: m, PerDC: perDC}
	}
	return consistency.Requirement{Total: m + 1} // an unknown level is never satisfiable
}

// chunkUnavailable explains that too few chunk owners are alive for a level.
func chunkUnavailable(ks schema.Keyspace, cl consistency.Level, required consistency.Requirement, alive map[string]int) error {
	return fmt.Errorf("erasure-coded keyspace %s (m=%d, k=%d) counts chunks: %w", ks.Name, ks.Erasure.M, ks.Erasure.K,
		&UnavailableError{Level: cl, Required: required, Alive: alive})
}

// chunkRecords returns the m records a write of rec stores, by index: the value's chunks
// or, for a delete, a tombstone per chunk key. Each carries rec's expiry, so that every
// chunk owner expires its chunk at the same deadline.
func chunkRecords(code *erasure.Code, slots []chunkSlot, rec lww.Record) ([]lww.Record, error) {
	out := make([]lww.Record, len(slots))
	if rec.Tombstone {
		for i, s := range slots {
			out[i] = lww.Record{Key: s.key, Tombstone: true, Timestamp: rec.Timestamp, ExpiresAt: rec.ExpiresAt}
		}
		return out, nil
	}
	chunks, err := code.Encode(rec.Value, uint64(rec.Timestamp))
	if err != nil {
		return nil, err
	}
	for i, s := range slots {
		out[i] = lww.Record{Key: s.key, Value: chunks[i], Timestamp: rec.Timestamp, ExpiresAt: rec.ExpiresAt}
	}
	return out, nil
}
