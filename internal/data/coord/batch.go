package coord

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica"
)

// PutAll writes puts (key, value and expiry of each; the timestamps are stamped here) to
// keyspace at level cl, in the order given, and returns each one's outcome, as Put one
// after the other would: a nil error means the write was acknowledged at cl.
//
// When this node is the one replica of every key and is up (a one-node cluster, or a
// keyspace with a single replica placed here), the writes are stamped in order and
// committed as one synced storage batch: they share one WAL sync, and since the batch
// is atomic on the only copy there is, no reader sees a later write of the list without
// the earlier ones. With more than one replica that would not hold (a quorum read could
// find a later write on the replica that applied the batch and miss an earlier one on
// the two that had not yet), so the writes go one after the other through Put, each
// acknowledged before the next is sent.
func (c *Coordinator) PutAll(ctx context.Context, keyspace string, puts []lww.Record, cl consistency.Level) []error {
	errs := make([]error, len(puts))
	if err := c.member(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	if len(puts) > 1 && c.putAllLocally(ctx, keyspace, puts, cl, errs) {
		return errs
	}
	for i, p := range puts {
		_, errs[i] = c.Put(ctx, keyspace, p.Key, p.Value, p.ExpiresAt, cl)
	}
	return errs
}

// putAllLocally is PutAll's single-replica path: it reports false, having written
// nothing, unless every put is valid and this node, up, is the only replica of each
// key; otherwise it writes them all as one batch and fills errs.
func (c *Coordinator) putAllLocally(ctx context.Context, keyspace string, puts []lww.Record, cl consistency.Level, errs []error) bool {
	for _, p := range puts {
		if c.checkValue(p.Value) != nil {
			return false
		}
	}
	_, sole, required, ok := c.replicaHere(ctx, keyspace, cl, len(puts), func(i int) []byte { return puts[i].Key },
		func(self placement.Member, members []placement.Member) (consistency.Requirement, bool) {
			if len(members) != 1 || self.State != cluster.StateUp || self.Pending || !self.Counts() {
				return consistency.Requirement{}, false
			}
			required := levelRequirement(cl, members, self.DC)
			err := checkWritable([]replicaWrite{{member: self}}, required, func(map[string]int) error { return ErrUnavailable })
			return required, err == nil
		})
	if !ok {
		return false
	}
	r, err := c.replica(sole)
	if err != nil {
		return false
	}
	local, ok := r.(replica.ClientBatchApplier)
	if !ok {
		return false
	}
	if err := c.gate.enter(ctx); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return true
	}
	defer c.gate.exit()
	records := make([]lww.Record, len(puts))
	for i, p := range puts {
		ts, err := c.stamp()
		if err != nil {
			// The clock cannot be trusted: every write is refused, none was sent.
			for j := range errs {
				errs[j] = err
			}
			return true
		}
		records[i] = lww.Record{Key: p.Key, Value: p.Value, ExpiresAt: p.ExpiresAt, Timestamp: ts}
	}
	// The local replica has no timeout, as on Put's local path: it returns when its
	// storage does.
	if err := local.ApplyClientBatch(ctx, keyspace, records); err != nil {
		for i := range errs {
			errs[i] = &TimeoutError{Level: cl, Required: required, Cause: err}
		}
	}
	return true
}

// GetResult is one key's outcome of GetAll, as Get returns it.
type GetResult struct {
	Record lww.Record
	Found  bool
	Err    error
}

// getAllFanout bounds how many of GetAll's reads run at once when they go one by one.
const getAllFanout = 32

// answerFull is the error of a key GetAll did not read.
func (c *Coordinator) answerFull() error {
	return fmt.Errorf("%w: the values read before this key reached %d bytes; read it by itself", ErrAnswerFull, c.cfg.Limits.AnswerBytesMax)
}

// GetAll reads keys from keyspace at level cl, each as Get would, and returns their
// outcomes in order. When this node is a replica of every key, can serve reads, and its
// answer alone meets cl (ONE or LOCAL_ONE; any level on one node, or for a keyspace
// with one replica here), the keys are read from its storage in one task of the read
// stage (getAllLocally). Otherwise one gathering asks each replica it needs once for
// all its keys (getAllTogether); should it fall short, the Gets run concurrently on the
// coordinator's workers, up to getAllFanout at once.
//
// The values answered are bounded by Limits.AnswerBytesMax: the keys after it was
// reached are not read and answer ErrAnswerFull. Each replica stops there; the Gets
// under way finish, so their answer holds at most that and getAllFanout values more.
//
// The values answered may be storage's own bytes (replica.ManyGetter): callers read
// them and never write to them.
func (c *Coordinator) GetAll(ctx context.Context, keyspace string, keys [][]byte, cl consistency.Level) []GetResult {
	results := make([]GetResult, len(keys))
	if err := c.member(); err != nil {
		for i := range results {
			results[i].Err = err
		}
		return results
	}
	for i, key := range keys {
		if err := c.lwtCommits.await(ctx, keyspace, key); err != nil {
			for j := i; j < len(keys); j++ {
				results[j].Err = err
			}
			return results
		}
	}
	if len(keys) > 1 && (c.getAllLocally(ctx, keyspace, keys, cl, results) || c.getAllTogether(ctx, keyspace, keys, cl, results)) {
		return results
	}
	var answered atomic.Int64 // bytes of the values read so far
	read := c.fanOut(len(keys), getAllFanout, func(i int) {
		r := &results[i]
		r.Record, r.Found, r.Err = c.Get(ctx, keyspace, keys[i], cl)
		answered.Add(int64(len(r.Record.Value)))
	}, func() bool { return answered.Load() >= int64(c.cfg.Limits.AnswerBytesMax) })
	if read < len(keys) {
		full := c.answerFull()
		for i := read; i < len(keys); i++ {
			results[i].Err = full
		}
	}
	return results
}

// getAllLocally is GetAll's local path: it reports false, having answered nothing,
// unless every key is valid, this node is one of its replicas and can serve reads, and
// its answer alone meets cl (ONE, LOCAL_ONE, or any level when it is the only replica);
// otherwise it reads them all in one call of the local replica and fills results. That
// is what Get does at such a level, one key at a time: it asks the nearest replica,
// this node, and resolves its one answer. Should the local read fail, the keys go
// through Get, which asks the other replicas.
func (c *Coordinator) getAllLocally(ctx context.Context, keyspace string, keys [][]byte, cl consistency.Level, results []GetResult) bool {
	if cl == consistency.Any {
		return false
	}
	ks, self, _, ok := c.replicaHere(ctx, keyspace, cl, len(keys), func(i int) []byte { return keys[i] },
		func(self placement.Member, members []placement.Member) (consistency.Requirement, bool) {
			required := levelRequirement(cl, members, self.DC)
			return required, self.Reads() && satisfiable([]target{{Member: self}}, required)
		})
	if !ok {
		return false
	}
	r, err := c.replica(self)
	if err != nil {
		return false
	}
	local, ok := r.(replica.ManyGetter)
	if !ok {
		return false
	}
	records, found, err := local.GetMany(ctx, keyspace, keys, c.cfg.Limits.AnswerBytesMax)
	if err != nil {
		return false
	}
	// One answer per key: resolve reports it as Get would and has nothing to repair.
	one := make([]readAnswer, 1)
	c.resolveAll(ks, results, func(i int) ([]readAnswer, bool) {
		if i >= len(records) {
			return nil, false
		}
		one[0] = readAnswer{member: self, record: records[i], found: found[i]}
		return one, true
	})
	return true
}

// resolveAll fills results, one key's each, as Get answers: from the answers its
// replicas gave (answers(i)), or ErrAnswerFull for a key they did not answer (answered
// false) because the values before it reached Limits.AnswerBytesMax.
func (c *Coordinator) resolveAll(ks schema.Keyspace, results []GetResult, answers func(i int) (_ []readAnswer, answered bool)) {
	var full error
	for i := range results {
		a, answered := answers(i)
		if !answered {
			if full == nil {
				full = c.answerFull()
			}
			results[i].Err = full
			continue
		}
		rec, ok, err := c.resolve(ks, a)
		results[i] = GetResult{Record: rec, Found: ok, Err: err}
	}
}

// manyAnswer is one replica's answer to getAllTogether: its versions of the keys asked
// (indices into the batch), in order, as far as its answer reached.
type manyAnswer struct {
	member  placement.Member
	asked   []int
	records []lww.Record
	found   []bool
}

// getAllTogether is GetAll's path for keys that other replicas than this node's must
// answer: one gathering for all of them, which asks each replica it needs once, for
// every key it needs it for (replica.ManyGetter: one read_many message to another node,
// one storage call on this one), and resolves each key from its answers as Get does,
// repairing the replicas that answered less. Keys with the same requirement and
// candidates, in the same order, are one group of the gathering, as a scan's ranges are
// (readRound); on a cluster no larger than its replication every key is in one. A key a
// replica counted did not answer (its answer reached Limits.AnswerBytesMax first) is
// answered ErrAnswerFull. It reports false, having answered nothing, when a key is
// invalid, the keyspace unknown or erasure-coded, the level serial or ANY, or when the
// gathering fell short (replicas failed and none was left to ask): the keys then go
// through Get one by one, which says why.
func (c *Coordinator) getAllTogether(ctx context.Context, keyspace string, keys [][]byte, cl consistency.Level, results []GetResult) bool {
	if cl == consistency.Any || cl.IsSerial() {
		return false
	}
	ks, layout, err := c.keyspace(keyspace)
	if err != nil || !layout.whole() {
		return false
	}
	self := c.view.Self()
	q := &quorum{self: self.ID, workers: c.tasks, byNode: true}
	var groupKeys [][]int // by group: the indices of its keys
	groupOf := map[string]int{}
	var candidatesKey []byte
	g, placed := 0, true
	c.placeKeys(ctx, ks, len(keys), func(i int) []byte { return keys[i] }, func(i int, members []placement.Member, same bool, err error) bool {
		if err != nil {
			placed = false
			return false
		}
		if !same {
			required := levelRequirement(cl, members, self.DC)
			candidates := c.readable(nil, members, len(q.groups), false)
			if !satisfiable(candidates, required) {
				placed = false
				return false
			}
			candidatesKey = appendCandidatesKey(candidatesKey[:0], required, candidates)
			var ok bool
			if g, ok = groupOf[string(candidatesKey)]; !ok {
				g = len(q.groups)
				groupOf[string(candidatesKey)] = g
				groupKeys = append(groupKeys, nil)
				q.groups = append(q.groups, newGroup(required, candidates))
			}
		}
		groupKeys[g] = append(groupKeys[g], i)
		return true
	})
	if !placed {
		return false
	}
	answers := make([][]readAnswer, len(keys))
	short := make([]bool, len(keys))
	out, err := gather(ctx, q, func(m placement.Member, ts []target) (manyAnswer, error) {
		a := manyAnswer{member: m}
		for _, t := range ts {
			a.asked = append(a.asked, groupKeys[t.group]...)
		}
		r, err := c.replica(m)
		if err != nil {
			return a, err
		}
		many, ok := r.(replica.ManyGetter)
		if !ok {
			return a, fmt.Errorf("replica %s reads keys one at a time", m.ID)
		}
		batch := make([][]byte, len(a.asked))
		for j, i := range a.asked {
			batch[j] = keys[i]
		}
		rctx, cancel := c.callContext(m.ID)
		defer cancel()
		a.records, a.found, err = many.GetMany(rctx, keyspace, batch, c.cfg.Limits.AnswerBytesMax)
		return a, err
	}, func(_ []target, a manyAnswer) {
		for j, i := range a.asked {
			if j >= len(a.records) {
				short[i] = true
				continue
			}
			answers[i] = append(answers[i], readAnswer{member: a.member, record: a.records[j], found: a.found[j]})
		}
	})
	if err != nil || !out.met {
		return false
	}
	c.resolveAll(ks, results, func(i int) ([]readAnswer, bool) { return answers[i], !short[i] })
	return true
}

// replicaHere is the check PutAll's and GetAll's local paths share: it reports whether,
// for each of n keys (key(i)), the key is valid, this node is one of its replicas, and
// fits accepts this node's member and the key's replica set, returning the requirement
// at cl that fits computed. ok is false at a serial level and for an unknown or
// erasure-coded keyspace. It returns the keyspace, this node's member and the last
// key's requirement.
func (c *Coordinator) replicaHere(ctx context.Context, keyspace string, cl consistency.Level, n int, key func(i int) []byte,
	fits func(self placement.Member, members []placement.Member) (consistency.Requirement, bool)) (ks schema.Keyspace, self placement.Member, required consistency.Requirement, ok bool) {
	if cl.IsSerial() {
		return ks, self, required, false
	}
	ks, layout, err := c.keyspace(keyspace)
	if err != nil || !layout.whole() {
		return ks, self, required, false
	}
	selfID := c.view.Self().ID
	ok = true
	c.placeKeys(ctx, ks, n, key, func(_ int, members []placement.Member, same bool, err error) bool {
		if err != nil {
			ok = false
		} else if !same {
			at := slices.IndexFunc(members, func(m placement.Member) bool { return m.ID == selfID })
			if at < 0 {
				ok = false
			} else {
				self = members[at]
				required, ok = fits(self, members)
			}
		}
		return ok
	})
	return ks, self, required, ok
}

// placeKeys places n keys of ks (key(i)) in order, calling each with key i's replica set,
// or with the error that the key is invalid or cannot be placed, until each returns
// false. same is true when the replica set, states included, is the last placed key's:
// what the caller made of that one holds for this one too (a pipeline of GETs spent 5 %
// of its CPU making it again). The batches place their keys through it; members is
// reused from one key to the next.
func (c *Coordinator) placeKeys(ctx context.Context, ks schema.Keyspace, n int, key func(i int) []byte,
	each func(i int, members []placement.Member, same bool, err error) bool) {
	var members, prev []placement.Member
	placed := false
	for i := range n {
		err := c.checkKey(key(i))
		if err == nil {
			members, err = c.replicaSet(ctx, ks, key(i), members)
		}
		if err != nil {
			if !each(i, nil, false, err) {
				return
			}
			continue
		}
		same := placed && slices.Equal(members, prev)
		if !same {
			placed, prev = true, append(prev[:0], members...)
		}
		if !each(i, members, same, nil) {
			return
		}
	}
}
