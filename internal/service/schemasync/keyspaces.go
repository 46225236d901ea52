package schemasync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
)

const (
	// announceTimeout bounds one peer's answer to an announcement: a peer that misses
	// it pulls the catalog once gossip shows it another digest.
	announceTimeout = 5 * time.Second
	// pullTimeout bounds a pull of a peer's catalog; the next digest gossiped retries it.
	pullTimeout = 5 * time.Second
)

// CreateKeyspace defines a keyspace on this node and announces it to every live node,
// waiting for them (a node that misses it notices the gossiped schema digest and pulls
// the catalog). It refuses replication that names a datacenter the cluster does not
// have, the usual typo.
func (s *Syncer) CreateKeyspace(ctx context.Context, ks schema.Keyspace) error {
	if ks.Moving || len(ks.NextSplits) > 0 || ks.NextReplication != "" {
		return fmt.Errorf("%w %s: a keyspace is created with its split keys and replication; moving to others is kura rebalance's and kura keyspace alter's", schema.ErrInvalidKeyspace, ks.Name)
	}
	ks.Timestamp = s.clock.Now()
	// A creation that names no partitioner matches an existing keyspace of any: a script
	// that created its keyspace before the default became grouped re-runs as it did.
	anyPartitioner := ks.Partitioner == ""
	compiled, err := ks.Compile()
	if err != nil {
		return err
	}
	if existing, err := s.catalog.Get(ks.Name); err == nil {
		if existing.Replication == compiled.Replication && (anyPartitioner || existing.Partitioner == compiled.Partitioner) && existing.Erasure == compiled.Erasure &&
			existing.Transactions == compiled.Transactions &&
			(len(compiled.Splits) == 0 || slices.EqualFunc(existing.Splits, compiled.Splits, bytes.Equal)) {
			// Creating what exists is a no-op, so scripts can re-run; without split keys
			// that holds whatever splits a rebalance gave the keyspace since. The element
			// records' instances are not compared: the build chose them, not the operator
			// (node.Node.CreateKeyspace), and an existing keyspace keeps its own.
			return nil
		}
		if existing.Timestamp <= schema.SettledTimestamp {
			return fmt.Errorf("%w %s: every node defines it with %s (--default-replication); drop it first (kura keyspace drop %s) or choose another name",
				schema.ErrInvalidKeyspace, ks.Name, describePlacement(existing), ks.Name)
		}
		return fmt.Errorf("%w %s: already exists with %s, partitioner %s, %d split keys, transactions %s",
			schema.ErrInvalidKeyspace, ks.Name, describePlacement(existing), existing.Partitioner, len(existing.Splits), existing.Transactions)
	}
	if err := s.checkReplication(compiled); err != nil {
		return err
	}
	if _, err := s.catalog.Apply(compiled); err != nil {
		return err
	}
	return s.Publish(ctx, compiled)
}

// checkReplication refuses a keyspace whose replication the cluster cannot hold: a
// datacenter it does not have, or more replicas than a DC (or the cluster) has nodes,
// which would leave every write at ALL, and at QUORUM when short by more than one,
// unavailable. Nodes count whatever their state, joining and down ones included; only
// those that left the ring do not.
func (s *Syncer) checkReplication(ks schema.Keyspace) error {
	nodesIn := map[string]int{}
	total := 0
	for _, node := range s.view.Nodes() {
		if node.Status == cluster.StatusLeft || node.Status == cluster.StatusRemoved {
			continue
		}
		nodesIn[node.DC]++
		total++
	}
	const fix = "add nodes first, or ask for fewer replicas"
	switch st := ks.Strategy().(type) {
	case ring.DCStrategy:
		rfPerDC := st.RFPerDC()
		for _, dc := range slices.Sorted(maps.Keys(rfPerDC)) {
			if nodesIn[dc] == 0 {
				return fmt.Errorf("%w %s: replication names datacenter %q, but the cluster has %s",
					schema.ErrInvalidKeyspace, ks.Name, dc, strings.Join(slices.Sorted(maps.Keys(nodesIn)), ", "))
			}
			if rf := rfPerDC[dc]; rf > nodesIn[dc] {
				return fmt.Errorf("%w %s: %d replicas in %s, but %s has %d node(s): %s",
					schema.ErrInvalidKeyspace, ks.Name, rf, dc, dc, nodesIn[dc], fix)
			}
		}
	default:
		if rf := st.ReplicationFactor(); st.Name() == "simple" && rf > total {
			return fmt.Errorf("%w %s: %d replicas, but the cluster has %d node(s): %s",
				schema.ErrInvalidKeyspace, ks.Name, rf, total, fix)
		}
	}
	return nil
}

// Truncate truncates keyspace name (Redis's FLUSHDB): every value written until now
// reads as absent from then on, and each replica drops such values from its disk in the
// background. The truncation is a timestamp, stamped by the clock that stamps writes
// (refused as unavailable when this node's clock is off), recorded in the keyspace's
// definition and announced to every live node as CreateKeyspace does; each node that
// learns it moves its clock past it, so that a write any of them coordinates after
// Truncate returned is stamped later and survives.
func (s *Syncer) Truncate(ctx context.Context, name string) (hlc.Timestamp, error) {
	ts, err := s.guard.Stamp()
	if err != nil {
		return 0, fmt.Errorf("%w: truncate keyspace %s: %w", coord.ErrUnavailable, name, err)
	}
	ks, err := s.catalog.Truncate(name, ts)
	if errors.Is(err, schema.ErrNotSettled) {
		return 0, fmt.Errorf("%w: truncate keyspace %s: %w", coord.ErrUnavailable, name, err)
	}
	if err != nil {
		return 0, err
	}
	s.Changed()
	s.learnedTruncation(ks.TruncatedAt)
	return ts, s.announce(ctx, ks)
}

// DropKeyspace drops keyspace name: a definition stamped like a write (so it is refused
// on a bad clock), which hides the keyspace and truncates it at the drop, announced to
// every live node.
func (s *Syncer) DropKeyspace(ctx context.Context, name string) (hlc.Timestamp, error) {
	ts, err := s.guard.Stamp()
	if err != nil {
		return 0, fmt.Errorf("%w: drop keyspace %s: %w", coord.ErrUnavailable, name, err)
	}
	ks, err := s.catalog.Drop(name, ts)
	if err != nil {
		return 0, err
	}
	s.Changed()
	s.learnedTruncation(ks.TruncatedAt)
	return ts, s.announce(ctx, ks)
}

// Publish propagates ks, a definition this node's catalog applied: it gossips the
// catalog's new digest and announces ks to every live node, waiting for them.
func (s *Syncer) Publish(ctx context.Context, ks schema.Keyspace) error {
	s.Changed()
	return s.announce(ctx, ks)
}

// Changed gossips the catalog's digest after a change, so that the nodes that miss the
// change's announcement pull it.
func (s *Syncer) Changed() {
	s.digests.PublishDigest(s.catalog.Digest())
}

// announce sends ks's definition to every live node and waits for them; a node that
// misses it notices the gossiped schema digest and pulls the catalog.
func (s *Syncer) announce(ctx context.Context, ks schema.Keyspace) error {
	payload, err := proto.Marshal(schemaUpdate(ks))
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, node := range s.view.Nodes() {
		if node.ID == s.self || !s.view.State(node.ID).Reachable() {
			continue
		}
		wg.Go(func() {
			callCtx, cancel := context.WithTimeout(ctx, announceTimeout)
			defer cancel()
			if err := s.peers.Announce(callCtx, node, payload); err != nil {
				s.log.Warn("announce keyspace", "peer", node.ID, "keyspace", ks.Name, "err", err)
			}
		})
	}
	wg.Wait()
	return nil
}

// learnedTruncation moves this node's clock past a truncation it learned, so the writes
// it coordinates from now on are not hidden by it, and wakes DropTruncated.
func (s *Syncer) learnedTruncation(at hlc.Timestamp) {
	if err := s.guard.Observe(at); err != nil {
		s.log.Warn("truncation ahead of the cluster's clock", "truncated_at", at, "err", err)
	}
	select {
	case s.truncated <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// DropTruncated removes from this node's disk the records hidden by the truncations
// the catalog learns while it runs, each keyspace's once per truncation, until ctx
// ends; those of truncations learned before it started are left to the hourly garbage
// collection.
func (s *Syncer) DropTruncated(ctx context.Context) {
	dropped := s.catalog.Truncations()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.truncated:
		}
		for ks, at := range s.catalog.Truncations() {
			if at <= dropped[ks] {
				continue
			}
			removed, err := s.store.Truncate(ks, at)
			if err != nil {
				s.log.Warn("drop truncated records", "keyspace", ks, "err", err)
				continue
			}
			dropped[ks] = at
			s.log.Info("dropped truncated records", "keyspace", ks, "truncated_at", at, "removed", removed)
		}
	}
}

// HandleUpdate applies a definition another node announced (an encoded
// kurav1.SchemaUpdate).
func (s *Syncer) HandleUpdate(payload []byte) error {
	var update kurav1.SchemaUpdate
	if err := proto.Unmarshal(payload, &update); err != nil {
		return fmt.Errorf("decode schema update: %w", err)
	}
	return s.apply(&update)
}

// apply merges one definition into the catalog; when it changed the catalog, the new
// digest is gossiped and a newer truncation acted on.
func (s *Syncer) apply(update *kurav1.SchemaUpdate) error {
	ks := KeyspaceFromProto(update.GetKeyspace())
	ks.Timestamp = hlc.Timestamp(update.GetTimestamp())
	ks.TruncatedAt = hlc.Timestamp(update.GetTruncatedAt())
	ks.Dropped = update.GetDropped()
	before := s.catalog.Truncations()[ks.Name]
	changed, err := s.catalog.Apply(ks)
	if changed {
		s.Changed()
		if after := s.catalog.Truncations()[ks.Name]; after > before {
			s.learnedTruncation(after)
		}
	}
	return err
}

// Pull fetches a peer's whole catalog and merges it into this one: the node calls it
// when the peer gossips a digest other than this node's.
func (s *Syncer) Pull(ctx context.Context, from cluster.Node) {
	ctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	raw, err := s.peers.Pull(ctx, from)
	if err != nil {
		s.log.Debug("pull schema", "peer", from.ID, "err", err)
		return
	}
	var resp kurav1.SchemaPullResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		s.log.Warn("pull schema", "peer", from.ID, "err", err)
		return
	}
	for _, update := range resp.GetKeyspaces() {
		if err := s.apply(update); err != nil {
			s.log.Warn("schema from peer", "peer", from.ID, "err", err)
		}
	}
}

// HandlePull answers another node's Pull: every definition of this node's catalog,
// dropped ones included (an encoded kurav1.SchemaPullResponse).
func (s *Syncer) HandlePull() ([]byte, error) {
	var resp kurav1.SchemaPullResponse
	for _, ks := range s.catalog.Definitions() {
		resp.Keyspaces = append(resp.Keyspaces, schemaUpdate(ks))
	}
	return proto.Marshal(&resp)
}

func schemaUpdate(ks schema.Keyspace) *kurav1.SchemaUpdate {
	return &kurav1.SchemaUpdate{Keyspace: KeyspaceProto(ks), Timestamp: uint64(ks.Timestamp), TruncatedAt: uint64(ks.TruncatedAt), Dropped: ks.Dropped}
}

// KeyspaceProto is a definition's wire form, as nodes exchange it and the client API
// returns it; its timestamps and drop travel beside it (kurav1.SchemaUpdate).
func KeyspaceProto(ks schema.Keyspace) *kurav1.Keyspace {
	out := &kurav1.Keyspace{Name: ks.Name, Replication: ks.Replication, Partitioner: ks.Partitioner,
		Splits: ks.Splits, Moving: ks.Moving, NextSplits: ks.NextSplits, Transactions: ks.Transactions, NextReplication: ks.NextReplication,
		CollectionInstances: ks.CollectionInstances}
	if ks.Erasure.Enabled() {
		out.Erasure = &kurav1.Erasure{M: uint32(ks.Erasure.M), K: uint32(ks.Erasure.K)}
	}
	return out
}

// KeyspaceFromProto reads a definition from the wire, uncompiled: Compile validates it.
func KeyspaceFromProto(ks *kurav1.Keyspace) schema.Keyspace {
	return schema.Keyspace{
		Name:        ks.GetName(),
		Replication: ks.GetReplication(),
		Partitioner: ks.GetPartitioner(),
		Erasure:     schema.Erasure{M: int(ks.GetErasure().GetM()), K: int(ks.GetErasure().GetK())},
		Splits:      ks.GetSplits(),
		Moving:      ks.GetMoving(),
		NextSplits:  ks.GetNextSplits(),
		// A build before the option sends none: its keyspaces run per key.
		Transactions:    ks.GetTransactions(),
		NextReplication: ks.GetNextReplication(),
		// A build before the option sends none: its keyspaces run element records on
		// their own instances.
		CollectionInstances: ks.GetCollectionInstances(),
	}
}

// describePlacement says how a keyspace keeps its values, for messages.
func describePlacement(ks schema.Keyspace) string {
	if ks.Erasure.Enabled() {
		return "erasure " + ks.Erasure.String()
	}
	return "replication " + ks.Replication
}
