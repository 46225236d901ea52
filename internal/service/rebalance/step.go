package rebalance

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
)

// Steps of a rebalance a node is asked for (kurav1.RebalanceStepRequest's step).
const (
	stepSample = "sample"
	stepCopy   = "copy"
	stepDrop   = "drop"
)

// copyBatch is how many records a node sends a next replica in one Apply.
const copyBatch = 256

// HandleStep serves another node's request for one step of its rebalance (an encoded
// kurav1.RebalanceStepRequest; the answer is an encoded RebalanceStepResponse), once
// this node's catalog holds the definition the step belongs to. The step runs apart
// from the request and outlives it: a request asked again while the step runs (its
// asker had no answer yet, askStep) waits for that run, so a copy is not started twice.
// A run stops early once the catalog's definition is no longer the step's (the move
// settled back, or a new one started), which no requester's end would tell it.
func (r *Rebalancer) HandleStep(ctx context.Context, payload []byte) ([]byte, error) {
	key := string(payload) // the keyspace, its definition, the step and its sample size
	r.stepsMu.Lock()
	job := r.steps[key]
	if job == nil {
		job = &stepJob{done: make(chan struct{})}
		r.steps[key] = job
		// Each step ends on its own: a scan of this node's records, and a copy whose every
		// batch has its timeout.
		go func() {
			job.resp, job.err = r.runStep(context.WithoutCancel(ctx), payload)
			r.stepsMu.Lock()
			delete(r.steps, key)
			r.stepsMu.Unlock()
			close(job.done)
		}()
	}
	r.stepsMu.Unlock()
	select {
	case <-job.done:
		return job.resp, job.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// stepJob is one run of a step this node serves, shared by the requests that ask for it.
type stepJob struct {
	done chan struct{}
	resp []byte
	err  error
}

// runStep runs one step of another node's rebalance (HandleStep).
func (r *Rebalancer) runStep(ctx context.Context, payload []byte) ([]byte, error) {
	var req kurav1.RebalanceStepRequest
	if err := proto.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("decode rebalance step: %w", err)
	}
	ks, err := r.catalog.Get(req.GetKeyspace())
	if err != nil {
		return nil, err
	}
	if uint64(ks.Timestamp) != req.GetDefinition() {
		return nil, fmt.Errorf("%w: node %s holds definition %d of keyspace %s, the step is for %d", errRebalance, r.cfg.Self, ks.Timestamp, ks.Name, req.GetDefinition())
	}
	var resp kurav1.RebalanceStepResponse
	switch req.GetStep() {
	case stepSample:
		resp.Rows, resp.Keys, err = r.sampleLocal(ks, int(req.GetSample()))
	case stepCopy:
		if !ks.Moving {
			return nil, fmt.Errorf("%w: keyspace %s is not moving: nothing to copy", errRebalance, ks.Name)
		}
		resp.Copied, err = r.copyToNext(ctx, ks)
	case stepDrop:
		if ks.Moving {
			return nil, fmt.Errorf("%w: keyspace %s is moving: its records are still needed", errRebalance, ks.Name)
		}
		resp.Dropped, err = r.dropLeftovers(ks)
	default:
		return nil, fmt.Errorf("%w: unknown step %q", errRebalance, req.GetStep())
	}
	if err != nil {
		return nil, err
	}
	return proto.Marshal(&resp)
}

// changed returns an error once this node's catalog no longer holds definition ks of
// the keyspace: a step for it must stop, since what it does was planned for ks.
func (r *Rebalancer) changed(ks schema.Keyspace) error {
	current, err := r.catalog.Get(ks.Name)
	if err != nil {
		return err
	}
	if current.Timestamp != ks.Timestamp {
		return fmt.Errorf("%w: keyspace %s changed meanwhile on node %s (definition %d, the step is for %d): the step stops",
			errRebalance, ks.Name, r.cfg.Self, current.Timestamp, ks.Timestamp)
	}
	return nil
}

// dropLeftovers drops the records of ks this node no longer holds (Keeps) and returns
// how many. Once the definition changes it keeps every record it has not dropped yet
// and fails: a new move may have started, whose pending replicas this node may be for
// keys it would drop, and those records carry writes that move counted.
func (r *Rebalancer) dropLeftovers(ks schema.Keyspace) (int64, error) {
	keeps, err := r.Keeps(ks)
	if err != nil {
		return 0, err
	}
	var stopped error
	dropped, _, err := r.store.DropUnless(ks.Name, func(key []byte) bool {
		if stopped == nil {
			stopped = r.changed(ks)
		}
		return stopped != nil || keeps(key)
	})
	return dropped, cmp.Or(err, stopped)
}

// sampleLocal counts the live rows of ks this node holds as a replica and returns up to
// size of their keys, a uniform sample (reservoir sampling; the seed is fixed per node
// and keyspace, so a rebalance of the same data computes the same splits).
func (r *Rebalancer) sampleLocal(ks schema.Keyspace, size int) (int64, [][]byte, error) {
	replicaOf, err := r.replicaOf(ks)
	if err != nil {
		return 0, nil, err
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s", r.cfg.Self, ks.Name)
	rng := rand.New(rand.NewPCG(h.Sum64(), 0))
	now := r.clock.Now()
	var rows int64
	var sample [][]byte
	err = r.store.Each(ks.Name, false, func(rec lww.Record) error {
		if !rec.Live(now) || rec.Timestamp <= ks.TruncatedAt || !replicaOf(rec.Key) {
			return nil
		}
		rows++
		switch {
		case len(sample) < size:
			sample = append(sample, rec.Key)
		case size > 0:
			if i := rng.Int64N(rows); i < int64(size) {
				sample[i] = rec.Key
			}
		}
		return nil
	})
	// The reservoir keeps the scan's order in its first keys; sampleCluster takes a
	// prefix, which must be uniform too.
	rng.Shuffle(len(sample), func(i, j int) { sample[i], sample[j] = sample[j], sample[i] })
	return rows, sample, err
}

// copyToNext sends every record of ks this node holds as a replica (tombstones
// included, so a delete is not undone by an older copy elsewhere) to the key's replicas
// under the next placement, in batches per node. A rebalance sends to those that are not
// current ones. A change of replication sends to every one but this node: a next replica
// that is a current one may have missed a write the others acknowledged, and once the
// replication is lowered the replicas that held it may be gone from the replica set
// (a QUORUM write of 3 replicas, read at the QUORUM of the 1 left).
func (r *Rebalancer) copyToNext(ctx context.Context, ks schema.Keyspace) (int64, error) {
	current, err := r.placement.Ring()
	if err != nil {
		return 0, err
	}
	now, next := current.Placement(ks.Strategy()), current.Placement(ks.NextStrategy())
	toEveryNext := ks.ChangesReplication()
	batches := map[string][]lww.Record{}
	var copied int64
	flush := func(id string) error {
		batch := batches[id]
		delete(batches, id)
		if len(batch) == 0 {
			return nil
		}
		node, ok := r.view.Node(id)
		if !ok {
			return fmt.Errorf("next replica %s is not in the directory", id)
		}
		// A copy the move no longer needs (it settled back, or was settled) would leave
		// records where the settle's drop has already run.
		if err := r.changed(ks); err != nil {
			return err
		}
		callCtx, cancel := context.WithTimeout(ctx, 4*r.cfg.ReplicaTimeout+5*time.Second)
		defer cancel()
		if err := r.copier.Apply(callCtx, node, ks.Name, batch); err != nil {
			return fmt.Errorf("copy %d records to %s: %w", len(batch), id, err)
		}
		copied += int64(len(batch))
		return nil
	}
	err = r.store.Each(ks.Name, true, func(rec lww.Record) error {
		replicas := now.ReplicasFor(ks.Partition().Token(rec.Key))
		if !slices.ContainsFunc(replicas, r.isSelf) {
			return nil // a leftover of an older placement: the replicas hold the truth
		}
		for _, m := range next.ReplicasFor(ks.NextPartition().Token(rec.Key)) {
			if m.ID == r.cfg.Self || !toEveryNext && slices.ContainsFunc(replicas, func(c ring.Member) bool { return c.ID == m.ID }) {
				continue
			}
			batches[m.ID] = append(batches[m.ID], rec)
			if len(batches[m.ID]) == copyBatch {
				if err := flush(m.ID); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return copied, err
	}
	for _, id := range sortedIDs(batches) {
		if err := flush(id); err != nil {
			return copied, err
		}
	}
	return copied, nil
}

// replicaOf returns whether this node is one of a key's replicas on the current ring
// under the keyspace's current split keys.
func (r *Rebalancer) replicaOf(ks schema.Keyspace) (func(key []byte) bool, error) {
	current, err := r.placement.Ring()
	if err != nil {
		return nil, err
	}
	pl := current.Placement(ks.Strategy())
	return func(key []byte) bool { return r.holdsToken(pl, ks.Partition().Token(key)) }, nil
}

// Keeps returns whether this node must keep a key's records: it is one of the key's
// replicas on the current or the future ring, under the current placement (split keys
// and replication) or, during a move, the next one. Everything else is a leftover that
// cleanup may drop.
func (r *Rebalancer) Keeps(ks schema.Keyspace) (func(key []byte) bool, error) {
	current, err := r.placement.Ring()
	if err != nil {
		return nil, err
	}
	future, err := r.placement.FutureRing()
	if err != nil {
		return nil, err
	}
	type placed struct {
		partitioner ring.Partitioner
		placements  []*ring.Placement
	}
	under := func(p ring.Partitioner, s ring.Strategy) placed {
		return placed{p, []*ring.Placement{current.Placement(s), future.Placement(s)}}
	}
	all := []placed{under(ks.Partition(), ks.Strategy())}
	if ks.Moving {
		all = append(all, under(ks.NextPartition(), ks.NextStrategy()))
	}
	return func(key []byte) bool {
		for _, p := range all {
			t := p.partitioner.Token(key)
			for _, pl := range p.placements {
				if r.holdsToken(pl, t) {
					return true
				}
			}
		}
		return false
	}, nil
}

// holdsToken reports whether this node is one of token t's replicas in placement pl.
func (r *Rebalancer) holdsToken(pl *ring.Placement, t ring.Token) bool {
	return slices.ContainsFunc(pl.ReplicasFor(t), r.isSelf)
}

// isSelf reports whether m is this node.
func (r *Rebalancer) isSelf(m ring.Member) bool { return m.ID == r.cfg.Self }
