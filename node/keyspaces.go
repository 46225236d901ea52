package node

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/cluster"
	"github.com/kuradb/kura/coord"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/ring"
	"github.com/kuradb/kura/schema"
	"github.com/kuradb/kura/transport"
)

// kindSchema announces a new keyspace to every node.
var kindSchema = transport.RegisterKind(8, "schema")

// CreateKeyspace defines a keyspace on this node and announces it to every live node,
// waiting for them (a node that misses it notices the gossiped schema digest and pulls the catalog). It refuses
// replication that names a datacenter the cluster does not have, the usual typo.
func (n *Node) CreateKeyspace(ctx context.Context, ks schema.Keyspace) error {
	if ks.Moving || len(ks.NextSplits) > 0 {
		return fmt.Errorf("%w %s: a keyspace is created with its split keys; moving to others is kura rebalance's", schema.ErrInvalidKeyspace, ks.Name)
	}
	ks.Timestamp = n.clock.Now()
	compiled, err := ks.Compile()
	if err != nil {
		return err
	}
	if existing, err := n.catalog.Get(ks.Name); err == nil {
		if existing.Replication == compiled.Replication && existing.Partitioner == compiled.Partitioner && existing.Erasure == compiled.Erasure &&
			(len(compiled.Splits) == 0 || slices.EqualFunc(existing.Splits, compiled.Splits, bytes.Equal)) {
			// Creating what exists is a no-op, so scripts can re-run; without split keys
			// that holds whatever splits a rebalance gave the keyspace since.
			return nil
		}
		if existing.Timestamp == schema.ImplicitTimestamp {
			return fmt.Errorf("%w %s: every node defines it with %s (--default-replication); drop it first (kura keyspace drop %s) or choose another name",
				schema.ErrInvalidKeyspace, ks.Name, describePlacement(existing), ks.Name)
		}
		return fmt.Errorf("%w %s: already exists with %s, partitioner %s, %d split keys",
			schema.ErrInvalidKeyspace, ks.Name, describePlacement(existing), existing.Partitioner, len(existing.Splits))
	}
	if err := n.checkReplication(compiled); err != nil {
		return err
	}
	if _, err := n.catalog.Apply(compiled); err != nil {
		return err
	}
	n.gossip.schemaChanged()
	return n.announce(ctx, compiled)
}

// checkReplication refuses a keyspace whose replication the cluster cannot hold: a
// datacenter it does not have, or more replicas than a DC (or the cluster) has nodes,
// which would leave every write at ALL, and at QUORUM when short by more than one,
// unavailable. Nodes count whatever their state, joining and down ones included; only
// those that left the ring do not.
func (n *Node) checkReplication(ks schema.Keyspace) error {
	nodesIn := map[string]int{}
	total := 0
	for _, node := range n.directory.Nodes() {
		if node.Status == cluster.StatusLeft || node.Status == cluster.StatusRemoved {
			continue
		}
		nodesIn[node.DC]++
		total++
	}
	const fix = "add nodes first, or ask for fewer replicas"
	switch s := ks.Strategy().(type) {
	case ring.DCStrategy:
		rfPerDC := s.RFPerDC()
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
		if rf := s.ReplicationFactor(); s.Name() == "simple" && rf > total {
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
func (n *Node) Truncate(ctx context.Context, name string) (hlc.Timestamp, error) {
	ts, err := n.guard.Stamp()
	if err != nil {
		return 0, fmt.Errorf("%w: truncate keyspace %s: %w", coord.ErrUnavailable, name, err)
	}
	ks, err := n.catalog.Truncate(name, ts)
	if err != nil {
		return 0, err
	}
	n.gossip.schemaChanged()
	n.learnedTruncation(ks.TruncatedAt)
	return ts, n.announce(ctx, ks)
}

// DropKeyspace drops keyspace name: a definition stamped like a write (so it is refused
// on a bad clock), which hides the keyspace and truncates it at the drop, announced to
// every live node.
func (n *Node) DropKeyspace(ctx context.Context, name string) (hlc.Timestamp, error) {
	ts, err := n.guard.Stamp()
	if err != nil {
		return 0, fmt.Errorf("%w: drop keyspace %s: %w", coord.ErrUnavailable, name, err)
	}
	ks, err := n.catalog.Drop(name, ts)
	if err != nil {
		return 0, err
	}
	n.gossip.schemaChanged()
	n.learnedTruncation(ks.TruncatedAt)
	return ts, n.announce(ctx, ks)
}

// announce sends ks's definition to every live node and waits for them; a node that
// misses it notices the gossiped schema digest and pulls the catalog.
func (n *Node) announce(ctx context.Context, ks schema.Keyspace) error {
	payload, err := proto.Marshal(schemaUpdate(ks))
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, node := range n.directory.Nodes() {
		if node.ID == n.cfg.ID || !n.directory.State(node.ID).Reachable() {
			continue
		}
		wg.Add(1)
		go func(peer transport.Peer) {
			defer wg.Done()
			callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if _, err := n.transport.Call(callCtx, peer, kindSchema, payload); err != nil {
				n.log.Warn("announce keyspace", "peer", peer.ID, "keyspace", ks.Name, "err", err)
			}
		}(transport.Peer{ID: node.ID, DC: node.DC, Addr: node.Addr})
	}
	wg.Wait()
	return nil
}

// learnedTruncation moves this node's clock past a truncation it learned, so the writes
// it coordinates from now on are not hidden by it, and wakes the loop that drops the
// truncated records.
func (n *Node) learnedTruncation(at hlc.Timestamp) {
	if err := n.guard.Observe(at); err != nil {
		n.log.Warn("truncation ahead of the cluster's clock", "truncated_at", at, "err", err)
	}
	select {
	case n.truncated <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// dropTruncatedLoop removes from this node's disk the records hidden by the truncations
// the catalog learns while the node runs, each keyspace's once per truncation; those of
// truncations learned before the node started are left to the hourly garbage collection.
func (n *Node) dropTruncatedLoop() {
	defer n.wg.Done()
	dropped := n.catalog.Truncations()
	for {
		select {
		case <-n.stop:
			return
		case <-n.truncated:
		}
		for ks, at := range n.catalog.Truncations() {
			if at <= dropped[ks] {
				continue
			}
			removed, err := n.engine.Truncate(ks, at)
			if err != nil {
				n.log.Warn("drop truncated records", "keyspace", ks, "err", err)
				continue
			}
			dropped[ks] = at
			n.log.Info("dropped truncated records", "keyspace", ks, "truncated_at", at, "removed", removed)
		}
	}
}

// Keyspaces lists the keyspaces this node knows.
func (n *Node) Keyspaces() []schema.Keyspace { return n.catalog.List() }

// Keyspace returns one keyspace definition.
func (n *Node) Keyspace(name string) (schema.Keyspace, error) { return n.catalog.Get(name) }

func (n *Node) applySchemaUpdate(payload []byte) error {
	var update kurav1.SchemaUpdate
	if err := proto.Unmarshal(payload, &update); err != nil {
		return fmt.Errorf("decode schema update: %w", err)
	}
	return n.applySchema(&update)
}

func (n *Node) applySchema(update *kurav1.SchemaUpdate) error {
	ks := keyspaceFromProto(update.GetKeyspace())
	ks.Timestamp = hlc.Timestamp(update.GetTimestamp())
	ks.TruncatedAt = hlc.Timestamp(update.GetTruncatedAt())
	ks.Dropped = update.GetDropped()
	before := n.catalog.Truncations()[ks.Name]
	changed, err := n.catalog.Apply(ks)
	if changed {
		n.gossip.schemaChanged()
		if after := n.catalog.Truncations()[ks.Name]; after > before {
			n.learnedTruncation(after)
		}
	}
	return err
}

func schemaUpdate(ks schema.Keyspace) *kurav1.SchemaUpdate {
	return &kurav1.SchemaUpdate{Keyspace: keyspaceProto(ks), Timestamp: uint64(ks.Timestamp), TruncatedAt: uint64(ks.TruncatedAt), Dropped: ks.Dropped}
}

func keyspaceProto(ks schema.Keyspace) *kurav1.Keyspace {
	out := &kurav1.Keyspace{Name: ks.Name, Replication: ks.Replication, Partitioner: ks.Partitioner,
		Splits: ks.Splits, Moving: ks.Moving, NextSplits: ks.NextSplits}
	if ks.Erasure.Enabled() {
		out.Erasure = &kurav1.Erasure{M: uint32(ks.Erasure.M), K: uint32(ks.Erasure.K)}
	}
	return out
}

// keyspaceFromProto reads a definition from the wire; Compile validates it.
func keyspaceFromProto(ks *kurav1.Keyspace) schema.Keyspace {
	return schema.Keyspace{
		Name:        ks.GetName(),
		Replication: ks.GetReplication(),
		Partitioner: ks.GetPartitioner(),
		Erasure:     schema.Erasure{M: int(ks.GetErasure().GetM()), K: int(ks.GetErasure().GetK())},
		Splits:      ks.GetSplits(),
		Moving:      ks.GetMoving(),
		NextSplits:  ks.GetNextSplits(),
	}
}

// describePlacement says how a keyspace keeps its values, for messages.
func describePlacement(ks schema.Keyspace) string {
	if ks.Erasure.Enabled() {
		return "erasure " + ks.Erasure.String()
	}
	return "replication " + ks.Replication
}
