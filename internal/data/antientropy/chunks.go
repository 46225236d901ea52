package antientropy

import (
	"bytes"
	"context"
	"fmt"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/erasure"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica"
)

// wholeRing asks a scan for every key: chunks are placed by their own hash, so every
// chunk a node holds is one it owns.
var wholeRing = []ring.Range{{}}

// rebuildChunks rebuilds the chunks of an erasure-coded keyspace this node should hold
// and lacks, or holds older. Chunks are stored once, so no replica holds a copy: the node
// lists the chunk keys every other node holds (keys and versions, no values), and for each
// user key listed, if it owns one of the key's chunks and its own is missing or older than
// the newest listed, rebuilds its chunks from any k others, local first.
func (r *Repairer) rebuildChunks(ctx context.Context, ks schema.Keyspace, dc string) Stats {
	var st Stats
	self := r.view.Self()
	watermark, err := r.watermarks.TombstoneWatermark(ks.Name)
	if err != nil {
		r.log.Warn("repair: read the tombstone watermark", "keyspace", ks.Name, "err", err)
		return Stats{Failed: 1}
	}
	members, err := r.placement.Members(ctx)
	if err != nil {
		r.log.Warn("repair: list the members", "keyspace", ks.Name, "err", err)
		return Stats{Failed: 1}
	}
	local, err := r.replica(placement.Member{ID: self.ID})
	if err != nil {
		return Stats{Failed: 1}
	}
	seen := map[string]bool{} // user keys already checked, from an earlier node's listing
	for _, m := range members {
		switch {
		case m.ID == self.ID || dc != "" && m.DC != dc:
			continue
		case !m.State.Readable():
			st.Failed++ // its chunks stay unlisted: keys only it lists are not rebuilt
			continue
		}
		if err := r.listChunks(ctx, ks, m, func(key []byte, newest lww.Record) {
			if seen[string(key)] {
				return
			}
			seen[string(key)] = true
			if err := r.rebuildKey(ctx, ks, local, key, newest, watermark, &st); err != nil {
				st.Failed++
				r.log.Warn("repair: rebuild the chunks of a key", "keyspace", ks.Name, "key", key, "err", err)
			}
		}, &st); err != nil {
			st.Failed++
			r.log.Warn("repair: rebuild chunks", "keyspace", ks.Name, "listed_by", m.ID, "err", err)
		}
	}
	return st
}

// listChunks pages through the chunk keys member holds, and calls fn once for each user
// key with the newest version listed among its chunks there. Chunk keys sort as their
// user keys do, so a key's chunks are adjacent; a page cut short leaves its last key to
// the next page, which starts at that key's first chunk. A page holds more chunks than a
// key can have, so every page but the last finishes at least one key; one cut short by
// its bytes (long keys) inside its first key is asked for again with twice the bytes.
func (r *Repairer) listChunks(ctx context.Context, ks schema.Keyspace, member placement.Member, fn func(key []byte, newest lww.Record), st *Stats) error {
	source, err := r.replica(member)
	if err != nil {
		return err
	}
	page := max(r.cfg.PageRecords, erasure.MaxChunks+1)
	pageBytes := r.cfg.PageBytes
	var cursor []byte
	for {
		req := replica.ScanRequest{Keyspace: ks.Name, Start: cursor, Limit: page, PageBytes: pageBytes, Ranges: wholeRing, KeysOnly: true}
		askCtx, cancel := context.WithTimeout(ctx, r.cfg.ReplicaTimeout)
		listed, err := source.Scan(askCtx, req)
		cancel()
		if err != nil {
			return err
		}
		st.ChunkKeysListed += len(listed)
		st.ListingBytes += int64(replica.RecordsWireBytes(listed))
		truncated := req.CutShort(listed)
		var key []byte // the user key of the current group of chunks
		var newest lww.Record
		var groupStart []byte // the first chunk key of the current group
		for _, rec := range listed {
			k, _, ok := coord.ParseChunkKey(rec.Key)
			if !ok {
				continue
			}
			if key != nil && bytes.Equal(k, key) {
				if lww.Newer(rec, newest) {
					newest = rec
				}
				continue
			}
			if key != nil {
				fn(key, newest)
			}
			key, newest, groupStart = k, rec, rec.Key
		}
		switch {
		case key == nil:
			return nil
		case !truncated:
			fn(key, newest)
			return nil
		case bytes.Equal(groupStart, cursor) && len(listed) < page:
			pageBytes *= 2
			continue
		case bytes.Equal(groupStart, cursor):
			return fmt.Errorf("%s listed more chunks of one key than a code has, from %q on", member.ID, cursor)
		}
		cursor = groupStart
	}
}

// rebuildKey rebuilds this node's chunks of key when one of them is missing or older than
// newest, the newest chunk another node listed. A chunk this node lacks is not restored
// at or below its tombstone watermark (see reconcile).
func (r *Repairer) rebuildKey(ctx context.Context, ks schema.Keyspace, local replica.Replica, key []byte, newest lww.Record, watermark hlc.Timestamp, st *Stats) error {
	owners, err := r.chunks.ChunkOwners(ctx, ks.Name, key)
	if err != nil {
		return err
	}
	self := r.view.Self().ID
	held := map[string]*lww.Record{} // this node's chunks of key, by chunk key; nil when absent
	stale := false
	for i, o := range owners {
		if o.ID != self {
			continue
		}
		chunkKey := coord.ChunkKey(key, i)
		rec, found, err := local.ReadChunk(ctx, ks.Name, chunkKey)
		if err != nil {
			return err
		}
		held[string(chunkKey)] = nil
		if found {
			held[string(chunkKey)] = &rec
		}
		stale = stale || !found || lww.Newer(newest, rec)
	}
	if !stale {
		return nil
	}
	rebuilt, err := r.chunks.RebuildChunks(ctx, ks.Name, key, self)
	if err != nil {
		return err
	}
	if len(rebuilt) == 0 {
		// Chunks of the key were listed, but fewer than k of them answered: the value is
		// lost unless this node's own chunks come back.
		return fmt.Errorf("key %q: too few chunks left to rebuild it", key)
	}
	var apply []lww.Record
	for _, rec := range rebuilt {
		mine := held[string(rec.Key)]
		switch {
		case mine == nil && rec.Timestamp <= watermark:
			st.Skipped++
		case mine == nil || lww.Newer(rec, *mine):
			apply = append(apply, rec)
		}
	}
	if len(apply) == 0 {
		return nil
	}
	if err := local.Apply(ctx, ks.Name, apply); err != nil {
		return err
	}
	st.ChunksRebuilt += len(apply)
	return nil
}
