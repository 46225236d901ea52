package coord

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/data/sched"
)

// Scan returns up to limit live records with start <= key < end in key order (nil bounds
// are open; deleted, expired and truncated keys are left out), reading every token range of the ring from as many replicas as level cl
// needs and keeping the newest version of each key. With the hash partitioner every range
// is read; with the ordered one only the ranges the key interval maps to.
func (c *Coordinator) Scan(ctx context.Context, keyspace string, start, end []byte, limit int, cl consistency.Level) ([]lww.Record, error) {
	if err := c.member(); err != nil {
		return nil, err
	}
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
	if err := c.lwtCommits.awaitKeyspace(ctx, keyspace); err != nil {
		return nil, err
	}
	if end != nil && start != nil && bytes.Compare(start, end) >= 0 {
		return nil, nil
	}
	ks, layout, err := c.keyspace(keyspace)
	if err != nil {
		return nil, err
	}
	return layout.scan(ctx, ks, start, end, limit, cl)
}

// replicatedScan is Scan of a replicated keyspace: it reads the ring's token ranges,
// each from as many of its replicas as cl needs.
func (c *Coordinator) replicatedScan(ctx context.Context, ks schema.Keyspace, start, end []byte, limit int, cl consistency.Level) ([]lww.Record, error) {
	ranges, err := c.placement.ScanRanges(ctx, ks, start, end)
	if err != nil {
		return nil, routed(err)
	}
	policy := c.readPolicy()
	tag := scanTag{id: c.nextScanID(), ras: policy.RaS}
	// With the hash partitioner every range holds keys anywhere in [start, end): each
	// round reads all of them. With the ordered one, ranges follow key order: a round
	// reads the next range (the paper's O), or as many as the row estimates say the
	// limit needs (P), and later ranges are read only if the limit is not met.
	pieces := ranges
	ordered := ks.Partitioner == "ordered"
	if ordered {
		first, last := tokenBounds(ks, start, end)
		pieces = inTokenOrder(ranges, first, last)
	}

	var out []lww.Record
	answered := 0 // key and value bytes of out, bounded by Limits.AnswerBytesMax
	cursor := start
	now := c.clock.Now()
	for next := 0; len(out) < limit && next < len(pieces); {
		n := len(pieces) - next
		var limits rangeLimits
		if ordered {
			n = 1
			if policy.Parallel {
				est := c.pieceEstimates(ctx, ks, pieces[next:], cursor)
				discount := discountFor(policy)
				n = piecesNeeded(est, limit-len(out), discount)
				limits = pieceLimits(pieces[next:next+n], est, limit-len(out), discount)
			}
		}
		batch := pieces[next : next+n]
		round, err := c.scanRound(ctx, ks, batch, cursor, end, limit-len(out), cl, tag, limits)
		if err != nil {
			return nil, err
		}
		if out == nil {
			// The round's records are this scan's own: the first round's are filtered in
			// place rather than copied into a slice grown one record at a time.
			out = round.records[:0]
		}
		for _, rec := range round.records {
			if visible(ks, rec, now) && len(out) < limit {
				out = append(out, rec)
				answered += len(rec.Key) + len(rec.Value)
			}
		}
		if answered > c.cfg.Limits.AnswerBytesMax {
			return nil, c.scanTooLarge()
		}
		if round.complete {
			next += n
			continue
		}
		if !ordered {
			cursor = append(append([]byte(nil), round.cutoff...), 0)
			continue
		}
		// Everything of the batch up to the cut-off key is known. The cut-off lies in
		// one of its ranges: go on just after it, from that range (the ones before it
		// are exhausted). A replica of a keyspace moving to new split keys may cut off
		// at a key this coordinator places after the batch: then the whole batch is
		// known, and the ranges between it and the cut-off are not read yet.
		i, after := pieceOf(batch, ks.Partition().Token(round.cutoff))
		if after {
			next += n
			continue
		}
		cursor = append(append([]byte(nil), round.cutoff...), 0)
		next += i
	}
	return out, nil
}

// scanTooLarge is the refusal of a scan whose answer would pass Limits.AnswerBytesMax:
// refused rather than cut short, which the caller could not tell from the scan's end.
func (c *Coordinator) scanTooLarge() error {
	return fmt.Errorf("%w: the scan's records pass %d bytes of keys and values; ask for fewer (a smaller limit) and go on from the last key", ErrAnswerFull, c.cfg.Limits.AnswerBytesMax)
}

// readPolicy is the node's read policy; FIFO with sequential scans without one.
func (c *Coordinator) readPolicy() sched.Policy {
	if c.reads == nil {
		return sched.Policy{}
	}
	return c.reads.Policy()
}

// nextScanID names a new scan: this coordinator's id hashed in the high half, so that
// scans of different coordinators meeting in one read stage differ, and a sequence in
// the low half. No randomness: a simulated run stays the same from one seed.
func (c *Coordinator) nextScanID() sched.ScanID {
	return sched.ScanID(xxhash.Sum64String(c.view.Self().ID)<<32 | c.scans.Add(1)&0xffffffff)
}

// scanTag is what every replica request of one scan carries: the scan's id, and whether
// its replicas are told as others answer (paper 004's RaS priority updates).
type scanTag struct {
	id  sched.ScanID
	ras bool
}

// tokenBounds returns the tokens of the keys in [start, end) under the keyspace's
// order-preserving partitioner: between first and last, both included.
func tokenBounds(ks schema.Keyspace, start, end []byte) (first, last ring.Token) {
	first, last = ks.Partition().Token(start), ^ring.Token(0)
	if end != nil {
		last = ks.Partition().Token(end)
	}
	return first, last
}

// piece is a token range read as one unit of an ordered scan, with the tokens it covers,
// first to last, both included: a ring range, or one of the two halves of the range
// that wraps past the ring's end, whose keys are at both ends of the key order.
type piece struct {
	placement.RangeReplicas
	first, last ring.Token
}

// inTokenOrder cuts the wrapping range in two and returns the pieces that hold tokens in
// [first, last], in token order: the order of their keys.
func inTokenOrder(ranges []placement.RangeReplicas, first, last ring.Token) []placement.RangeReplicas {
	const top = ^ring.Token(0)
	var pieces []piece
	add := func(rr placement.RangeReplicas, rg ring.Range, from, to ring.Token) {
		if from <= last && to >= first {
			rr.Range = rg
			pieces = append(pieces, piece{RangeReplicas: rr, first: from, last: to})
		}
	}
	for _, rr := range ranges {
		rg := rr.Range
		switch {
		case rg.Start < rg.End:
			add(rr, rg, rg.Start+1, rg.End)
		case rg.Start == top && rg.End == top:
			add(rr, rg, 0, top) // the whole ring
		default:
			// (Start, top] and [0, End]; the range (top, End] holds exactly [0, End].
			add(rr, ring.Range{Start: top, End: rg.End}, 0, rg.End)
			if rg.Start != top {
				add(rr, ring.Range{Start: rg.Start, End: top}, rg.Start+1, top)
			}
		}
	}
	sort.Slice(pieces, func(i, j int) bool { return pieces[i].first < pieces[j].first })
	out := make([]placement.RangeReplicas, len(pieces))
	for i, p := range pieces {
		out[i] = p.RangeReplicas
	}
	return out
}

// pieceOf returns the index of the piece of batch that holds token t, or reports that
// t lies after every piece of batch; a token before the batch gives 0.
func pieceOf(batch []placement.RangeReplicas, t ring.Token) (i int, after bool) {
	for i, rr := range batch {
		if rr.Range.Contains(t) {
			return i, false
		}
	}
	return 0, t > batch[len(batch)-1].Range.End
}

// estimateDiscount is how much of an estimate a parallel scan counts on where an
// estimate that is too high would cost a second round: the share of the first piece
// from the scan's start (interpolated from its token) when choosing the pieces, and
// every piece before another when setting that one's limit (pieceLimits). Row counts
// are gossiped every few seconds and a piece's share of a node's rows is pro rata of
// tokens, so a piece may hold a few rows fewer than estimated; counting on 7/8 makes a
// small error cost a few rows read, not a second round. It is P's and A's; kura's
// policy counts on whole estimates (discountFor).
const estimateDiscount = 7.0 / 8

// discountFor is the share of its estimates a parallel scan counts on under policy p:
// estimateDiscount, but the whole estimate under kura's discipline (Fair). The discount
// asks a range more whenever the estimates hold, and the rows it cannot use are read at a
// node where every queued read waits for them: under load (kura bench scheduling --virtual
// at 1000 clients, RF 1) it cost A 4 % more device time per scan than O, and kura's
// scans, asking for whole estimates, came out 2 to 5 % faster than A's, at O's device
// time. A range with fewer rows than estimated costs that scan a second round instead.
func discountFor(p sched.Policy) float64 {
	if p.Queue == sched.Fair {
		return 1
	}
	return estimateDiscount
}

// pieceEstimates estimates the rows a scan from cursor finds in each of the pieces, in
// order (pieceRows, with the first counted from cursor, pro rata of its tokens from
// cursor's on). 0 stands for none known of the first, +Inf for none known of the others.
func (c *Coordinator) pieceEstimates(ctx context.Context, ks schema.Keyspace, pieces []placement.RangeReplicas, cursor []byte) []float64 {
	owned := c.ownedFractions(ctx, ks)
	est := make([]float64, len(pieces))
	for i, p := range pieces {
		est[i] = c.pieceRows(ks, p, owned)
	}
	est[0] *= fromToken(pieces[0].Range, ks.Partition().Token(cursor))
	if math.IsInf(est[0], 1) || math.IsNaN(est[0]) {
		est[0] = 0
	}
	return est
}

// fromToken is the share of rg's tokens at or after t, in [0, 1]; 0 when rg does not
// hold t (a cursor past the piece: nothing of it is counted on).
func fromToken(rg ring.Range, t ring.Token) float64 {
	if rg.Start == rg.End || !rg.Contains(t) {
		return 0
	}
	// Unsigned subtraction wraps, which gives the right widths for a wrapping range.
	return (float64(rg.End-t) + 1) / float64(rg.End-rg.Start)
}

// piecesNeeded is paper 004's estimate for P: how many of the pieces, from the first, a
// scan must read to find remaining rows, by their estimates (pieceEstimates). The paper
// counts the first piece as none, since the scan may start anywhere in it, so that a
// scan reads one piece more than it needs half the time; kura counts the first piece's
// share from the scan's start on, at discount (discountFor). A piece whose replicas
// published nothing counts as enough.
func piecesNeeded(est []float64, remaining int, discount float64) int {
	rows := est[0] * discount
	if rows >= float64(remaining) {
		return 1
	}
	for i := 1; i < len(est); i++ {
		if rows += est[i]; rows >= float64(remaining) {
			return i + 1
		}
	}
	return len(est)
}

// rangeLimits are the limits a parallel round asks each range's replicas for, by range;
// nil asks every replica for the round's limit.
type rangeLimits map[ring.Range]int

// pieceLimits returns the limit of each of the pieces a parallel round reads: the rows
// remaining less those the pieces before it are estimated to hold (each counted at
// discount: discountFor), at least one. With the round's whole limit, every node would read
// its whole share though the limit needs only part of the last one's: as much work as
// half a range per scan, which is most of what P cost the paper's benefit here (see
// docs/scheduling.md). A piece with fewer rows than counted on cuts the round short,
// and the scan goes on from the cut-off as after any limit: slower, never wrong.
func pieceLimits(batch []placement.RangeReplicas, est []float64, remaining int, discount float64) rangeLimits {
	if len(batch) < 2 {
		return nil
	}
	limits := rangeLimits{}
	var before float64
	for i, p := range batch {
		limits[p.Range] = max(1, remaining-int(before))
		before += est[i] * discount
	}
	return limits
}

// of returns the limit of a request for the ranges asked: that of the first of them in
// key order, the largest, since the node reads them in key order as one answer; the
// round's limit when one of them has none.
func (l rangeLimits) of(asked []ring.Range, limit int) int {
	if l == nil {
		return limit
	}
	out := 0
	for _, rg := range asked {
		n, ok := l[rg]
		if !ok {
			return limit
		}
		out = max(out, n)
	}
	return min(out, limit)
}

// pieceRows estimates the rows of one piece: each readable replica's published rows, in
// proportion to the share of the ring the piece is of what the replica holds, averaged
// over the replicas. +Inf when none published any.
func (c *Coordinator) pieceRows(ks schema.Keyspace, p placement.RangeReplicas, owned map[string]float64) float64 {
	var sum float64
	var known int
	for _, m := range p.Replicas {
		rows, ok := c.rowsOf(m.ID, ks.Name)
		if !ok || !m.Reads() || owned[m.ID] == 0 {
			continue
		}
		sum += float64(rows) * p.Range.Fraction() / owned[m.ID]
		known++
	}
	if known == 0 {
		return math.Inf(1)
	}
	return sum / float64(known)
}

func (c *Coordinator) rowsOf(node, keyspace string) (int64, bool) {
	if c.rows == nil {
		return 0, false
	}
	return c.rows.Rows(node, keyspace)
}

// ownedFractions returns the share of the ring each node holds a replica of for ks.
func (c *Coordinator) ownedFractions(ctx context.Context, ks schema.Keyspace) map[string]float64 {
	owned := map[string]float64{}
	all, err := c.placement.ScanRanges(ctx, ks, nil, nil)
	if err != nil {
		return owned
	}
	for _, rr := range all {
		for _, m := range rr.Replicas {
			owned[m.ID] += rr.Range.Fraction()
		}
	}
	return owned
}

// roundResult is what one pass over the ranges established.
type roundResult struct {
	records  []lww.Record // newest version per key, in key order, tombstones included
	complete bool         // no replica was cut short by the limit
	cutoff   []byte       // when not complete: records are final up to this key
	// valuesMissing: a digest told of a live version the values read do not hold (newer
	// than theirs, or not told apart from it); records are then to be read again.
	valuesMissing bool
}

// scanMerge keeps the newest version of each key the replicas of a round answered, and
// the smallest key at which one of them was cut short by the limit. Each answer is in key
// order (a replica reads its storage in order), so the answers are merged as sorted
// lists: a round usually has one or two, and a map of every key read, then sorted, was
// the largest part of a short scan's cost on its coordinator.
type scanMerge struct {
	answers   [][]lww.Record // each in key order, the keys the round asked for only
	digests   [][]lww.Record // answers of digests (replica.ScanRequest.Digest), the same way
	truncated bool
	cutoff    []byte
}

// add takes in one replica's answer, of digests when digest is set.
func (s *scanMerge) add(recs []lww.Record, limit int, keep func(key []byte) bool, digest bool) {
	if len(recs) >= limit {
		last := recs[len(recs)-1].Key
		if !s.truncated || bytes.Compare(last, s.cutoff) < 0 {
			s.cutoff = last
		}
		s.truncated = true
	}
	if keep != nil {
		recs = slices.DeleteFunc(recs, func(rec lww.Record) bool { return !keep(rec.Key) })
	}
	if !slices.IsSortedFunc(recs, compareKeys) {
		// Not as a replica answers; sorted here rather than trusted, since the merge
		// relies on it. The order of a key's versions does not matter: the newest wins.
		slices.SortStableFunc(recs, compareKeys)
	}
	switch {
	case len(recs) == 0:
	case digest:
		s.digests = append(s.digests, recs)
	default:
		s.answers = append(s.answers, recs)
	}
}

func compareKeys(a, b lww.Record) int { return bytes.Compare(a.Key, b.Key) }

// inAsked returns a filter of the keys of ordered keyspace ks whose token, as this
// coordinator places them, lies in the ranges a node was asked for. A replica of an
// ordered keyspace moving to new split keys answers the keys under either definition
// (local.Local.Scan); a key it answers for a range this coordinator places elsewhere
// belongs to another group. (With the hash partitioner a replica answers only the keys
// of the ranges asked, so its answer needs no filter.)
func inAsked(ks schema.Keyspace, asked []ring.Range) func([]byte) bool {
	p := ks.Partition()
	return func(key []byte) bool {
		t := p.Token(key)
		for _, rg := range asked {
			if rg.Contains(t) {
				return true
			}
		}
		return false
	}
}

// result returns the records known to be final, in key order: the newest version of
// each key, up to the cut-off when an answer was cut short. The digests are then held
// against them (applyDigests).
func (s *scanMerge) result() roundResult {
	result := roundResult{complete: !s.truncated, cutoff: s.cutoff}
	final := func(key []byte) bool { return !s.truncated || bytes.Compare(key, s.cutoff) <= 0 }
	result.records = dedupSorted(mergeSorted(s.answers, final))
	if len(s.digests) == 0 {
		return result
	}
	digests, ok := newestDigests(mergeSorted(s.digests, final))
	if ok {
		result.records, ok = applyDigests(result.records, digests)
	}
	if !ok {
		return roundResult{valuesMissing: true}
	}
	return result
}

// mergeSorted merges answers, each in key order, into one list of their final keys'
// versions, in key order (a key's versions side by side).
func mergeSorted(answers [][]lww.Record, final func(key []byte) bool) []lww.Record {
	if len(answers) == 1 {
		recs := answers[0]
		n := len(recs)
		for n > 0 && !final(recs[n-1].Key) {
			n--
		}
		return recs[:n]
	}
	total := 0
	for _, a := range answers {
		total += len(a)
	}
	merged := make([]lww.Record, 0, total)
	heads := answers
	for {
		// The smallest key at the head of an answer; answers are few, so a linear pass
		// costs less than a heap.
		at := -1
		for i, a := range heads {
			if len(a) > 0 && (at < 0 || bytes.Compare(a[0].Key, heads[at][0].Key) < 0) {
				at = i
			}
		}
		if at < 0 || !final(heads[at][0].Key) {
			return merged
		}
		merged = append(merged, heads[at][0])
		heads[at] = heads[at][1:]
	}
}

// newestDigests keeps the newest version of each key of digests, which are in key order,
// as dedupSorted does; ok is false when two live versions of one timestamp differ in
// value, expiry or type: Newer would order them by their digests, not by their values.
func newestDigests(digests []lww.Record) (newest []lww.Record, ok bool) {
	out := digests[:0]
	for _, d := range digests {
		n := len(out)
		if n == 0 || !bytes.Equal(out[n-1].Key, d.Key) {
			out = append(out, d)
			continue
		}
		last := out[n-1]
		if d.Timestamp == last.Timestamp && !d.Tombstone && !last.Tombstone &&
			(!bytes.Equal(d.Value, last.Value) || d.ExpiresAt != last.ExpiresAt || d.Type != last.Type) {
			return nil, false
		}
		if lww.Newer(d, last) {
			out[n-1] = d
		}
	}
	return out, true
}

// applyDigests holds digests, the newest version of each key the digest answers tell
// of, in key order, against recs, the newest versions the values read, in key order. A
// version of recs that a digest shows to be the newest stays; a digest's tombstone
// newer than recs' version of its key (or of a key recs lack) takes its place, since a
// tombstone needs no value. ok is false when a digest tells of a live version recs do
// not hold: newer than theirs, or of the same timestamp with another value or expiry.
// Only the values can settle that: the round is read again.
func applyDigests(recs, digests []lww.Record) (out []lww.Record, ok bool) {
	var tombstones []lww.Record // newer tombstones of keys recs lack
	i := 0
	for _, d := range digests {
		for i < len(recs) && bytes.Compare(recs[i].Key, d.Key) < 0 {
			i++
		}
		switch {
		case i < len(recs) && bytes.Equal(recs[i].Key, d.Key):
			if recs[i], ok = newestOf(recs[i], d); !ok {
				return nil, false
			}
		case d.Tombstone:
			tombstones = append(tombstones, d)
		default:
			return nil, false
		}
	}
	if len(tombstones) == 0 {
		return recs, true
	}
	return mergeSorted([][]lww.Record{recs, tombstones}, func([]byte) bool { return true }), true
}

// newestOf returns the newer of r, a version read with its value, and d, one told by its
// digest; ok is false when that takes d's value, which the digest does not carry.
func newestOf(r, d lww.Record) (newest lww.Record, ok bool) {
	switch {
	case d.Tombstone:
		// Both without values, or a tombstone against a value: Newer needs neither.
		if lww.Newer(d, r) {
			return d, true
		}
		return r, true
	case d.Timestamp < r.Timestamp, d.Timestamp == r.Timestamp && r.Tombstone:
		return r, true
	case d.Timestamp == r.Timestamp && d.ExpiresAt == r.ExpiresAt && d.Type == r.Type && replica.DigestMatches(d.Value, r.Value):
		return r, true // the same version
	}
	return lww.Record{}, false
}

// dedupSorted keeps the newest version of each key of recs, which are in key order.
func dedupSorted(recs []lww.Record) []lww.Record {
	out := recs[:0]
	for _, rec := range recs {
		if n := len(out); n > 0 && bytes.Equal(out[n-1].Key, rec.Key) {
			if lww.Newer(rec, out[n-1]) {
				out[n-1] = rec
			}
			continue
		}
		out = append(out, rec)
	}
	return out
}

// scanRound reads [cursor, end) once from every range, as readRound does with digests
// from the nodes it does not ask for values. When a digest tells of a version the values
// read lack (a write not yet on every replica), the round is read again with every node
// asked for values, as Cassandra reads again after a digest mismatch. The values of a
// QUORUM scan's second replica, read, copied and sent only to compare versions, were
// about a fifth of its CPU.
func (c *Coordinator) scanRound(ctx context.Context, ks schema.Keyspace, ranges []placement.RangeReplicas, cursor, end []byte, limit int, cl consistency.Level, tag scanTag, limits rangeLimits) (roundResult, error) {
	round, err := c.readRound(ctx, ks, ranges, cursor, end, limit, cl, tag, limits, true)
	if err != nil || !round.valuesMissing {
		return round, err
	}
	c.scanRereads.Add(1)
	return c.readRound(ctx, ks, ranges, cursor, end, limit, cl, tag, limits, false)
}

// ScanRereads returns how many scan rounds this coordinator has read again since it
// started because a replica's digests told of versions the values read lacked: replicas
// that disagree, as while writes are in flight, or hints and repair lag behind.
func (c *Coordinator) ScanRereads() uint64 {
	return c.scanRereads.Load()
}

// readRound reads [cursor, end) once from every range; with digests, a node that is not
// the first asked for any of its groups, and whose groups each need more than one
// answer, answers with digests of values (replica.ScanRequest.Digest). Ranges with the
// same requirement and the same candidates, in the same order, make one group of the
// gatherer: it would ask the same nodes for each of them in the same order, and a node
// answers for all the ranges it is asked for at once, so their groups would advance as
// one. With the hash partitioner a scan reads every range of the ring (48 with 3 nodes
// of 16 vnodes) and, on a cluster no larger than its replication, every range has the
// same replicas, in one of a few orders: a few groups instead of 48, each range's
// candidates worked out once per distinct list of replicas, took most of the
// coordinator's own CPU out of a short scan. Each node gets one request for all the
// ranges it was chosen for.
func (c *Coordinator) readRound(ctx context.Context, ks schema.Keyspace, ranges []placement.RangeReplicas, cursor, end []byte, limit int, cl consistency.Level, tag scanTag, limits rangeLimits, digests bool) (roundResult, error) {
	localDC := c.view.Self().DC
	q := &quorum{self: c.view.Self().ID, workers: c.tasks, byNode: true}
	var groupRanges [][]ring.Range // by group: the ranges it stands for
	// The placement gives ranges with the same replicas one list (ScanRanges): each
	// list's requirement and candidates are worked out once. Lists that are equal but
	// not shared end up in one group all the same, by their candidates.
	groupOfList := map[replicaList]int{}
	groupOfCandidates := map[string]int{}
	var key []byte
	for _, rg := range ranges {
		list := listOf(rg.Replicas)
		g, ok := groupOfList[list]
		if !ok {
			required := levelRequirement(cl, rg.Replicas, localDC)
			candidates := c.readable(nil, rg.Replicas, len(q.groups), true)
			if err := available(cl, required, candidates); err != nil {
				return roundResult{}, err
			}
			key = appendCandidatesKey(key[:0], required, candidates)
			if g, ok = groupOfCandidates[string(key)]; !ok {
				g = len(q.groups)
				groupOfCandidates[string(key)] = g
				groupRanges = append(groupRanges, nil)
				q.groups = append(q.groups, newGroup(required, candidates))
			}
			groupOfList[list] = g
		}
		groupRanges[g] = append(groupRanges[g], rg.Range)
	}
	askedOf := func(ts []target) []ring.Range {
		var asked []ring.Range
		for _, t := range ts {
			asked = append(asked, groupRanges[t.group]...)
		}
		if ring.Covers(asked) {
			// A node holding every range (a cluster no larger than its replication) is
			// asked for all of them: say so in one range rather than 48, which the
			// other replica of a QUORUM scan spent 8 % of its CPU decoding.
			return wholeRing
		}
		return asked
	}
	merge := &scanMerge{}
	waiting := &scanWaiting{members: map[string]placement.Member{}}
	first := firstCandidates(q.groups)
	digestFrom := func(m placement.Member, ts []target) bool {
		if !digests || first[m.ID] {
			return false
		}
		for _, t := range ts {
			if q.groups[t.group].required.Total < 2 {
				return false // its one answer carries the values
			}
		}
		return true
	}
	out, err := gather(ctx, q, func(m placement.Member, ts []target) ([]lww.Record, error) {
		asked := askedOf(ts)
		req := replica.ScanRequest{Keyspace: ks.Name, Start: cursor, End: end, Limit: limits.of(asked, limit), Ranges: asked,
			Scan: tag.id, ScanLimit: limit, Nodes: max(len(first), 1), BytesMax: c.cfg.Limits.AnswerBytesMax, Digest: digestFrom(m, ts)}
		waiting.add(m)
		return c.scanReplica(m, req)
	}, func(ts []target, recs []lww.Record) {
		asked := askedOf(ts)
		var keep func([]byte) bool
		if ks.Partitioner == "ordered" {
			keep = inAsked(ks, asked)
		}
		merge.add(recs, limits.of(asked, limit), keep, digestFrom(ts[0].Member, ts))
		if left := waiting.answered(ts[0].ID); tag.ras && len(left) > 0 {
			c.tellProgress(tag.id, left)
		}
	})
	switch {
	case errors.Is(out.lastErr, replica.ErrScanTooLarge):
		return roundResult{}, c.scanTooLarge()
	case err != nil:
		return roundResult{}, &TimeoutError{Level: cl, Required: q.groups[0].required, Acked: out.acked, Cause: err}
	case !out.met:
		return roundResult{}, fmt.Errorf("scan: a range has no replica left to ask (last replica error: %v): %w", out.lastErr, ErrUnavailable)
	}
	return merge.result(), nil
}

// replicaList names one replica list of a scan's plan by its memory: the ranges that
// share the list have the same replicas.
type replicaList struct {
	first *placement.Member
	n     int
}

func listOf(replicas []placement.Member) replicaList {
	if len(replicas) == 0 {
		return replicaList{}
	}
	return replicaList{first: &replicas[0], n: len(replicas)}
}

// appendCandidatesKey appends what decides how the gatherer asks for a range: its
// requirement, and its candidates in the order they would be asked.
func appendCandidatesKey(key []byte, required consistency.Requirement, candidates []target) []byte {
	key = strconv.AppendInt(key, int64(required.Total), 10)
	key = strconv.AppendBool(append(key, ' '), required.Hinted)
	dcs := make([]string, 0, len(required.PerDC))
	for dc := range required.PerDC {
		dcs = append(dcs, dc)
	}
	slices.Sort(dcs)
	for _, dc := range dcs {
		key = appendString(append(key, ' '), dc)
		key = strconv.AppendInt(append(key, '='), int64(required.PerDC[dc]), 10)
	}
	for _, t := range candidates {
		key = appendMemberKey(key, t.Member)
	}
	return key
}

func appendMemberKey(key []byte, m placement.Member) []byte {
	key = appendString(append(key, '|'), m.ID)
	key = appendString(append(key, ' '), m.DC)
	key = strconv.AppendUint(append(key, ' '), uint64(m.State), 10)
	return strconv.AppendBool(append(key, ' '), m.Pending)
}

// appendString appends s after its length, which tells where it ends whatever bytes it
// holds: cheaper than quoting it, which a scan's plan did for every replica of every
// range (strconv's quoting was 3.6 % of a coordinator's CPU on short scans).
func appendString(key []byte, s string) []byte {
	return append(binary.AppendUvarint(key, uint64(len(s))), s...)
}

// scanReplica sends one scan request within the replica timeout.
func (c *Coordinator) scanReplica(m placement.Member, req replica.ScanRequest) ([]lww.Record, error) {
	r, err := c.replica(m)
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.replicaContext()
	defer cancel()
	defer c.pending.asked(c.readPolicy(), m.ID, req.Limit, true).done()
	return r.Scan(ctx, req)
}

// firstCandidates returns the distinct nodes a round asks first, one per group: the
// nodes the scan waits for, as RaS orders scans, and those asked for values.
func firstCandidates(groups []*group) map[string]bool {
	first := map[string]bool{}
	for _, g := range groups {
		if len(g.candidates) > 0 {
			first[g.candidates[0].ID] = true
		}
	}
	return first
}

// scanWaiting tracks the nodes a scan round asked and that have not answered yet. Asks
// run in their own goroutines; answers arrive in the gathering one.
type scanWaiting struct {
	mu      sync.Mutex
	members map[string]placement.Member
}

func (w *scanWaiting) add(m placement.Member) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.members[m.ID] = m
}

// answered removes the node that answered and returns those still waited for.
func (w *scanWaiting) answered(id string) []placement.Member {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.members, id)
	left := make([]placement.Member, 0, len(w.members))
	for _, m := range w.members {
		left = append(left, m)
	}
	return left
}

// tellProgress tells each node still working on a scan how many nodes it waits for, in
// the background: the update is advice, and the scan does not wait for it.
func (c *Coordinator) tellProgress(scan sched.ScanID, left []placement.Member) {
	for _, m := range left {
		r, err := c.replica(m)
		if err != nil {
			continue
		}
		c.tasks.background(func() {
			ctx, cancel := c.replicaContext()
			defer cancel()
			if err := r.ScanProgress(ctx, scan, len(left)); err != nil {
				c.log.Debug("scan progress not delivered", "node", m.ID, "err", err)
			}
		})
	}
}
