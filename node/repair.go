package node

import (
	"context"
	"time"

	"github.com/kuradb/kura/antientropy"
)

// Repair runs an anti-entropy repair from this node: its token ranges of the keyspace
// req names (every keyspace when empty), against the other replicas (those in req.DC
// when set).
func (n *Node) Repair(ctx context.Context, req antientropy.Request) (antientropy.Stats, error) {
	st, err := n.repairer.Repair(ctx, req)
	n.metrics.ObserveRepair("manual", st, err)
	return st, err
}

// repairPass repairs every keyspace once, spreading its ranges over the repair interval
// so that the background repair never loads the replicas much; the node's loop starts
// the next pass when this one ends.
func (n *Node) repairPass(ctx context.Context) {
	start := time.Now()
	st, err := n.repairer.Repair(ctx, antientropy.Request{Spread: n.cfg.RepairInterval})
	if ctx.Err() != nil {
		return // the node is stopping
	}
	n.metrics.ObserveRepair("background", st, err)
	switch {
	case err != nil:
		n.log.Warn("background repair", "err", err)
	case st.RecordsSent > 0 || st.ChunksRebuilt > 0 || st.Failed > 0:
		n.log.Info("background repair", "ranges", st.Ranges, "differing_subranges", st.DifferingSubranges,
			"records_sent", st.RecordsSent, "skipped", st.Skipped, "chunks_rebuilt", st.ChunksRebuilt,
			"failed", st.Failed, "took", time.Since(start).Round(time.Second))
	}
}
