package coord

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/base/assert"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica"
)

// ScanKeys walks a keyspace's live keys in position order: a key's position is the hash
// partitioner's token of the key (whatever the keyspace's partitioner), the order of
// every replica's live-key index, so a position is a cursor any coordinator can resume,
// with nothing kept between calls (Redis's SCAN). Each replica walks its index, where
// tombstones have no entry, so deleted keys cost the walk nothing.
//
// A walk reads, in rounds, the token ranges that hold the next positions (with the hash
// partitioner the ranges are intervals of positions: the ranges from the one holding the
// cursor on, more each round while keys are scarce; with the ordered and grouped
// partitioners every range holds keys at every position, so all of them are read at
// once, each replica keeping its range's keys by token),
// each from as many replicas as level cl needs. Keys that all the replicas asked for a
// range hold are live; a key that only some of them hold is read at cl to learn which
// version is newest, so a key deleted at a level is not listed at that level.
//
// ScanKeys returns about count keys (more when several share the last position, fewer
// when it stopped after a bounded amount of work, as Redis's SCAN may) and the cursor
// of the next call: 0 once the walk is over. Cursor 0 starts a walk. Every key live for
// a whole walk is returned once; a key written or deleted meanwhile may or may not be.
func (c *Coordinator) ScanKeys(ctx context.Context, keyspace string, cursor uint64, count int, cl consistency.Level) (keys [][]byte, next uint64, err error) {
	if count < 1 || count > c.cfg.Limits.ScanLimitMax {
		return nil, 0, invalid("scan count %d outside 1..%d", count, c.cfg.Limits.ScanLimitMax)
	}
	if cl == consistency.Any {
		return nil, 0, invalid("ANY is a write level; scan at ONE or above")
	}
	plan, err := c.keysPlan(ctx, keyspace)
	if err != nil || len(plan.ranges) == 0 {
		return nil, 0, err
	}
	now := c.clock.Now()
	var out []positionedKey
	visited, window := 0, scanWindowFirst
	for {
		want := count - len(out)
		groups := plan.round(cursor, window)
		if len(groups) == 0 { // no range holds the positions from cursor on
			return keysOf(out), 0, nil
		}
		visits, err := c.keysRound(ctx, plan, groups, want, now, cl)
		if err != nil {
			return nil, 0, err
		}
		visited += visits
		found, disputed, frontier, end := mergeKeys(groups)
		if !end && frontier <= cursor { // every walk visits a position: a replica misbehaves
			return nil, 0, fmt.Errorf("scan keys of %s: the replicas' walks from position %d stopped at %d", plan.ks.Name, cursor, frontier)
		}
		live, err := c.settle(ctx, plan.ks.Name, disputed, cl)
		if err != nil {
			return nil, 0, err
		}
		found = append(found, live...)
		slices.SortFunc(found, positionedKey.compare)
		if cut, at, ok := cutAfter(found, want); ok {
			return keysOf(append(out, cut...)), at, nil
		}
		out = append(out, found...)
		switch {
		case end:
			return keysOf(out), 0, nil
		case len(out) >= count || visited >= scanKeysVisitBudget(count):
			return keysOf(out), frontier, nil
		}
		cursor, window = frontier, scanWindowGrowth*window
	}
}

// A walk of a keyspace with the hash partitioner reads scanWindowFirst ranges in its
// first round, and scanWindowGrowth times more in each next one: a dense keyspace
// answers from a few ranges' replicas, and a sparse one, which must be read whole to
// find count keys, in a few rounds (four for the 144 ranges of 9 nodes of 16 tokens).
// Each node answers one request a round, with at most the keys still wanted, however
// many of its ranges the round reads.
const (
	scanWindowFirst  = 4
	scanWindowGrowth = 4
)

// scanVisitMax bounds the index entries one replica visits for a request of limit keys:
// a walk through expired entries ends after it, and resumes at the next call.
func scanVisitMax(limit int) int { return 8*limit + 1024 }

// scanKeysVisitBudget bounds the index entries a ScanKeys call has visited before it
// returns what it found: a few requests' worth.
func scanKeysVisitBudget(count int) int { return 4 * scanVisitMax(count) }

// keysPlan is a keyspace's token ranges, laid out for a walk in position order.
type keysPlan struct {
	ks     schema.Keyspace
	ranges []placement.RangeReplicas
	// byToken is set when positions are not tokens (every partitioner but hash): a
	// range's keys lie at any position, so every range is read at once and its keys are
	// picked by their token.
	byToken bool
	// segments (hash partitioner) are the ranges as intervals of positions, in order: a
	// range that wraps past the top of the ring is two of them.
	segments []segment
}

// segment is the positions from..to (both included) of range ranges[rangeIndex].
type segment struct {
	from, to   uint64
	rangeIndex int
}

// keysGroup is what one round asks of one range's replicas, and what they answered.
type keysGroup struct {
	segment
	answers []replica.KeysPage // one per replica that answered, each with the group's keys only
}

// keysPlan returns the plan of a walk of keyspace. Erasure-coded keyspaces store chunk
// keys, placed apart from their key, so they have no walk of their keys by position.
func (c *Coordinator) keysPlan(ctx context.Context, keyspace string) (*keysPlan, error) {
	if err := c.member(); err != nil {
		return nil, err
	}
	if err := c.lwtCommits.awaitKeyspace(ctx, keyspace); err != nil {
		return nil, err
	}
	ks, layout, err := c.keyspace(keyspace)
	if err != nil {
		return nil, err
	}
	if !layout.whole() {
		return nil, invalid("keyspace %q is erasure-coded: its keys cannot be listed by position (scan it in key order)", keyspace)
	}
	ranges, err := c.placement.ScanRanges(ctx, ks, nil, nil)
	if err != nil {
		return nil, routed(err)
	}
	// Under the grouped partitioner a key without a hash tag has its position as token,
	// but a tagged key's token is its tag's, anywhere among the positions.
	plan := &keysPlan{ks: ks, ranges: ranges, byToken: ks.Partitioner != "hash"}
	if !plan.byToken {
		plan.layOut()
	}
	return plan, nil
}

// layOut sets the plan's segments from its ranges.
func (p *keysPlan) layOut() {
	for i, rg := range p.ranges {
		from, to := uint64(rg.Range.Start)+1, uint64(rg.Range.End)
		switch {
		case rg.Range.Start == rg.Range.End: // the whole ring
			p.segments = append(p.segments, segment{0, math.MaxUint64, i})
		case rg.Range.Start < rg.Range.End:
			p.segments = append(p.segments, segment{from, to, i})
		default: // wraps: (Start, max] and [0, End]
			if rg.Range.Start != math.MaxUint64 {
				p.segments = append(p.segments, segment{from, math.MaxUint64, i})
			}
			p.segments = append(p.segments, segment{0, to, i})
		}
	}
	slices.SortFunc(p.segments, func(a, b segment) int { return cmp.Compare(a.from, b.from) })
	if assert.Enabled {
		for i := 1; i < len(p.segments); i++ {
			// A replica refuses spans that are not ascending and disjoint (storage.ScanLive).
			assert.That(p.segments[i-1].to < p.segments[i].from, "coord: key scan segments [%d, %d] and [%d, %d] overlap: the ring's ranges are disjoint",
				p.segments[i-1].from, p.segments[i-1].to, p.segments[i].from, p.segments[i].to)
		}
	}
}

// round returns the groups of a round from cursor: with the hash partitioner the window
// segments from the one holding cursor, with the others every range.
func (p *keysPlan) round(cursor uint64, window int) []*keysGroup {
	var groups []*keysGroup
	if p.byToken {
		for i := range p.ranges {
			groups = append(groups, &keysGroup{segment: segment{cursor, math.MaxUint64, i}})
		}
		return groups
	}
	first := sort.Search(len(p.segments), func(i int) bool { return p.segments[i].to >= cursor })
	for _, s := range p.segments[first:min(first+window, len(p.segments))] {
		s.from = max(s.from, cursor)
		groups = append(groups, &keysGroup{segment: s})
	}
	return groups
}

// keysRound asks each group's replicas, as many as cl needs, for up to limit keys, and
// returns how many index entries they visited. Each node gets one request for all the
// groups it was chosen for (their spans, and with byToken their ranges),
// and its answer is shared out among them.
func (c *Coordinator) keysRound(ctx context.Context, plan *keysPlan, groups []*keysGroup, limit int, now hlc.Timestamp, cl consistency.Level) (visited int, err error) {
	localDC := c.view.Self().DC
	q := &quorum{self: c.view.Self().ID, workers: c.tasks, byNode: true}
	for i, g := range groups {
		replicas := plan.ranges[g.rangeIndex].Replicas
		required := levelRequirement(cl, replicas, localDC)
		candidates := c.readable(nil, replicas, i, true)
		if err := available(cl, required, candidates); err != nil {
			return 0, err
		}
		q.groups = append(q.groups, newGroup(required, candidates))
	}
	out, err := gather(ctx, q, func(m placement.Member, ts []target) (replica.KeysPage, error) {
		req := replica.KeysRequest{Keyspace: plan.ks.Name, Limit: limit, VisitMax: scanVisitMax(limit), Now: now}
		slices.SortFunc(ts, func(a, b target) int { return cmp.Compare(a.group, b.group) })
		for _, t := range ts {
			g := groups[t.group]
			if plan.byToken {
				req.Ranges = append(req.Ranges, plan.ranges[g.rangeIndex].Range)
			} else {
				req.Spans = append(req.Spans, replica.Span{From: g.from, To: g.to})
			}
		}
		if plan.byToken { // every group of the round walks the same positions
			req.Spans = []replica.Span{{From: groups[0].from, To: groups[0].to}}
		}
		return c.scanKeysReplica(ctx, m, req)
	}, func(ts []target, page replica.KeysPage) {
		visited += page.Visited
		for _, t := range ts {
			groups[t.group].take(plan, page, len(ts) > 1)
		}
	})
	switch {
	case err != nil:
		return 0, &TimeoutError{Level: cl, Required: q.groups[0].required, Acked: out.acked, Cause: err}
	case !out.met:
		return 0, fmt.Errorf("scan keys: a range has no replica left to ask (last replica error: %v): %w", out.lastErr, ErrUnavailable)
	}
	return visited, nil
}

// take records a node's answer for the group: with shared, the answer covers other
// groups too, so only the group's keys are kept (by position, or with byToken by
// token), and a walk that stopped after the group's span covered it all.
func (g *keysGroup) take(plan *keysPlan, page replica.KeysPage, shared bool) {
	if shared {
		rg, partitioner := plan.ranges[g.rangeIndex].Range, plan.ks.Partition()
		own := page.Records
		page.Records = nil
		for _, r := range own {
			mine := g.holds(keyPosition(r.Key))
			if plan.byToken {
				mine = rg.Contains(partitioner.Token(r.Key))
			}
			if mine {
				page.Records = append(page.Records, r)
			}
		}
		page.Done = page.Done || page.Next > g.to
	}
	g.answers = append(g.answers, page)
}

// holds reports whether position lies in the segment.
func (s segment) holds(position uint64) bool { return s.from <= position && position <= s.to }

// scanKeysReplica sends one scan_keys request within the replica timeout. A walk's
// requests serve its caller alone, so they end with the caller's context.
func (c *Coordinator) scanKeysReplica(ctx context.Context, m placement.Member, req replica.KeysRequest) (replica.KeysPage, error) {
	r, err := c.replica(m)
	if err != nil {
		return replica.KeysPage{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ReplicaTimeout)
	defer cancel()
	return r.ScanKeys(ctx, req)
}

// positionedKey is a key and its position.
type positionedKey struct {
	position uint64
	key      []byte
}

func (a positionedKey) compare(b positionedKey) int {
	if c := cmp.Compare(a.position, b.position); c != 0 {
		return c
	}
	return bytes.Compare(a.key, b.key)
}

func keysOf(pks []positionedKey) [][]byte {
	keys := make([][]byte, len(pks))
	for i, pk := range pks {
		keys[i] = pk.key
	}
	return keys
}

// mergeKeys settles what a round's answers established. Every replica of every group
// walked at least up to the frontier: the smallest position where one of them stopped
// short (or the round's last position, plus one, when none did). Below it, a key that
// every replica asked for its range returned is live (found); one that only some
// returned is disputed. end reports that the round reached the ring's last position.
func mergeKeys(groups []*keysGroup) (found, disputed []positionedKey, frontier uint64, end bool) {
	frontier, stopped := uint64(0), false
	last := groups[len(groups)-1].to
	for _, g := range groups {
		for _, page := range g.answers {
			if !page.Done && (!stopped || page.Next < frontier) {
				frontier, stopped = page.Next, true
			}
		}
	}
	end = !stopped && last == math.MaxUint64
	if !stopped && !end {
		frontier = last + 1
	}
	for _, g := range groups {
		held := map[string]int{}
		var order []positionedKey
		for _, page := range g.answers {
			for _, r := range page.Records {
				pk := positionedKey{position: keyPosition(r.Key), key: r.Key}
				if stopped && pk.position >= frontier {
					continue
				}
				if held[string(r.Key)] == 0 {
					order = append(order, pk)
				}
				held[string(r.Key)]++
			}
		}
		for _, pk := range order {
			if held[string(pk.key)] == len(g.answers) {
				found = append(found, pk)
			} else {
				disputed = append(disputed, pk)
			}
		}
	}
	return found, disputed, frontier, end
}

// keyPosition is a key's position: the hash partitioner's token of the key, as every
// replica's live-key index orders it (storage.KeyPosition).
func keyPosition(key []byte) uint64 { return uint64(hashPartitioner.Token(key)) }

var hashPartitioner = ring.HashPartitioner()

// cutAfter returns the first want keys of found (sorted), and the keys sharing the last
// one's position, with the position of the first key left out, when some are.
func cutAfter(found []positionedKey, want int) (cut []positionedKey, next uint64, ok bool) {
	if len(found) <= want {
		return nil, 0, false
	}
	end := want
	for end < len(found) && found[end].position == found[want-1].position {
		end++
	}
	if end == len(found) {
		return nil, 0, false
	}
	return found[:end], found[end].position, true
}

// settleParallel bounds the reads that settle disputed keys at once.
const settleParallel = 16

// settle reads each disputed key at level cl and returns those that are live: the
// replicas of its range disagreed, and the newest version among the level's decides.
func (c *Coordinator) settle(ctx context.Context, keyspace string, disputed []positionedKey, cl consistency.Level) ([]positionedKey, error) {
	if len(disputed) == 0 {
		return nil, nil
	}
	live := make([]bool, len(disputed))
	errs := make([]error, len(disputed))
	c.fanOut(len(disputed), settleParallel, func(i int) {
		_, live[i], errs[i] = c.Get(ctx, keyspace, disputed[i].key, cl)
	}, nil)
	var out []positionedKey
	for i, pk := range disputed {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if live[i] {
			out = append(out, pk)
		}
	}
	return out, nil
}
