package coord

import (
	"context"
	"fmt"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/schema"
)

// ldrWrite stores rec of an erasure-coded keyspace: its m chunks (or, for a delete, a
// tombstone per chunk key), each to its owner, in parallel. It returns once the level's
// chunk acknowledgements are in (chunkRequirement). rec is stamped now unless it carries
// a timestamp, as write does. Owners known to be down, and owners
// that fail or time out, get a hint stored on this node, replayed when they are back.
func (c *Coordinator) ldrWrite(ctx context.Context, ks schema.Keyspace, rec lww.Record, cl consistency.Level) (hlc.Timestamp, error) {
	code, slots, err := c.chunkSlots(ctx, ks, rec.Key)
	if err != nil {
		return 0, err
	}
	required := chunkRequirement(cl, code, slotCounts(slots), c.view.Self().DC)
	unavailable := func(alive map[string]int) error { return chunkUnavailable(ks, cl, required, alive) }
	op := c.newWriteOp(ks.Name)
	op.required = required
	c.planWrites(op, owners(slots))
	if err := checkWritable(op.writes, required, unavailable); err != nil {
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
	records, err := chunkRecords(code, slots, rec)
	if err != nil {
		op.release(outcome{})
		return 0, fmt.Errorf("key %q of keyspace %s: %w", rec.Key, ks.Name, err)
	}
	for i := range op.writes {
		op.writes[i].record = records[i]
	}
	return rec.Timestamp, c.applyWrites(ctx, op, cl, unavailable)
}
