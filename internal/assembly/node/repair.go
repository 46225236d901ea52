package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/kuradb/kura/internal/data/antientropy"
)

// Repair runs an anti-entropy repair from this node: its token ranges of the keyspace
// req names (every keyspace when empty), against the other replicas (those in req.DC
// when set).
func (n *Node) Repair(ctx context.Context, req antientropy.Request) (antientropy.Stats, error) {
	st, err := n.repairer.Repair(ctx, req)
	n.metrics.ObserveRepair("manual", st, err)
	return st, err
}

// ringLearnGrace is how long after its start a node may go without having learned the
// ring before a background repair pass that cannot run for want of it warns.
const ringLearnGrace = time.Minute

// repairPass repairs every keyspace once, spreading its ranges over the repair interval
// so that the background repair never loads the replicas much; the node's loop starts
// the next pass when this one ends.
func (n *Node) repairPass(ctx context.Context) {
	start := time.Now()
	if !n.directory.Trusted() {
		// A pass needs the ring. A joining node learns it from its seeds in its first
		// seconds, so its first pass, which starts at once, finding none is expected
		// (issue 45: it was a WARN on every joiner); a node that has not learned it
		// long after starting (a wrong --seeds) is worth a warning.
		level := slog.LevelInfo
		if start.Sub(n.started) > ringLearnGrace {
			level = slog.LevelWarn
		}
		n.log.Log(ctx, level, "background repair skipped: this node has not learned the ring yet (kura status shows what its seeds answered)",
			"running_for", start.Sub(n.started).Round(time.Second), "next_pass_in", n.cfg.RepairInterval)
		return
	}
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
