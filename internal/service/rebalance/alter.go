package rebalance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/service/ringchange"
)

// errAlter prefixes every refusal and failure of a change of replication.
var errAlter = errors.New("keyspace alter")

// KeyAlter is the application state in which a node announces (value "1") that it
// follows a change of replication: it sends a moving keyspace's writes to the replicas
// of its next replication too (schema.Keyspace.NextReplication). A build from before
// announces nothing; it refuses the definition of a moving keyspace that is not
// ordered, and places an ordered one's writes under the old replication only, so that
// the new replicas would miss them.
const KeyAlter = "keyspace_alter"

// AlterAnnounced refuses a change of replication unless every member of the cluster
// announces KeyAlter. members holds each member's gossiped application state by id
// (empty for one gossip has not told of yet); a member that is down counts with what
// it last announced, since it may come back in the build it last ran. The error names
// the members that announce nothing.
func AlterAnnounced(members map[string]map[string]string) error {
	var older []string
	for id, state := range members {
		if state[KeyAlter] != "1" {
			older = append(older, id)
		}
	}
	if len(older) == 0 {
		return nil
	}
	slices.Sort(older)
	which := "node " + older[0] + " does"
	if len(older) > 1 {
		which = "nodes " + strings.Join(older, ", ") + " do"
	}
	return fmt.Errorf("%w: %w: %s not announce that it follows a change of replication (a build from before kura keyspace alter, or one gossip has not told of yet), and would place the keyspace's writes under the old replication only: upgrade it first, or remove it if it is gone for good",
		errAlter, coord.ErrUnavailable, which)
}

// alterMove is kura keyspace alter.
func alterMove(replication string) moveKind {
	return moveKind{err: errAlter, to: "replication " + replication,
		resume: "if no alter or rebalance runs any more, kura keyspace alter --settle ends it on the current placement"}
}

// Alter changes keyspace name's replication to replication ("dc1=3,dc2=1"; a DC given
// 0 replicas, or left out, loses its copies) without losing or hiding an acknowledged
// write, through the steps of Rebalance: writes also go to the replicas the new
// replication adds, as pending ones; every node copies what it holds to the key's new
// replicas (all of them, so that a lowered replication keeps every write its old
// replicas acknowledged); the switch, after which reads and the levels are the new
// replication's while writes still reach the old replicas; then the move settles and
// each node drops what it no longer holds. report is called after each step.
//
// It refuses, before it changes anything: a keyspace that is erasure-coded or already
// moving, a ring change in progress or a node on the ring not up (as Rebalance does), a
// replication that names a datacenter without nodes or asks more replicas of one than
// it has normal nodes. The replication the keyspace has is no change: it reports
// "nothing to change" and succeeds.
func (r *Rebalancer) Alter(ctx context.Context, name, replication string, report func(Progress)) error {
	next, err := parseAltered(replication)
	if err != nil {
		return err
	}
	ks, err := r.catalog.Get(name)
	if err != nil {
		return err
	}
	if !ks.Moving && next.String() == ks.Replication {
		// Asking for what the keyspace has succeeds without a step, whatever the ring's
		// state, as creating what exists does: a script that alters re-runs.
		report(Progress{Step: fmt.Sprintf("done: keyspace %s already has replication %s: nothing to change", ks.Name, ks.Replication)})
		return nil
	}
	if err := r.check(ks, errAlter); err != nil {
		return err
	}
	if ks.Moving {
		return fmt.Errorf("%w: %w: keyspace %s is moving (a rebalance or alter is under way, or was cut short: if none runs any more, kura keyspace alter --settle ends it)",
			errAlter, coord.ErrInvalidArgument, ks.Name)
	}
	if err := r.checkNodes(next); err != nil {
		return err
	}
	before, _, err := r.sampleCluster(ctx, ks, 0)
	if err != nil {
		return err
	}
	report(Progress{Step: fmt.Sprintf("replication %s to %s: %d rows on %d nodes (a row counted at each replica)",
		ks.Replication, next, sum(before), len(before)), Before: before})
	old := ks.Replication
	return r.move(ctx, ks, alterMove(next.String()), before,
		func(k *schema.Keyspace) { k.Moving, k.NextSplits, k.NextReplication = true, k.Splits, next.String() },
		func(k *schema.Keyspace) { k.Replication, k.NextReplication = next.String(), old }, report)
}

// Settle ends a move of keyspace name that was cut short on its current placement (a
// rebalance's or an alter's; the placement reads use), as a rerun of Rebalance does
// first. The operator runs it only when no move runs any more: one still running fails
// at its next step, since the definition changed under it. Unlike a move, it runs with
// a node down (only that node's drop fails): it copies nothing, and a node that died
// during a move can be removed or replaced only once the keyspace no longer moves.
func (r *Rebalancer) Settle(ctx context.Context, name string, report func(Progress)) error {
	ks, err := r.catalog.Get(name)
	if err != nil {
		return err
	}
	if err := ringchange.NoMoves(r.view); err != nil {
		return err
	}
	if !ks.Moving {
		return fmt.Errorf("%w: %w: keyspace %s is not moving: nothing to settle", errAlter, coord.ErrInvalidArgument, ks.Name)
	}
	ks, err = r.settle(ctx, ks, alterMove(ks.Replication), report)
	if err != nil {
		return err
	}
	report(Progress{Step: fmt.Sprintf("done: keyspace %s has replication %s", ks.Name, ks.Replication)})
	return nil
}

// parseAltered reads an alter's replication: ring.ParseReplication's syntax, where a
// datacenter given 0 replicas is left out (it loses its copies).
func parseAltered(replication string) (ring.Strategy, error) {
	entries := strings.Split(replication, ",")
	kept := slices.DeleteFunc(slices.Clone(entries), func(e string) bool {
		dc, count, ok := strings.Cut(e, "=")
		return ok && strings.TrimSpace(dc) != "simple" && strings.TrimSpace(dc) != "each" && strings.TrimSpace(count) == "0"
	})
	if len(kept) == 0 {
		return nil, fmt.Errorf("%w: %w: replication %q leaves no replica anywhere; drop the keyspace instead", errAlter, coord.ErrInvalidArgument, replication)
	}
	next, err := ring.ParseReplication(strings.Join(kept, ","))
	if err != nil {
		return nil, fmt.Errorf("%w: %w: %w", errAlter, coord.ErrInvalidArgument, err)
	}
	return next, nil
}

// checkNodes refuses a replication the ring's normal nodes cannot hold: a datacenter
// without any, or fewer than the replicas asked of it (its copies could not all be
// placed, and writes at ALL would be unavailable).
func (r *Rebalancer) checkNodes(next ring.Strategy) error {
	normal := map[string]int{}
	total := 0
	for _, n := range r.view.Nodes() {
		if n.Status == cluster.StatusNormal {
			normal[n.DC]++
			total++
		}
	}
	dcs := slices.Sorted(maps.Keys(normal))
	want := map[string]int{}
	switch s := next.(type) {
	case ring.DCStrategy:
		want = s.RFPerDC()
	default:
		if next.Name() == "simple" && total < next.ReplicationFactor() {
			return fmt.Errorf("%w: %w: replication %s asks for %d replicas; the ring has %d normal nodes",
				errAlter, coord.ErrInvalidArgument, next, next.ReplicationFactor(), total)
		}
		if next.Name() == "each" {
			for _, dc := range dcs {
				want[dc] = next.ReplicationFactor()
			}
		}
	}
	for _, dc := range slices.Sorted(maps.Keys(want)) {
		switch has := normal[dc]; {
		case has == 0:
			return fmt.Errorf("%w: %w: replication %s names datacenter %q, which has no normal node; the cluster has %s",
				errAlter, coord.ErrInvalidArgument, next, dc, strings.Join(dcs, ", "))
		case has < want[dc]:
			return fmt.Errorf("%w: %w: replication %s asks for %d replicas in %s, which has %d normal nodes",
				errAlter, coord.ErrInvalidArgument, next, want[dc], dc, has)
		}
	}
	return nil
}
