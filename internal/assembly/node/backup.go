package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/io/backup"
	"github.com/kuradb/kura/internal/service/apiserver"
	"github.com/kuradb/kura/internal/service/schemasync"
)

// snapshotPage bounds one page of ReadSnapshot: records and bytes of keys and values.
const (
	snapshotPageRecords = 1024
	snapshotPageBytes   = 4 << 20
)

// CreateSnapshot checkpoints the node's storage as snapshot name in its data directory
// (package backup), keeping the named keyspaces, every one when none is named, and
// returns its manifest: the keyspaces' definitions, the ring the node knows, and the
// clock's time, past every write the node had applied.
//
// With a cut, the snapshot is this node's part of a cluster snapshot: it is taken while
// hold (HoldWrites) holds the node's writes, which it refuses once the hold has ended,
// and the clock is moved past the cut first, so that every write the node stamps after
// the hold is newer than the cut.
func (n *Node) CreateSnapshot(name string, keyspaces []string, cut hlc.Timestamp, hold string) (backup.Manifest, error) {
	if err := n.snapshotsKept(); err != nil {
		return backup.Manifest{}, err
	}
	if err := backup.ValidateName(name); err != nil {
		return backup.Manifest{}, snapshotError(err)
	}
	if cut != 0 {
		n.hold.mu.Lock()
		defer n.hold.mu.Unlock() // the hold cannot end during the checkpoint
		if n.hold.id != hold || n.hold.release == nil {
			return backup.Manifest{}, apiserver.FailedPrecondition(fmt.Errorf("snapshot %s: hold %q of this node's writes has ended (or never began): take the cluster snapshot again, with a longer --hold", name, hold))
		}
		if err := n.guard.Admit(cut); err != nil {
			return backup.Manifest{}, apiserver.FailedPrecondition(fmt.Errorf("snapshot %s: cut %s: %w", name, cut, err))
		}
		n.clock.Update(cut)
	}
	defs := n.catalog.List()
	for _, ks := range keyspaces {
		if !slices.ContainsFunc(defs, func(d schema.Keyspace) bool { return d.Name == ks }) {
			return backup.Manifest{}, fmt.Errorf("%w %q: snapshot %s not taken", schema.ErrNoKeyspace, ks, name)
		}
	}
	self := n.View().Self()
	m := backup.Manifest{Name: name, Node: self.ID, DC: self.DC, CreatedAt: time.Now().UTC(), Timestamp: n.clock.Now(), Cut: cut}
	for _, d := range defs {
		if len(keyspaces) > 0 && !slices.Contains(keyspaces, d.Name) {
			continue
		}
		m.Keyspaces = append(m.Keyspaces, backup.Keyspace{Name: d.Name, Replication: d.Replication, Partitioner: d.Partitioner,
			ErasureM: d.Erasure.M, ErasureK: d.Erasure.K, Splits: d.Splits, Timestamp: d.Timestamp, TruncatedAt: d.TruncatedAt})
		if d.PartitionTransactions() {
			m.Keyspaces[len(m.Keyspaces)-1].Transactions = d.Transactions
		}
	}
	for _, member := range n.View().Nodes() {
		m.Ring = append(m.Ring, backup.Member{ID: member.ID, DC: member.DC, Addr: member.Addr, Status: member.Status.String(), Tokens: len(member.Tokens)})
	}
	if err := backup.Create(n.engine, n.cfg.DataDir, m, keyspaces); err != nil {
		return backup.Manifest{}, snapshotError(err)
	}
	n.log.Info("snapshot taken", "snapshot", name, "keyspaces", len(m.Keyspaces), "timestamp", m.Timestamp)
	return m, nil
}

// snapshotsKept refuses snapshots on a node with no data directory of its own.
func (n *Node) snapshotsKept() error {
	if n.cfg.InMemory || n.cfg.FS != nil {
		return apiserver.FailedPrecondition(errors.New("this node keeps its data in memory: it has no data directory to keep snapshots in"))
	}
	return nil
}

// snapshotError gives backup's errors the API's classes: a bad name is an invalid
// argument, a missing or existing snapshot a precondition the operator can fix.
func snapshotError(err error) error {
	switch {
	case errors.Is(err, backup.ErrInvalidName):
		return fmt.Errorf("%w: %w", coord.ErrInvalidArgument, err)
	case errors.Is(err, backup.ErrNoSnapshot), errors.Is(err, backup.ErrExists):
		return apiserver.FailedPrecondition(err)
	}
	return err
}

// ReadSnapshot reads snapshot name's records of keyspace in key order, tombstones
// included, and calls send with a page at a time; records the snapshot does not hold
// (truncated before it, past a cluster snapshot's cut) are left out.
func (n *Node) ReadSnapshot(ctx context.Context, name, keyspace string, send func([]lww.Record) error) error {
	if err := n.snapshotsKept(); err != nil {
		return err
	}
	m, cp, err := backup.Open(n.cfg.DataDir, name)
	if err != nil {
		return snapshotError(err)
	}
	defer cp.Close()
	ks, ok := m.Keyspace(keyspace)
	if !ok {
		return fmt.Errorf("%w %q in snapshot %s of %s", schema.ErrNoKeyspace, keyspace, name, m.Node)
	}
	var start []byte
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		recs, err := cp.ScanPage(keyspace, start, nil, snapshotPageRecords, snapshotPageBytes, true, nil)
		if err != nil || len(recs) == 0 {
			return err
		}
		start = append(slices.Clip(recs[len(recs)-1].Key), 0)
		if err := send(slices.DeleteFunc(recs, func(r lww.Record) bool { return !m.Visible(ks, r) })); err != nil {
			return err
		}
	}
}

func (b apiBackend) CreateSnapshot(_ context.Context, name string, keyspaces []string, cut hlc.Timestamp, hold string) (*kurav1.Snapshot, error) {
	m, err := b.n.CreateSnapshot(name, keyspaces, cut, hold)
	if err != nil {
		return nil, err
	}
	return snapshotProto(m), nil
}

func (b apiBackend) Snapshots() (*kurav1.ListSnapshotsResponse, error) {
	if err := b.n.snapshotsKept(); err != nil {
		return nil, err
	}
	list, incomplete, err := backup.List(b.n.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	resp := &kurav1.ListSnapshotsResponse{Node: b.n.ID(), Incomplete: incomplete}
	for _, m := range list {
		resp.Snapshots = append(resp.Snapshots, snapshotProto(m))
	}
	return resp, nil
}

func (b apiBackend) DeleteSnapshot(name string) error {
	if err := b.n.snapshotsKept(); err != nil {
		return err
	}
	return snapshotError(backup.Delete(b.n.cfg.DataDir, name))
}

func (b apiBackend) ReadSnapshot(ctx context.Context, name, keyspace string, send func([]*kurav1.LocalVersion) error) error {
	return b.n.ReadSnapshot(ctx, name, keyspace, func(recs []lww.Record) error {
		page := make([]*kurav1.LocalVersion, len(recs))
		for i, r := range recs {
			page[i] = &kurav1.LocalVersion{Key: r.Key, Value: r.Value, Timestamp: uint64(r.Timestamp), Deleted: r.Tombstone, ExpiresAt: uint64(r.ExpiresAt), Type: uint32(r.Type)}
		}
		return send(page)
	})
}

// snapshotProto is a manifest's wire form.
func snapshotProto(m backup.Manifest) *kurav1.Snapshot {
	out := &kurav1.Snapshot{Name: m.Name, Node: m.Node, Dc: m.DC, CreatedAtUnixMs: m.CreatedAt.UnixMilli(),
		Timestamp: uint64(m.Timestamp), Cut: uint64(m.Cut), BeforeRestoreOf: m.Before}
	for _, k := range m.Keyspaces {
		def := schema.Keyspace{Name: k.Name, Replication: k.Replication, Partitioner: k.Partitioner,
			Erasure: schema.Erasure{M: k.ErasureM, K: k.ErasureK}, Splits: k.Splits, Transactions: k.Transactions}
		out.Keyspaces = append(out.Keyspaces, &kurav1.SnapshotKeyspace{Keyspace: schemasync.KeyspaceProto(def),
			Timestamp: uint64(k.Timestamp), TruncatedAt: uint64(k.TruncatedAt)})
	}
	for _, member := range m.Ring {
		out.Ring = append(out.Ring, &kurav1.SnapshotMember{Id: member.ID, Dc: member.DC, Addr: member.Addr, Status: member.Status, Tokens: int32(member.Tokens)})
	}
	return out
}

// writeHold is a cluster snapshot's hold of the writes this node coordinates.
type writeHold struct {
	mu      sync.Mutex
	id      string
	release func() // nil when no hold is in force
	timer   *time.Timer
}

// HoldWrites holds the writes this node coordinates (coord.Coordinator.HoldWrites) under
// id, for at most d, and returns the clock once the writes in flight were answered:
// every write the node acknowledged before is stamped below it. A hold of another id in
// force is refused, and so is a hold whose writes in flight are not answered within d:
// new writes wait meanwhile, and must not wait longer than the hold would have lasted.
func (n *Node) HoldWrites(ctx context.Context, id string, d time.Duration) (hlc.Timestamp, error) {
	drainCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	release, err := n.coord.HoldWrites(drainCtx)
	if errors.Is(err, coord.ErrHeld) {
		n.hold.mu.Lock()
		other := n.hold.id
		n.hold.mu.Unlock()
		return 0, apiserver.FailedPrecondition(fmt.Errorf("another cluster snapshot holds this node's writes (hold %q): wait for it to end", other))
	}
	if err != nil {
		return 0, err
	}
	n.hold.mu.Lock()
	defer n.hold.mu.Unlock()
	n.hold.id, n.hold.release = id, release
	n.hold.timer = time.AfterFunc(d, func() {
		n.hold.mu.Lock()
		defer n.hold.mu.Unlock()
		if n.hold.id == id && n.hold.release != nil {
			n.hold.release()
			n.hold.release = nil
			n.log.Warn("a cluster snapshot's hold of writes ended by itself before its release", "hold", id, "after", d)
		}
	})
	return n.clock.Now(), nil
}

// ReleaseWrites ends hold id and reports whether it was still in force.
func (n *Node) ReleaseWrites(id string) bool {
	n.hold.mu.Lock()
	defer n.hold.mu.Unlock()
	if n.hold.id != id || n.hold.release == nil {
		return false
	}
	n.hold.release()
	n.hold.release = nil
	n.hold.timer.Stop()
	return true
}

func (b apiBackend) HoldWrites(ctx context.Context, id string, d time.Duration) (hlc.Timestamp, error) {
	return b.n.HoldWrites(ctx, id, d)
}

func (b apiBackend) ReleaseWrites(id string) bool { return b.n.ReleaseWrites(id) }
