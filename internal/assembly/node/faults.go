package node

import (
	"context"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/io/faults"
	"github.com/kuradb/kura/internal/service/apiserver"
)

func (b apiBackend) SetFaults(spec *kurav1.Faults) error {
	return b.n.SetFaults(faults.FromProto(spec))
}

// SetFaults replaces the faults injected into this node (Config.EnableFaults), as kura
// faults does through the admin API: for in-process callers, the simulator's clock skew.
func (n *Node) SetFaults(spec faults.Spec) error {
	if n.faults == nil {
		return apiserver.ErrFaultsDisabled
	}
	if err := n.faults.Set(spec); err != nil {
		return err
	}
	n.log.Warn("injected faults", "faults", spec.String())
	return nil
}

func (b apiBackend) Faults() (spec *kurav1.Faults, enabled bool) {
	if b.n.faults == nil {
		return nil, false
	}
	return b.n.faults.Spec().Proto(), true
}

// LocalScan reads this node's own records, each with the replicas that hold it: a
// checker compares the replicas of every key with it, which a coordinated read, merging
// the replicas, would hide.
func (b apiBackend) LocalScan(ctx context.Context, keyspace string, start, end []byte, limit int) ([]*kurav1.LocalVersion, error) {
	ks, err := b.n.Keyspace(keyspace)
	if err != nil {
		return nil, err
	}
	recs, err := b.n.local.Scan(ctx, replica.ScanRequest{
		Keyspace: ks.Name, Start: start, End: end, Limit: limit,
		Ranges: []ring.Range{{}},
	})
	if err != nil {
		return nil, err
	}
	var versions []*kurav1.LocalVersion
	for _, r := range recs {
		members, err := b.n.ring.Replicas(ctx, ks, r.Key, nil)
		if err != nil {
			return nil, err
		}
		v := &kurav1.LocalVersion{Key: r.Key, Value: r.Value, Timestamp: uint64(r.Timestamp), Deleted: r.Tombstone, ExpiresAt: uint64(r.ExpiresAt), Type: uint32(r.Type)}
		for _, m := range members {
			if !m.Pending {
				v.Replicas = append(v.Replicas, m.ID)
			}
		}
		versions = append(versions, v)
	}
	return versions, nil
}
