package coord

import (
	"context"
	"fmt"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
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
	op := c.newWriteOp(ks.Name)
	op.required = required
	return c.writeMembers(ctx, op, owners(slots), rec, cl, func(alive map[string]int) error {
		return chunkUnavailable(ks, cl, required, alive)
	}, func(rec lww.Record) ([]lww.Record, error) {
		records, err := chunkRecords(code, slots, rec)
		if err != nil {
			return nil, fmt.Errorf("key %q of keyspace %s: %w", rec.Key, ks.Name, err)
		}
		return records, nil
	})
}
