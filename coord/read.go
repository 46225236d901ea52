package coord

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/ring"
	"github.com/kuradb/kura/storage"
)

// readResult is one replica's answer to a read.
type readResult struct {
	member ring.Member
	record storage.Record
	found  bool
	err    error
}

// Get reads key at level cl: it asks the nearest replicas the level needs, answers with
// the newest version among them, and repairs those that were stale. A deleted key is
// reported as not found.
func (c *Coordinator) Get(ctx context.Context, keyspace string, key []byte, cl consistency.Level) (storage.Record, bool, error) {
	if err := c.checkKey(key); err != nil {
		return storage.Record{}, false, err
	}
	if cl == consistency.Any {
		return storage.Record{}, false, invalid("ANY is a write level; read at ONE or above")
	}
	ks, err := c.catalog.Get(keyspace)
	if err != nil {
		return storage.Record{}, false, err
	}
	if ks.Erasure.Enabled() {
		return c.ldrGet(ctx, ks, key, cl)
	}
	set, err := c.replicasFor(ctx, ks, key)
	if err != nil {
		return storage.Record{}, false, err
	}
	required := cl.Require(set.rfPerDC, c.view.Self().DC)
	candidates := c.liveByDistance(set.members)
	if alive := dcCounts(candidates); !required.Satisfied(alive) {
		return storage.Record{}, false, &UnavailableError{Level: cl, Required: required, Alive: alive}
	}

	payload, err := proto.Marshal(&kurav1.ReadRequest{Keyspace: keyspace, Key: key})
	if err != nil {
		return storage.Record{}, false, fmt.Errorf("encode read: %w", err)
	}
	results := make(chan readResult, len(candidates))
	asked := map[string]int{} // per DC, requests sent and not failed
	inFlight := 0
	next := 0
	// askMore sends reads to the nearest unasked replicas until those asked could meet
	// the level, preferring replicas of datacenters the level still needs.
	askMore := func() {
		for !required.Satisfied(asked) && next < len(candidates) {
			i := pickNeeded(candidates[next:], required, asked) + next
			candidates[next], candidates[i] = candidates[i], candidates[next]
			m := candidates[next]
			next++
			asked[m.DC]++
			inFlight++
			if m.ID == c.view.Self().ID {
				results <- c.readReplica(m, keyspace, key, payload) // local: no goroutine
				continue
			}
			go func() { results <- c.readReplica(m, keyspace, key, payload) }()
		}
	}
	askMore()

	var answers []readResult
	acks := map[string]int{}
	var lastErr error
	for inFlight > 0 {
		select {
		case r := <-results:
			inFlight--
			if r.err != nil {
				lastErr = r.err
				asked[r.member.DC]--
				askMore()
				continue
			}
			answers = append(answers, r)
			acks[r.member.DC]++
			if required.Satisfied(acks) {
				return c.resolve(keyspace, answers)
			}
		case <-ctx.Done():
			return storage.Record{}, false, &TimeoutError{Level: cl, Required: required, Acked: sum(acks), Cause: ctx.Err()}
		}
	}
	return storage.Record{}, false, &TimeoutError{Level: cl, Required: required, Acked: sum(acks), Cause: lastErr}
}

// pickNeeded returns the index of the first member (nearest first) in a datacenter the
// requirement still needs, or 0 when none is specially needed.
func pickNeeded(members []ring.Member, required consistency.Requirement, asked map[string]int) int {
	for i, m := range members {
		if need, ok := required.PerDC[m.DC]; ok && asked[m.DC] < need {
			return i
		}
	}
	return 0
}

// resolve picks the newest answer and sends it to the replicas that answered with an
// older version or none (read repair, in the background).
func (c *Coordinator) resolve(keyspace string, answers []readResult) (storage.Record, bool, error) {
	var newest storage.Record
	found := false
	for _, a := range answers {
		if a.found && (!found || storage.Newer(a.record, newest)) {
			newest, found = a.record, true
		}
	}
	if !found {
		return storage.Record{}, false, nil
	}
	for _, a := range answers {
		if !a.found || storage.Newer(newest, a.record) {
			go c.repair(a.member, keyspace, newest)
		}
	}
	if newest.Tombstone {
		return storage.Record{}, false, nil
	}
	return newest, true, nil
}

func (c *Coordinator) repair(m ring.Member, keyspace string, rec storage.Record) {
	payload, err := proto.Marshal(&kurav1.MutateRequest{Keyspace: keyspace, Records: []*kurav1.Record{toProto(rec)}})
	if err == nil {
		err = c.mutateReplica(m, keyspace, rec, payload)
	}
	if err != nil {
		c.log.Debug("read repair", "replica", m.ID, "err", err)
	}
}

// readReplica reads key from one replica: directly when it is this node.
func (c *Coordinator) readReplica(m ring.Member, keyspace string, key, payload []byte) readResult {
	if m.ID == c.view.Self().ID {
		rec, found, err := c.engine.Get(keyspace, key)
		return readResult{member: m, record: rec, found: found, err: err}
	}
	peer, err := c.peer(m)
	if err != nil {
		return readResult{member: m, err: err}
	}
	ctx, cancel := c.replicaContext()
	defer cancel()
	raw, err := c.transport.Call(ctx, peer, kindRead, payload)
	if err != nil {
		return readResult{member: m, err: fmt.Errorf("replica %s: %w", m.ID, err)}
	}
	var resp kurav1.ReadResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		return readResult{member: m, err: fmt.Errorf("replica %s: decode read: %w", m.ID, err)}
	}
	if !resp.GetFound() {
		return readResult{member: m}
	}
	return readResult{member: m, record: fromProto(resp.GetRecord()), found: true}
}
