package coord

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/placement"
	"github.com/kuradb/kura/replica"
	"github.com/kuradb/kura/ring"
	"github.com/kuradb/kura/schema"
)

// Scan returns up to limit live records with start <= key < end in key order (nil bounds
// are open; deleted, expired and truncated keys are left out), reading every token range of the ring from as many replicas as level cl
// needs and keeping the newest version of each key. With the hash partitioner every range
// is read; with the ordered one only the ranges the key interval maps to.
func (c *Coordinator) Scan(ctx context.Context, keyspace string, start, end []byte, limit int, cl consistency.Level) ([]lww.Record, error) {
	switch {
	case limit < 0 || limit > c.cfg.Limits.ScanLimitMax:
		return nil, invalid("scan limit %d outside 0..%d", limit, c.cfg.Limits.ScanLimitMax)
	case limit == 0:
		limit = c.cfg.Limits.ScanLimitDefault
	}
	if cl == consistency.Any {
		return nil, invalid("ANY is a write level; scan at ONE or above")
	}
	if cl.IsSerial() {
		return nil, invalid("%v is the level of lightweight transactions on one key; scan at ONE or above", cl)
	}
	if end != nil && start != nil && bytes.Compare(start, end) >= 0 {
		return nil, nil
	}
	ks, err := c.keyspaces.Get(keyspace)
	if err != nil {
		return nil, err
	}
	if ks.Erasure.Enabled() {
		return c.ldrScan(ctx, ks, start, end, limit, cl)
	}
	ranges, err := c.placement.ScanRanges(ctx, ks, start, end)
	if err != nil {
		return nil, routed(err)
	}
	if len(ranges) == 0 {
		return nil, nil
	}

	var out []lww.Record
	cursor := start
	now := c.clock.Now()
	for len(out) < limit {
		round, err := c.scanRound(ctx, ks, ranges, cursor, end, limit-len(out), cl)
		if err != nil {
			return nil, err
		}
		for _, rec := range round.records {
			if visible(ks, rec, now) && len(out) < limit {
				out = append(out, rec)
			}
		}
		if round.complete {
			break
		}
		// Everything up to the cut-off key is known; go on just after it.
		cursor = append(append([]byte(nil), round.cutoff...), 0)
	}
	return out, nil
}

// roundResult is what one pass over the ranges established.
type roundResult struct {
	records  []lww.Record // newest version per key, in key order, tombstones included
	complete bool         // no replica was cut short by the limit
	cutoff   []byte       // when not complete: records are final up to this key
}

// scanMerge keeps the newest version of each key the replicas of a round answered, and
// the smallest key at which one of them was cut short by the limit.
type scanMerge struct {
	newest    map[string]lww.Record
	truncated bool
	cutoff    []byte
}

func (s *scanMerge) add(recs []lww.Record, limit int) {
	for _, rec := range recs {
		if old, ok := s.newest[string(rec.Key)]; !ok || lww.Newer(rec, old) {
			s.newest[string(rec.Key)] = rec
		}
	}
	if len(recs) >= limit {
		last := recs[len(recs)-1].Key
		if !s.truncated || bytes.Compare(last, s.cutoff) < 0 {
			s.cutoff = last
		}
		s.truncated = true
	}
}

// result returns the records known to be final, in key order.
func (s *scanMerge) result() roundResult {
	keys := make([]string, 0, len(s.newest))
	for k := range s.newest {
		if !s.truncated || k <= string(s.cutoff) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	result := roundResult{complete: !s.truncated, cutoff: s.cutoff, records: make([]lww.Record, len(keys))}
	for i, k := range keys {
		result.records[i] = s.newest[k]
	}
	return result
}

// scanRound reads [cursor, end) once from every range: each range is a group of the
// gatherer, and each node gets one request for all the ranges it was chosen for.
func (c *Coordinator) scanRound(ctx context.Context, ks schema.Keyspace, ranges []placement.RangeReplicas, cursor, end []byte, limit int, cl consistency.Level) (roundResult, error) {
	localDC := c.view.Self().DC
	q := &quorum{self: c.view.Self().ID, byNode: true}
	for i, rg := range ranges {
		required := cl.Require(countedPerDC(rg.Replicas), localDC)
		candidates := c.readable(rg.Replicas, i)
		if alive := dcCounts(candidates); !required.Satisfied(alive) {
			return roundResult{}, &UnavailableError{Level: cl, Required: required, Alive: alive}
		}
		q.groups = append(q.groups, newGroup(required, candidates))
	}
	merge := &scanMerge{newest: map[string]lww.Record{}}
	out, err := gather(ctx, q, func(m placement.Member, ts []target) ([]lww.Record, error) {
		req := replica.ScanRequest{Keyspace: ks.Name, Start: cursor, End: end, Limit: limit, Ranges: make([]ring.Range, len(ts))}
		for i, t := range ts {
			req.Ranges[i] = ranges[t.group].Range
		}
		return c.scanReplica(m, req)
	}, func(_ []target, recs []lww.Record) { merge.add(recs, limit) })
	switch {
	case err != nil:
		return roundResult{}, &TimeoutError{Level: cl, Required: q.groups[0].required, Acked: out.acked, Cause: err}
	case !out.met:
		return roundResult{}, fmt.Errorf("scan: a range has no replica left to ask (last replica error: %v): %w", out.lastErr, ErrUnavailable)
	}
	return merge.result(), nil
}

// scanReplica sends one scan request within the replica timeout.
func (c *Coordinator) scanReplica(m placement.Member, req replica.ScanRequest) ([]lww.Record, error) {
	r, err := c.replica(m)
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.replicaContext()
	defer cancel()
	return r.Scan(ctx, req)
}
