package coord

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/ring"
	"github.com/kuradb/kura/storage"
)

// Put writes value under key at level cl and returns the write's timestamp.
func (c *Coordinator) Put(ctx context.Context, keyspace string, key, value []byte, cl consistency.Level) (hlc.Timestamp, error) {
	if len(value) > c.cfg.Limits.ValueBytesMax {
		return 0, invalid("value of %d bytes exceeds the limit of %d bytes", len(value), c.cfg.Limits.ValueBytesMax)
	}
	return c.write(ctx, keyspace, storage.Record{Key: key, Value: value}, cl)
}

// Delete writes a tombstone for key at level cl.
func (c *Coordinator) Delete(ctx context.Context, keyspace string, key []byte, cl consistency.Level) (hlc.Timestamp, error) {
	return c.write(ctx, keyspace, storage.Record{Key: key, Tombstone: true}, cl)
}

// ackResult is one replica's answer to a mutation.
type ackResult struct {
	member ring.Member
	err    error
}

// write sends rec to every replica and returns once the level's acknowledgements are in.
// Replicas known to be down, and replicas that fail or time out, get a hint stored on
// this node; a hint counts as an acknowledgement only for ANY.
func (c *Coordinator) write(ctx context.Context, keyspace string, rec storage.Record, cl consistency.Level) (hlc.Timestamp, error) {
	if err := c.checkKey(rec.Key); err != nil {
		return 0, err
	}
	ks, err := c.catalog.Get(keyspace)
	if err != nil {
		return 0, err
	}
	if ks.Erasure.Enabled() {
		return c.ldrWrite(ctx, ks, rec, cl)
	}
	set, err := c.replicasFor(ctx, ks, rec.Key)
	if err != nil {
		return 0, err
	}
	required := cl.Require(set.rfPerDC, c.view.Self().DC)
	var live, down []ring.Member
	for _, m := range set.members {
		if c.view.Alive(m.ID) {
			live = append(live, m)
		} else {
			down = append(down, m)
		}
	}
	liveCounts := dcCounts(live)
	if !required.Hinted && !required.Satisfied(liveCounts) {
		return 0, &UnavailableError{Level: cl, Required: required, Alive: liveCounts}
	}

	rec.Timestamp = c.clock.Now()
	hinted := 0
	for _, m := range down {
		if err := c.hints.add(m.ID, keyspace, rec); err != nil {
			c.log.Warn("store hint", "target", m.ID, "err", err)
			continue
		}
		hinted++
	}
	if required.Hinted && len(live) == 0 {
		if hinted == 0 {
			return 0, &UnavailableError{Level: cl, Required: required, Alive: liveCounts}
		}
		return rec.Timestamp, nil
	}

	payload, err := proto.Marshal(&kurav1.MutateRequest{Keyspace: keyspace, Records: []*kurav1.Record{toProto(rec)}})
	if err != nil {
		return 0, fmt.Errorf("encode mutation: %w", err)
	}
	results := make(chan ackResult, len(live))
	// Remote replicas first, each in its own goroutine; this node's own copy is written
	// inline meanwhile, which spares a goroutine on the common single-node path.
	var self *ring.Member
	for i, m := range live {
		if m.ID == c.view.Self().ID {
			self = &live[i]
			continue
		}
		go func() { results <- c.mutateOrHint(m, keyspace, rec, payload) }()
	}
	if self != nil {
		results <- c.mutateOrHint(*self, keyspace, rec, payload)
	}
	if err := awaitAcks(ctx, results, live, required, cl, hinted); err != nil {
		return 0, err
	}
	return rec.Timestamp, nil
}

// mutateOrHint applies rec on one replica; a replica that fails or misses the deadline
// gets a hint, so it receives the write later.
func (c *Coordinator) mutateOrHint(m ring.Member, keyspace string, rec storage.Record, payload []byte) ackResult {
	err := c.mutateReplica(m, keyspace, rec, payload)
	if err != nil {
		if herr := c.hints.add(m.ID, keyspace, rec); herr != nil {
			c.log.Warn("store hint", "target", m.ID, "err", herr)
		}
	}
	return ackResult{member: m, err: err}
}

// awaitAcks counts the answers of the targets (one per entry, an owner listed once per
// chunk it holds) until required is met, can no longer be met, or ctx ends. A failed
// target has been hinted by its sender; a hint counts for ANY only.
func awaitAcks(ctx context.Context, results <-chan ackResult, targets []ring.Member, required consistency.Requirement, cl consistency.Level, hinted int) error {
	acks := map[string]int{}
	pending := dcCounts(targets)
	var lastErr error
	for range targets {
		select {
		case r := <-results:
			pending[r.member.DC]--
			if r.err != nil {
				lastErr = r.err
				if required.Hinted {
					hinted++
				}
			} else {
				acks[r.member.DC]++
			}
			if required.Satisfied(acks) || (required.Hinted && hinted > 0) {
				return nil
			}
			if !required.Satisfied(addCounts(acks, pending)) {
				return &TimeoutError{Level: cl, Required: required, Acked: sum(acks), Hinted: hinted, Cause: lastErr}
			}
		case <-ctx.Done():
			return &TimeoutError{Level: cl, Required: required, Acked: sum(acks), Hinted: hinted, Cause: ctx.Err()}
		}
	}
	return &TimeoutError{Level: cl, Required: required, Acked: sum(acks), Hinted: hinted, Cause: lastErr}
}

// mutateReplica applies rec on one replica: directly when it is this node.
func (c *Coordinator) mutateReplica(m ring.Member, keyspace string, rec storage.Record, payload []byte) error {
	if m.ID == c.view.Self().ID {
		_, err := c.engine.Apply(keyspace, rec)
		return err
	}
	peer, err := c.peer(m)
	if err != nil {
		return err
	}
	ctx, cancel := c.replicaContext()
	defer cancel()
	_, err = c.transport.Call(ctx, peer, kindMutate, payload)
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("replica %s: no answer within %v", m.ID, c.cfg.ReplicaTimeout)
	}
	return err
}

func dcCounts(members []ring.Member) map[string]int {
	counts := map[string]int{}
	for _, m := range members {
		counts[m.DC]++
	}
	return counts
}

func addCounts(a, b map[string]int) map[string]int {
	out := make(map[string]int, len(a)+len(b))
	for dc, n := range a {
		out[dc] += n
	}
	for dc, n := range b {
		out[dc] += n
	}
	return out
}

func sum(counts map[string]int) int {
	total := 0
	for _, n := range counts {
		total += n
	}
	return total
}

func toProto(r storage.Record) *kurav1.Record {
	return &kurav1.Record{Key: r.Key, Value: r.Value, Timestamp: uint64(r.Timestamp), Tombstone: r.Tombstone}
}

func fromProto(r *kurav1.Record) storage.Record {
	return storage.Record{Key: r.GetKey(), Value: r.GetValue(), Timestamp: hlc.Timestamp(r.GetTimestamp()), Tombstone: r.GetTombstone()}
}
