package coord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica"
)

// wholeRing is the one range that covers every token (Start == End). An LDR scan asks
// each node for it: chunk keys are placed by their own hash, so a node's chunks of a key
// interval are all it holds in that interval. A replicated scan asks for it a node that
// holds every range.
var wholeRing = []ring.Range{{}}

// ldrScan returns up to limit live keys of an erasure-coded keyspace with start <= key <
// end, in key order, with their values. Each chunk is stored once, so every live node is
// read, in rounds: one request per node per round for its chunks in [cursor, end), each
// node's answer bounded (see ldrScanRound). A key's chunks are gathered from the answers
// and its newest complete version rebuilt as a get would; the level counts, per key, the
// chunks whose owners answered. Scans do not repair. An answer over
// Limits.AnswerBytesMax is refused, as a replicated scan's is.
func (c *Coordinator) ldrScan(ctx context.Context, ks schema.Keyspace, start, end []byte, limit int, cl consistency.Level) ([]lww.Record, error) {
	var out []lww.Record
	answered := 0 // key and value bytes of out
	cursor := start
	for len(out) < limit {
		round, err := c.ldrScanRound(ctx, ks, cursor, end, limit-len(out), cl)
		if err != nil {
			return nil, err
		}
		for _, rec := range round.records[:min(len(round.records), limit-len(out))] {
			out = append(out, rec)
			answered += len(rec.Key) + len(rec.Value)
		}
		if answered > c.cfg.Limits.AnswerBytesMax {
			return nil, c.scanTooLarge()
		}
		if round.complete {
			break
		}
		// Keys before the cut-off are final; the cut-off key itself may be partial.
		cursor = round.cutoff
	}
	return out, nil
}

// ldrScanRound reads [cursor, end) once from every readable node. A node answers at most
// m + 1 + 1.5 × limit × m / nodes chunk records: about 1.5 × limit keys' worth of its
// share, and always more than the m chunks one key can have on it, so every round
// finishes at least one key. The gatherer asks every node and waits for every answer; the
// level is judged per key, by the chunks whose owners answered.
func (c *Coordinator) ldrScanRound(ctx context.Context, ks schema.Keyspace, cursor, end []byte, limit int, cl consistency.Level) (roundResult, error) {
	members, err := c.placement.Members(ctx)
	if err != nil {
		return roundResult{}, routed(err)
	}
	m := ks.Erasure.M
	perNode := m + 1 + 3*limit*m/(2*len(members))
	var lower, upper []byte
	if cursor != nil {
		lower = chunkKeyBound(cursor)
	}
	if end != nil {
		upper = chunkKeyBound(end)
	}
	var live []target
	for _, member := range members {
		if member.Reads() {
			live = append(live, target{Member: member})
		}
	}
	q := &quorum{self: c.view.Self().ID, workers: c.tasks, groups: []*group{newGroup(consistency.Requirement{Total: len(live)}, live)}, askAll: true, waitAll: true}
	answered := map[string]bool{}
	byKey := map[string]map[int]lww.Record{} // user key -> chunk index -> newest record
	var cutoff []byte
	truncated := false
	out, err := gather(ctx, q, func(member placement.Member, _ []target) ([]lww.Record, error) {
		// A node's chunks past the answer's bound are refused there, not sent.
		recs, err := c.scanReplica(member, replica.ScanRequest{Keyspace: ks.Name, Start: lower, End: upper, Limit: perNode, Ranges: wholeRing,
			BytesMax: c.cfg.Limits.AnswerBytesMax})
		if err != nil {
			c.log.Debug("scan of chunks", "node", member.ID, "err", err)
		}
		return recs, err
	}, func(ts []target, recs []lww.Record) {
		answered[ts[0].ID] = true
		var last []byte
		for _, rec := range recs {
			key, index, ok := parseChunkKey(rec.Key)
			if !ok {
				continue
			}
			last = key
			chunks := byKey[string(key)]
			if chunks == nil {
				chunks = map[int]lww.Record{}
				byKey[string(key)] = chunks
			}
			if old, ok := chunks[index]; !ok || lww.Newer(rec, old) {
				chunks[index] = rec
			}
		}
		if len(recs) >= perNode && (!truncated || bytes.Compare(last, cutoff) < 0) {
			cutoff, truncated = last, true
		}
	})
	switch {
	case errors.Is(out.lastErr, replica.ErrScanTooLarge):
		return roundResult{}, c.scanTooLarge()
	case err != nil:
		return roundResult{}, &TimeoutError{Level: cl, Cause: err}
	}

	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		if !truncated || k < string(cutoff) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	result := roundResult{complete: !truncated, cutoff: cutoff}
	for _, k := range keys {
		rec, found, err := c.rebuildScanned(ctx, ks, []byte(k), byKey[k], answered, cl)
		if err != nil {
			return roundResult{}, err
		}
		if found {
			result.records = append(result.records, rec)
		}
	}
	return result, nil
}

// rebuildScanned resolves one key from the chunk records a scan found: the chunks of
// owners that answered and had none count as missing, those of owners that did not answer
// as unanswered.
func (c *Coordinator) rebuildScanned(ctx context.Context, ks schema.Keyspace, key []byte, found map[int]lww.Record, answered map[string]bool, cl consistency.Level) (lww.Record, bool, error) {
	code, slots, err := c.chunkSlots(ctx, ks, key)
	if err != nil {
		return lww.Record{}, false, err
	}
	gather := newChunkGather(code)
	var reached []chunkSlot
	for _, s := range slots {
		rec, ok := found[s.index]
		if ok || answered[s.owner.ID] {
			gather.add(s.index, rec, ok)
		}
		if answered[s.owner.ID] {
			reached = append(reached, s)
		}
	}
	required := chunkRequirement(cl, code, slotCounts(slots), c.view.Self().DC)
	if got := slotCounts(reached); !required.Satisfied(got) {
		return lww.Record{}, false, fmt.Errorf("scan at key %q: %w", key, chunkUnavailable(ks, cl, required, got))
	}
	rec, ok, err := gather.rebuild(key)
	if err != nil {
		return lww.Record{}, false, fmt.Errorf("scan at key %q of keyspace %s: %w", key, ks.Name, err)
	}
	if !ok || !visible(ks, rec, c.clock.Now()) {
		return lww.Record{}, false, nil
	}
	return rec, true, nil
}
