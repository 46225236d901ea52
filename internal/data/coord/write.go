package coord

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/paxos"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/io/clockguard"
)

// Put writes value under key at level cl and returns the write's timestamp. A non-zero
// expiresAt is the value's deadline: from then on the value reads as absent everywhere,
// as if deleted, and storage drops it (a deadline already past makes the put a delete
// that takes effect at once). Zero means the value never expires. The deadline is part of
// the version every replica stores, so replicas agree on it.
func (c *Coordinator) Put(ctx context.Context, keyspace string, key, value []byte, expiresAt hlc.Timestamp, cl consistency.Level) (hlc.Timestamp, error) {
	if err := c.checkValue(value); err != nil {
		return 0, err
	}
	return c.write(ctx, keyspace, lww.Record{Key: key, Value: value, ExpiresAt: expiresAt}, cl)
}

// maxExpiryUnixMs is the latest deadline a timestamp holds, in ms since the Unix epoch
// (hlc keeps 48 bits of milliseconds: the year 10889).
var maxExpiryUnixMs = (^hlc.Timestamp(0)).WallTime().UnixMilli()

// ExpiresAt returns the deadline of an expiry given either relatively, ttlMs from now on
// this node's clock (the clock reads compare deadlines with), or absolutely, atUnixMs
// milliseconds since the Unix epoch; zero when both are zero (never expires). A negative
// value, both at once, or a deadline past what a timestamp holds is an invalid argument.
// A deadline in the past is valid: Put then writes a value that is expired at once.
func (c *Coordinator) ExpiresAt(ttlMs, atUnixMs int64) (hlc.Timestamp, error) {
	switch {
	case ttlMs < 0 || atUnixMs < 0:
		return 0, invalid("negative expiry (ttl %d ms, at %d ms since the epoch)", ttlMs, atUnixMs)
	case ttlMs > 0 && atUnixMs > 0:
		return 0, invalid("an expiry is either relative (ttl) or absolute (at), not both")
	case ttlMs > 0:
		now := c.clock.Now().WallTime().UnixMilli()
		if ttlMs > maxExpiryUnixMs-now {
			return 0, invalid("ttl of %d ms ends past the latest deadline a timestamp holds", ttlMs)
		}
		atUnixMs = now + ttlMs
	case atUnixMs == 0:
		return 0, nil
	}
	if atUnixMs > maxExpiryUnixMs {
		return 0, invalid("expiry at %d ms since the epoch is past the latest deadline a timestamp holds (%d)", atUnixMs, maxExpiryUnixMs)
	}
	return hlc.FromTime(time.UnixMilli(atUnixMs)), nil
}

// Delete writes a tombstone for key at level cl.
func (c *Coordinator) Delete(ctx context.Context, keyspace string, key []byte, cl consistency.Level) (hlc.Timestamp, error) {
	return c.write(ctx, keyspace, lww.Record{Key: key, Tombstone: true}, cl)
}

// write sends rec to every replica and returns once the level's acknowledgements are in.
// rec is stamped now unless it carries a timestamp (a record restored from a snapshot,
// Restore).
func (c *Coordinator) write(ctx context.Context, keyspace string, rec lww.Record, cl consistency.Level) (hlc.Timestamp, error) {
	if err := c.member(); err != nil {
		return 0, err
	}
	if err := c.checkKey(rec.Key); err != nil {
		return 0, err
	}
	if err := c.checkType(rec.Type); err != nil {
		return 0, err
	}
	if cl.IsSerial() {
		return 0, invalid("%v is the level of lightweight transactions (compare-and-set); a plain write takes ANY to ALL", cl)
	}
	ks, layout, err := c.keyspace(keyspace)
	if err != nil {
		return 0, err
	}
	return layout.write(ctx, ks, rec, cl)
}

// replicatedWrite is write to a replicated keyspace: rec to each replica of its key.
func (c *Coordinator) replicatedWrite(ctx context.Context, ks schema.Keyspace, rec lww.Record, cl consistency.Level) (_ hlc.Timestamp, err error) {
	op := c.newWriteOp(ks.Name)
	if op.members, err = c.replicaSet(ctx, ks, rec.Key, op.members); err != nil {
		op.release(outcome{})
		return 0, err
	}
	required := levelRequirement(cl, op.members, c.view.Self().DC)
	op.required = required
	return c.writeMembers(ctx, op, op.members, rec, cl, func(alive map[string]int) error {
		return &UnavailableError{Level: cl, Required: required, Alive: alive}
	}, nil)
}

// writeMembers is the write of rec to members, one record each, whichever the layout:
// rec itself for a replicated keyspace (split nil), or split(rec)[i] for member i (an
// erasure-coded keyspace's chunk i). It fails with unavailable, before rec is stamped,
// when the members that acknowledge cannot meet op.required; it stamps rec now unless
// it carries a timestamp, then applies the writes (applyWrites). It releases op.
func (c *Coordinator) writeMembers(ctx context.Context, op *writeOp, members []placement.Member, rec lww.Record, cl consistency.Level,
	unavailable func(alive map[string]int) error, split func(lww.Record) ([]lww.Record, error)) (_ hlc.Timestamp, err error) {
	c.planWrites(op, members)
	if err := checkWritable(op.writes, op.required, unavailable); err != nil {
		op.release(outcome{})
		return 0, err
	}
	if rec.Timestamp == 0 {
		if rec.Timestamp, err = c.stampWrite(ctx); err != nil {
			op.release(outcome{})
			return 0, err
		}
		defer c.gate.exit()
	}
	if split == nil {
		for i := range op.writes {
			op.writes[i].record = rec
		}
	} else {
		records, err := split(rec)
		if err != nil {
			op.release(outcome{})
			return 0, err
		}
		for i := range op.writes {
			op.writes[i].record = records[i]
		}
	}
	return rec.Timestamp, c.applyWrites(ctx, op, cl, unavailable)
}

// stampWrite stamps a write once the gate lets it pass (a cluster snapshot may hold it,
// writeGate); unless it fails, the caller must call c.gate.exit once the write is
// answered.
func (c *Coordinator) stampWrite(ctx context.Context) (hlc.Timestamp, error) {
	if err := c.gate.enter(ctx); err != nil {
		return 0, err
	}
	ts, err := c.stamp()
	if err != nil {
		c.gate.exit()
	}
	return ts, err
}

// stamp gives a write its timestamp, or refuses it as unavailable when this node's clock
// cannot be trusted: better no write than one that beats, or loses to, the wrong writes.
func (c *Coordinator) stamp() (hlc.Timestamp, error) {
	ts, err := c.clock.Stamp()
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return ts, nil
}

// replicaWrite is one record for one replica: the same record for every replica of a
// replicated keyspace, chunk i for the owner of chunk i of an erasure-coded one.
type replicaWrite struct {
	member placement.Member
	record lww.Record
	// commit, when set, is the lightweight transaction's proposal whose record this is:
	// the replica gets it as a Paxos commit, which also ends the round there. A hint
	// carries the record alone, applied last writer wins as any write.
	commit *paxos.Proposal
	// holder, when set, is the awake node that keeps the write for the member while it
	// sleeps (its offload log); its acknowledgement counts as the member's.
	holder *cluster.Node
}

// records are the records the write carries: a commit's (a partition's batch whole), or
// its one record. A hint or an offload keeps each of them.
func (w replicaWrite) records() []lww.Record {
	if w.commit != nil {
		return w.commit.Records()
	}
	return []lww.Record{w.record}
}

// acknowledged reports whether the write's acknowledgement is awaited: from a current
// replica that takes writes, a reachable pending one (whose share the level was raised
// by), or the offload holder of a sleeping one.
func (w replicaWrite) acknowledged() bool {
	return w.member.Counts() || w.member.Receives() || w.holder != nil
}

// planWrites sets op's writes to one per member, without its record yet, each sleeping
// member given the node that keeps its write (offloadHolder), so that whether the level
// can be met is known before anything is stamped.
func (c *Coordinator) planWrites(op *writeOp, members []placement.Member) {
	op.writes = slices.Grow(op.writes[:0], len(members))
	for _, m := range members {
		op.writes = append(op.writes, replicaWrite{member: m, holder: c.offloadHolder(m, members)})
	}
}

// offloadHolder returns the node that keeps a write for a sleeping member (paper 003's
// write offloading): the first of the holders the member named before it slept that
// takes writes and is not itself one of the write's members. A holder among the members
// would keep two of the write's copies on one node, so the level would count one node
// twice; the sleeping node names enough holders that one is always outside a replica
// set. It is nil when the member does not sleep or no holder takes writes; the node is
// allocated only when there is one, so a write to awake replicas allocates nothing here.
func (c *Coordinator) offloadHolder(m placement.Member, members []placement.Member) *cluster.Node {
	if m.State != cluster.StateAsleep || m.Pending {
		return nil
	}
	for _, id := range c.view.Power(m.ID).Holders {
		member := slices.ContainsFunc(members, func(o placement.Member) bool { return o.ID == id })
		if member || c.view.State(id) != cluster.StateUp {
			continue
		}
		if n, ok := c.view.Node(id); ok {
			return &n
		}
	}
	return nil
}

// levelRequirement is what level cl asks of members, the replicas of a key or range
// written or read by a coordinator in dc: the members whose answers count
// (countedPerDC), raised for the pending ones (withPending). Reads are raised as writes
// are: a coordinator that has learned that a move completed writes to the new replicas
// only, while one that has not yet reads the old ones, so a read during a move must
// also hear the pending replicas, which every write reached (explorer seed 5692).
func levelRequirement(cl consistency.Level, members []placement.Member, dc string) consistency.Requirement {
	return withPending(cl.Require(countedPerDC(members), dc), members)
}

// withPending raises the level's requirement by every pending member (a node taking the
// range over, or a joining one), reachable or not: a write or read during a move must
// reach the level on the new replica set too, and is unavailable when it cannot.
func withPending(required consistency.Requirement, members []placement.Member) consistency.Requirement {
	for _, m := range members {
		if m.Pending || m.State.Pending() {
			required = required.WithPending(m.DC)
		}
	}
	return required
}

// checkWritable fails with unavailable, before anything is written, when the writes
// whose acknowledgements count cannot meet the level (a hint meets ANY).
func checkWritable(writes []replicaWrite, required consistency.Requirement, unavailable func(alive map[string]int) error) error {
	if required.Hinted {
		return nil
	}
	var buf [2]dcCount
	alive := dcTally(buf[:0])
	for _, w := range writes {
		if w.acknowledged() {
			alive = alive.add(w.member.DC, 1)
		}
	}
	if !alive.satisfies(required) {
		return unavailable(alive.counts())
	}
	return nil
}

// applyWrites sends each of op's writes to its replica, or to its offload holder, and
// returns once the level (op.required) is met. Replicas that are down, asleep with no
// holder that takes writes, and replicas that fail or time out get a hint stored on this
// node, so they receive the write later; a hint counts as an acknowledgement only for
// ANY. Pending replicas get the write too, and the requirement was raised for them
// (withPending), so their acknowledgements are awaited. It releases op: the caller must
// not use it afterwards.
func (c *Coordinator) applyWrites(ctx context.Context, op *writeOp, cl consistency.Level, unavailable func(alive map[string]int) error) error {
	out, err := c.gatherWrites(ctx, op, cl, unavailable)
	op.release(out)
	return err
}

// gatherWrites is applyWrites but for releasing op; out is the gathering's outcome.
func (c *Coordinator) gatherWrites(ctx context.Context, op *writeOp, cl consistency.Level, unavailable func(alive map[string]int) error) (out outcome, _ error) {
	keyspace, required := op.keyspace, op.required
	op.targets = slices.Grow(op.targets[:0], len(op.writes))
	hinted := 0
	for i, w := range op.writes {
		switch {
		case w.acknowledged():
			op.targets = append(op.targets, target{Member: w.member, slot: i})
		case c.hintAll(w.member.ID, keyspace, w.records()):
			hinted++
		}
	}
	if required.Hinted && hinted > 0 {
		// ANY is met by the hints already stored; the live replicas still get the write
		// in the background (each task is given its write, a copy), or a hint once the
		// coordinator is closed.
		for _, t := range op.targets {
			w := op.writes[t.slot]
			if !c.tasks.background(func() { c.applyOrHint(w, keyspace) }) {
				c.hintAll(w.member.ID, keyspace, w.records())
			}
		}
		return out, nil
	}
	if len(op.targets) == 0 {
		return out, unavailable(nil)
	}
	q := op.quorum(c.view.Self().ID, c.tasks, required, op.targets)
	q.askAll = true
	out, err := gather(ctx, q, op.ask, op.accept)
	if err != nil || !out.met {
		return out, unmet(cl, required, out, hinted, err)
	}
	return out, nil
}

// applyOrHint applies one write on its replica, or hints it when that fails (hintFailed).
func (c *Coordinator) applyOrHint(w replicaWrite, keyspace string) error {
	return c.hintFailed(w.member.ID, keyspace, c.apply(w, keyspace), w.records()...)
}

// hintFailed stores a hint of each of records for target when err says its replica
// failed them or missed the deadline, so it receives them later, and returns err. A
// replica that refused the writes' timestamps as too far ahead gets none: a hint would
// carry the same timestamp, and overwrite newer writes once real time caught up with it.
func (c *Coordinator) hintFailed(target, keyspace string, err error, records ...lww.Record) error {
	if errors.Is(err, clockguard.ErrClockOffset) {
		c.log.Warn("replica refused the write's timestamp; no hint stored", "target", target, "err", err)
		return err
	}
	if err != nil {
		for _, rec := range records {
			c.hint(target, keyspace, rec)
		}
	}
	return err
}

// hintAll stores a hint of each of records for target, and reports whether every one was
// stored.
func (c *Coordinator) hintAll(target, keyspace string, records []lww.Record) bool {
	all := true
	for _, rec := range records {
		all = c.hint(target, keyspace, rec) && all
	}
	return all
}

// hint stores a hint of rec for target, to be delivered when it can take it, and
// reports whether it was stored; the error of one that was not is logged.
func (c *Coordinator) hint(target, keyspace string, rec lww.Record) bool {
	if err := c.hints.Add(target, keyspace, rec); err != nil {
		c.log.Warn("store hint", "target", target, "err", err)
		return false
	}
	return true
}

// apply applies one write on its replica (or its offload holder), a remote one within
// the replica timeout (callContext).
func (c *Coordinator) apply(w replicaWrite, keyspace string) error {
	if w.holder != nil {
		ctx, cancel := c.callContext(w.holder.ID)
		defer cancel()
		// The record alone, as a hint carries it: the commit reaches the sleeping
		// replica's acceptor state when the next round on the key repairs it.
		return c.replicas.Replica(*w.holder).Offload(ctx, w.member.ID, keyspace, w.records())
	}
	if w.commit != nil {
		r, err := c.replica(w.member)
		if err != nil {
			return err
		}
		ctx, cancel := c.callContext(w.member.ID)
		defer cancel()
		return r.Commit(ctx, keyspace, *w.commit)
	}
	return c.applyRecords(w.member, keyspace, []lww.Record{w.record})
}

// applyRecords applies records on m's replica, a remote one within the replica timeout.
func (c *Coordinator) applyRecords(m placement.Member, keyspace string, records []lww.Record) error {
	r, err := c.replica(m)
	if err != nil {
		return err
	}
	ctx, cancel := c.callContext(m.ID)
	defer cancel()
	return r.Apply(ctx, keyspace, records)
}
