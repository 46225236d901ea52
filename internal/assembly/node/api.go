package node

import (
	"context"
	"errors"
	"time"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/data/antientropy"
	"github.com/kuradb/kura/internal/service/apiserver"
	"github.com/kuradb/kura/internal/service/ringchange"
	"github.com/kuradb/kura/internal/service/schemasync"
)

// apiBackend is the node as the client API's server asks it (apiserver.Backend): the
// node's own types mapped to the wire's and to apiserver's.
type apiBackend struct{ n *Node }

func (b apiBackend) CreateKeyspace(ctx context.Context, ks *kurav1.Keyspace) error {
	return b.n.CreateKeyspace(ctx, schemasync.KeyspaceFromProto(ks))
}

func (b apiBackend) TruncateKeyspace(ctx context.Context, name string) (hlc.Timestamp, error) {
	return b.n.Truncate(ctx, name)
}

func (b apiBackend) DropKeyspace(ctx context.Context, name string) (hlc.Timestamp, error) {
	return b.n.DropKeyspace(ctx, name)
}

func (b apiBackend) Keyspaces() []*kurav1.Keyspace {
	var out []*kurav1.Keyspace
	for _, ks := range b.n.Keyspaces() {
		out = append(out, schemasync.KeyspaceProto(ks))
	}
	return out
}

func (b apiBackend) Keyspace(name string) (*kurav1.Keyspace, error) {
	ks, err := b.n.Keyspace(name)
	if err != nil {
		return nil, err
	}
	return schemasync.KeyspaceProto(ks), nil
}

func (b apiBackend) ClusterStatus() *kurav1.ClusterStatusResponse {
	view := b.n.View()
	p := b.n.streamer.Progress()
	resp := &kurav1.ClusterStatusResponse{Self: view.Self().ID, Streaming: &kurav1.StreamProgress{
		RangesTotal: p.RangesTotal.Load(), RangesDone: p.RangesDone.Load(), Records: p.Records.Load(), Bytes: p.Bytes.Load(), CrossDcBytes: p.CrossDCBytes.Load(),
	}}
	resp.Clock, resp.Membership = b.n.clockStatus(), b.n.membershipStatus()
	resp.ProtocolVersion = int32(b.n.ClusterProtocolVersion())
	protocols := b.n.ProtocolVersions()
	offsets := map[string]time.Duration{}
	for _, p := range b.n.guard.Peers() {
		offsets[p.Peer] = p.Offset
	}
	now := time.Now()
	loads := b.n.NodeLoads()
	r, _ := b.n.Ring() // no ring yet: every share 0
	for _, n := range view.Nodes() {
		state := view.State(n.ID)
		offset, measured := offsets[n.ID]
		watts, joules := b.n.power.Energy(n.ID, now)
		resp.Nodes = append(resp.Nodes, &kurav1.NodeStatus{Id: n.ID, Dc: n.DC, Addr: n.Addr, ClientAddr: n.ClientAddr, Alive: state.Reachable(), Tokens: n.Tokens,
			Status: n.Status.String(), State: state.String(), Replaces: n.Replaces, ClockMeasured: measured, ClockOffsetMs: offset.Milliseconds(),
			Power: view.Power(n.ID).State.String(), PowerTier: int32(n.Tier), PowerWatts: watts, EnergyJoules: joules,
			LoadBytes: loads[n.ID].Bytes, LoadKeys: loads[n.ID].Keys, LoadKnown: loads[n.ID].Known, StartedAtUnixMs: statusStartedAtMs(n, state, loads[n.ID])})
		resp.Nodes[len(resp.Nodes)-1].ProtocolVersion = int32(protocols[n.ID])
		if r != nil {
			resp.Nodes[len(resp.Nodes)-1].Ownership = r.Share(n.ID)
		}
	}
	return resp
}

func (b apiBackend) SetPower(ctx context.Context, id, action string) (string, error) {
	state, err := b.n.SetPower(ctx, id, action)
	if err != nil {
		return "", err
	}
	return state.String(), nil
}

func (b apiBackend) Decommission(ctx context.Context, force bool) (apiserver.MoveStats, error) {
	st, err := b.n.Decommission(ctx, force)
	return moveStats(st), refusedMove(err)
}

func (b apiBackend) RemoveNode(ctx context.Context, id string, force bool) (apiserver.MoveStats, error) {
	st, err := b.n.RemoveNode(ctx, id, force)
	return moveStats(st), refusedMove(err)
}

func (b apiBackend) Cleanup(ctx context.Context, keyspace string) (records, bytes int64, err error) {
	records, bytes, err = b.n.Cleanup(ctx, keyspace)
	return records, bytes, refusedMove(err)
}

// refusedMove marks a ring change refused as it stands (ringchange.ErrBadMove) for the API, which
// answers it failed-precondition.
func refusedMove(err error) error {
	if errors.Is(err, ringchange.ErrBadMove) {
		return apiserver.FailedPrecondition(err)
	}
	return err
}

func moveStats(st ringchange.MoveStats) apiserver.MoveStats {
	return apiserver.MoveStats{Gainers: st.Gainers, Ranges: st.Ranges, Records: st.Records, Bytes: st.Bytes, CrossDCBytes: st.CrossDCBytes, Took: st.Took}
}

func (b apiBackend) Repair(ctx context.Context, keyspace, dc string) (*kurav1.RepairResponse, error) {
	st, err := b.n.Repair(ctx, antientropy.Request{Keyspace: keyspace, DC: dc})
	if err != nil {
		return nil, err
	}
	return &kurav1.RepairResponse{
		Node:               b.n.ID(),
		Keyspaces:          int64(st.Keyspaces),
		Ranges:             int64(st.Ranges),
		Failed:             int64(st.Failed),
		Subranges:          int64(st.Subranges),
		DifferingSubranges: int64(st.DifferingSubranges),
		RecordsRead:        int64(st.RecordsRead),
		RecordsSent:        int64(st.RecordsSent),
		Skipped:            int64(st.Skipped),
		TreeBytes:          st.TreeBytes,
		RecordBytes:        st.RecordBytes,
		ChunkKeysListed:    int64(st.ChunkKeysListed),
		ListingBytes:       st.ListingBytes,
		ChunksRebuilt:      int64(st.ChunksRebuilt),
	}, nil
}

// RedirectTargets lists the members a client of this node, once it has left the ring,
// goes to instead: those a stand-in would name that are on the ring and not leaving,
// never this node.
func (b apiBackend) RedirectTargets() []*kurav1.RedirectTarget {
	n := b.n
	var targets []*kurav1.RedirectTarget
	for _, t := range n.power.RedirectTargets(n.cfg.ID) {
		if other, ok := n.directory.Node(t.GetId()); ok && t.GetId() != n.cfg.ID && other.Status.OnRing() && other.Status != cluster.StatusLeaving {
			targets = append(targets, t)
		}
	}
	return targets
}
