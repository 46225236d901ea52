// Package experiment is `kura bench routing`'s simulated experiment (paper 000, Fig. 8):
// onehop, chord, the paper's ML-Chord rule as printed and kura's mlchord side by side on
// the same nodes and lookups, on the simulator. It lives apart from package routing so
// that the packages that route (node, coord) do not import the simulator.
package experiment

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/base/stats"
	"github.com/kuradb/kura/internal/core/routing/chord"
	"github.com/kuradb/kura/internal/tools/sim"
)

// LinkModel gives the one-way latency from a node of one DC to a node of another (or the
// same) DC; a topology file feeds it.
type LinkModel func(fromDC, toDC string) time.Duration

// DCSize names a DC and how many nodes it has.
type DCSize struct {
	Name  string
	Nodes int
}

// Config sets up `kura bench routing`.
type Config struct {
	// DCs lists the datacenters and their node counts; any number, unequal sizes allowed.
	DCs []DCSize
	// Lookups is the number of lookups per protocol, of uniform random keys from uniform
	// random nodes.
	Lookups int
	// ChurnPerMinute is the fraction of nodes replaced per minute (0.01 = 1 %): each
	// departure (a crash or a graceful leave, even odds) comes with a join in the same DC.
	// 0 runs on fully stabilised tables.
	ChurnPerMinute float64
	Seed           uint64
	// Link gives one-way latencies; nil means 0.2 ms inside a DC and 192 ms between DCs
	// (the paper's Tokyo / São Paulo RTTs).
	Link LinkModel
	// LookupsPerSecond paces lookups in virtual time under churn; 0 means 50.
	LookupsPerSecond float64
	// MaintenanceWindow is how long the protocol runs on stabilised rings to measure its
	// maintenance traffic when there is no churn; 0 means 30 s.
	MaintenanceWindow time.Duration
	// TickInterval is how often the simulator ticks each node; 0 means 100 ms.
	TickInterval time.Duration
	// Protocols are the DHTs run beside onehop, in order; nil means chord,
	// mlchord-paper and mlchord.
	Protocols []chord.Protocol
	// TablesOnly skips the maintenance window: the rows have the lookups'
	// figures and the tables' sizes, and no maintenance traffic (for sizes
	// whose protocol runs would take too long; churn needs the protocol).
	TablesOnly bool
	// Progress, when set, is told each step of the experiment as it starts.
	Progress func(Progress)
}

// Progress is one step of an experiment: one phase of one DHT's run. Steps take about
// as long as each other for one protocol; the phases differ.
type Progress struct {
	Protocol string
	// Phase is what the step does: "building tables" (the nodes join and stabilise),
	// then "lookups, then maintenance" (the lookups, then the maintenance traffic
	// measured on stabilised rings) or "lookups under churn".
	Phase string
	// Step counts the steps done before this one, of Steps in all.
	Step, Steps int
}

// Row is one protocol's figures.
type Row struct {
	Protocol string `json:"protocol"`
	// Lookups is how many lookups were measured.
	Lookups int `json:"lookups"`
	// Hops count every hop of the request from the coordinator until it reached the
	// owner (replies go straight back). onehop's single hop, 0 when the coordinator owns
	// the key, is the request itself going straight to the owner: it forwards nothing, and
	// its inter-DC hops are the lower bound.
	HopsMean        float64 `json:"hops_mean"`
	HopsP99         float64 `json:"hops_p99"`
	InterDCHopsMean float64 `json:"interdc_hops_mean"`
	InterDCHopsMax  int     `json:"interdc_hops_max"`
	// Latency is from the coordinator's request to the owner's answer: the one-way link
	// latencies along the path plus the owner's direct reply, and under churn any timeouts.
	LatencyMsMean float64 `json:"latency_ms_mean"`
	LatencyMsP99  float64 `json:"latency_ms_p99"`
	// CorrectFraction is the share of lookups that found the true owner (a lookup that
	// failed counts as wrong).
	CorrectFraction float64 `json:"correct_fraction"`
	// RoutingEntriesPerNode is the mean number of distinct peers in a node's tables.
	RoutingEntriesPerNode float64 `json:"routing_entries_per_node"`
	// MaintenanceBpsPerNode is the bits per second each node sends to keep its tables
	// (stabilize, notify, fix_fingers, check_predecessor, joins, leaves), TCP/IP headers
	// included; MaintenanceInterDCBpsPerNode is the part that crosses between DCs.
	MaintenanceBpsPerNode        float64 `json:"maintenance_bps_per_node"`
	MaintenanceInterDCBpsPerNode float64 `json:"maintenance_interdc_bps_per_node"`
}

// Reduction is how much lower mlchord's figures are than chord's: 1 - mlchord/chord.
type Reduction struct {
	InterDCHopsMean float64 `json:"interdc_hops_mean"`
	HopsMean        float64 `json:"hops_mean"`
	LatencyMsMean   float64 `json:"latency_ms_mean"`
}

// Result is the experiment's outcome.
type Result struct {
	// Rows holds onehop, chord, mlchord-paper and mlchord, in that order.
	Rows      []Row     `json:"rows"`
	Reduction Reduction `json:"reduction"`
	// InterDCHopsLowerBoundMean is the share of lookups whose owner sits in another DC
	// than the coordinator: no routing can cross fewer times.
	InterDCHopsLowerBoundMean float64 `json:"interdc_hops_lower_bound_mean"`
	// Notes say how the figures were obtained.
	Notes []string `json:"notes"`
	// WallSeconds is how long the experiment took to run.
	WallSeconds float64 `json:"wall_seconds"`
}

// defaultLink is the paper's deployment: 0.2 ms one way inside a DC and 192 ms between DCs
// (its Tokyo / São Paulo round trips).
func defaultLink(from, to string) time.Duration {
	if from == to {
		return 195500 * time.Nanosecond
	}
	return 192 * time.Millisecond
}

// ErrBadConfig marks a Config that RunExperiment rejects.
var ErrBadConfig = errors.New("routing experiment: bad config")

func (c Config) withDefaults() (Config, error) {
	if c.Link == nil {
		c.Link = defaultLink
	}
	if c.LookupsPerSecond == 0 {
		c.LookupsPerSecond = 50
	}
	if c.MaintenanceWindow == 0 {
		c.MaintenanceWindow = 30 * time.Second
	}
	if c.TickInterval == 0 {
		c.TickInterval = 100 * time.Millisecond
	}
	if c.Progress == nil {
		c.Progress = func(Progress) {}
	}
	nodes := 0
	for _, dc := range c.DCs {
		if dc.Name == "" || dc.Nodes < 1 {
			return c, fmt.Errorf("%w: DC %q with %d nodes", ErrBadConfig, dc.Name, dc.Nodes)
		}
		nodes += dc.Nodes
	}
	switch {
	case nodes < 2:
		return c, fmt.Errorf("%w: %d nodes, want at least 2", ErrBadConfig, nodes)
	case c.Lookups < 1:
		return c, fmt.Errorf("%w: %d lookups", ErrBadConfig, c.Lookups)
	case c.ChurnPerMinute < 0 || c.ChurnPerMinute > 1:
		return c, fmt.Errorf("%w: churn %v per minute, want a fraction in [0, 1]", ErrBadConfig, c.ChurnPerMinute)
	case c.LookupsPerSecond < 0:
		return c, fmt.Errorf("%w: %v lookups per second", ErrBadConfig, c.LookupsPerSecond)
	case c.TablesOnly && c.ChurnPerMinute > 0:
		return c, fmt.Errorf("%w: churn runs the protocol; it cannot be measured on tables only", ErrBadConfig)
	}
	if c.Protocols == nil {
		c.Protocols = []chord.Protocol{chord.ProtocolChord, chord.ProtocolMLChordPaper, chord.ProtocolMLChord}
	}
	for _, p := range c.Protocols {
		if p < chord.ProtocolChord || p > chord.ProtocolMLChord {
			return c, fmt.Errorf("%w: protocol %d", ErrBadConfig, p)
		}
	}
	return c, nil
}

// plannedLookup is one lookup of the workload: a key, and where among the nodes its
// coordinator is drawn (a fraction, so the same plan fits a membership that changes).
type plannedLookup struct {
	coordinator float64
	key         chord.ID
}

// RunExperiment measures onehop, chord, the paper's ML-Chord rule and kura's mlchord on
// the same nodes and the same lookups. Without churn the DHTs start from fully
// stabilised tables (Layout.StableNode) and the lookups run on the simulator; their
// maintenance traffic is measured in a separate window of the protocol running. With
// churn, everything runs on the simulator: stabilize, fix_fingers and the rest keep the
// rings while nodes crash, leave and join under the lookups.
func RunExperiment(cfg Config) (Result, error) {
	started := time.Now()
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0))
	var peers []chord.Peer
	for _, dc := range cfg.DCs {
		for i := range dc.Nodes {
			peers = append(peers, newPeer(dc.Name, i))
		}
	}
	layout, err := chord.NewLayout(peers)
	if err != nil {
		return Result{}, fmt.Errorf("routing: experiment layout: %w", err)
	}
	plan := make([]plannedLookup, cfg.Lookups)
	for i := range plan {
		plan[i] = plannedLookup{coordinator: rng.Float64(), key: chord.ID(rng.Uint64())}
	}
	result := Result{Rows: []Row{oneHopRow(cfg, layout, plan)}}
	result.InterDCHopsLowerBoundMean = result.Rows[0].InterDCHopsMean
	protocols := cfg.Protocols
	for i, protocol := range protocols {
		phase := func(step int, name string) {
			cfg.Progress(Progress{Protocol: protocol.String(), Phase: name, Step: i*phasesPerRun + step, Steps: len(protocols) * phasesPerRun})
		}
		row, err := runProtocol(cfg, layout, protocol, plan, phase)
		if err != nil {
			return Result{}, err
		}
		result.Rows = append(result.Rows, row)
	}
	chordRow, okChord := result.row(chord.ProtocolChord.String())
	mlchordRow, okMLChord := result.row(chord.ProtocolMLChord.String())
	reduction := func(ml, base float64) float64 {
		if base == 0 {
			return 0
		}
		return 1 - ml/base
	}
	if okChord && okMLChord {
		result.Reduction = Reduction{
			InterDCHopsMean: reduction(mlchordRow.InterDCHopsMean, chordRow.InterDCHopsMean),
			HopsMean:        reduction(mlchordRow.HopsMean, chordRow.HopsMean),
			LatencyMsMean:   reduction(mlchordRow.LatencyMsMean, chordRow.LatencyMsMean),
		}
	}
	result.Notes = experimentNotes(cfg)
	result.WallSeconds = time.Since(started).Seconds()
	return result, nil
}

// row finds a protocol's row.
func (r Result) row(protocol string) (Row, bool) {
	for _, row := range r.Rows {
		if row.Protocol == protocol {
			return row, true
		}
	}
	return Row{}, false
}

func newPeer(dc string, i int) chord.Peer {
	name := fmt.Sprintf("%s-%d", dc, i)
	return chord.Peer{ID: chord.NodeID(name), Name: name, DC: dc}
}

func experimentNotes(cfg Config) []string {
	notes := []string{
		fmt.Sprintf("identifiers: 64-bit (node: its ring token; key: the hash partitioner's); successor lists of %d", chord.DefaultSuccessorListLen),
		"hops as the paper counts them: every hop of the request from the coordinator until it reaches the owner; the owner replies directly",
		"onehop: the full ring view from membership, exact; its one hop is the request going straight to the owner, so its inter-DC hops are the lower bound; its view is kept by membership, whose traffic is not counted here",
		"mlchord-paper: the paper's Fig. 4 rule as printed; mlchord: kura's, with the gap list and successor-list routing (see docs/routing.md)",
	}
	if cfg.TablesOnly {
		notes = append(notes, "tables only: DHT tables built fully stabilised, lookups run on the simulator; no maintenance traffic measured")
	} else if cfg.ChurnPerMinute == 0 {
		notes = append(notes, fmt.Sprintf("no churn: DHT tables built fully stabilised, lookups run on the simulator; maintenance measured over %v of the protocol running on stabilised rings", cfg.MaintenanceWindow))
	} else {
		notes = append(notes, fmt.Sprintf("churn: %.3g of the nodes replaced per minute (crash or graceful leave, then a join in the same DC), the protocol running on the simulator throughout; %.0f lookups per second; a lookup is correct when its owner is the true owner among the live nodes when the answer arrives", cfg.ChurnPerMinute, cfg.LookupsPerSecond))
	}
	return notes
}

// oneHopRow computes onehop's figures: the coordinator sends straight to the owner.
func oneHopRow(cfg Config, layout *chord.Layout, plan []plannedLookup) Row {
	peers := layout.Peers()
	var s lookupStats
	for _, l := range plan {
		from := peers[int(l.coordinator*float64(len(peers)))]
		owner := layout.Owner(l.key)
		hops, interDC := 0, 0
		var latency time.Duration
		if owner.Name != from.Name {
			hops = 1
			latency = cfg.Link(from.DC, owner.DC) + cfg.Link(owner.DC, from.DC)
		}
		if owner.DC != from.DC {
			interDC = 1
		}
		s.add(hops, interDC, latency, true)
	}
	row := s.row("onehop")
	row.RoutingEntriesPerNode = float64(len(peers) - 1)
	return row
}

// lookupStats accumulates measured lookups.
type lookupStats struct {
	hops, interDC   []int
	latencies       []time.Duration
	correct, failed int
}

func (s *lookupStats) add(hops, interDC int, latency time.Duration, correct bool) {
	s.hops = append(s.hops, hops)
	s.interDC = append(s.interDC, interDC)
	s.latencies = append(s.latencies, latency)
	if correct {
		s.correct++
	}
}

func (s *lookupStats) row(protocol string) Row {
	row := Row{Protocol: protocol, Lookups: len(s.hops) + s.failed}
	if len(s.hops) == 0 {
		return row
	}
	// A failed lookup found no owner: it counts as wrong, and has no hops or latency.
	row.CorrectFraction = float64(s.correct) / float64(row.Lookups)
	row.HopsMean = stats.Mean(s.hops)
	row.HopsP99 = float64(stats.Percentile(s.hops, 0.99))
	row.InterDCHopsMean = stats.Mean(s.interDC)
	row.InterDCHopsMax = slices.Max(s.interDC)
	// The mean is taken in nanoseconds and then scaled, so the sum is exact.
	row.LatencyMsMean = stats.Mean(s.latencies) / float64(time.Millisecond)
	row.LatencyMsP99 = float64(stats.Percentile(s.latencies, 0.99)) / float64(time.Millisecond)
	return row
}

// trial is one protocol's run on the simulator.
type trial struct {
	cfg      Config
	protocol chord.Protocol
	// keepGateways makes the nodes keep gateways (the partial-membership experiment).
	keepGateways bool
	sim          *sim.Simulator
	nodes        map[string]*simNode
	// live lists the nodes up, in the order they came; layout is the oracle over them.
	live    []string
	layout  *chord.Layout
	pending map[pendingKey]pendingLookup
	stats   lookupStats
	rng     *rand.Rand
	joins   int
}

type pendingKey struct {
	coordinator string
	seq         uint64
}

type pendingLookup struct {
	start time.Duration
	key   chord.ID
}

// simNode drives one chord node in the simulator.
type simNode struct {
	t    *trial
	name string
	node *chord.Node
}

// Step delivers a message to the node.
func (s *simNode) Step(now time.Duration, env sim.Envelope) []sim.Envelope {
	return s.t.output(now, s, s.node.Step(now, *env.Msg.(*chord.Message)))
}

// Tick runs the node's timers.
func (s *simNode) Tick(now time.Duration) []sim.Envelope {
	return s.t.output(now, s, s.node.Tick(now))
}

// kindLookup prefixes the counter kinds of client lookups, to tell them from maintenance.
const kindLookup = "lookup "

// output records the node's finished lookups and turns its messages into envelopes.
func (t *trial) output(now time.Duration, from *simNode, out chord.Output) []sim.Envelope {
	for _, res := range out.Lookups {
		t.finish(now, from.name, res)
	}
	envs := make([]sim.Envelope, len(out.Messages))
	for i, env := range out.Messages {
		msg := env.Msg
		kind := msg.Type.String()
		if msg.Purpose == chord.PurposeClient && (msg.Type == chord.MsgFindSuccessor || msg.Type == chord.MsgFoundSuccessor || msg.Type == chord.MsgHopAck) {
			kind = kindLookup + kind
		}
		envs[i] = sim.Envelope{From: from.name, To: env.To.Name, Kind: kind, Msg: &msg}
	}
	return envs
}

func (t *trial) finish(now time.Duration, coordinator string, res chord.LookupResult) {
	key := pendingKey{coordinator: coordinator, seq: res.Seq}
	p, ok := t.pending[key]
	if !ok {
		return
	}
	delete(t.pending, key)
	if res.Err != nil {
		t.stats.failed++
		return
	}
	t.stats.add(res.Hops, res.InterDCHops, now-p.start, res.Owner.Name == t.layout.Owner(p.key).Name)

}

// runProtocol measures one DHT protocol.
// phasesPerRun is the steps of one protocol's run that runProtocol reports.
const phasesPerRun = 2

// runProtocol runs one protocol's trial, telling phase each of its phasesPerRun steps.
func runProtocol(cfg Config, layout *chord.Layout, protocol chord.Protocol, plan []plannedLookup, phase func(step int, name string)) (Row, error) {
	churn := cfg.ChurnPerMinute > 0
	var dcs []string
	for _, dc := range cfg.DCs {
		dcs = append(dcs, dc.Name)
	}
	links := simLinks(cfg)
	s, err := sim.New(sim.Config{Seed: cfg.Seed, DCs: dcs, Links: links, Wire: sim.TCPIPv4})
	if err != nil {
		return Row{}, fmt.Errorf("routing: experiment simulator: %w", err)
	}
	t := &trial{
		cfg: cfg, protocol: protocol, sim: s, nodes: make(map[string]*simNode),
		layout: layout, pending: make(map[pendingKey]pendingLookup), rng: s.NewRand(),
	}
	// Without churn nothing ticks while lookups run: the tables are final, and lookups
	// are measured alone.
	tick := time.Duration(0)
	if churn {
		tick = cfg.TickInterval
	}
	phase(0, "building tables")
	for _, p := range layout.Peers() {
		if err := t.addNode(p, tick, true); err != nil {
			return Row{}, err
		}
	}
	var maintenance sim.Counters
	var window time.Duration
	if churn {
		phase(1, "lookups under churn")
		maintenance, window = t.runChurn(plan)
	} else {
		phase(1, "lookups, then maintenance")
		t.runLookups(plan, time.Millisecond)
		if !cfg.TablesOnly {
			maintenance, window, err = measureMaintenance(cfg, layout, protocol, links, dcs)
			if err != nil {
				return Row{}, err
			}
		}
	}
	row := t.stats.row(protocol.String())
	var entries int
	for _, name := range t.live {
		entries += t.nodes[name].node.RoutingEntries()
	}
	row.RoutingEntriesPerNode = float64(entries) / float64(len(t.live))
	perNodeBps := func(c sim.Counter) float64 {
		if window == 0 {
			return 0
		}
		return float64(c.Bytes) * 8 / window.Seconds() / float64(len(t.live))
	}
	isMaintenance := func(k sim.CounterKey) bool { return !strings.HasPrefix(k.Kind, kindLookup) }
	row.MaintenanceBpsPerNode = perNodeBps(maintenance.Sum(isMaintenance))
	row.MaintenanceInterDCBpsPerNode = perNodeBps(maintenance.Sum(func(k sim.CounterKey) bool {
		return isMaintenance(k) && k.FromDC != k.ToDC
	}))
	return row, nil
}

// simLinks turns the experiment's latencies into the simulator's links: latency only,
// since lookups and maintenance messages are far too small for bandwidth to matter.
func simLinks(cfg Config) sim.LinkModel {
	return sim.LinkFunc(func(from, to string) (sim.LinkSpec, error) {
		return sim.LinkSpec{Latency: cfg.Link(from, to)}, nil
	})
}

// addNode places a node in the simulation: stabilised from the layout, or new (to join).
func (t *trial) addNode(p chord.Peer, tick time.Duration, stable bool) error {
	cfg := chord.Config{Self: p, Protocol: t.protocol, KeepGateways: t.keepGateways, Rand: t.sim.NewRand()}
	var n *chord.Node
	var err error
	if stable {
		n, err = t.layout.StableNode(cfg)
	} else {
		n, err = chord.New(cfg)
	}
	if err != nil {
		return fmt.Errorf("routing: experiment node %s: %w", p.Name, err)
	}
	sn := &simNode{t: t, name: p.Name, node: n}
	if err := t.sim.AddNode(sim.NodeSpec{ID: p.Name, DC: p.DC, TickInterval: tick}, sn); err != nil {
		return fmt.Errorf("routing: experiment: %w", err)
	}
	t.nodes[p.Name] = sn
	t.live = append(t.live, p.Name)
	return nil
}

// runLookups schedules the plan's lookups, one every gap, from the current time, and runs
// the simulation until they all finished or timed out.
func (t *trial) runLookups(plan []plannedLookup, gap time.Duration) {
	start := t.sim.Now()
	for i, l := range plan {
		t.sim.At(start+time.Duration(i)*gap, func() { t.startLookup(l) })
	}
	// Attempts time out after 5 s each, three at most.
	t.sim.RunUntil(start + time.Duration(len(plan))*gap + 20*time.Second)
}

// startLookup starts a planned lookup from a live node that has joined.
func (t *trial) startLookup(l plannedLookup) {
	i := int(l.coordinator * float64(len(t.live)))
	for tries := 0; tries < len(t.live); tries++ {
		sn := t.nodes[t.live[(i+tries)%len(t.live)]]
		if !sn.node.Joined() {
			continue
		}
		_ = t.sim.Do(sn.name, func(now time.Duration) []sim.Envelope {
			seq, out := sn.node.Lookup(now, l.key)
			t.pending[pendingKey{coordinator: sn.name, seq: seq}] = pendingLookup{start: now, key: l.key}
			return t.output(now, sn, out)
		})
		return
	}
}

// runChurn runs lookups paced at LookupsPerSecond while nodes are replaced at
// ChurnPerMinute, and returns the traffic counted over the lookups' period.
func (t *trial) runChurn(plan []plannedLookup) (sim.Counters, time.Duration) {
	const warmup = 10 * time.Second
	t.sim.RunUntil(warmup)
	before := t.sim.Network().Counters()
	gap := time.Duration(float64(time.Second) / t.cfg.LookupsPerSecond)
	period := time.Duration(len(plan)) * gap
	ratePerSecond := t.cfg.ChurnPerMinute * float64(len(t.live)) / 60
	for at := warmup; ; {
		at += time.Duration(t.rng.ExpFloat64() / ratePerSecond * float64(time.Second))
		if at >= warmup+period {
			break
		}
		t.sim.At(at, t.replaceNode)
	}
	t.runLookups(plan, gap)
	window := t.sim.Now() - warmup
	return t.sim.Network().Counters().Sub(before), window
}

// replaceNode takes a random node out, by a crash or a graceful leave, and starts a new
// node in its DC, joining through a random live node and one of its own DC.
func (t *trial) replaceNode() {
	i := t.rng.IntN(len(t.live))
	gone := t.nodes[t.live[i]]
	t.live = slices.Delete(t.live, i, i+1)
	if t.rng.IntN(2) == 0 {
		_ = t.sim.Do(gone.name, func(now time.Duration) []sim.Envelope {
			return t.output(now, gone, gone.node.Leave(now))
		})
	}
	_ = t.sim.Crash(gone.name)
	dc := gone.node.Self().DC
	t.joins++
	p := newPeer(dc, 1_000_000+t.joins)
	var known []chord.Peer
	known = append(known, t.nodes[t.live[t.rng.IntN(len(t.live))]].node.Self())
	var sameDC []string
	for _, name := range t.live {
		if t.nodes[name].node.Self().DC == dc {
			sameDC = append(sameDC, name)
		}
	}
	if len(sameDC) > 0 {
		known = append(known, t.nodes[sameDC[t.rng.IntN(len(sameDC))]].node.Self())
	}
	if err := t.addNode(p, t.cfg.TickInterval, false); err != nil {
		panic(err) // names are fresh and the DC exists: cannot happen
	}
	var peers []chord.Peer
	for _, name := range t.live {
		peers = append(peers, t.nodes[name].node.Self())
	}
	layout, err := chord.NewLayout(peers)
	if err != nil {
		panic(err) // the live nodes have distinct names and identifiers
	}
	t.layout = layout
	sn := t.nodes[p.Name]
	_ = t.sim.Do(p.Name, func(now time.Duration) []sim.Envelope {
		return t.output(now, sn, sn.node.Join(now, known...))
	})
}

// measureMaintenance runs the protocol on stabilised rings for the maintenance window,
// after a warm-up, and returns the traffic counted in the window.
func measureMaintenance(cfg Config, layout *chord.Layout, protocol chord.Protocol, links sim.LinkModel, dcs []string) (sim.Counters, time.Duration, error) {
	s, err := sim.New(sim.Config{Seed: cfg.Seed + 1, DCs: dcs, Links: links, Wire: sim.TCPIPv4})
	if err != nil {
		return nil, 0, fmt.Errorf("routing: experiment simulator: %w", err)
	}
	t := &trial{cfg: cfg, protocol: protocol, sim: s, nodes: make(map[string]*simNode), layout: layout}
	for _, p := range layout.Peers() {
		if err := t.addNode(p, cfg.TickInterval, true); err != nil {
			return nil, 0, err
		}
	}
	const warmup = 5 * time.Second
	s.RunUntil(warmup)
	before := s.Network().Counters()
	s.RunUntil(warmup + cfg.MaintenanceWindow)
	return s.Network().Counters().Sub(before), cfg.MaintenanceWindow, nil
}
