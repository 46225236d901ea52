package coord

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/ring"
	"github.com/kuradb/kura/schema"
	"github.com/kuradb/kura/storage"
)

// Scan returns up to limit live records with start <= key < end in key order (nil bounds
// are open), reading every token range of the ring from as many replicas as level cl
// needs and keeping the newest version of each key. With the hash partitioner every range
// is read; with the ordered one only the ranges the key interval maps to.
func (c *Coordinator) Scan(ctx context.Context, keyspace string, start, end []byte, limit int, cl consistency.Level) ([]storage.Record, error) {
	switch {
	case limit < 0 || limit > c.cfg.Limits.ScanLimitMax:
		return nil, invalid("scan limit %d outside 0..%d", limit, c.cfg.Limits.ScanLimitMax)
	case limit == 0:
		limit = c.cfg.Limits.ScanLimitDefault
	}
	if cl == consistency.Any {
		return nil, invalid("ANY is a write level; scan at ONE or above")
	}
	if end != nil && start != nil && bytes.Compare(start, end) >= 0 {
		return nil, nil
	}
	ks, err := c.catalog.Get(keyspace)
	if err != nil {
		return nil, err
	}
	if ks.Erasure.Enabled() {
		return c.ldrScan(ctx, ks, start, end, limit, cl)
	}
	p, err := c.placement(ks.Strategy())
	if err != nil {
		return nil, err
	}
	ranges := scanRanges(p.Ring(), ks, start, end)
	if len(ranges) == 0 {
		return nil, nil
	}

	var out []storage.Record
	cursor := start
	for len(out) < limit {
		round, err := c.scanRound(ctx, p, ks, ranges, cursor, end, limit-len(out), cl)
		if err != nil {
			return nil, err
		}
		for _, rec := range round.records {
			if !rec.Tombstone && len(out) < limit {
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

// scanRanges returns the ring ranges a scan of [start, end) must read.
func scanRanges(r *ring.Ring, ks schema.Keyspace, start, end []byte) []ring.Range {
	all := r.Ranges()
	if ks.Partitioner != "ordered" {
		return all
	}
	// Order-preserving tokens: keys in [start, end) have tokens in [Token(start), Token(end)].
	lo := ks.Partition().Token(start)
	hi := ^ring.Token(0)
	if end != nil {
		hi = ks.Partition().Token(end)
	}
	var out []ring.Range
	for _, rg := range all {
		if rangeIntersects(rg, lo, hi) {
			out = append(out, rg)
		}
	}
	return out
}

// rangeIntersects reports whether (rg.Start, rg.End] shares a token with [lo, hi].
func rangeIntersects(rg ring.Range, lo, hi ring.Token) bool {
	if rg.Contains(lo) || rg.Contains(hi) {
		return true
	}
	// The range lies inside [lo, hi] when its end does (and it does not wrap past hi).
	return rg.Start < rg.End && lo <= rg.End && rg.End <= hi && lo <= rg.Start
}

// roundResult is what one pass over the ranges established.
type roundResult struct {
	records  []storage.Record // newest version per key, in key order, tombstones included
	complete bool             // no replica was cut short by the limit
	cutoff   []byte           // when not complete: records are final up to this key
}

// rangeState tracks the replicas of one range during a round.
type rangeState struct {
	rg         ring.Range
	candidates []ring.Member // live replicas, nearest first
	next       int
	required   consistency.Requirement
	asked      map[string]int
}

// scanRound reads [cursor, end) once from every range, failing over to other replicas of
// a range when one fails.
func (c *Coordinator) scanRound(ctx context.Context, p *ring.Placement, ks schema.Keyspace, ranges []ring.Range, cursor, end []byte, limit int, cl consistency.Level) (roundResult, error) {
	localDC := c.view.Self().DC
	states := make([]*rangeState, len(ranges))
	for i, rg := range ranges {
		replicas := p.ReplicasFor(rg.End)
		required := cl.Require(dcCounts(replicas), localDC)
		live := c.liveByDistance(replicas)
		if alive := dcCounts(live); !required.Satisfied(alive) {
			return roundResult{}, &UnavailableError{Level: cl, Required: required, Alive: alive}
		}
		states[i] = &rangeState{rg: rg, candidates: live, required: required, asked: map[string]int{}}
	}

	type nodeAnswer struct {
		member  ring.Member
		ranges  []int
		records []storage.Record
		err     error
	}
	answers := make(chan nodeAnswer)
	inFlight := 0
	// dispatch assigns every range that still needs replicas to its next candidates and
	// sends one request per node for all the ranges it was given.
	dispatch := func() error {
		byNode := map[string][]int{}
		members := map[string]ring.Member{}
		for i, st := range states {
			for !st.required.Satisfied(st.asked) {
				if st.next >= len(st.candidates) {
					return &UnavailableError{Level: cl, Required: st.required, Alive: st.asked}
				}
				j := pickNeeded(st.candidates[st.next:], st.required, st.asked) + st.next
				st.candidates[st.next], st.candidates[j] = st.candidates[j], st.candidates[st.next]
				m := st.candidates[st.next]
				st.next++
				st.asked[m.DC]++
				byNode[m.ID] = append(byNode[m.ID], i)
				members[m.ID] = m
			}
		}
		for id, idx := range byNode {
			m, idx := members[id], idx
			tokenRanges := make([]ring.Range, len(idx))
			for k, i := range idx {
				tokenRanges[k] = states[i].rg
			}
			inFlight++
			go func() {
				recs, err := c.scanReplica(m, ks, cursor, end, limit, tokenRanges)
				answers <- nodeAnswer{member: m, ranges: idx, records: recs, err: err}
			}()
		}
		return nil
	}
	if err := dispatch(); err != nil {
		return roundResult{}, err
	}

	newest := map[string]storage.Record{}
	var cutoff []byte
	truncated := false
	var failure error
	for inFlight > 0 {
		select {
		case a := <-answers:
			inFlight--
			if failure != nil {
				continue // drain the senders
			}
			if a.err != nil {
				for _, i := range a.ranges {
					states[i].asked[a.member.DC]--
				}
				if err := dispatch(); err != nil {
					failure = fmt.Errorf("scan: replica %s failed (%v) and no other replica is left: %w", a.member.ID, a.err, err)
				}
				continue
			}
			for _, rec := range a.records {
				if old, ok := newest[string(rec.Key)]; !ok || storage.Newer(rec, old) {
					newest[string(rec.Key)] = rec
				}
			}
			if len(a.records) >= limit {
				last := a.records[len(a.records)-1].Key
				if !truncated || bytes.Compare(last, cutoff) < 0 {
					cutoff = last
				}
				truncated = true
			}
		case <-ctx.Done():
			go func(n int) {
				for ; n > 0; n-- {
					<-answers
				}
			}(inFlight)
			return roundResult{}, &TimeoutError{Level: cl, Required: states[0].required, Cause: ctx.Err()}
		}
	}
	if failure != nil {
		return roundResult{}, failure
	}

	keys := make([]string, 0, len(newest))
	for k := range newest {
		if !truncated || k <= string(cutoff) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	result := roundResult{complete: !truncated, cutoff: cutoff, records: make([]storage.Record, len(keys))}
	for i, k := range keys {
		result.records[i] = newest[k]
	}
	return result, nil
}

// scanReplica reads one node's records of the given ranges: directly when it is this node.
func (c *Coordinator) scanReplica(m ring.Member, ks schema.Keyspace, start, end []byte, limit int, ranges []ring.Range) ([]storage.Record, error) {
	if m.ID == c.view.Self().ID {
		return c.engine.Scan(ks.Name, start, end, limit, true, inRanges(ks.Partition(), ranges))
	}
	req := &kurav1.ReplicaScanRequest{Keyspace: ks.Name, Start: start, End: end, Limit: int32(limit)}
	for _, rg := range ranges {
		req.Ranges = append(req.Ranges, &kurav1.TokenRange{Start: uint64(rg.Start), End: uint64(rg.End)})
	}
	payload, err := proto.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode scan: %w", err)
	}
	peer, err := c.peer(m)
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.replicaContext()
	defer cancel()
	raw, err := c.transport.Call(ctx, peer, kindScan, payload)
	if err != nil {
		return nil, fmt.Errorf("replica %s: %w", m.ID, err)
	}
	var resp kurav1.ReplicaScanResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		return nil, fmt.Errorf("replica %s: decode scan: %w", m.ID, err)
	}
	out := make([]storage.Record, len(resp.GetRecords()))
	for i, r := range resp.GetRecords() {
		out[i] = fromProto(r)
	}
	return out, nil
}

// inRanges returns a key filter that accepts keys whose token lies in one of ranges.
func inRanges(p ring.Partitioner, ranges []ring.Range) func([]byte) bool {
	return func(key []byte) bool {
		t := p.Token(key)
		for _, rg := range ranges {
			if rg.Contains(t) {
				return true
			}
		}
		return false
	}
}
