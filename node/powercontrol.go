package node

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kuradb/kura/cluster"
	"github.com/kuradb/kura/power"
	"github.com/kuradb/kura/stats"
)

// keyLoad gossips the client requests a node coordinates: "ops_per_second,p99_ms" over
// the last load window, which the power controller adds up.
const keyLoad = "load"

// loadWindow is how long a node's published load averages over.
const loadWindow = 5 * time.Second

// loadMeter counts the client requests a node coordinates and keeps their latencies, for
// the load it publishes.
type loadMeter struct {
	mu        sync.Mutex
	since     time.Time
	latencies []time.Duration
}

// observe records one request, unless no controller reads the load.
func (p *powerCycle) observeRequest(elapsed time.Duration) {
	if p.controller != nil {
		p.load.observe(elapsed)
	}
}

// observe records one request.
func (l *loadMeter) observe(elapsed time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.latencies) < 1<<16 {
		l.latencies = append(l.latencies, elapsed)
	}
}

// take returns the window's request rate and p99, and starts a new window.
func (l *loadMeter) take(now time.Time) (opsPerSecond float64, p99 time.Duration) {
	l.mu.Lock()
	latencies, since := l.latencies, l.since
	l.latencies, l.since = nil, now
	l.mu.Unlock()
	if since.IsZero() || !now.After(since) {
		return 0, 0
	}
	return float64(len(latencies)) / now.Sub(since).Seconds(), stats.Percentile(latencies, 0.99)
}

// publishLoad gossips this node's load; the node's loop calls it every load window.
func (n *Node) publishLoad(context.Context) {
	ops, p99 := n.power.load.take(time.Now())
	n.gossip.current().SetAppState(keyLoad, fmt.Sprintf("%.1f,%d", ops, p99.Milliseconds()))
}

// clusterLoad adds up the load every member gossips: the requests per second, and the
// worst p99.
func (n *Node) clusterLoad(now time.Time) power.Sample {
	s := power.Sample{At: now}
	for _, m := range n.gossip.current().Members() {
		ops, p99ms, ok := strings.Cut(m.AppState[keyLoad], ",")
		if !ok {
			continue
		}
		rate, err1 := strconv.ParseFloat(ops, 64)
		ms, err2 := strconv.Atoi(p99ms)
		if err1 != nil || err2 != nil {
			continue
		}
		s.OpsPerSecond += rate
		s.LatencyP99 = max(s.LatencyP99, time.Duration(ms)*time.Millisecond)
	}
	return s
}

// controlPower runs the power controller (Config.PowerController) once, on the one node
// in charge: the awake tier-0 node of lowest id. It puts one node to sleep or wakes one
// when the controller says so; the transition runs in the background, and the
// controller waits out its transition times before the next.
func (n *Node) controlPower(ctx context.Context) {
	if n.power.controller == nil || n.powerLeader() != n.cfg.ID {
		return
	}
	now := time.Now()
	var candidates []power.Candidate
	for _, m := range n.directory.Nodes() {
		if m.Status != cluster.StatusNormal {
			continue
		}
		candidates = append(candidates, power.Candidate{ID: m.ID, State: n.directory.Power(m.ID).State, Since: n.power.since(m.ID)})
	}
	action, ok := n.power.controller.Decide(n.clusterLoad(now), candidates, func(id string) bool { return n.maySleep(id) == nil })
	if !ok {
		return
	}
	verb := "wake"
	if action.Sleep {
		verb = "sleep"
	}
	n.log.Info("power controller", "action", verb, "node", action.Node)
	go func() {
		ctx, cancel := n.stopContext()
		defer cancel()
		if _, err := n.SetPower(ctx, action.Node, verb); err != nil {
			n.log.Warn("power controller", "action", verb, "node", action.Node, "err", err)
		}
	}()
}

// powerLeader is the node that runs the power controller: the awake tier-0 normal
// member of lowest id, which every node computes alike from its view.
func (n *Node) powerLeader() string {
	nodes := n.directory.Nodes()
	i := slices.IndexFunc(nodes, func(m cluster.Node) bool {
		return m.Tier == 0 && m.Status == cluster.StatusNormal && n.directory.State(m.ID) == cluster.StateUp
	})
	if i < 0 {
		return ""
	}
	return nodes[i].ID
}
