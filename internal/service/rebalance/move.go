package rebalance

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/base/ctxtime"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/service/ringchange"
)

const (
	// DefaultSplits is how many split keys a rebalance computes unless asked otherwise:
	// finer than any ring's vnodes, so each node's share of the token space holds many
	// buckets and the sample's unevenness averages out.
	DefaultSplits = 1024
	// samplePerSplit is how many sampled keys a rebalance gathers per split key, in all:
	// a quantile from 64 keys per bucket is within about an eighth of a bucket.
	samplePerSplit = 64
	// stepAttempts bounds how often a step is asked of a node that has not learned the
	// definition it belongs to yet, a gossip interval apart.
	stepAttempts = 40
	// stepAskRingDelays is how many ring delays one request for a step waits for its
	// answer before it is asked again: a request or its answer may be lost (a partition
	// or a one-way cut drops it while gossip still holds the node up), and the move would
	// wait for ever. Asked again, a node still running the step answers with that run's
	// result (HandleStep), so a long copy is only asked about, not started twice.
	stepAskRingDelays = 6
)

// errNoAnswerYet ends one request for a step that was not answered in
// stepAskRingDelays ring delays: the step is asked again.
var errNoAnswerYet = errors.New("no answer yet")

// Progress is one step of a rebalance as Rebalance reports it. Before is set once the
// keys were sampled, After on the last step: live rows per node, counted where each
// node is a replica.
type Progress struct {
	Step          string
	Before, After map[string]int64
}

// moveKind names a kind of move in what it reports: rebalance or alter.
type moveKind struct {
	// err prefixes every refusal and failure of the move.
	err error
	// to names the placement it moves to, for progress: "the new split keys".
	to string
	// resume tells the operator how to end a move cut short.
	resume string
}

// errRebalance prefixes every refusal and failure of a rebalance.
var errRebalance = errors.New("rebalance")

// rebalanceMove is kura rebalance.
var rebalanceMove = moveKind{err: errRebalance, to: "the new split keys", resume: "run it again to settle and retry"}

// Rebalance balances keyspace name, of the ordered partitioner, over the nodes: it
// samples the keys every node holds, computes splits split keys from the sample
// (schema.SplitsFromSample; 0 means DefaultSplits), and moves the data to the placement
// they give without losing an acknowledged write. report is called after each step.
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
// decommissions) stream by the current splits only, so none runs during a move: it
// refuses to start during one, a ring change waits for it (ringchange.NoKeyspaceMoves),
// and of a move and a ring change announced together, at least one gives way (move).
func (r *Rebalancer) Rebalance(ctx context.Context, name string, splits int, report func(Progress)) error {
	if splits == 0 {
		splits = DefaultSplits
	}
	if splits < 1 || splits > schema.MaxSplits {
		return fmt.Errorf("%w: %w: %d split keys; want 1 to %d", errRebalance, coord.ErrInvalidArgument, splits, schema.MaxSplits)
	}
	ks, err := r.catalog.Get(name)
	if err != nil {
		return err
	}
	if err := r.check(ks, errRebalance); err != nil {
		return err
	}
	if ks.Partitioner != "ordered" {
		return fmt.Errorf("%w: %w: keyspace %s has partitioner %s, which spreads keys by their hash; split keys balance the ordered one",
			errRebalance, coord.ErrInvalidArgument, ks.Name, ks.Partitioner)
	}
	if ks.Moving {
		report(Progress{Step: "an earlier move did not finish: settling on the current placement first"})
		if ks, err = r.settle(ctx, ks, rebalanceMove, report); err != nil {
			return err
		}
	}
	before, sample, err := r.sampleCluster(ctx, ks, splits*samplePerSplit)
	if err != nil {
		return err
	}
	next := schema.SplitsFromSample(sample, splits)
	report(Progress{Step: fmt.Sprintf("sampled %d keys from %d rows on %d nodes (a row counted at each replica): %d split keys", len(sample), sum(before), len(before), len(next)), Before: before})
	if len(next) == 0 {
		report(Progress{Step: "the keyspace holds no rows: nothing to balance", Before: before, After: before})
		return nil
	}
	old := ks.Splits
	return r.move(ctx, ks, rebalanceMove, before,
		func(k *schema.Keyspace) { k.Moving, k.NextSplits = true, next },
		func(k *schema.Keyspace) { k.Splits, k.NextSplits = next, old }, report)
}

// move walks ks to its next placement, steps 1 to 4 of Rebalance: start makes the
// definition Moving with the next placement, swap makes the next placement the current
// one and the current one the next. before is the rows per node the last report
// compares with.
func (r *Rebalancer) move(ctx context.Context, ks schema.Keyspace, kind moveKind, before map[string]int64,
	start, swap func(*schema.Keyspace), report func(Progress)) error {
	ks, err := r.publishDefinition(ctx, ks, start)
	if err != nil {
		return err
	}
	report(Progress{Step: fmt.Sprintf("writes also go to the replicas under %s; waiting a ring delay (%s) for every coordinator to learn it", kind.to, r.cfg.RingDelay)})
	if !ctxtime.Sleep(ctx, r.cfg.RingDelay) {
		return cutShort(kind, ctx.Err())
	}
	if err := ringchange.NoMoves(r.view); err != nil {
		// A ring change announced in the same ring delay as this move: each gives way
		// when it sees the other a ring delay after its own announcement
		// (ringchange.NoKeyspaceMoves), so at least one does. This one settles back on
		// the placement it started from, which every write reached.
		if _, serr := r.settle(ctx, ks, kind, report); serr != nil {
			return serr
		}
		// The ring change may have given way too (a decommission does, and its operator
		// is told to wait for this move): then nothing the operator would wait for comes.
		if ringchange.NoMoves(r.view) == nil {
			return fmt.Errorf("%w: %w: a ring change started with this move, which gave way and settled on the placement it started from; that change is no longer in progress (it completed, or gave way too): run it again (when this move looked: %w)",
				kind.err, coord.ErrUnavailable, err)
		}
		return fmt.Errorf("%w: %w: a ring change started with this move, which gave way and settled on the placement it started from; run it again once the change completes: %w",
			kind.err, coord.ErrUnavailable, err)
	}
	copied, err := r.stepEveryNode(ctx, ks, stepCopy, 0)
	if err != nil {
		return cutShort(kind, err)
	}
	report(Progress{Step: fmt.Sprintf("copied %d records to their new replicas", sumCopied(copied))})

	if ks, err = r.publishDefinition(ctx, ks, swap); err != nil {
		return cutShort(kind, err)
	}
	report(Progress{Step: fmt.Sprintf("switched: reads use %s, writes still reach the old replicas; waiting a ring delay (%s)", kind.to, r.cfg.RingDelay)})
	if !ctxtime.Sleep(ctx, r.cfg.RingDelay) {
		return cutShort(kind, ctx.Err())
	}
	if ks, err = r.settle(ctx, ks, kind, report); err != nil {
		return err
	}
	after, _, err := r.sampleCluster(ctx, ks, 0)
	if err != nil {
		return err
	}
	report(Progress{Step: "done", Before: before, After: after})
	return nil
}

// check refuses a keyspace or a cluster that no move can run on safely; kindErr names
// the move refused.
func (r *Rebalancer) check(ks schema.Keyspace, kindErr error) error {
	switch {
	case r.cfg.DHT != "":
		return fmt.Errorf("%w: %w: with routing %s a key's replicas follow the DHT, which has no pending replicas for a move; it needs onehop routing",
			kindErr, coord.ErrInvalidArgument, r.cfg.DHT)
	case ks.Erasure.Enabled():
		return fmt.Errorf("%w: %w: keyspace %s is erasure-coded: each chunk is placed once, by its own hash", kindErr, coord.ErrInvalidArgument, ks.Name)
	}
	if err := ringchange.NoMoves(r.view); err != nil {
		return err
	}
	for _, other := range r.view.Nodes() {
		if other.Status.OnRing() && r.view.State(other.ID) != cluster.StateUp {
			// A replica that cannot copy its records might hold the only copy of a write.
			return fmt.Errorf("%w: %w: node %s is %s; every node on the ring must be up to copy what it holds",
				kindErr, coord.ErrUnavailable, other.ID, r.view.State(other.ID))
		}
	}
	return nil
}

// cutShort explains the state a failed move leaves behind.
func cutShort(kind moveKind, err error) error {
	return fmt.Errorf("%w cut short (the keyspace stays moving: writes reach both placements, reads the current one; %s): %w", kind.err, kind.resume, err)
}

// settle ends a move on the current placement: Moving off, a ring delay so every
// coordinator has stopped reading with the other one, then every node drops what it no
// longer holds.
func (r *Rebalancer) settle(ctx context.Context, ks schema.Keyspace, kind moveKind, report func(Progress)) (schema.Keyspace, error) {
	ks, err := r.publishDefinition(ctx, ks, func(k *schema.Keyspace) { k.Moving, k.NextSplits, k.NextReplication = false, nil, "" })
	if err != nil {
		return ks, cutShort(kind, err)
	}
	report(Progress{Step: fmt.Sprintf("settled: writes go to the new replicas only; waiting a ring delay (%s) before dropping the old copies", r.cfg.RingDelay)})
	if !ctxtime.Sleep(ctx, r.cfg.RingDelay) {
		return ks, ctx.Err()
	}
	dropped, err := r.stepEveryNode(ctx, ks, stepDrop, 0)
	if err != nil {
		return ks, fmt.Errorf("%w: dropping the old copies (the move itself is complete; kura cleanup drops them later): %w", kind.err, err)
	}
	var total int64
	for _, d := range dropped {
		total += d.GetDropped()
	}
	report(Progress{Step: fmt.Sprintf("dropped %d records the nodes no longer hold", total)})
	return ks, nil
}

// publishDefinition applies change to ks as a new definition, stamped like a write,
// and announces it to every live node. It refuses when the catalog's definition is no
// longer ks (another change came first): each step of a move must follow the one it
// was planned after.
func (r *Rebalancer) publishDefinition(ctx context.Context, ks schema.Keyspace, change func(*schema.Keyspace)) (schema.Keyspace, error) {
	ts, err := r.clock.Stamp()
	if err != nil {
		return ks, fmt.Errorf("%w: %w: %w", errRebalance, coord.ErrUnavailable, err)
	}
	if current, err := r.catalog.Get(ks.Name); err != nil {
		return ks, err
	} else if current.Timestamp != ks.Timestamp {
		return ks, fmt.Errorf("%w: keyspace %s changed meanwhile (another move?)", errRebalance, ks.Name)
	}
	updated := ks
	// Later than the definition, even one stamped by a node whose clock runs ahead.
	updated.Timestamp = max(ts, ks.Timestamp+1)
	change(&updated)
	if _, err := r.catalog.Apply(updated); err != nil {
		return ks, err
	}
	got, err := r.catalog.Get(ks.Name)
	if err != nil {
		return ks, err
	}
	if got.Timestamp != updated.Timestamp {
		return ks, fmt.Errorf("%w: keyspace %s changed meanwhile (another move?)", errRebalance, ks.Name)
	}
	return got, r.publisher.Publish(ctx, got)
}

// sampleCluster asks every node on the ring for its live rows of ks and, when size > 0,
// a uniform sample of their keys, and returns the rows per node and a sample of about
// size keys drawn from the nodes' samples in proportion to their rows, so that it is
// uniform over the keyspace's rows.
func (r *Rebalancer) sampleCluster(ctx context.Context, ks schema.Keyspace, size int) (map[string]int64, [][]byte, error) {
	answers, err := r.stepEveryNode(ctx, ks, stepSample, size)
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
func (r *Rebalancer) stepEveryNode(ctx context.Context, ks schema.Keyspace, step string, sample int) (map[string]*kurav1.RebalanceStepResponse, error) {
	req, err := proto.Marshal(&kurav1.RebalanceStepRequest{Keyspace: ks.Name, Definition: uint64(ks.Timestamp), Step: step, Sample: uint32(sample)})
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	answers := map[string]*kurav1.RebalanceStepResponse{}
	var errs []error
	var wg sync.WaitGroup
	for _, node := range r.view.Nodes() {
		if !node.Status.OnRing() {
			continue
		}
		wg.Go(func() {
			resp, err := r.askStep(ctx, node, req)
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
// refused until then), and a copy that failed half-way is redone, last writer wins. A
// request not answered in stepAskRingDelays ring delays is asked again, as often as it
// takes until ctx ends: it may have been lost, or the step may still run.
func (r *Rebalancer) askStep(ctx context.Context, node cluster.Node, req []byte) (*kurav1.RebalanceStepResponse, error) {
	for attempt := 1; ; {
		var raw []byte
		var err error
		if node.ID == r.cfg.Self {
			raw, err = r.HandleStep(ctx, req)
		} else {
			raw, err = r.callStep(ctx, node, req)
		}
		if err == nil {
			var resp kurav1.RebalanceStepResponse
			return &resp, proto.Unmarshal(raw, &resp)
		}
		if !errors.Is(err, errNoAnswerYet) {
			if attempt == stepAttempts {
				return nil, err
			}
			attempt++
		}
		r.log.Warn("a rebalance step failed; retrying", "node", node.ID, "err", err)
		if !ctxtime.Sleep(ctx, r.cfg.RetryInterval) {
			return nil, fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		}
	}
}

// callStep makes one request for a step to node, for at most stepAskRingDelays ring
// delays.
func (r *Rebalancer) callStep(ctx context.Context, node cluster.Node, req []byte) ([]byte, error) {
	call, cancel := context.WithTimeoutCause(ctx, stepAskRingDelays*r.cfg.RingDelay, errNoAnswerYet)
	defer cancel()
	raw, err := r.peers.Step(call, node, req)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(call), errNoAnswerYet) {
		err = fmt.Errorf("node %s: %w in %s", node.ID, errNoAnswerYet, stepAskRingDelays*r.cfg.RingDelay)
	}
	return raw, err
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
