package node

import (
	"context"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/membership"
)

// loadInterval is how often a node counts what it stores and gossips it for kura status
// and the console. Counting walks every keyspace's live-key index, an entry per live
// record (storage.Engine.CountLive), so it runs less often than the row counts of ordered
// keyspaces that scans size their rounds by; Cassandra's nodetool status load is as
// stale. walkBudget keeps it to walkShare of the time on a node holding much.
const loadInterval = 10 * time.Second

// loadPhase is when a node counts what it stores a second time, its first count being
// at start; it counts every loadInterval from then. The phase is a point of the interval
// fixed by the node's id, so that nodes started together (an embedded cluster: kura
// bench power's 16 in one process, on two cores) do not all walk their storage at once:
// four such walks at once held Exp. 1's requests near 100 ms (docs/power.md).
func loadPhase(id string) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(id))
	return 1 + time.Duration(h.Sum64()%uint64(loadInterval-1))
}

// Application states of a node's load and uptime, gossiped besides the ring's.
const (
	keyStoredKeys = "load_keys"  // the records it stores, every keyspace
	keyStartedAt  = "started_at" // when its process started, Unix milliseconds
)

// NodeLoad is what a node stores (its load, as nodetool status says), as it last gossiped it.
type NodeLoad struct {
	Bytes int64 // disk space its storage takes
	Keys  int64 // live records it stores, chunks of erasure-coded keyspaces included
	Known bool  // the node has gossiped its load
	// StartedAt is when the node's process started; zero when not known.
	StartedAt time.Time
}

// publishStored counts the records and disk bytes this node stores and gossips them when
// they changed; it skips a count its walkBudget does not allow yet.
func (n *Node) publishStored(context.Context) {
	start := time.Now()
	if !n.storedBudget.due(start) {
		return
	}
	bytes, keys := n.storedLoad()
	n.storedBudget.spent(start, time.Since(start))
	d := n.feed
	for key, value := range map[string]string{
		membership.KeyLoadBytes: strconv.FormatInt(bytes, 10),
		keyStoredKeys:           strconv.FormatInt(keys, 10),
	} {
		if self, ok := d.Member(n.cfg.ID); !ok || self.AppState[key] != value {
			d.SetAppState(key, value)
		}
	}
}

// storedLoad counts this node's disk bytes and live records, every keyspace.
func (n *Node) storedLoad() (bytes, keys int64) {
	for _, ks := range n.catalog.List() {
		live, err := n.countLive(ks)
		if err != nil {
			n.log.Debug("count records", "keyspace", ks.Name, "err", err)
			continue
		}
		keys += live
	}
	return int64(n.engine.Stats().DiskBytes), keys
}

// NodeLoads returns every known node's load and start time, as gossiped.
func (n *Node) NodeLoads() map[string]NodeLoad {
	loads := map[string]NodeLoad{}
	for _, m := range n.feed.Members() {
		var l NodeLoad
		bytes, errBytes := strconv.ParseInt(m.AppState[membership.KeyLoadBytes], 10, 64)
		keys, errKeys := strconv.ParseInt(m.AppState[keyStoredKeys], 10, 64)
		if errBytes == nil && errKeys == nil {
			l.Bytes, l.Keys, l.Known = bytes, keys, true
		}
		if ms, err := strconv.ParseInt(m.AppState[keyStartedAt], 10, 64); err == nil && ms > 0 {
			l.StartedAt = time.UnixMilli(ms)
		}
		loads[m.ID] = l
	}
	return loads
}

// StartedAt is when this node started.
func (n *Node) StartedAt() time.Time { return n.started }

// startedAtMs is l's start time in Unix milliseconds; 0 when not known.
func startedAtMs(l NodeLoad) int64 {
	if l.StartedAt.IsZero() {
		return 0
	}
	return l.StartedAt.UnixMilli()
}

// statusStartedAtMs is the start time ClusterStatus reports for member n in state, from
// its gossiped load l; 0 (no uptime) for a node that is down, left or was removed. Gossip
// keeps the last started_at of a node long after its process stopped, so reporting it
// regardless made kura status count the uptime of a dead or departed node for ever. An
// asleep node is not down: its process runs, only idle, as the console also says.
func statusStartedAtMs(n cluster.Node, state cluster.State, l NodeLoad) int64 {
	if state == cluster.StateDown || n.Status == cluster.StatusLeft || n.Status == cluster.StatusRemoved {
		return 0
	}
	return startedAtMs(l)
}
