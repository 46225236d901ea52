package coord

import (
	"context"
	"errors"

	"github.com/kuradb/kura/clockguard"
	"github.com/kuradb/kura/lww"
)

// hintBatch is how many hints one replay pass sends to one target.
const hintBatch = 256

// ReplayHints sends stored hints to every target that takes writes again and removes
// those delivered. It returns how many were delivered; the node runtime calls it
// periodically.
func (c *Coordinator) ReplayHints(ctx context.Context) (int, error) {
	delivered := 0
	for _, n := range c.view.Nodes() {
		if state := c.view.State(n.ID); n.ID == c.view.Self().ID || !(state.Writable() || state.Pending()) {
			continue
		}
		pending, err := c.hints.For(n.ID, hintBatch)
		if err != nil {
			return delivered, err
		}
		target := c.replicas.Replica(n)
	replay:
		for _, h := range pending {
			if ctx.Err() != nil {
				return delivered, ctx.Err()
			}
			callCtx, cancel := c.replicaContext()
			err := target.Apply(callCtx, h.Keyspace, []lww.Record{h.Record})
			cancel()
			switch {
			case errors.Is(err, clockguard.ErrClockOffset):
				// A hint the target refuses as too far ahead was stamped by a bad clock:
				// delivered later, it would overwrite the writes made until then.
				c.log.Warn("dropping a hint the target refuses for its timestamp", "target", n.ID, "keyspace", h.Keyspace, "timestamp", h.Record.Timestamp, "err", err)
			case err != nil:
				break replay // the target is unreachable again; try on a later pass
			default:
				delivered++
			}
			if err := c.hints.Delivered(h); err != nil {
				return delivered, err
			}
		}
	}
	return delivered, nil
}
