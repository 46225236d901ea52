package coord

import (
	"cmp"
	"context"
	"slices"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica"
)

// PutResult is one write's outcome of PutEach, as Put returns it: the write's timestamp
// (stamped even when the write then failed) and its error.
type PutResult struct {
	Timestamp hlc.Timestamp
	Err       error
}

// putEachFanout bounds how many of PutEach's writes run at once when they go one by one.
const putEachFanout = 32

// putRoundBytesMax bounds the key and value bytes of the writes putTogether sends
// together, so that each replica's mutation of them fits one internode frame.
const putRoundBytesMax = replica.DefaultPageBytes

// PutEach writes puts (key, value and expiry of each; the timestamps are stamped here)
// to keyspace at level cl, each as a Put of its own would, with no order among them:
// they are independent callers' writes, as a client's PutMany carries. A nil error
// means the write was acknowledged at cl.
//
// Writes whose keys have the same replicas go to each replica together (putTogether):
// one mutate message to another node and one synced storage batch on this one, where
// Put sends one of each per write. The writes that cannot (at ANY, to an erasure-coded
// keyspace, or with a replica asleep, whose writes go to its offload holder) go through
// Put, concurrently on the coordinator's workers, up to putEachFanout at once.
func (c *Coordinator) PutEach(ctx context.Context, keyspace string, puts []lww.Record, cl consistency.Level) []PutResult {
	results := make([]PutResult, len(puts))
	if err := c.member(); err != nil {
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	alone := c.putTogether(ctx, keyspace, puts, cl, results)
	c.fanOut(len(alone), putEachFanout, func(k int) {
		i := alone[k]
		p, r := puts[i], &results[i]
		r.Timestamp, r.Err = c.Put(ctx, keyspace, p.Key, p.Value, p.ExpiresAt, cl)
	}, nil)
	return results
}

// putTogether is PutEach's batched path. It fills the results of the writes it takes
// and returns the indices of those it leaves to go alone: every one when there is only
// one (Put's pooled path is cheaper), at ANY or a serial level, or for an unknown or
// erasure-coded keyspace (Put says why, or takes them its own way). The writes go in
// rounds of at most putRoundBytesMax bytes, one after the other.
func (c *Coordinator) putTogether(ctx context.Context, keyspace string, puts []lww.Record, cl consistency.Level, results []PutResult) (alone []int) {
	ks, layout, err := c.keyspace(keyspace)
	if len(puts) < 2 || cl == consistency.Any || cl.IsSerial() || err != nil || !layout.whole() {
		for i := range puts {
			alone = append(alone, i)
		}
		return alone
	}
	offset := 0
	for round := range replica.Batches(puts, putRoundBytesMax) {
		alone = c.putRound(ctx, ks, round, offset, cl, results, alone)
		offset += len(round)
	}
	return alone
}

// writeBatch is the writes of a round whose keys have the same replicas, in the same
// states: one group of the round's gathering.
type writeBatch struct {
	required consistency.Requirement
	targets  []target           // the replicas whose acknowledgements are awaited
	hinted   []placement.Member // the others: every write is hinted for them
	// err, when set, is why the level cannot be met (unavailable): each write of the
	// batch fails with it, before it is stamped.
	err     error
	records []lww.Record
	writes  []batchedWrite // one per record
}

// batchedWrite is where a writeBatch's record came from: its index in PutEach's puts,
// and how many hints of it were stored.
type batchedWrite struct {
	index  int
	hinted int
}

// putRound writes puts, those of PutEach's from index offset on, and fills their results;
// it appends to alone the indices of those that must go through Put, and returns it.
//
// Each write is checked, stamped and hinted for its replicas that cannot acknowledge it
// as Put does. Then one gathering sends the writes: each replica is asked once, with
// every write of the round it holds (byNode), and a replica that fails or misses the
// deadline gets a hint of each (hintFailed). A batch's writes are acknowledged when its
// replicas' acknowledgements meet the level (each batch is a group of the gathering, and
// ends on its own: eachGroup); those of a batch that does not get a TimeoutError, as
// Put's would. A replica acknowledges a mutation once every record of it is durable, so
// an acknowledgement counts for each write it carried.
func (c *Coordinator) putRound(ctx context.Context, ks schema.Keyspace, puts []lww.Record, offset int, cl consistency.Level, results []PutResult, alone []int) []int {
	if err := c.gate.enter(ctx); err != nil {
		for j := range puts {
			results[offset+j].Err = err
		}
		return alone
	}
	defer c.gate.exit()
	self := c.view.Self()
	var batches []*writeBatch
	batchOf := map[string]*writeBatch{}
	var batchKey []byte
	var b *writeBatch // the batch of the writes whose replicas are the last placed; nil: they go alone
	c.placeKeys(ctx, ks, len(puts), func(j int) []byte { return puts[j].Key }, func(j int, members []placement.Member, same bool, err error) bool {
		p, i := puts[j], offset+j
		if err == nil && !same {
			b = nil
			if !slices.ContainsFunc(members, func(m placement.Member) bool { return m.State == cluster.StateAsleep }) {
				required := levelRequirement(cl, members, self.DC)
				batchKey = appendCandidatesKey(batchKey[:0], required, memberTargets(members))
				if b = batchOf[string(batchKey)]; b == nil {
					b = newWriteBatch(cl, required, members)
					batchOf[string(batchKey)] = b
					batches = append(batches, b)
				}
			}
		}
		// An invalid value is refused as Put refuses it, before its key's.
		switch err := cmp.Or(c.checkValue(p.Value), err); {
		case err != nil:
			results[i].Err = err
			return true
		case b == nil:
			alone = append(alone, i)
			return true
		case b.err != nil:
			results[i].Err = b.err
			return true
		}
		ts, err := c.stamp()
		results[i] = PutResult{Timestamp: ts, Err: err}
		if err != nil {
			return true
		}
		rec := lww.Record{Key: p.Key, Value: p.Value, ExpiresAt: p.ExpiresAt, Timestamp: ts}
		w := batchedWrite{index: i}
		for _, m := range b.hinted {
			if c.hint(m.ID, ks.Name, rec) {
				w.hinted++
			}
		}
		b.records = append(b.records, rec)
		b.writes = append(b.writes, w)
		return true
	})

	q := &quorum{self: self.ID, workers: c.tasks, askAll: true, byNode: true, eachGroup: true}
	var grouped []*writeBatch // by group of q
	for _, b := range batches {
		if len(b.records) == 0 {
			continue
		}
		for k := range b.targets {
			b.targets[k].group = len(q.groups)
		}
		q.groups = append(q.groups, newGroup(b.required, b.targets))
		grouped = append(grouped, b)
	}
	if len(q.groups) == 0 {
		return alone
	}
	out, err := gather(ctx, q, func(m placement.Member, ts []target) (struct{}, error) {
		records := grouped[ts[0].group].records
		if len(ts) > 1 {
			records = nil
			for _, t := range ts {
				records = append(records, grouped[t.group].records...)
			}
		}
		return struct{}{}, c.hintFailed(m.ID, ks.Name, c.applyRecords(m, ks.Name, records), records...)
	}, func([]target, struct{}) {})
	for g, gr := range q.groups {
		if gr.met() {
			continue
		}
		// Each group is judged on its own: the outcome's counts are over all of them.
		groupOut := outcome{acked: gr.acked.total(), lastErr: out.lastErr, refusals: out.refusals, refused: gr.lostToRefusals()}
		for _, w := range grouped[g].writes {
			results[w.index].Err = unmet(cl, gr.required, groupOut, w.hinted, err)
		}
	}
	return alone
}

// newWriteBatch returns the batch of writes to members at level cl, whose requirement
// is required: the members that acknowledge writes are its targets, the others are
// hinted, and err is set when the targets cannot meet the level.
func newWriteBatch(cl consistency.Level, required consistency.Requirement, members []placement.Member) *writeBatch {
	b := &writeBatch{required: required}
	writes := make([]replicaWrite, len(members))
	for k, m := range members {
		writes[k] = replicaWrite{member: m}
		if writes[k].acknowledged() {
			b.targets = append(b.targets, target{Member: m, slot: k})
		} else {
			b.hinted = append(b.hinted, m)
		}
	}
	b.err = checkWritable(writes, required, func(alive map[string]int) error {
		return &UnavailableError{Level: cl, Required: required, Alive: alive}
	})
	return b
}

// memberTargets returns members as targets, in order: what appendCandidatesKey keys.
func memberTargets(members []placement.Member) []target {
	ts := make([]target, len(members))
	for k, m := range members {
		ts[k] = target{Member: m}
	}
	return ts
}
