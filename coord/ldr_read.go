package coord

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/erasure"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/ring"
	"github.com/kuradb/kura/schema"
	"github.com/kuradb/kura/storage"
	"github.com/kuradb/kura/transport"
)

// kindChunkRead asks a chunk owner for one chunk. Its request is a ReadRequest (the
// keyspace and the chunk key); its answer is the stored chunk itself (encodeChunkAnswer),
// so a remote chunk costs its shard, its 20-byte header and about 60 bytes of framing and
// request: the generic read's answer would echo the key and wrap the record as well.
var kindChunkRead = transport.RegisterKind(5, "chunk_read")

// A chunk_read answer is a status byte, then what the status announces.
const (
	chunkAbsent    byte = iota + 1 // nothing follows: no record under the chunk key
	chunkTombstone                 // the delete's timestamp follows, u64 big endian
	chunkStored                    // the stored chunk follows, header and shard as written
)

// encodeChunkAnswer is the replica's answer to a chunk_read for what its engine holds.
// A stored chunk is sent as it is: its header carries the write's timestamp, the code,
// the index, the length and a checksum, so the record around it adds nothing.
func encodeChunkAnswer(rec storage.Record, found bool) []byte {
	switch {
	case !found:
		return []byte{chunkAbsent}
	case rec.Tombstone:
		return binary.BigEndian.AppendUint64([]byte{chunkTombstone}, uint64(rec.Timestamp))
	}
	return append([]byte{chunkStored}, rec.Value...)
}

// decodeChunkAnswer turns a chunk_read answer for the chunk key back into the record the
// owner holds. A chunk's record takes the timestamp its header names, unverified:
// chunkGather.add verifies the chunk and counts a damaged one as missing.
func decodeChunkAnswer(key, answer []byte) (storage.Record, bool, error) {
	if len(answer) == 0 {
		return storage.Record{}, false, errors.New("empty chunk_read answer")
	}
	body := answer[1:]
	switch answer[0] {
	case chunkAbsent:
		if len(body) == 0 {
			return storage.Record{}, false, nil
		}
	case chunkTombstone:
		if len(body) == 8 {
			return storage.Record{Key: key, Tombstone: true, Timestamp: hlc.Timestamp(binary.BigEndian.Uint64(body))}, true, nil
		}
	case chunkStored:
		timestamp, _ := erasure.HeaderTimestamp(body)
		return storage.Record{Key: key, Value: body, Timestamp: hlc.Timestamp(timestamp)}, true, nil
	}
	return storage.Record{}, false, fmt.Errorf("malformed chunk_read answer: status %d with %d bytes", answer[0], len(body))
}

// chunkRead is one chunk owner's answer.
type chunkRead struct {
	slot chunkSlot
	readResult
}

// readChunk asks the owner of slot s for its chunk: directly when it is this node, with a
// chunk_read otherwise.
func (c *Coordinator) readChunk(keyspace string, s chunkSlot) chunkRead {
	fail := func(err error) chunkRead {
		return chunkRead{slot: s, readResult: readResult{member: s.owner, err: fmt.Errorf("chunk owner %s: %w", s.owner.ID, err)}}
	}
	if s.owner.ID == c.view.Self().ID {
		rec, found, err := c.engine.Get(keyspace, s.key)
		return chunkRead{slot: s, readResult: readResult{member: s.owner, record: rec, found: found, err: err}}
	}
	payload, err := proto.Marshal(&kurav1.ReadRequest{Keyspace: keyspace, Key: s.key})
	if err != nil {
		return fail(fmt.Errorf("encode chunk_read: %w", err))
	}
	peer, err := c.peer(s.owner)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := c.replicaContext()
	defer cancel()
	answer, err := c.transport.Call(ctx, peer, kindChunkRead, payload)
	if err != nil {
		return fail(err)
	}
	rec, found, err := decodeChunkAnswer(s.key, answer)
	if err != nil {
		return fail(err)
	}
	return chunkRead{slot: s, readResult: readResult{member: s.owner, record: rec, found: found}}
}

// ldrGet reads an erasure-coded key local-first. It asks the nearest chunk owners the
// level needs (this node, then its DC: when the DC holds k chunks of the key, no request
// leaves it). When fewer than k chunks of the newest version seen arrive, it asks exactly
// the missing number more, nearest first, and one more for each failure. It serves the
// newest version it can rebuild and repairs, in the background, the chunks it found older,
// missing or corrupt.
func (c *Coordinator) ldrGet(ctx context.Context, ks schema.Keyspace, key []byte, cl consistency.Level) (storage.Record, bool, error) {
	code, slots, err := c.chunkSlots(ctx, ks, key)
	if err != nil {
		return storage.Record{}, false, err
	}
	required := chunkRequirement(cl, code, slotCounts(slots), c.view.Self().DC)
	remaining := c.liveSlotsByDistance(slots)
	if alive := slotCounts(remaining); !required.Satisfied(alive) {
		return storage.Record{}, false, chunkUnavailable(ks, cl, required, alive)
	}

	results := make(chan chunkRead, len(remaining))
	gather := newChunkGather(code)
	asked := map[string]int{} // per DC, requests sent and not failed
	inFlight := 0
	send := func(i int) {
		s := remaining[i]
		remaining = slices.Delete(remaining, i, i+1)
		asked[s.owner.DC]++
		inFlight++
		go func() { results <- c.readChunk(ks.Name, s) }()
	}
	// askMore sends the requests the level still needs, preferring datacenters it names,
	// then as many as the newest version lacks chunks beyond those in flight.
	askMore := func() {
		for !required.Satisfied(asked) && len(remaining) > 0 {
			send(pickNeeded(owners(remaining), required, asked))
		}
		for deficit := gather.deficit() - inFlight; deficit > 0 && len(remaining) > 0; deficit-- {
			send(0)
		}
	}
	askMore()

	acks := map[string]int{}
	var lastErr error
	for inFlight > 0 {
		select {
		case r := <-results:
			inFlight--
			if r.err != nil {
				lastErr = r.err
				asked[r.slot.owner.DC]--
			} else {
				acks[r.slot.owner.DC]++
				gather.add(r.slot.index, r.record, r.found)
				if required.Satisfied(acks) && gather.deficit() == 0 {
					return c.serveChunks(ks, key, slots, gather)
				}
			}
			askMore()
		case <-ctx.Done():
			return storage.Record{}, false, &TimeoutError{Level: cl, Required: required, Acked: sum(acks), Cause: ctx.Err()}
		}
	}
	if required.Satisfied(acks) {
		// Every live owner answered and the newest version still lacks chunks: serve the
		// newest one that can be rebuilt.
		return c.serveChunks(ks, key, slots, gather)
	}
	return storage.Record{}, false, &TimeoutError{Level: cl, Required: required, Acked: sum(acks), Cause: lastErr}
}

// serveChunks rebuilds the version the answers settle on and repairs the chunks that
// answered with less.
func (c *Coordinator) serveChunks(ks schema.Keyspace, key []byte, slots []chunkSlot, gather *chunkGather) (storage.Record, bool, error) {
	v, err := gather.resolve()
	if err != nil {
		return storage.Record{}, false, fmt.Errorf("key %q of keyspace %s: %w", key, ks.Name, err)
	}
	if v == nil {
		return storage.Record{}, false, nil
	}
	rec := storage.Record{Key: key, Timestamp: v.timestamp, Tombstone: v.tombstone}
	if !v.tombstone {
		if rec.Value, err = gather.code.Decode(v.chunks); err != nil {
			return storage.Record{}, false, fmt.Errorf("key %q of keyspace %s: %w", key, ks.Name, err)
		}
	}
	if stale := gather.stale(v.timestamp); len(stale) > 0 {
		repairs, err := chunkRecords(gather.code, slots, rec)
		if err != nil {
			c.log.Warn("read repair of chunks", "keyspace", ks.Name, "err", err)
		} else {
			for _, i := range stale {
				go c.repair(slots[i].owner, ks.Name, repairs[i])
			}
		}
	}
	if rec.Tombstone {
		return storage.Record{}, false, nil
	}
	return rec, true, nil
}

func owners(slots []chunkSlot) []ring.Member {
	out := make([]ring.Member, len(slots))
	for i, s := range slots {
		out[i] = s.owner
	}
	return out
}

// chunkVersion is what the answers say about one write of a key.
type chunkVersion struct {
	timestamp hlc.Timestamp
	tombstone bool
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
func (g *chunkGather) add(index int, rec storage.Record, found bool) {
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
		v = &chunkVersion{timestamp: rec.Timestamp}
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
