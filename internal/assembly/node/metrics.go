package node

import (
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/service/metrics"
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

// observe reports one data request of the gRPC API to the metrics and to the power
// controller's load.
func (n *Node) observe(op string, level consistency.Level, elapsed time.Duration, err error) {
	n.metrics.Observe("grpc", op, level, elapsed, err)
	n.power.ObserveRequest(elapsed)
}
