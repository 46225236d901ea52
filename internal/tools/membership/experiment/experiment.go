// Package experiment measures membership traffic the way paper 001 did, in
// the simulator: nodes start in batches, traffic is averaged over a steady
// window, then nodes are killed to time failure detection. With CrossDC it
// also times the failures a DC cannot see for itself: a node alone in its
// DC and a whole DC going dark. It is what `kura bench gossip` runs;
// RunExperiment is its entry point.
package experiment

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"time"

	"github.com/kuradb/kura/internal/base/stats"
	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/core/membership/ferry"
	"github.com/kuradb/kura/internal/core/membership/scuttlebutt"
	"github.com/kuradb/kura/internal/tools/membership/simcluster"
	"github.com/kuradb/kura/internal/tools/sim"
)

// Paper 001's fit of Cassandra 0.6's total membership traffic, in bit/s:
// T = PaperA·n² + PaperB·n.
const (
	PaperA = 224.6
	PaperB = 4314.8
)

// Protocols lists the cores the experiment can run, by name.
var Protocols = []membership.Protocol{scuttlebutt.Protocol, ferry.Protocol}

// ErrBadConfig: the experiment's configuration cannot run.
var ErrBadConfig = errors.New("experiment: invalid config")

// Config describes a sweep. Zero fields take the defaults of DefaultConfig.
type Config struct {
	// Protocols to run, by name (see Protocols).
	Protocols []string
	// Sizes are the cluster sizes n.
	Sizes []int
	// DCs is the number of DCs; node i goes to DC i mod DCs unless
	// DCWeights says otherwise.
	DCs int
	// DCWeights, when set, makes the DCs unequal: one weight per DC, and
	// nodes are dealt to the DCs in proportion, interleaved (a smooth
	// weighted round robin), so that every start batch keeps the proportions.
	DCWeights []int
	// Loss is the message loss probability on every link.
	Loss float64
	// Seed makes the sweep reproducible.
	Seed uint64
	// Links overrides the default links (100 µs inside a DC, 50 ms between,
	// no bandwidth limit: paper 001 measured an unloaded LAN); Loss is still
	// added to every link.
	Links sim.LinkModel
	// Batches and BatchInterval give the start schedule: n/Batches nodes
	// start every BatchInterval.
	Batches       int
	BatchInterval time.Duration
	// Warm starts the cluster converged instead of in batches: the first
	// n − Joiners nodes start at time 0 from the view such a cluster saves
	// (simcluster.StartConverged), each knowing all of them, and the last
	// Joiners nodes join the running cluster at once at JoinAt; Batches and
	// BatchInterval are not used. Join
	// convergence is then the joiners'. It is what a cluster the size of n
	// costs an operator (a batch of new nodes, steady traffic, failures)
	// without simulating its whole growth from nothing, which costs O(n²)
	// learned joins. Not with CrossDC, and only for protocols whose cores
	// start from a view (Ferry).
	Warm    bool
	Joiners int
	JoinAt  time.Duration
	// WindowStart and WindowEnd bound the steady window traffic is
	// averaged over (paper: 200–300 s).
	WindowStart, WindowEnd time.Duration
	// Kills is how many nodes are killed after the window to time failure
	// detection; DetectTimeout bounds the wait.
	Kills         int
	DetectTimeout time.Duration
	// CrossDC also runs, for each protocol and size, a second cluster of n
	// nodes (see runCrossDC): the sweep's DCs share n-1 of them and one more
	// DC holds a single node; after the same schedule and window, every node
	// of the sweep's last DC is killed at once, then the lone node. Needs
	// at least two DCs.
	CrossDC bool
	// Progress, if set, is called as the sweep advances: when a run enters
	// a phase, and again at every virtual second within it.
	Progress func(Progress)
}

// DefaultConfig is the paper's sweep at this machine's scale.
var DefaultConfig = Config{
	Protocols:     []string{"scuttlebutt", "ferry"},
	Sizes:         []int{10, 50, 100, 200, 500, 1000},
	DCs:           2,
	Seed:          1,
	Batches:       10,
	BatchInterval: 10 * time.Second,
	WindowStart:   200 * time.Second,
	WindowEnd:     300 * time.Second,
	Kills:         3,
	DetectTimeout: 90 * time.Second,
}

// Scale states how the experiment departs from paper 001's method.
const Scale = "simulated cluster (virtual time, one process) instead of 10 machines; " +
	"nodes start in 10 batches of n/10 every 10 s (paper: 10 per machine every 30 s) so every size is steady by 200 s; " +
	"traffic averaged over 200-300 s as in the paper; bytes = encoded message + 52 B IPv4/TCP header per 1448 B segment " +
	"(TCP ACKs and Ethernet framing not counted); kura's compact varint encoding, not Cassandra 0.6's Java serialisation"

// Progress reports where a sweep is.
type Progress struct {
	Protocol string
	N        int
	// Phase is "joining", "steady", "detecting" or "done" (a Warm run
	// starts with "converged start"); with CrossDC
	// then "cross-dc joining", "cross-dc steady", "dark dc" and "lone node".
	Phase string
	// VirtualTime is the simulated time reached in this run.
	VirtualTime time.Duration
	// Run and Runs count (protocol, n) runs, Run from 1.
	Run, Runs int
	// Wall is the wall time spent in this run so far.
	Wall time.Duration
}

// Row is the measurement of one (protocol, n).
type Row struct {
	Protocol string  `json:"protocol"`
	N        int     `json:"nodes"`
	DCs      int     `json:"dcs"`
	Loss     float64 `json:"loss"`
	// TotalBps is all membership traffic in bit/s over the window.
	TotalBps float64 `json:"total_bps"`
	// InterDCBps is the part that crossed a DC link.
	InterDCBps float64 `json:"interdc_bps"`
	// PerNodeBps is TotalBps / n.
	PerNodeBps float64 `json:"per_node_bps"`
	// PaperTotalBps is paper 001's fit at this n, for comparison.
	PaperTotalBps float64 `json:"paper_total_bps"`
	// MessagesPerNodePerS counts messages, not bytes.
	MessagesPerNodePerS float64 `json:"messages_per_node_per_s"`
	// JoinConvergenceSP50/Max: from a node's start until every node started
	// no later knows it and it knows them all.
	JoinConvergenceSP50 float64 `json:"join_convergence_s_p50"`
	JoinConvergenceSMax float64 `json:"join_convergence_s_max"`
	// JoinsUnconverged counts nodes whose join never converged.
	JoinsUnconverged int `json:"joins_unconverged"`
	// Joiners is how many nodes joined the converged cluster of a Warm run
	// (the join figures are theirs); 0 when every node joined.
	Joiners int `json:"joiners,omitempty"`
	// FailureDetectionSP50/Max: from a kill until every live node sees the
	// node down.
	FailureDetectionSP50 float64 `json:"failure_detection_s_p50"`
	FailureDetectionSMax float64 `json:"failure_detection_s_max"`
	// FailuresUndetected counts kills not seen by all within DetectTimeout.
	FailuresUndetected int `json:"failures_undetected"`
	// FalseSuspicions counts suspect or dead verdicts about running nodes
	// during the steady window; FalseSuspicionsTotal over the whole run.
	FalseSuspicions      int `json:"false_suspicions"`
	FalseSuspicionsTotal int `json:"false_suspicions_total"`
	// DCNodes is how many nodes each DC has, in order; WANLinks is the
	// traffic over the steady window between each pair of DCs, both ways.
	DCNodes  []int     `json:"dc_nodes"`
	WANLinks []WANLink `json:"wan_links,omitempty"`
	// The cross-DC scenario (Config.CrossDC; nil without it), on its own
	// cluster of n nodes with one more DC holding a single node:
	// LoneDCInterDCBps is its inter-DC traffic over the steady window, and
	// LoneDCFalseSuspicions its suspect or dead verdicts about running nodes
	// there; DarkDCDetectionSP50/Max time, per node of the DC killed at
	// once, from the kill until every live node holds it dead, and
	// DarkDCInterDCBps is the inter-DC traffic over that time;
	// LoneNodeDetectionS is the same time for the lone node, killed next;
	// CrossDCUndetected counts those kills not seen by all within
	// DetectTimeout.
	LoneDCInterDCBps      *float64 `json:"lone_dc_interdc_bps,omitempty"`
	LoneDCFalseSuspicions *int     `json:"lone_dc_false_suspicions,omitempty"`
	DarkDCDetectionSP50   *float64 `json:"dark_dc_detection_s_p50,omitempty"`
	DarkDCDetectionSMax   *float64 `json:"dark_dc_detection_s_max,omitempty"`
	DarkDCInterDCBps      *float64 `json:"dark_dc_interdc_bps,omitempty"`
	LoneNodeDetectionS    *float64 `json:"lone_node_detection_s,omitempty"`
	CrossDCUndetected     *int     `json:"cross_dc_undetected,omitempty"`
	// WallS is the wall time this run took.
	WallS float64 `json:"wall_s"`
}

// WANLink is the membership traffic between two DCs, both ways.
type WANLink struct {
	DCs string  `json:"dcs"`
	Bps float64 `json:"bps"`
}

// Fit is the least-squares fit T = A·n² + B·n of one protocol's total_bps.
type Fit struct {
	Protocol string  `json:"protocol"`
	A        float64 `json:"a"`
	B        float64 `json:"b"`
}

// Result is a whole sweep.
type Result struct {
	Scale string `json:"scale"`
	Rows  []Row  `json:"rows"`
	Fits  []Fit  `json:"fits"`
}

// withDefaults fills zero fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig
	if len(c.Protocols) == 0 {
		c.Protocols = d.Protocols
	}
	if len(c.Sizes) == 0 {
		c.Sizes = d.Sizes
	}
	if c.DCs == 0 {
		c.DCs = d.DCs
	}
	if c.Batches == 0 {
		c.Batches = d.Batches
	}
	if c.BatchInterval == 0 {
		c.BatchInterval = d.BatchInterval
	}
	if c.WindowStart == 0 && c.WindowEnd == 0 {
		c.WindowStart, c.WindowEnd = d.WindowStart, d.WindowEnd
	}
	if c.Kills == 0 {
		c.Kills = d.Kills
	}
	if c.DetectTimeout == 0 {
		c.DetectTimeout = d.DetectTimeout
	}
	return c
}

// protocol finds a protocol by name.
func protocol(name string) (membership.Protocol, error) {
	for _, p := range Protocols {
		if p.Name == name {
			return p, nil
		}
	}
	return membership.Protocol{}, fmt.Errorf("%w: %q", membership.ErrUnknownProtocol, name)
}

// RunExperiment runs every (protocol, n) of the sweep and fits each
// protocol's total traffic. Canceling ctx stops it within a second of
// virtual time.
func RunExperiment(ctx context.Context, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	if cfg.WindowEnd <= cfg.WindowStart || cfg.Loss < 0 || cfg.Loss >= 1 || cfg.DCs < 1 || (cfg.CrossDC && cfg.DCs < 2) {
		return Result{}, fmt.Errorf("%w: window %v-%v, loss %v, dcs %d, cross-DC %v", ErrBadConfig, cfg.WindowStart, cfg.WindowEnd, cfg.Loss, cfg.DCs, cfg.CrossDC)
	}
	if cfg.DCWeights != nil && (len(cfg.DCWeights) != cfg.DCs || slices.Min(cfg.DCWeights) < 1) {
		return Result{}, fmt.Errorf("%w: DC weights %v for %d DCs: want one positive weight per DC", ErrBadConfig, cfg.DCWeights, cfg.DCs)
	}
	started := time.Duration(cfg.Batches-1) * cfg.BatchInterval
	if cfg.Warm {
		started = cfg.JoinAt
		if cfg.Joiners < 1 || cfg.JoinAt < 0 || cfg.CrossDC {
			return Result{}, fmt.Errorf("%w: warm start with %d joiners at %v, cross-DC %v: want joiners, a time from 0, no cross-DC",
				ErrBadConfig, cfg.Joiners, cfg.JoinAt, cfg.CrossDC)
		}
	}
	if started >= cfg.WindowStart {
		return Result{}, fmt.Errorf("%w: last batch at %v is not before the window at %v", ErrBadConfig, started, cfg.WindowStart)
	}
	// A run allocates a digest of n entries per gossip round per node, on
	// top of its n² entries (live from the start in a warm run, by the end
	// of the joins in a cold one). A heap let grow 400 % on top of them
	// meets the memory limit: the runtime then hands the pages each
	// collection frees back to the system and faults them in again (a
	// quarter of the CPU time at 10,000 nodes, in the kernel). The entries
	// hold no pointer, so collecting more often costs little: at 10,000
	// nodes 50 % took the least CPU of 25, 50, 100 and 400 % warm, and cold
	// 81 s against 93 s at 400 %, with 5.0 GB at the peak instead of 7.3.
	gcPercent := 50
	defer debug.SetGCPercent(debug.SetGCPercent(gcPercent))
	res := Result{Scale: Scale}
	runs := len(cfg.Protocols) * len(cfg.Sizes)
	for pi, name := range cfg.Protocols {
		p, err := protocol(name)
		if err != nil {
			return Result{}, err
		}
		var ns []int
		var ts []float64
		for si, n := range cfg.Sizes {
			if n < cfg.DCs+cfg.Kills+1 || slices.Contains(dealDCs(n, cfg.DCs, cfg.DCWeights).sizes(cfg.DCs), 0) {
				return Result{}, fmt.Errorf("%w: n=%d too small for %d DCs (weights %v) and %d kills", ErrBadConfig, n, cfg.DCs, cfg.DCWeights, cfg.Kills)
			}
			if warm := n - cfg.Joiners; cfg.Warm && (warm < 1 || slices.Contains(dealDCs(warm, cfg.DCs, cfg.DCWeights).sizes(cfg.DCs), 0)) {
				return Result{}, fmt.Errorf("%w: n=%d with %d joiners: the %d nodes started converged leave a DC empty", ErrBadConfig, n, cfg.Joiners, warm)
			}
			row, err := runOne(ctx, cfg, p, n, pi*len(cfg.Sizes)+si+1, runs)
			if err != nil {
				return Result{}, fmt.Errorf("%s n=%d: %w", name, n, err)
			}
			res.Rows = append(res.Rows, row)
			ns = append(ns, n)
			ts = append(ts, row.TotalBps)
		}
		a, b := FitQuadratic(ns, ts)
		res.Fits = append(res.Fits, Fit{Protocol: name, A: a, B: b})
	}
	return res, nil
}

// FitQuadratic returns the least-squares a, b of t = a·n² + b·n (no
// constant term, like the paper's fit).
func FitQuadratic(ns []int, ts []float64) (a, b float64) {
	var s4, s3, s2, tn2, tn float64
	for i, n := range ns {
		x := float64(n)
		s4 += x * x * x * x
		s3 += x * x * x
		s2 += x * x
		tn2 += ts[i] * x * x
		tn += ts[i] * x
	}
	det := s4*s2 - s3*s3
	if det == 0 {
		return 0, 0
	}
	return (tn2*s2 - tn*s3) / det, (s4*tn - s3*tn2) / det
}

// deal is which DC each node goes to, by index.
type deal []int

// dealDCs deals n nodes to dcs DCs: round robin, or in proportion to
// weights (smooth weighted round robin: each step adds every DC's weight to
// its credit, picks the DC with the most, lowest index first, and charges
// it the total).
func dealDCs(n, dcs int, weights []int) deal {
	out := make(deal, n)
	if weights == nil {
		for i := range out {
			out[i] = i % dcs
		}
		return out
	}
	total := 0
	for _, w := range weights {
		total += w
	}
	credit := make([]int, dcs)
	for i := range out {
		best := 0
		for d, w := range weights {
			credit[d] += w
			if credit[d] > credit[best] {
				best = d
			}
		}
		credit[best] -= total
		out[i] = best
	}
	return out
}

// DCSizes is how many of n nodes each DC gets when they are dealt in
// proportion to weights, as Config.DCWeights deals them.
func DCSizes(n int, weights []int) []int {
	return dealDCs(n, len(weights), weights).sizes(len(weights))
}

// sizes counts the nodes of each DC.
func (d deal) sizes(dcs int) []int {
	out := make([]int, dcs)
	for _, dc := range d {
		out[dc]++
	}
	return out
}

// firsts is the first node of each DC: the seeds.
func (d deal) firsts(dcs int) []int {
	out := make([]int, 0, dcs)
	seen := make([]bool, dcs)
	for i, dc := range d {
		if !seen[dc] {
			seen[dc] = true
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

// wanLinks is the traffic between each pair of DCs over a window, both ways.
func wanLinks(window sim.Counters, dcs []string, seconds float64) []WANLink {
	var out []WANLink
	for i, a := range dcs {
		for _, b := range dcs[i+1:] {
			c := window.Sum(func(k sim.CounterKey) bool {
				return (k.FromDC == a && k.ToDC == b) || (k.FromDC == b && k.ToDC == a)
			})
			out = append(out, WANLink{DCs: a + "-" + b, Bps: float64(c.Bytes) * 8 / seconds})
		}
	}
	return out
}

// runner advances one run's simulation a virtual second at a time, so that
// canceling ctx stops a long run promptly, and reports the phase it is in
// at each step: a cold start of 10,000 nodes spends minutes of wall time
// in its joins, and its progress should show the virtual time reached.
type runner struct {
	ctx context.Context
	s   *sim.Simulator
	// report, when set, is given the phase and the virtual time reached.
	report func(phase string, now time.Duration)
	phase  string
}

// enter starts a phase and reports it.
func (r *runner) enter(phase string) {
	r.phase = phase
	r.tell()
}

// tell reports the phase and the virtual time reached.
func (r *runner) tell() {
	if r.report != nil {
		r.report(r.phase, r.s.Now())
	}
}

// until runs the simulation until virtual time t. The events run in the
// same order as one s.RunUntil(t).
func (r *runner) until(t time.Duration) error {
	for {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		next := min(t, r.s.Now()+time.Second)
		r.s.RunUntil(next)
		if next >= t {
			return nil
		}
		r.tell()
	}
}

// nodeID names node i.
func nodeID(i int) string { return fmt.Sprintf("n%04d", i) }

// nodeIndex is the i whose nodeID is id, or false for an ID that no nodeID spells. The
// observer reads every event's two IDs, n² events in a cold run: parsing them costs less
// than looking them up in a map.
func nodeIndex(id string) (int, bool) {
	if len(id) < 5 || id[0] != 'n' || len(id) > 5 && id[1] == '0' || len(id) > 19 {
		return 0, false
	}
	i := 0
	for _, c := range []byte(id[1:]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		i = 10*i + int(c-'0')
	}
	return i, true
}

// lossy adds loss to every link of a model.
type lossy struct {
	base sim.LinkModel
	loss float64
}

// Link is the base link with the experiment's loss.
func (l lossy) Link(from, to string) (sim.LinkSpec, error) {
	s, err := l.base.Link(from, to)
	s.Loss = l.loss
	return s, err
}

// runOne runs one protocol at one size.
func runOne(ctx context.Context, cfg Config, p membership.Protocol, n, run, runs int) (Row, error) {
	wallStart := time.Now()
	dcs := make([]string, cfg.DCs)
	for i := range dcs {
		dcs[i] = fmt.Sprintf("dc%d", i+1)
	}
	links := cfg.Links
	if links == nil {
		links = sim.UniformLinks{Local: sim.LinkSpec{Latency: 100 * time.Microsecond}, Remote: sim.LinkSpec{Latency: 50 * time.Millisecond}}
	}
	dealt := dealDCs(n, cfg.DCs, cfg.DCWeights)
	firsts := dealt.firsts(cfg.DCs)
	var seeds []string
	for _, i := range firsts {
		seeds = append(seeds, nodeID(i))
	}
	obs := newObserver(n)
	c, err := simcluster.New(simcluster.Config{
		Protocol: p, Seed: cfg.Seed, DCs: dcs, Links: lossy{links, cfg.Loss}, Wire: sim.TCPIPv4, Seeds: seeds,
		OnEvent: obs.onEvent,
	})
	if err != nil {
		return Row{}, err
	}
	obs.cluster = c
	s := c.Sim()
	report := func(phase string, now time.Duration) {
		if cfg.Progress != nil {
			cfg.Progress(Progress{Protocol: p.Name, N: n, Phase: phase, VirtualTime: now, Run: run, Runs: runs, Wall: time.Since(wallStart)})
		}
	}
	clock := &runner{ctx: ctx, s: s, report: report}

	if cfg.Warm {
		if err := startWarm(cfg, c, clock, obs, dealt, dcs); err != nil {
			return Row{}, err
		}
	} else {
		clock.enter("joining")
		per := (n + cfg.Batches - 1) / cfg.Batches
		for b := 0; b*per < n; b++ {
			if err := clock.until(time.Duration(b) * cfg.BatchInterval); err != nil {
				return Row{}, err
			}
			for i := b * per; i < min(n, (b+1)*per); i++ {
				obs.started(i, s.Now())
				if err := c.Start(nodeID(i), dcs[dealt[i]]); err != nil {
					return Row{}, err
				}
			}
		}
	}
	if err := clock.until(cfg.WindowStart); err != nil {
		return Row{}, err
	}
	clock.enter("steady")
	obs.steady = true
	before := s.Network().Counters()
	if err := clock.until(cfg.WindowEnd); err != nil {
		return Row{}, err
	}
	window := s.Network().Counters().Sub(before)
	obs.steady = false
	seconds := (cfg.WindowEnd - cfg.WindowStart).Seconds()
	total := window.Total()
	row := Row{
		Protocol: p.Name, N: n, DCs: cfg.DCs, Loss: cfg.Loss,
		TotalBps:            float64(total.Bytes) * 8 / seconds,
		InterDCBps:          float64(window.InterDC().Bytes) * 8 / seconds,
		PaperTotalBps:       PaperA*float64(n)*float64(n) + PaperB*float64(n),
		MessagesPerNodePerS: float64(total.Messages) / seconds / float64(n),
		DCNodes:             dealt.sizes(cfg.DCs),
	}
	if cfg.DCs > 1 {
		row.WANLinks = wanLinks(window, dcs, seconds)
	}
	row.PerNodeBps = row.TotalBps / float64(n)
	row.JoinConvergenceSP50, row.JoinConvergenceSMax, row.JoinsUnconverged = obs.joinTimes()
	if cfg.Warm {
		row.Joiners = n - obs.from
	}

	clock.enter("detecting")
	obs.kill(c, cfg.Kills, firsts, cfg.Seed)
	deadline := s.Now() + cfg.DetectTimeout
	for !obs.allDetected() && s.Now() < deadline {
		if err := clock.until(s.Now() + time.Second); err != nil {
			return Row{}, err
		}
	}
	row.FailureDetectionSP50, row.FailureDetectionSMax, row.FailuresUndetected = obs.detectTimes()
	row.FalseSuspicions, row.FalseSuspicionsTotal = obs.falseSteady, obs.falseTotal
	if cfg.CrossDC {
		if err := runCrossDC(ctx, cfg, p, n, &row, report); err != nil {
			return Row{}, err
		}
	}
	row.WallS = time.Since(wallStart).Seconds()
	clock.enter("done")
	return row, nil
}

// startWarm starts a Warm run's cluster: all but the joiners converged at
// time 0, then the joiners at once at JoinAt. The nodes are dealt to the
// DCs interleaved, so the last ones, the joiners, keep the DCs'
// proportions, and the seeds, the first of each DC, start converged.
func startWarm(cfg Config, c *simcluster.Cluster, clock *runner, obs *observer, dealt deal, dcs []string) error {
	n := len(dealt)
	warm := n - cfg.Joiners
	clock.enter("converged start")
	ids, homes := make([]string, warm), make([]string, warm)
	for i := range warm {
		ids[i], homes[i] = nodeID(i), dcs[dealt[i]]
	}
	if err := c.StartConverged(ids, homes); err != nil {
		return err
	}
	obs.from = warm
	s := c.Sim()
	if err := clock.until(cfg.JoinAt); err != nil {
		return err
	}
	clock.enter("joining")
	for i := warm; i < n; i++ {
		obs.started(i, s.Now())
		if err := c.Start(nodeID(i), dcs[dealt[i]]); err != nil {
			return err
		}
	}
	return nil
}

// runCrossDC times the failures no DC can see for itself, on a cluster of n
// nodes: the sweep's DCs share n-1 of them as in the sweep, and one more DC
// holds the last node alone. It starts on the sweep's schedule (the lone
// node, a seed, in the first batch), measures the steady window, then kills
// every node of the sweep's last DC at once and waits until every live node
// holds them all dead, then kills the lone node and waits again.
func runCrossDC(ctx context.Context, cfg Config, p membership.Protocol, n int, row *Row, report func(phase string, now time.Duration)) error {
	dcs := make([]string, cfg.DCs+1)
	for i := range dcs {
		dcs[i] = fmt.Sprintf("dc%d", i+1)
	}
	lone := n - 1
	dealt := dealDCs(lone, cfg.DCs, cfg.DCWeights)
	dcOf := func(i int) string {
		if i == lone {
			return dcs[cfg.DCs]
		}
		return dcs[dealt[i]]
	}
	links := cfg.Links
	if links == nil {
		links = sim.UniformLinks{Local: sim.LinkSpec{Latency: 100 * time.Microsecond}, Remote: sim.LinkSpec{Latency: 50 * time.Millisecond}}
	}
	seeds := []string{nodeID(lone)}
	for _, i := range dealt.firsts(cfg.DCs) {
		seeds = append(seeds, nodeID(i))
	}
	obs := newObserver(n)
	c, err := simcluster.New(simcluster.Config{
		Protocol: p, Seed: cfg.Seed, DCs: dcs, Links: lossy{links, cfg.Loss}, Wire: sim.TCPIPv4, Seeds: seeds,
		OnEvent: obs.onEvent,
	})
	if err != nil {
		return err
	}
	obs.cluster = c
	s := c.Sim()
	clock := &runner{ctx: ctx, s: s, report: report}

	clock.enter("cross-dc joining")
	order := make([]int, 0, n)
	order = append(order, lone)
	for i := range lone {
		order = append(order, i)
	}
	per := (n + cfg.Batches - 1) / cfg.Batches
	for b := 0; b*per < n; b++ {
		if err := clock.until(time.Duration(b) * cfg.BatchInterval); err != nil {
			return err
		}
		for _, i := range order[b*per : min(n, (b+1)*per)] {
			if err := c.Start(nodeID(i), dcOf(i)); err != nil {
				return err
			}
		}
	}
	if err := clock.until(cfg.WindowStart); err != nil {
		return err
	}
	clock.enter("cross-dc steady")
	obs.steady = true
	before := s.Network().Counters()
	if err := clock.until(cfg.WindowEnd); err != nil {
		return err
	}
	obs.steady = false
	steadyBps := float64(s.Network().Counters().Sub(before).InterDC().Bytes) * 8 / (cfg.WindowEnd - cfg.WindowStart).Seconds()
	falseSteady := obs.falseSteady

	// wait runs until the victims are seen down by all, or DetectTimeout.
	wait := func(victims []int) error {
		deadline := s.Now() + cfg.DetectTimeout
		for !obs.detectedAll(victims) && s.Now() < deadline {
			if err := clock.until(s.Now() + time.Second); err != nil {
				return err
			}
		}
		return nil
	}
	clock.enter("dark dc")
	var dark []int
	for i := range lone {
		if dcOf(i) == dcs[cfg.DCs-1] {
			dark = append(dark, i)
		}
	}
	blackout := s.Now()
	before = s.Network().Counters()
	obs.killSet(c, dark, blackout)
	if err := wait(dark); err != nil {
		return err
	}
	darkBps := float64(s.Network().Counters().Sub(before).InterDC().Bytes) * 8 / (s.Now() - blackout).Seconds()
	darkP50, darkMax, darkMissed := obs.detectTimesOf(dark)

	clock.enter("lone node")
	obs.killSet(c, []int{lone}, s.Now())
	if err := wait([]int{lone}); err != nil {
		return err
	}
	loneS, _, loneMissed := obs.detectTimesOf([]int{lone})

	undetected := darkMissed + loneMissed
	row.LoneDCInterDCBps, row.LoneDCFalseSuspicions = &steadyBps, &falseSteady
	row.DarkDCDetectionSP50, row.DarkDCDetectionSMax, row.DarkDCInterDCBps = &darkP50, &darkMax, &darkBps
	row.LoneNodeDetectionS, row.CrossDCUndetected = &loneS, &undetected
	return nil
}

// observer turns the cores' events into join, detection and false-suspicion
// measurements.
type observer struct {
	cluster *simcluster.Cluster
	n       int
	start   []time.Duration
	// knows[o] is a bitset of the nodes o has learned of.
	knows [][]uint64
	// need[x] counts what x's join still waits for: nodes started no later
	// than x that do not know x yet, plus those x does not know yet.
	need      []int
	converged []time.Duration
	// from is the first node whose join is timed: the nodes before it
	// started converged, knowing each other (Config.Warm).
	from int
	// killedAt and pendingDown track failure detection per killed node.
	killedAt    map[int]time.Duration
	seenDown    map[int][]uint64
	pendingDown map[int]int
	detected    map[int]time.Duration
	steady      bool
	falseSteady int
	falseTotal  int
}

func newObserver(n int) *observer {
	o := &observer{n: n, start: make([]time.Duration, n),
		knows: make([][]uint64, n), need: make([]int, n), converged: make([]time.Duration, n),
		killedAt: map[int]time.Duration{}, seenDown: map[int][]uint64{}, pendingDown: map[int]int{}, detected: map[int]time.Duration{}}
	for i := range n {
		o.knows[i] = make([]uint64, (n+63)/64)
		o.converged[i] = -1
	}
	return o
}

// indexOf is the index of the node named id, or false for an ID that names none.
func (o *observer) indexOf(id string) (int, bool) {
	i, ok := nodeIndex(id)
	return i, ok && i < o.n
}

// started records node i's start; its join waits on every node already up.
func (o *observer) started(i int, at time.Duration) {
	o.start[i] = at
	o.need[i] = 2 * i // nodes 0..i-1 started no later
	if i == 0 {
		o.converged[0] = 0
	}
}

// learnedOf records that observer a knows b for the first time.
func (o *observer) learnedOf(a, b int, now time.Duration) {
	if o.knows[a][b/64]&(1<<(b%64)) != 0 {
		return
	}
	o.knows[a][b/64] |= 1 << (b % 64)
	if a < b { // a started no later than b and knows it
		o.satisfy(b, now)
	}
	if b < a { // a knows b, which started no later than a
		o.satisfy(a, now)
	}
}

func (o *observer) satisfy(x int, now time.Duration) {
	o.need[x]--
	if o.need[x] == 0 {
		o.converged[x] = now - o.start[x]
	}
}

// onEvent is the cluster's event hook.
func (o *observer) onEvent(now time.Duration, observerID string, e membership.Event) {
	a, okA := o.indexOf(observerID)
	b, okB := o.indexOf(e.ID)
	if !okA || !okB {
		return
	}
	switch e.Kind {
	case membership.EventJoined, membership.EventRestarted:
		o.learnedOf(a, b, now)
	case membership.EventSuspect, membership.EventDead:
		if _, killed := o.killedAt[b]; killed {
			if e.Kind == membership.EventDead {
				o.sawDown(a, b, now)
			}
			return
		}
		if o.cluster.IsLive(e.ID) && e.Generation == o.cluster.Generation(e.ID) {
			o.falseTotal++
			if o.steady {
				o.falseSteady++
			}
		}
	}
}

// kill crashes k random nodes other than the seeds.
func (o *observer) kill(c *simcluster.Cluster, k int, seeds []int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x6b696c6c))
	var others []int
	for i := range o.n {
		if !slices.Contains(seeds, i) {
			others = append(others, i)
		}
	}
	var victims []int
	for _, j := range rng.Perm(len(others))[:k] {
		victims = append(victims, others[j])
	}
	o.killSet(c, victims, c.Sim().Now())
}

// killSet crashes the victims at now; each is detected once every node
// still running holds it dead.
func (o *observer) killSet(c *simcluster.Cluster, victims []int, now time.Duration) {
	for _, victim := range victims {
		o.killedAt[victim] = now
		o.seenDown[victim] = make([]uint64, (o.n+63)/64)
		_ = c.Crash(nodeID(victim))
	}
	pending := 0
	for _, id := range c.Live() {
		i, _ := o.indexOf(id)
		if _, killed := o.killedAt[i]; !killed {
			pending++
		}
	}
	for _, victim := range victims {
		o.pendingDown[victim] = pending
	}
}

// sawDown records that observer a saw killed node b down.
func (o *observer) sawDown(a, b int, now time.Duration) {
	if _, killed := o.killedAt[a]; killed || o.seenDown[b][a/64]&(1<<(a%64)) != 0 {
		return
	}
	o.seenDown[b][a/64] |= 1 << (a % 64)
	o.pendingDown[b]--
	if o.pendingDown[b] == 0 {
		o.detected[b] = now - o.killedAt[b]
	}
}

func (o *observer) allDetected() bool { return len(o.detected) == len(o.killedAt) }

// detectedAll reports whether every victim was seen down by all.
func (o *observer) detectedAll(victims []int) bool {
	for _, v := range victims {
		if _, ok := o.detected[v]; !ok {
			return false
		}
	}
	return true
}

// detectTimesOf summarises failure detection of some victims.
func (o *observer) detectTimesOf(victims []int) (p50, maxS float64, undetected int) {
	var ts []float64
	for _, v := range victims {
		if t, ok := o.detected[v]; ok {
			ts = append(ts, t.Seconds())
		} else {
			undetected++
		}
	}
	p50, maxS = summary(ts)
	return p50, maxS, undetected
}

// joinTimes summarises join convergence.
func (o *observer) joinTimes() (p50, maxS float64, unconverged int) {
	var ts []float64
	for _, t := range o.converged[o.from:] {
		if t < 0 {
			unconverged++
			continue
		}
		ts = append(ts, t.Seconds())
	}
	p50, maxS = summary(ts)
	return p50, maxS, unconverged
}

// detectTimes summarises failure detection.
func (o *observer) detectTimes() (p50, maxS float64, undetected int) {
	var ts []float64
	for _, t := range o.detected {
		ts = append(ts, t.Seconds())
	}
	p50, maxS = summary(ts)
	return p50, maxS, len(o.killedAt) - len(o.detected)
}

// summary is the p50 (stats.Percentile) and maximum; zeros when empty (the
// unconverged and undetected counts tell that case apart).
func summary(ts []float64) (p50, maxV float64) {
	if len(ts) == 0 {
		return 0, 0
	}
	return stats.Percentile(ts, 0.5), slices.Max(ts)
}
