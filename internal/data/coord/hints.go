package coord

import (
	"context"
	"errors"
	"fmt"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/hints"
	"github.com/kuradb/kura/internal/io/clockguard"
)

// hintBatch and hintBytesPerBatch bound the hints one replay pass reads for one target
// (a target's hints of large values are not all read into memory at once);
// hintsPerApply and hintBytesPerApply bound the hints of one keyspace sent in one
// request, so a waking node takes thousands of offloaded writes in a few round trips,
// not one each.
const (
	hintBatch         = 256
	hintBytesPerBatch = 16 << 20
	hintsPerApply     = 64
	hintBytesPerApply = 4 << 20
)

// ReplayHints sends stored hints to every target that takes writes again and removes
// those delivered. It returns how many were delivered; the node runtime calls it
// periodically.
func (c *Coordinator) ReplayHints(ctx context.Context) (int, error) {
	delivered := 0
	for _, n := range c.view.Nodes() {
		if state := c.view.State(n.ID); n.ID == c.view.Self().ID || !(state.Writable() || state.Pending()) {
			continue
		}
		d, _, err := c.replayTo(ctx, n)
		delivered += d
		if err != nil && ctx.Err() == nil && !errors.Is(err, errTargetUnreachable) {
			return delivered, err
		}
	}
	return delivered, ctx.Err()
}

// FlushHints delivers every hint this node holds for target, the writes offloaded to it
// included, and returns how many: a waking node asks each of its holders for this
// before it serves reads again. It fails when target stops answering.
func (c *Coordinator) FlushHints(ctx context.Context, target string) (int, error) {
	n, ok := c.view.Node(target)
	if !ok {
		return 0, fmt.Errorf("flush hints: unknown node %q", target)
	}
	delivered := 0
	for {
		d, more, err := c.replayTo(ctx, n)
		delivered += d
		if err != nil || !more {
			return delivered, err
		}
	}
}

// errTargetUnreachable ends a replay pass whose target stopped answering.
var errTargetUnreachable = errors.New("hint target unreachable")

// replayTo sends one page of target's hints, oldest first, a keyspace's consecutive hints
// in one request, and removes those delivered. more reports a full page: more may be
// stored.
func (c *Coordinator) replayTo(ctx context.Context, target cluster.Node) (delivered int, more bool, err error) {
	pending, more, err := c.hints.For(target.ID, hintBatch, hintBytesPerBatch)
	if err != nil {
		return 0, false, err
	}
	replica := c.replicas.Replica(target)
	apply := func(batch []hints.Hint) error {
		records := make([]lww.Record, len(batch))
		for i, h := range batch {
			records[i] = h.Record
		}
		callCtx, cancel := c.replicaContext()
		defer cancel()
		return replica.Apply(callCtx, batch[0].Keyspace, records)
	}
	for len(pending) > 0 {
		if ctx.Err() != nil {
			return delivered, false, ctx.Err()
		}
		batch := nextBatch(pending)
		pending = pending[len(batch):]
		err := apply(batch)
		if errors.Is(err, clockguard.ErrClockOffset) && len(batch) > 1 {
			// One record is refused: find which, one by one.
			for _, h := range batch {
				if err := c.deliver(h, apply([]hints.Hint{h})); err != nil {
					return delivered, false, err
				}
			}
			continue
		}
		for _, h := range batch {
			if err := c.deliver(h, err); err != nil {
				return delivered, false, err
			}
		}
		if err == nil {
			delivered += len(batch)
		}
	}
	return delivered, more, nil
}

// deliver settles one hint after its target answered with err: removed once applied, or
// once refused for a timestamp too far ahead (stamped by a bad clock: delivered later,
// it would overwrite the writes made until then); kept when the target is unreachable.
func (c *Coordinator) deliver(h hints.Hint, err error) error {
	switch {
	case errors.Is(err, clockguard.ErrClockOffset):
		c.log.Warn("dropping a hint the target refuses for its timestamp", "target", h.Target, "keyspace", h.Keyspace, "timestamp", h.Record.Timestamp, "err", err)
	case err != nil:
		return fmt.Errorf("%w: %s: %w", errTargetUnreachable, h.Target, err)
	}
	return c.hints.Delivered(h)
}

// nextBatch returns the longest prefix of pending that shares its first hint's keyspace,
// within the bounds of one request.
func nextBatch(pending []hints.Hint) []hints.Hint {
	size := 0
	for i, h := range pending {
		size += len(h.Record.Key) + len(h.Record.Value)
		if i > 0 && (h.Keyspace != pending[0].Keyspace || i == hintsPerApply || size > hintBytesPerApply) {
			return pending[:i]
		}
	}
	return pending
}
