package coord

import (
	"context"
	"fmt"
	"sort"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/erasure"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/placement"
)

// ldrGet reads an erasure-coded key local-first. It asks the nearest chunk owners the
// level needs (this node, then its DC: when the DC holds k chunks of the key, no request
// leaves it). When fewer than k chunks of the newest version seen arrive, it asks exactly
// the missing number more, nearest first, and one more for each failure. It serves the
// newest version it can rebuild and repairs, in the background, the chunks it found older,
// missing or corrupt.
func (c *Coordinator) ldrGet(ctx context.Context, ks schema.Keyspace, key []byte, cl consistency.Level) (lww.Record, bool, error) {
	slots, gathered, err := c.gatherChunks(ctx, ks, key, cl)
	if err != nil {
		return lww.Record{}, false, err
	}
	return c.serveChunks(ks, key, slots, gathered)
}

// gatherChunks reads key's chunks local-first, as level cl needs (see ldrGet), and
// returns the slots and what their owners answered; an error when the level is not met.
func (c *Coordinator) gatherChunks(ctx context.Context, ks schema.Keyspace, key []byte, cl consistency.Level) ([]chunkSlot, *chunkGather, error) {
	code, slots, err := c.chunkSlots(ctx, ks, key)
	if err != nil {
		return nil, nil, err
	}
	required := chunkRequirement(cl, code, slotCounts(slots), c.view.Self().DC)
	candidates := c.readableSlots(slots)
	if !satisfiable(candidates, required) {
		return nil, nil, chunkUnavailable(ks, cl, required, dcCounts(candidates))
	}
	gathered := newChunkGather(code)
	q := &quorum{
		self:    c.view.Self().ID,
		workers: c.tasks,
		groups:  []*group{newGroup(required, candidates)},
		// As many more chunks as the newest version seen lacks beyond those in flight.
		more:   func(inFlight int) int { return gathered.deficit() - inFlight },
		enough: func() bool { return gathered.deficit() == 0 },
	}
	out, err := gather(ctx, q, func(m placement.Member, ts []target) (chunkAnswer, error) {
		return c.readChunk(ks.Name, slots[ts[0].slot])
	}, func(ts []target, a chunkAnswer) { gathered.add(ts[0].slot, a.record, a.found) })
	switch {
	case err != nil:
		return nil, nil, unmet(cl, required, out, 0, err)
	case out.met || q.groups[0].met():
		// Met, or every live owner answered and the newest version still lacks chunks:
		// the newest one that can be rebuilt is served.
		return slots, gathered, nil
	}
	return nil, nil, unmet(cl, required, out, 0, nil)
}

// chunkAnswer is what a chunk owner holds under one chunk key.
type chunkAnswer struct {
	record lww.Record
	found  bool
}

// readChunk asks the owner of slot s for its chunk, within the replica timeout.
func (c *Coordinator) readChunk(keyspace string, s chunkSlot) (chunkAnswer, error) {
	r, err := c.replica(s.owner)
	if err != nil {
		return chunkAnswer{}, err
	}
	ctx, cancel := c.replicaContext()
	defer cancel()
	rec, found, err := r.ReadChunk(ctx, keyspace, s.key)
	if err != nil {
		return chunkAnswer{}, fmt.Errorf("chunk owner %s: %w", s.owner.ID, err)
	}
	return chunkAnswer{record: rec, found: found}, nil
}

// serveChunks rebuilds the version the answers settle on and repairs the chunks that
// answered with less.
func (c *Coordinator) serveChunks(ks schema.Keyspace, key []byte, slots []chunkSlot, chunks *chunkGather) (lww.Record, bool, error) {
	rec, found, err := chunks.rebuild(key)
	if err != nil {
		return lww.Record{}, false, fmt.Errorf("key %q of keyspace %s: %w", key, ks.Name, err)
	}
	if !found || rec.Timestamp <= ks.TruncatedAt {
		return lww.Record{}, false, nil // a truncated version is not repaired: its owners drop it
	}
	if stale := chunks.stale(rec.Timestamp); len(stale) > 0 {
		repairs, err := chunkRecords(chunks.code, slots, rec)
		if err != nil {
			c.log.Warn("read repair of chunks", "keyspace", ks.Name, "err", err)
		} else {
			for _, i := range stale {
				c.repairLater(slots[i].owner, ks.Name, repairs[i])
			}
		}
	}
	if !visible(ks, rec, c.clock.Now()) {
		return lww.Record{}, false, nil
	}
	return rec, true, nil
}

func owners(slots []chunkSlot) []placement.Member {
	out := make([]placement.Member, len(slots))
	for i, s := range slots {
		out[i] = s.owner
	}
	return out
}

// chunkVersion is what the answers say about one write of a key.
type chunkVersion struct {
	timestamp hlc.Timestamp
	tombstone bool
	expiresAt hlc.Timestamp   // the write's deadline, which all its chunks carry
	chunks    []erasure.Chunk // usable chunks, distinct indexes
}

// complete reports whether the version can be served: a delete needs one tombstone, a
// value k chunks.
func (v *chunkVersion) complete(k int) bool {
	return v.tombstone || len(v.chunks) >= k
}

// chunkGather collects what chunk owners answered about one key.
type chunkGather struct {
	code     *erasure.Code
	versions map[hlc.Timestamp]*chunkVersion
	newest   *chunkVersion
	// answered holds, by chunk index, the version its owner holds usably; 0 when the
	// owner has none, or a chunk that is corrupt or does not fit its slot.
	answered map[int]hlc.Timestamp
	corrupt  int // chunks found damaged or misplaced
}

func newChunkGather(code *erasure.Code) *chunkGather {
	return &chunkGather{code: code, versions: map[hlc.Timestamp]*chunkVersion{}, answered: map[int]hlc.Timestamp{}}
}

// add records what the owner of chunk index answered. A chunk that fails its checksum,
// or whose header does not match its slot and record, counts as missing.
func (g *chunkGather) add(index int, rec lww.Record, found bool) {
	if _, dup := g.answered[index]; dup {
		return
	}
	g.answered[index] = 0
	if !found {
		return
	}
	var chunk erasure.Chunk
	if !rec.Tombstone {
		var err error
		chunk, err = erasure.Parse(rec.Value)
		if err != nil || chunk.Index != index || chunk.M != g.code.M() || chunk.K != g.code.K() || chunk.Timestamp != uint64(rec.Timestamp) {
			g.corrupt++
			return
		}
	}
	v, ok := g.versions[rec.Timestamp]
	if !ok {
		v = &chunkVersion{timestamp: rec.Timestamp, expiresAt: rec.ExpiresAt}
		g.versions[rec.Timestamp] = v
		if g.newest == nil || v.timestamp > g.newest.timestamp {
			g.newest = v
		}
	}
	if rec.Tombstone {
		v.tombstone = true
	} else {
		v.chunks = append(v.chunks, chunk)
	}
	g.answered[index] = rec.Timestamp
}

// rebuild returns the record of key's newest version the answers can rebuild (see
// resolve), its value decoded; a tombstone for a delete; found is false when there is
// none.
func (g *chunkGather) rebuild(key []byte) (rec lww.Record, found bool, err error) {
	v, err := g.resolve()
	if err != nil || v == nil {
		return lww.Record{}, false, err
	}
	rec = lww.Record{Key: key, Timestamp: v.timestamp, Tombstone: v.tombstone, ExpiresAt: v.expiresAt}
	if !v.tombstone {
		if rec.Value, err = g.code.Decode(v.chunks); err != nil {
			return lww.Record{}, false, err
		}
	}
	return rec, true, nil
}

// deficit is how many chunks the newest version seen lacks to be rebuilt; 0 when it is
// complete or nothing was found.
func (g *chunkGather) deficit() int {
	if g.newest == nil || g.newest.complete(g.code.K()) {
		return 0
	}
	return g.code.K() - len(g.newest.chunks)
}

// resolve returns the newest complete version; nil when no owner had anything, or when
// the only chunks found belong to one write that lacks chunks while the other owners
// answered cleanly that they have none (a write still in flight, or one that failed
// before k chunks landed, over no earlier value: like a replica the write has not reached
// yet, the key reads as absent); otherwise an error wrapping ErrUnavailable: chunks of
// other writes, or damaged ones, were found, but no version can be rebuilt.
func (g *chunkGather) resolve() (*chunkVersion, error) {
	if len(g.versions) == 0 || len(g.versions) == 1 && g.corrupt == 0 && !g.newest.complete(g.code.K()) {
		return nil, nil
	}
	newestFirst := make([]*chunkVersion, 0, len(g.versions))
	for _, v := range g.versions {
		newestFirst = append(newestFirst, v)
	}
	sort.Slice(newestFirst, func(i, j int) bool { return newestFirst[i].timestamp > newestFirst[j].timestamp })
	for _, v := range newestFirst {
		if v.complete(g.code.K()) {
			return v, nil
		}
	}
	return nil, fmt.Errorf("%w: the newest version has %d of the %d chunks needed, and no older version enough",
		ErrUnavailable, len(g.newest.chunks), g.code.K())
}

// stale returns, in index order, the chunks whose owners answered with a version older
// than timestamp, or with none usable.
func (g *chunkGather) stale(timestamp hlc.Timestamp) []int {
	var out []int
	for i, ts := range g.answered {
		if ts < timestamp {
			out = append(out, i)
		}
	}
	sort.Ints(out)
	return out
}
