package powercycle

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/base/stats"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/power"
)

// keyLoad gossips the client requests a node coordinates: "ops_per_second,p99_ms" over
// the last load window, which the power controller adds up.
const keyLoad = "load"

// LoadWindow is how long a node's published load averages over: the node calls
// PublishLoad once a window.
const LoadWindow = 5 * time.Second

// loadMeter counts the client requests a node coordinates and keeps their latencies, for
// the load it publishes.
type loadMeter struct {
	mu        sync.Mutex
	since     time.Time
	latencies []time.Duration
}

// ObserveRequest records one client request this node coordinated: it counts as served
// (Served), and, when a controller reads the load, its latency is kept for it.
func (p *Cycle) ObserveRequest(elapsed time.Duration) {
	p.served.Add(1)
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

// Controlled reports whether the cluster runs a power controller (Config.Controller):
// then every node publishes its load, and the one in charge runs the controller.
// Without one, nobody reads the load: no gossip for it.
func (p *Cycle) Controlled() bool { return p.controller != nil }

// PublishLoad gossips this node's load; the node's loop calls it every LoadWindow.
func (p *Cycle) PublishLoad(context.Context) {
	ops, p99 := p.load.take(time.Now())
	p.parts.Gossip.SetAppState(keyLoad, fmt.Sprintf("%.1f,%d", ops, p99.Milliseconds()))
}

// clusterLoad adds up the load every member gossips: the requests per second, and the
// worst p99.
func (p *Cycle) clusterLoad(now time.Time) power.Sample {
	s := power.Sample{At: now}
	for _, m := range p.parts.Gossip.Members() {
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

// ControlPower runs the power controller (Config.Controller) once, on the one node in
// charge: the awake tier-0 node of lowest id. It first wakes the sleepers that ranges
// short of their levels need (heal), and does nothing else in a round that does; else
// it puts one node to sleep or wakes one when the controller says so. Transitions run
// in the background under ctx, which must last as long as the node runs (its loop's),
// and the controller waits out its transition times before the next.
func (p *Cycle) ControlPower(ctx context.Context) {
	if p.controller == nil || p.powerLeader() != p.cfg.ID || p.heal(ctx) {
		return
	}
	now := time.Now()
	dir := p.parts.Directory
	var candidates []power.Candidate
	for _, m := range dir.Nodes() {
		state := dir.Power(m.ID).State
		if m.Status != cluster.StatusNormal || state == power.Active && dir.State(m.ID) != cluster.StateUp {
			// A member gossip holds down still says active, but serves no load and
			// cannot be asked to sleep: it is neither capacity nor a candidate.
			continue
		}
		candidates = append(candidates, power.Candidate{ID: m.ID, State: state, Since: p.since(m.ID)})
	}
	action, ok := p.controller.Decide(p.clusterLoad(now), candidates, func(id string) bool { return p.MaySleep(id) == nil })
	if !ok {
		return
	}
	verb := "wake"
	if action.Sleep {
		verb = "sleep"
	}
	p.log.Info("power controller", "action", verb, "node", action.Node)
	go func() {
		if _, err := p.SetPower(ctx, action.Node, verb); err != nil {
			p.log.Warn("power controller", "action", verb, "node", action.Node, "err", err)
		}
	}()
}

// heal wakes the sleepers that ranges short of their keyspace's levels with the nodes
// awake now need (power.Short, power.ToWake): what a declaration made stricter, or a
// replica failed beside a sleeper, leaves, which no sleep decision caused and no load
// would undo. It reports whether it woke any. A sleeper being woken, by it or anyone,
// counts as awake, so one shortfall wakes its sleepers once.
func (p *Cycle) heal(ctx context.Context) bool {
	dir := p.parts.Directory
	p.mu.Lock()
	healing := maps.Clone(p.healing)
	p.mu.Unlock()
	var sleepers []string
	for _, m := range dir.Nodes() {
		if m.Status == cluster.StatusNormal && dir.Power(m.ID).State == power.Asleep && !healing[m.ID] {
			sleepers = append(sleepers, m.ID)
		}
	}
	if len(sleepers) == 0 {
		return false
	}
	awake := func(id string) bool {
		return healing[id] || dir.State(id) == cluster.StateWaking || dir.State(id).Readable()
	}
	r, demands, err := p.demands()
	if err != nil {
		p.log.Warn("power controller: no ring to check the levels on", "err", err)
		return false
	}
	var short []power.Shortfall
	all := make([]power.Demand, len(demands))
	for i, d := range demands {
		for _, s := range power.Short(d.Sets, d.Levels, awake) {
			s.Keyspace, s.Range = d.keyspace, r.Ranges()[s.Index]
			short = append(short, s)
		}
		all[i] = d.Demand
	}
	wake := power.ToWake(all, awake, sleepers)
	if len(wake) == 0 {
		return false
	}
	first := short[0]
	p.log.Warn("power controller: ranges short of their levels; waking sleepers", "wake", wake, "ranges_short", len(short),
		"keyspace", first.Keyspace, "range", fmt.Sprintf("(%d, %d]", first.Range.Start, first.Range.End),
		"level", first.Level, "dc", first.DC, "awake", first.Awake, "needed", first.Needed, "replicas", first.Replicas)
	p.mu.Lock()
	for _, id := range wake {
		p.healing[id] = true
	}
	p.mu.Unlock()
	for _, id := range wake {
		go func() {
			if _, err := p.SetPower(ctx, id, "wake"); err != nil {
				p.log.Warn("power controller", "action", "wake", "node", id, "err", err)
			}
			p.mu.Lock()
			delete(p.healing, id)
			p.mu.Unlock()
		}()
	}
	return true
}

// powerLeader is the node that runs the power controller: the awake tier-0 normal
// member of lowest id, which every node computes alike from its view.
func (p *Cycle) powerLeader() string {
	dir := p.parts.Directory
	nodes := dir.Nodes()
	i := slices.IndexFunc(nodes, func(m cluster.Node) bool {
		return m.Tier == 0 && m.Status == cluster.StatusNormal && dir.State(m.ID) == cluster.StateUp
	})
	if i < 0 {
		return ""
	}
	return nodes[i].ID
}
