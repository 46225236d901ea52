package node

import (
	"context"
	"time"

	"google.golang.org/grpc"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/metrics"
	"github.com/kuradb/kura/sched"
)

// newMetrics returns the node's registry, reading traffic from its transport and gauges
// from the node at each scrape.
func (n *Node) newMetrics() *metrics.Registry {
	return metrics.New(metrics.Config{Stats: n.transport.Stats(), Gauges: n.gauges})
}

// gauges reads the node's hints, membership, storage size and clock.
func (n *Node) gauges() metrics.Gauges {
	clock := n.guard.Status()
	engine := n.engine.Stats()
	g := metrics.Gauges{StorageDiskBytes: engine.DiskBytes, StorageCompactionPacedSeconds: engine.CompactionPaced.Seconds(),
		ClockOffsetSeconds: clock.Offset.Seconds(), ClockOK: clock.OK, ClockAheadMaxSeconds: clock.AheadMax.Seconds(),
		PowerState: n.Power().String(), ScanRereads: n.coord.ScanRereads(),
		RowCacheHits: engine.RowCache.Hits, RowCacheMisses: engine.RowCache.Misses, RowCacheBytes: engine.RowCache.Bytes}
	g.PowerWatts, g.EnergyJoules = n.Energy(time.Now())
	reads := n.stage.Stats()
	for class, cs := range reads.ByClass {
		g.ReadClasses = append(g.ReadClasses, metrics.ReadClass{Class: sched.Class(class).String(), Queued: cs.Queued, Served: cs.Served, WaitSeconds: cs.Wait.Seconds()})
	}
	g.ReadWorkersBusy = reads.Busy
	for _, member := range n.directory.Nodes() {
		if n.directory.State(member.ID).Reachable() {
			g.MembersAlive++
		} else {
			g.MembersDown++
		}
	}
	if hints, err := n.coord.HintsPending(); err == nil {
		g.HintsPending = hints
	} else {
		n.log.Warn("count hints for metrics", "err", err)
	}
	return g
}

// grpcOps names the metered gRPC methods by the operation they perform. GetMany and
// PutMany are metered by their handlers, as one get per key and one put per item.
var grpcOps = map[string]string{
	kurav1.KV_Put_FullMethodName:    "put",
	kurav1.KV_Get_FullMethodName:    "get",
	kurav1.KV_Delete_FullMethodName: "delete",
	kurav1.KV_Scan_FullMethodName:   "scan",
	// A lightweight transaction, labelled with its serial level.
	kurav1.KV_CompareAndSet_FullMethodName: "cas",
}

// observeUnary is the gRPC interceptor that reports each data request to the metrics, as
// the Redis front end does.
func (n *Node) observeUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	op, metered := grpcOps[info.FullMethod]
	if !metered {
		return handler(ctx, req)
	}
	start := time.Now()
	reply, err := handler(ctx, req)
	level := consistency.One // what the API serves when the request names no valid level
	switch r := req.(type) {
	case interface{ GetConsistency() kurav1.Consistency }:
		if l, lerr := levelFromProto(r.GetConsistency()); lerr == nil {
			level = l
		}
	case *kurav1.CompareAndSetRequest:
		if l, lerr := serialFromProto(r.GetSerialConsistency()); lerr == nil {
			level = l
		}
	}
	n.observe(op, level, time.Since(start), err)
	return reply, err
}

// observe reports one data request of the gRPC API to the metrics and to the power
// controller's load.
func (n *Node) observe(op string, level consistency.Level, elapsed time.Duration, err error) {
	n.metrics.Observe("grpc", op, level, elapsed, err)
	n.power.ObserveRequest(elapsed)
}
