package coord

import (
	"context"
	"fmt"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/lww"
)

// ChunkKey returns the storage key of chunk index of key, in an erasure-coded keyspace.
func ChunkKey(key []byte, index int) []byte { return chunkKey(key, index) }

// ParseChunkKey returns the user key and the chunk index a stored chunk key encodes; ok
// is false for a key that is not a chunk key.
func ParseChunkKey(stored []byte) (key []byte, index int, ok bool) { return parseChunkKey(stored) }

// RebuildChunks returns the chunks of key that node owns, rebuilt, for anti-entropy
// repair of a node that lost them. It reads key as a ONE read does: local first (this
// node, then its DC, then the others), until k chunks of the newest version answered,
// then decodes that version and encodes it again, and returns node's chunks of it in index
// order (tombstones, for a delete; an expiring version's chunks carry its deadline). It
// returns none when no version exists, or the newest is truncated. Unlike a
// read, it repairs nothing itself: the caller decides which chunks to store.
func (c *Coordinator) RebuildChunks(ctx context.Context, keyspace string, key []byte, node string) ([]lww.Record, error) {
	ks, layout, err := c.keyspace(keyspace)
	if err != nil {
		return nil, err
	}
	if layout.whole() {
		return nil, invalid("keyspace %s is replicated, not erasure-coded", keyspace)
	}
	slots, gathered, err := c.gatherChunks(ctx, ks, key, consistency.One)
	if err != nil {
		return nil, err
	}
	rec, found, err := gathered.rebuild(key)
	if err != nil || !found || rec.Timestamp <= ks.TruncatedAt {
		if err != nil {
			err = fmt.Errorf("rebuild key %q of keyspace %s: %w", key, ks.Name, err)
		}
		return nil, err
	}
	all, err := chunkRecords(gathered.code, slots, rec)
	if err != nil {
		return nil, err
	}
	var out []lww.Record
	for i, s := range slots {
		if s.owner.ID == node {
			out = append(out, all[i])
		}
	}
	return out, nil
}
