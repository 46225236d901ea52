package coord

import (
	"context"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/placement"
)

// readAnswer is one replica's answer to a read.
type readAnswer struct {
	member placement.Member
	record lww.Record
	found  bool
}

// Get reads key at level cl: it asks the nearest replicas the level needs, answers with
// the newest version among them, and repairs those that were stale. A deleted, expired
// or truncated key is reported as not found. A found record carries its ExpiresAt. At a
// serial level the read is linearizable: a Paxos prepare round that completes any
// proposal left in progress (serialGet).
func (c *Coordinator) Get(ctx context.Context, keyspace string, key []byte, cl consistency.Level) (lww.Record, bool, error) {
	if err := c.member(); err != nil {
		return lww.Record{}, false, err
	}
	if err := c.checkKey(key); err != nil {
		return lww.Record{}, false, err
	}
	if cl == consistency.Any {
		return lww.Record{}, false, invalid("ANY is a write level; read at ONE or above")
	}
	if cl.IsSerial() {
		return c.serialGet(ctx, keyspace, key, cl)
	}
	if err := c.lwtCommits.await(ctx, keyspace, key); err != nil {
		return lww.Record{}, false, err
	}
	ks, layout, err := c.keyspace(keyspace)
	if err != nil {
		return lww.Record{}, false, err
	}
	return layout.get(ctx, ks, key, cl)
}

// get is Get of a replicated keyspace, in op's memory; out is the gathering's outcome.
func (c *Coordinator) get(ctx context.Context, ks schema.Keyspace, cl consistency.Level, op *readOp) (_ lww.Record, _ bool, out outcome, err error) {
	if out, err = c.gatherRead(ctx, ks, cl, op); err != nil {
		return lww.Record{}, false, out, err
	}
	rec, found, err := c.resolve(ks, op.answers)
	return rec, found, out, err
}

// gatherRead asks the replicas of op's key the level needs, their answers left in
// op.answers; out is the gathering's outcome.
func (c *Coordinator) gatherRead(ctx context.Context, ks schema.Keyspace, cl consistency.Level, op *readOp) (out outcome, err error) {
	if op.members, err = c.replicaSet(ctx, ks, op.key, op.members); err != nil {
		return out, err
	}
	self := c.view.Self()
	required := levelRequirement(cl, op.members, self.DC)
	op.targets = c.readable(op.targets, op.members, 0, false)
	if err := available(cl, required, op.targets); err != nil {
		return out, err
	}
	out, err = gather(ctx, op.quorum(self.ID, c.tasks, required, op.targets), op.ask, op.accept)
	if err != nil || !out.met {
		return out, unmet(cl, required, out, 0, err)
	}
	return out, nil
}

// resolve picks the newest answer and sends it to the replicas that answered with an
// older version or none (read repair, in the background). A tombstone or an expired
// record is repaired like a value, so that it shadows the older values on every replica,
// and then reported as not found. A version at or before the keyspace's truncation is
// neither repaired nor reported: every replica drops it.
func (c *Coordinator) resolve(ks schema.Keyspace, answers []readAnswer) (lww.Record, bool, error) {
	var newest lww.Record
	found := false
	for _, a := range answers {
		if a.found && (!found || lww.Newer(a.record, newest)) {
			newest, found = a.record, true
		}
	}
	if !found || newest.Timestamp <= ks.TruncatedAt {
		return lww.Record{}, false, nil
	}
	for _, a := range answers {
		if !a.found || lww.Newer(newest, a.record) {
			c.repairLater(a.member, ks.Name, newest)
		}
	}
	// Only a deadline needs the clock, whose reading was 3 % of a pipeline of GETs.
	if newest.Tombstone || newest.ExpiresAt != 0 && !newest.Live(c.clock.Now()) {
		return lww.Record{}, false, nil
	}
	return newest, true, nil
}

// repairLater writes rec, in the background, to a replica that answered a read with
// less. Once the coordinator is closed the repair is skipped: the next read or the
// anti-entropy repairer makes it.
func (c *Coordinator) repairLater(m placement.Member, keyspace string, rec lww.Record) {
	c.tasks.background(func() {
		if err := c.apply(replicaWrite{member: m, record: rec}, keyspace); err != nil {
			c.log.Debug("read repair", "replica", m.ID, "err", err)
		}
	})
}
