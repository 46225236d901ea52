package antientropy

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"sort"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/merkle"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica"
)

// repairRange brings the replicas of one token range in agreement: it compares their
// trees, then syncs the records of the sub-ranges that differ.
func (r *Repairer) repairRange(ctx context.Context, ks schema.Keyspace, rr placement.RangeReplicas, dc string) Stats {
	self := r.view.Self().ID
	st := Stats{Ranges: 1}
	var members []placement.Member // this node first: its tree sets the others' depth
	for _, m := range rr.Replicas {
		switch {
		case m.ID == self:
			members = slices.Insert(members, 0, m)
		case dc != "" && m.DC != dc:
		case m.State.Pending():
			// A joining node is being streamed its data; its tree would differ everywhere.
		case !m.State.Readable():
			st.Failed = 1 // down or asleep: it misses this repair
		default:
			members = append(members, m)
		}
	}
	if len(members) < 2 {
		if st.Failed == 0 {
			return Stats{} // nothing to compare with (one replica, or none in dc)
		}
		return st
	}

	trees, depth, err := r.trees(ctx, ks, rr.Range, members)
	var answered []placement.Member
	var kept []replica.Tree
	for i, t := range trees {
		if t.Merkle == nil {
			continue
		}
		answered, kept = append(answered, members[i]), append(kept, t)
		if members[i].ID != self {
			st.TreeBytes += int64(t.WireBytes())
		}
	}
	if err != nil {
		st.Failed = 1
		r.log.Warn("repair: tree of a replica", "keyspace", ks.Name, "range", rr.Range, "err", err)
		if len(kept) < 2 || answered[0].ID != self {
			return st
		}
	}
	members, trees = answered, kept

	differing := map[int]bool{}
	for _, t := range trees[1:] {
		leaves, err := merkle.Diff(trees[0].Merkle, t.Merkle)
		if err != nil {
			st.Failed = 1
			r.log.Warn("repair: compare trees", "keyspace", ks.Name, "range", rr.Range, "err", err)
			return st
		}
		for _, leaf := range leaves {
			differing[leaf] = true
		}
	}
	st.Subranges = 1 << depth
	st.DifferingSubranges = len(differing)
	if len(differing) == 0 {
		return st
	}
	watermarks := make([]hlc.Timestamp, len(trees))
	for i, t := range trees {
		watermarks[i] = t.Watermark
	}
	if err := r.syncRecords(ctx, ks, members, watermarks, subRanges(trees[0].Merkle, differing), &st); err != nil {
		st.Failed = 1
		r.log.Warn("repair: sync records", "keyspace", ks.Name, "range", rr.Range, "err", err)
	}
	return st
}

// trees returns every member's tree of rg, by index, and their depth: this node's first
// (members[0]), built as deep as allowed and folded to the depth its record count calls
// for, then the others' at that depth. A member that failed to answer has no tree; the
// error is the first failure.
func (r *Repairer) trees(ctx context.Context, ks schema.Keyspace, rg ring.Range, members []placement.Member) ([]replica.Tree, int, error) {
	trees := make([]replica.Tree, len(members))
	ask := func(depth, offset int) func(context.Context, int, replica.Replica) error {
		return func(ctx context.Context, i int, rep replica.Replica) error {
			t, err := rep.TreeDigest(ctx, replica.TreeRequest{Keyspace: ks.Name, Range: rg, Depth: depth})
			if err == nil {
				trees[offset+i] = t
			}
			return err
		}
	}
	deepest := merkle.DepthFor(rg, math.MaxInt, 1, r.cfg.MaxDepth)
	if err := r.each(ctx, members[:1], ask(deepest, 0))[0]; err != nil {
		return trees, 0, err
	}
	depth := merkle.DepthFor(rg, trees[0].Merkle.Records(), r.cfg.LeafRecords, deepest)
	folded, err := trees[0].Merkle.Fold(depth)
	if err != nil {
		return trees, 0, err
	}
	trees[0].Merkle = folded
	return trees, depth, errors.Join(r.each(ctx, members[1:], ask(depth, 1))...)
}

// subRanges returns the token ranges of the differing leaves of t, adjacent leaves
// merged into one range.
func subRanges(t *merkle.Tree, differing map[int]bool) []ring.Range {
	leaves := make([]int, 0, len(differing))
	for leaf := range differing {
		leaves = append(leaves, leaf)
	}
	sort.Ints(leaves)
	var out []ring.Range
	for i, leaf := range leaves {
		sub := t.SubRange(leaf)
		if i > 0 && leaves[i-1] == leaf-1 {
			out[len(out)-1].End = sub.End
			continue
		}
		out = append(out, sub)
	}
	return out
}

// syncRecords reads the records of subs from every member and gives each member the
// newest version of every key it lacks or holds older, in rounds: one scan page per
// member, then the writes each member needs, in batches of at most PageBytes. A member
// whose page is cut short (by records or bytes) sets a cut-off key; keys up to the lowest
// cut-off are final in the round, and the next round reads on from there. watermarks are
// the members' tombstone watermarks, by index.
func (r *Repairer) syncRecords(ctx context.Context, ks schema.Keyspace, members []placement.Member, watermarks []hlc.Timestamp, subs []ring.Range, st *Stats) error {
	self := r.view.Self().ID
	var cursor []byte
	for {
		req := replica.ScanRequest{Keyspace: ks.Name, Start: cursor, Limit: r.cfg.PageRecords, PageBytes: r.cfg.PageBytes, Ranges: subs}
		pages := make([][]lww.Record, len(members))
		errs := r.each(ctx, members, func(ctx context.Context, i int, rep replica.Replica) (err error) {
			pages[i], err = rep.Scan(ctx, req)
			return err
		})
		if err := errors.Join(errs...); err != nil {
			return err
		}
		var cutoff []byte
		for i, p := range pages {
			if members[i].ID != self {
				st.RecordBytes += int64(replica.RecordsWireBytes(p))
			}
			if req.CutShort(p) && (cutoff == nil || bytes.Compare(p[len(p)-1].Key, cutoff) < 0) {
				cutoff = p[len(p)-1].Key
			}
		}

		copies := map[string][]*lww.Record{} // key -> each member's version
		var keys []string
		for i, p := range pages {
			for j := range p {
				if cutoff != nil && bytes.Compare(p[j].Key, cutoff) > 0 {
					break // read again in the next round
				}
				k := string(p[j].Key)
				if copies[k] == nil {
					copies[k] = make([]*lww.Record, len(members))
					keys = append(keys, k)
				}
				copies[k][i] = &p[j]
				st.RecordsRead++
			}
		}
		sort.Strings(keys)
		sends := make([][]lww.Record, len(members))
		for _, k := range keys {
			newest, to, skipped := reconcile(copies[k], watermarks)
			if newest.Timestamp <= ks.TruncatedAt {
				continue // truncated: every replica drops it, none is given it
			}
			st.Skipped += skipped
			for _, i := range to {
				sends[i] = append(sends[i], newest)
			}
		}
		errs = r.each(ctx, members, func(ctx context.Context, i int, rep replica.Replica) error {
			for batch := range replica.Batches(sends[i], r.cfg.PageBytes) {
				if err := rep.Apply(ctx, ks.Name, batch); err != nil {
					return err
				}
			}
			return nil
		})
		for i, err := range errs {
			if err != nil {
				continue
			}
			st.RecordsSent += len(sends[i])
			if members[i].ID != self && len(sends[i]) > 0 {
				st.RecordBytes += int64(replica.RecordsWireBytes(sends[i]))
			}
		}
		if err := errors.Join(errs...); err != nil || cutoff == nil {
			return err
		}
		cursor = append(bytes.Clone(cutoff), 0)
	}
}

// reconcile decides who gets what for one key. copies[i] is member i's version, nil when
// it has none; watermarks[i] is its tombstone watermark. The newest version goes to every
// member whose copy is missing or older, except that a member lacking the key is not
// given a version at or below its watermark: the tombstone that deleted the key there may
// be one it has collected, and the version would come back to life. skipped counts those.
func reconcile(copies []*lww.Record, watermarks []hlc.Timestamp) (newest lww.Record, to []int, skipped int) {
	var best *lww.Record
	for _, c := range copies {
		if c != nil && (best == nil || lww.Newer(*c, *best)) {
			best = c
		}
	}
	for i, c := range copies {
		switch {
		case c == nil && best.Timestamp <= watermarks[i]:
			skipped++
		case c == nil || lww.Newer(*best, *c):
			to = append(to, i)
		}
	}
	return *best, to, skipped
}
