package coord

import (
	"context"

	"github.com/kuradb/kura/cluster"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/placement"
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
	if cl.IsSerial() {
		return false
	}
	ks, err := c.keyspaces.Get(keyspace)
	if err != nil || ks.Erasure.Enabled() {
		return false
	}
	self := c.view.Self()
	var sole placement.Member // this node, as the replica of every key
	var required consistency.Requirement
	for _, p := range puts {
		if len(p.Value) > c.cfg.Limits.ValueBytesMax || c.checkKey(p.Key) != nil {
			return false
		}
		members, err := c.replicaSet(ctx, ks, p.Key)
		if err != nil || len(members) != 1 {
			return false
		}
		sole = members[0]
		if sole.ID != self.ID || sole.State != cluster.StateUp || sole.Pending || !sole.Counts() {
			return false
		}
		required = withPending(cl.Require(countedPerDC(members), self.DC), members)
		if err := checkWritable(c.planWrites(members), required, func(map[string]int) error { return ErrUnavailable }); err != nil {
			return false
		}
	}
	local, err := c.replica(sole)
	if err != nil {
		return false
	}
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
	if err := local.Apply(ctx, keyspace, records); err != nil {
		for i := range errs {
			errs[i] = &TimeoutError{Level: cl, Required: required, Cause: err}
		}
	}
	return true
}
