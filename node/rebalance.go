package node

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/apiserver"
	"github.com/kuradb/kura/cluster"
	"github.com/kuradb/kura/coord"
	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/replica"
	"github.com/kuradb/kura/ring"
	"github.com/kuradb/kura/ringchange"
	"github.com/kuradb/kura/schema"
	"github.com/kuradb/kura/transport"
)

// kindRebalance asks a node for one step of a rebalance: sample its keys, copy its
// records to their next replicas, or drop what it no longer holds.
var kindRebalance = transport.RegisterKind(25, "rebalance")

// Steps of a rebalance a node is asked for (kurav1.RebalanceStepRequest's step).
const (
	stepSample = "sample"
	stepCopy   = "copy"
	stepDrop   = "drop"
)

const (
	// DefaultRebalanceSplits is how many split keys a rebalance computes unless asked
	// otherwise: finer than any ring's vnodes, so each node's share of the token space
	// holds many buckets and the sample's unevenness averages out.
	DefaultRebalanceSplits = 1024
	// samplePerSplit is how many sampled keys a rebalance gathers per split key, in all:
	// a quantile from 64 keys per bucket is within about an eighth of a bucket.
	samplePerSplit = 64
	// copyBatch is how many records a node sends a next replica in one Apply.
	copyBatch = 256
	// stepAttempts bounds how often a step is asked of a node that has not learned the
	// definition it belongs to yet, a gossip interval apart.
	stepAttempts = 40
)

// RebalanceProgress is one step of a rebalance as Rebalance reports it. Before is set
// once the keys were sampled, After on the last step: live rows per node, counted where
// each node is a replica.
type RebalanceProgress struct {
	Step          string
	Before, After map[string]int64
}

var errRebalance = errors.New("rebalance")

// Rebalance balances keyspace name, of the ordered partitioner, over the nodes: it
// samples the keys every node holds, computes splits split keys from the sample
// (schema.SplitsFromSample), and moves the data to the placement they give without
// losing an acknowledged write. report is called after each step.
//
// The move, each definition announced to every live node and followed by a ring delay
// so that every coordinator knows it (as a join's streaming waits):
//  1. Moving with the new splits as NextSplits: coordinators send every write also to
//     the key's replicas under them, as pending replicas whose share raises the level,
//     so each write from then on meets its level on the new replica sets too.
//  2. Every node copies each record it holds as a replica (tombstones included, last
//     writer wins) to the key's next replicas that are not current ones: what was
//     written before step 1 reaches them.
//  3. The switch: Splits become the new ones and NextSplits the old, still Moving, so
//     reads use the new replicas while writes keep reaching the old ones, which
//     coordinators that have not switched yet still read.
//  4. Settling: Moving ends; once every node has switched, each node drops the records
//     it no longer holds.
//
// A rebalance cut short leaves the keyspace Moving: both placements receive every
// write, and reads use the current one, which holds everything. Running it again first
// settles on the current splits (step 4), then starts over. Ring changes (joins,
// decommissions) must not run during a rebalance: it refuses to start during one, and
// streaming follows the current splits only.
func (n *Node) Rebalance(ctx context.Context, name string, splits int, report func(RebalanceProgress)) error {
	if splits == 0 {
		splits = DefaultRebalanceSplits
	}
	if splits < 1 || splits > schema.MaxSplits {
		return fmt.Errorf("%w: %w: %d split keys; want 1 to %d", errRebalance, coord.ErrInvalidArgument, splits, schema.MaxSplits)
	}
	ks, err := n.catalog.Get(name)
	if err != nil {
		return err
	}
	if err := n.checkRebalance(ks); err != nil {
		return err
	}
	if ks.Moving {
		report(RebalanceProgress{Step: "an earlier rebalance did not finish: settling on the current split keys first"})
		if ks, err = n.settle(ctx, ks, report); err != nil {
			return err
		}
	}
	before, sample, err := n.sampleCluster(ctx, ks, splits*samplePerSplit)
	if err != nil {
		return err
	}
	next := schema.SplitsFromSample(sample, splits)
	report(RebalanceProgress{Step: fmt.Sprintf("sampled %d keys from %d rows on %d nodes (a row counted at each replica): %d split keys", len(sample), sum(before), len(before), len(next)), Before: before})
	if len(next) == 0 {
		report(RebalanceProgress{Step: "the keyspace holds no rows: nothing to balance", Before: before, After: before})
		return nil
	}

	if ks, err = n.publishDefinition(ctx, ks, func(k *schema.Keyspace) { k.Moving, k.NextSplits = true, next }); err != nil {
		return err
	}
	report(RebalanceProgress{Step: fmt.Sprintf("writes also go to the replicas under the new split keys; waiting a ring delay (%s) for every coordinator to learn it", n.ringDelay())})
	if !sleepCtx(ctx, n.ringDelay()) {
		return n.cutShort(ctx.Err())
	}
	copied, err := n.stepEveryNode(ctx, ks, stepCopy, 0)
	if err != nil {
		return n.cutShort(err)
	}
	report(RebalanceProgress{Step: fmt.Sprintf("copied %d records to their new replicas", sumCopied(copied))})

	old := ks.Splits
	if ks, err = n.publishDefinition(ctx, ks, func(k *schema.Keyspace) { k.Splits, k.NextSplits = next, old }); err != nil {
		return n.cutShort(err)
	}
	report(RebalanceProgress{Step: fmt.Sprintf("switched: reads use the new split keys, writes still reach the old replicas; waiting a ring delay (%s)", n.ringDelay())})
	if !sleepCtx(ctx, n.ringDelay()) {
		return n.cutShort(ctx.Err())
	}
	if ks, err = n.settle(ctx, ks, report); err != nil {
		return err
	}
	after, _, err := n.sampleCluster(ctx, ks, 0)
	if err != nil {
		return err
	}
	report(RebalanceProgress{Step: "done", Before: before, After: after})
	return nil
}

// checkRebalance refuses a keyspace or a cluster a rebalance cannot move safely.
func (n *Node) checkRebalance(ks schema.Keyspace) error {
	switch {
	case n.dht != nil:
		return fmt.Errorf("%w: %w: with routing %s a key's replicas follow the DHT, which has no pending replicas for split keys; rebalance needs onehop routing",
			errRebalance, coord.ErrInvalidArgument, n.cfg.Routing)
	case ks.Partitioner != "ordered":
		return fmt.Errorf("%w: %w: keyspace %s has partitioner %s, which spreads keys by their hash; split keys balance the ordered one",
			errRebalance, coord.ErrInvalidArgument, ks.Name, ks.Partitioner)
	case ks.Erasure.Enabled():
		return fmt.Errorf("%w: %w: keyspace %s is erasure-coded: each chunk is placed by its own hash", errRebalance, coord.ErrInvalidArgument, ks.Name)
	}
	if err := ringchange.NoMoves(n.directory); err != nil {
		return err
	}
	for _, other := range n.directory.Nodes() {
		if other.Status.OnRing() && n.directory.State(other.ID) != cluster.StateUp {
			// A replica that cannot copy its records might hold the only copy of a write.
			return fmt.Errorf("%w: %w: node %s is %s; every node on the ring must be up to copy what it holds",
				errRebalance, coord.ErrUnavailable, other.ID, n.directory.State(other.ID))
		}
	}
	return nil
}

// cutShort explains the state a failed move leaves behind.
func (n *Node) cutShort(err error) error {
	return fmt.Errorf("%w cut short (the keyspace stays moving: writes reach both placements, reads the current one; run it again to settle and retry): %w", errRebalance, err)
}

// settle ends a move on the current split keys: Moving off, a ring delay so every
// coordinator has stopped reading with the other splits, then every node drops what it
// no longer holds.
func (n *Node) settle(ctx context.Context, ks schema.Keyspace, report func(RebalanceProgress)) (schema.Keyspace, error) {
	ks, err := n.publishDefinition(ctx, ks, func(k *schema.Keyspace) { k.Moving, k.NextSplits = false, nil })
	if err != nil {
		return ks, n.cutShort(err)
	}
	report(RebalanceProgress{Step: fmt.Sprintf("settled: writes go to the new replicas only; waiting a ring delay (%s) before dropping the old copies", n.ringDelay())})
	if !sleepCtx(ctx, n.ringDelay()) {
		return ks, ctx.Err()
	}
	dropped, err := n.stepEveryNode(ctx, ks, stepDrop, 0)
	if err != nil {
		return ks, fmt.Errorf("%w: dropping the old copies (the move itself is complete; kura cleanup drops them later): %w", errRebalance, err)
	}
	var total int64
	for _, d := range dropped {
		total += d.GetDropped()
	}
	report(RebalanceProgress{Step: fmt.Sprintf("dropped %d records the nodes no longer hold", total)})
	return ks, nil
}

// publishDefinition applies change to ks as a new definition, stamped like a write,
// and announces it to every live node. It refuses when the catalog's definition is no
// longer ks (another change came first): each step of a move must follow the one it
// was planned after.
func (n *Node) publishDefinition(ctx context.Context, ks schema.Keyspace, change func(*schema.Keyspace)) (schema.Keyspace, error) {
	ts, err := n.guard.Stamp()
	if err != nil {
		return ks, fmt.Errorf("%w: %w: %w", errRebalance, coord.ErrUnavailable, err)
	}
	if current, err := n.catalog.Get(ks.Name); err != nil {
		return ks, err
	} else if current.Timestamp != ks.Timestamp {
		return ks, fmt.Errorf("%w: keyspace %s changed meanwhile (another rebalance?)", errRebalance, ks.Name)
	}
	updated := ks
	// Later than the definition, even one stamped by a node whose clock runs ahead.
	updated.Timestamp = max(ts, ks.Timestamp+1)
	change(&updated)
	if _, err := n.catalog.Apply(updated); err != nil {
		return ks, err
	}
	got, err := n.catalog.Get(ks.Name)
	if err != nil {
		return ks, err
	}
	if got.Timestamp != updated.Timestamp {
		return ks, fmt.Errorf("%w: keyspace %s changed meanwhile (another rebalance?)", errRebalance, ks.Name)
	}
	n.gossip.schemaChanged()
	return got, n.announce(ctx, got)
}

// sampleCluster asks every node on the ring for its live rows of ks and, when size > 0,
// a uniform sample of their keys, and returns the rows per node and a sample of about
// size keys drawn from the nodes' samples in proportion to their rows, so that it is
// uniform over the keyspace's rows.
func (n *Node) sampleCluster(ctx context.Context, ks schema.Keyspace, size int) (map[string]int64, [][]byte, error) {
	answers, err := n.stepEveryNode(ctx, ks, stepSample, size)
	if err != nil {
		return nil, nil, err
	}
	rows := map[string]int64{}
	var total int64
	for id, a := range answers {
		rows[id] = a.GetRows()
		total += a.GetRows()
	}
	var sample [][]byte
	for _, id := range sortedIDs(answers) {
		keys := answers[id].GetKeys()
		if total == 0 || len(keys) == 0 {
			continue
		}
		// Each node sampled its own rows; its share of the whole is rows/total.
		take := min(len(keys), int(int64(size)*rows[id]/total))
		sample = append(sample, keys[:take]...)
	}
	return rows, sample, nil
}

// stepEveryNode asks every node on the ring, this one included, for one step of the
// move of ks at its current definition, all at once, and returns their answers by id.
func (n *Node) stepEveryNode(ctx context.Context, ks schema.Keyspace, step string, sample int) (map[string]*kurav1.RebalanceStepResponse, error) {
	req, err := proto.Marshal(&kurav1.RebalanceStepRequest{Keyspace: ks.Name, Definition: uint64(ks.Timestamp), Step: step, Sample: uint32(sample)})
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	answers := map[string]*kurav1.RebalanceStepResponse{}
	var errs []error
	var wg sync.WaitGroup
	for _, node := range n.directory.Nodes() {
		if !node.Status.OnRing() {
			continue
		}
		wg.Go(func() {
			resp, err := n.askStep(ctx, node, req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s on %s: %w", step, node.ID, err))
				return
			}
			answers[node.ID] = resp
		})
	}
	wg.Wait()
	return answers, errors.Join(errs...)
}

// askStep asks one node for a step, again a gossip interval later when it fails: a
// node that missed the definition's announcement learns it from gossip (the step is
// refused until then), and a copy that failed half-way is redone, last writer wins.
func (n *Node) askStep(ctx context.Context, node cluster.Node, req []byte) (*kurav1.RebalanceStepResponse, error) {
	for attempt := 1; ; attempt++ {
		var raw []byte
		var err error
		if node.ID == n.cfg.ID {
			raw, err = n.handleRebalanceStep(ctx, req)
		} else {
			raw, err = n.transport.Call(ctx, toPeer(node), kindRebalance, req)
		}
		if err == nil {
			var resp kurav1.RebalanceStepResponse
			return &resp, proto.Unmarshal(raw, &resp)
		}
		if attempt == stepAttempts {
			return nil, err
		}
		n.log.Warn("a rebalance step failed; retrying", "node", node.ID, "err", err)
		if !sleepCtx(ctx, n.gossip.interval()) {
			return nil, fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		}
	}
}

// handleRebalanceStep serves kindRebalance: one step, once this node's catalog holds
// the definition the step belongs to.
func (n *Node) handleRebalanceStep(ctx context.Context, payload []byte) ([]byte, error) {
	var req kurav1.RebalanceStepRequest
	if err := proto.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("decode rebalance step: %w", err)
	}
	ks, err := n.catalog.Get(req.GetKeyspace())
	if err != nil {
		return nil, err
	}
	if uint64(ks.Timestamp) != req.GetDefinition() {
		return nil, fmt.Errorf("%w: node %s holds definition %d of keyspace %s, the step is for %d", errRebalance, n.cfg.ID, ks.Timestamp, ks.Name, req.GetDefinition())
	}
	var resp kurav1.RebalanceStepResponse
	switch req.GetStep() {
	case stepSample:
		resp.Rows, resp.Keys, err = n.sampleLocal(ks, int(req.GetSample()))
	case stepCopy:
		if !ks.Moving {
			return nil, fmt.Errorf("%w: keyspace %s is not moving: nothing to copy", errRebalance, ks.Name)
		}
		resp.Copied, err = n.copyToNext(ctx, ks)
	case stepDrop:
		if ks.Moving {
			return nil, fmt.Errorf("%w: keyspace %s is moving: its records are still needed", errRebalance, ks.Name)
		}
		var keep func([]byte) bool
		if keep, err = n.keeps(ks); err == nil {
			resp.Dropped, _, err = n.local.DropUnless(ks.Name, keep)
		}
	default:
		return nil, fmt.Errorf("%w: unknown step %q", errRebalance, req.GetStep())
	}
	if err != nil {
		return nil, err
	}
	return proto.Marshal(&resp)
}

// sampleLocal counts the live rows of ks this node holds as a replica and returns up to
// size of their keys, a uniform sample (reservoir sampling; the seed is fixed per node
// and keyspace, so a rebalance of the same data computes the same splits).
func (n *Node) sampleLocal(ks schema.Keyspace, size int) (int64, [][]byte, error) {
	replicaOf, err := n.replicaOf(ks)
	if err != nil {
		return 0, nil, err
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s", n.cfg.ID, ks.Name)
	rng := rand.New(rand.NewPCG(h.Sum64(), 0))
	now := n.guard.Now()
	var rows int64
	var sample [][]byte
	err = n.engine.Each(ks.Name, false, func(r lww.Record) error {
		if !r.Live(now) || r.Timestamp <= ks.TruncatedAt || !replicaOf(r.Key) {
			return nil
		}
		rows++
		switch {
		case len(sample) < size:
			sample = append(sample, r.Key)
		case size > 0:
			if i := rng.Int64N(rows); i < int64(size) {
				sample[i] = r.Key
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
// under the next split keys that are not current ones, in batches per node. It returns
// how many records it sent.
func (n *Node) copyToNext(ctx context.Context, ks schema.Keyspace) (int64, error) {
	replicaOf, err := n.replicaOf(ks)
	if err != nil {
		return 0, err
	}
	replicas := replica.NewSet(n.cfg.ID, n.local, n.transport)
	batches := map[string][]lww.Record{}
	var copied int64
	flush := func(id string) error {
		batch := batches[id]
		delete(batches, id)
		if len(batch) == 0 {
			return nil
		}
		node, ok := n.directory.Node(id)
		if !ok {
			return fmt.Errorf("next replica %s is not in the directory", id)
		}
		callCtx, cancel := context.WithTimeout(ctx, 4*n.cfg.ReplicaTimeout+5*time.Second)
		defer cancel()
		if err := replicas.Replica(node).Apply(callCtx, ks.Name, batch); err != nil {
			return fmt.Errorf("copy %d records to %s: %w", len(batch), id, err)
		}
		copied += int64(len(batch))
		return nil
	}
	err = n.engine.Each(ks.Name, true, func(r lww.Record) error {
		if !replicaOf(r.Key) {
			return nil // a leftover of an older placement: the replicas hold the truth
		}
		members, err := n.ring.Replicas(ctx, ks, r.Key, nil)
		if err != nil {
			return err
		}
		for _, m := range members {
			if !m.Pending || m.ID == n.cfg.ID {
				continue
			}
			batches[m.ID] = append(batches[m.ID], r)
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
func (n *Node) replicaOf(ks schema.Keyspace) (func(key []byte) bool, error) {
	r, err := n.ring.Ring()
	if err != nil {
		return nil, err
	}
	pl := r.Placement(ks.Strategy())
	return func(key []byte) bool { return n.holdsToken(pl, ks.Partition().Token(key)) }, nil
}

// keeps returns whether this node must keep a key's records: it is one of the key's
// replicas on the current or the future ring, under the current split keys or, during
// a rebalance, the next ones. Everything else is a leftover that cleanup may drop.
func (n *Node) keeps(ks schema.Keyspace) (func(key []byte) bool, error) {
	current, err := n.ring.Ring()
	if err != nil {
		return nil, err
	}
	future, err := n.ring.FutureRing()
	if err != nil {
		return nil, err
	}
	placements := []*ring.Placement{current.Placement(ks.Strategy()), future.Placement(ks.Strategy())}
	partitioners := []ring.Partitioner{ks.Partition()}
	if next := ks.NextPartition(); next != nil {
		partitioners = append(partitioners, next)
	}
	return func(key []byte) bool {
		for _, p := range partitioners {
			t := p.Token(key)
			for _, pl := range placements {
				if n.holdsToken(pl, t) {
					return true
				}
			}
		}
		return false
	}, nil
}

func (n *Node) holdsToken(pl *ring.Placement, t ring.Token) bool {
	return slices.ContainsFunc(pl.ReplicasFor(t), func(m ring.Member) bool { return m.ID == n.cfg.ID })
}

func sortedIDs[V any](m map[string]V) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func sum(rows map[string]int64) int64 {
	var total int64
	for _, r := range rows {
		total += r
	}
	return total
}

func sumCopied(answers map[string]*kurav1.RebalanceStepResponse) int64 {
	var total int64
	for _, a := range answers {
		total += a.GetCopied()
	}
	return total
}

func (b apiBackend) Rebalance(ctx context.Context, keyspace string, splits int, report func(apiserver.RebalanceStep)) error {
	return refusedMove(b.n.Rebalance(ctx, keyspace, splits, func(p RebalanceProgress) { report(apiserver.RebalanceStep(p)) }))
}
