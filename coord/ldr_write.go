package coord

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/schema"
	"github.com/kuradb/kura/storage"
)

// ldrWrite stores rec of an erasure-coded keyspace: its m chunks (or, for a delete, a
// tombstone per chunk key), each to its owner, in parallel. It returns once the level's
// chunk acknowledgements are in (chunkRequirement). Owners known to be down, and owners
// that fail or time out, get a hint stored on this node, replayed when they are back.
func (c *Coordinator) ldrWrite(ctx context.Context, ks schema.Keyspace, rec storage.Record, cl consistency.Level) (hlc.Timestamp, error) {
	code, slots, err := c.chunkSlots(ctx, ks, rec.Key)
	if err != nil {
		return 0, err
	}
	required := chunkRequirement(cl, code, slotCounts(slots), c.view.Self().DC)
	var live, down []chunkSlot
	for _, s := range slots {
		if c.view.Alive(s.owner.ID) {
			live = append(live, s)
		} else {
			down = append(down, s)
		}
	}
	liveCounts := slotCounts(live)
	if !required.Hinted && !required.Satisfied(liveCounts) {
		return 0, chunkUnavailable(ks, cl, required, liveCounts)
	}

	rec.Timestamp = c.clock.Now()
	records, err := chunkRecords(code, slots, rec)
	if err != nil {
		return 0, fmt.Errorf("key %q of keyspace %s: %w", rec.Key, ks.Name, err)
	}
	hinted := 0
	for _, s := range down {
		if err := c.hints.add(s.owner.ID, ks.Name, records[s.index]); err != nil {
			c.log.Warn("store hint", "target", s.owner.ID, "err", err)
			continue
		}
		hinted++
	}
	if required.Hinted && len(live) == 0 {
		if hinted == 0 {
			return 0, chunkUnavailable(ks, cl, required, liveCounts)
		}
		return rec.Timestamp, nil
	}

	results := make(chan ackResult, len(live))
	for _, s := range live {
		go func() {
			chunk := records[s.index]
			payload, err := proto.Marshal(&kurav1.MutateRequest{Keyspace: ks.Name, Records: []*kurav1.Record{toProto(chunk)}})
			if err != nil {
				results <- ackResult{member: s.owner, err: err}
				return
			}
			results <- c.mutateOrHint(s.owner, ks.Name, chunk, payload)
		}()
	}
	if err := awaitAcks(ctx, results, owners(live), required, cl, hinted); err != nil {
		return 0, err
	}
	return rec.Timestamp, nil
}
