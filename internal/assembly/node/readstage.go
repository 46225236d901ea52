package node

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/sched"
)

// rowsInterval is how often a node counts the rows it holds of each ordered keyspace
// and gossips them: the estimates parallel scans size their first round by (paper 004's
// P) follow the data within seconds; a count reads an index entry per live record, so a
// node whose count takes longer than walkShare of the interval counts less often
// (walkBudget).
const rowsInterval = 2 * time.Second

// SetReadPolicy switches the node's read policy at once: the read stage's queue
// discipline and RaS, and the coordinator's parallel scans (docs/scheduling.md).
func (n *Node) SetReadPolicy(p sched.Policy) {
	n.stage.SetPolicy(p)
}

// ReadPolicy returns the node's read policy.
func (n *Node) ReadPolicy() sched.Policy {
	return n.stage.Policy()
}

// ReadStage returns the counters of the node's read stage.
func (n *Node) ReadStage() sched.Stats {
	return n.stage.Stats()
}

// publishRows counts the live rows this node holds of each ordered keyspace and gossips
// them as "keyspace=rows,..." when they changed, then refreshes the estimates of every
// node from gossip. Only ordered keyspaces need them: a hash-partitioned scan reads
// every range whatever the counts.
func (n *Node) publishRows(context.Context) {
	if start := time.Now(); n.rows.budget.due(start) {
		var parts []string
		for _, ks := range n.catalog.List() {
			if ks.Partitioner != "ordered" || ks.Erasure.Enabled() {
				continue
			}
			live, err := n.countLive(ks)
			if err != nil {
				n.log.Debug("count rows", "keyspace", ks.Name, "err", err)
				continue
			}
			parts = append(parts, fmt.Sprintf("%s=%d", ks.Name, live))
		}
		n.rows.budget.spent(start, time.Since(start))
		if rows := strings.Join(parts, ","); rows != n.rows.published {
			n.feed.SetAppState(membership.KeyLoadRows, rows)
			n.rows.published = rows
		}
	}
	all := map[string]map[string]int64{}
	for _, m := range n.feed.Members() {
		if counts := parseRows(m.AppState[membership.KeyLoadRows]); len(counts) > 0 {
			all[m.ID] = counts
		}
	}
	n.rows.known.Store(&all)
}

// countLive counts the live records this node holds of keyspace ks: one walk of its
// live-key index, whose entries hold their records' headers (storage.Engine.CountLive),
// so no record is read; the counts run every few seconds.
func (n *Node) countLive(ks schema.Keyspace) (int64, error) {
	return n.engine.CountLive(ks.Name, n.guard.Now(), ks.TruncatedAt)
}

// parseRows reads "keyspace=rows,...", skipping what it cannot read.
func parseRows(s string) map[string]int64 {
	counts := map[string]int64{}
	for part := range strings.SplitSeq(s, ",") {
		name, count, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		if v, err := strconv.ParseInt(count, 10, 64); err == nil && v >= 0 {
			counts[name] = v
		}
	}
	return counts
}

// rowCounts are the rows per node and keyspace as gossiped, for the coordinator's
// estimates (coord.RowEstimates).
type rowCounts struct {
	published string     // this node's last gossiped value; touched by publishRows alone
	budget    walkBudget // spaces its counts; touched by publishRows alone
	known     atomic.Pointer[map[string]map[string]int64]
}

// Rows returns what node last gossiped for keyspace.
func (r *rowCounts) Rows(node, keyspace string) (int64, bool) {
	known := r.known.Load()
	if known == nil {
		return 0, false
	}
	rows, ok := (*known)[node][keyspace]
	return rows, ok
}
