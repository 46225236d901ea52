package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/tools/membership/experiment"
)

func init() {
	Register(Bench{
		Name:    "gossip",
		Summary: "membership traffic of Cassandra's Scuttlebutt against kura's Ferry as the cluster grows (paper 001), simulated or over real sockets",
		Setup:   setupGossip,
	})
}

// Defaults of the gossip bench's sizes: the paper's sweep in the simulator,
// and what one process can run over real sockets in a couple of minutes.
const (
	gossipSimSizes  = "10,50,100,200,500,1000"
	gossipRealSizes = "10,20,50"
)

// gossipOptions are the bench's flags.
type gossipOptions struct {
	protocols []string
	sizes     []int
	dcs       int
	loss      float64
	seed      uint64
	// crossDC adds the cross-DC failure scenario to every simulated run.
	crossDC bool
	real    bool
	// realInterval is the real length of a gossip round with --real.
	realInterval time.Duration
	// schedule overrides the experiment's schedule (zero fields keep
	// experiment.DefaultConfig's), for tests.
	schedule experiment.Config
}

func setupGossip(fs *flag.FlagSet) Runner {
	options := gossipFlags(fs)
	return func(ctx context.Context, env Env) (*Report, error) {
		o, err := options()
		if err != nil {
			return nil, err
		}
		return runGossip(ctx, env, o)
	}
}

// gossipFlags registers the bench's flags and returns what reads them once
// parsed.
func gossipFlags(fs *flag.FlagSet) func() (gossipOptions, error) {
	protocols := fs.String("protocols", "scuttlebutt,ferry", "comma-separated membership protocols")
	nodes := fs.String("nodes", gossipSimSizes, "comma-separated cluster sizes (with --real the default is "+gossipRealSizes+")")
	dcs := fs.Int("dcs", 2, "number of equal DCs")
	loss := fs.Float64("loss", 0, "message loss probability on every link")
	seed := fs.Uint64("seed", 1, "seed of the simulation and of the choice of nodes to kill")
	crossDC := fs.Bool("cross-dc", true, "also time, on a second cluster with one more DC holding a single node, a whole DC going dark and the lone node killed (needs --dcs 2 or more)")
	realMode := fs.Bool("real", false, "also run each size over the real TCP transport on loopback and compare with the simulator")
	realInterval := fs.Duration("real-interval", 50*time.Millisecond, "with --real, the real length of a gossip round (the protocol's schedule is compressed to match)")
	return func() (gossipOptions, error) {
		o := gossipOptions{dcs: *dcs, loss: *loss, seed: *seed, crossDC: *crossDC, real: *realMode, realInterval: *realInterval}
		for _, p := range strings.Split(*protocols, ",") {
			if _, err := gossipProtocol(strings.TrimSpace(p)); err != nil {
				return o, fmt.Errorf("--protocols: %w", err)
			}
			o.protocols = append(o.protocols, strings.TrimSpace(p))
		}
		sizes := *nodes
		if o.real && !flagSet(fs, "nodes") {
			sizes = gossipRealSizes
		}
		for _, s := range strings.Split(sizes, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 1 {
				return o, fmt.Errorf("--nodes %q: want positive integers separated by commas", sizes)
			}
			o.sizes = append(o.sizes, n)
		}
		if o.realInterval <= 0 {
			return o, errors.New("--real-interval must be positive")
		}
		if o.dcs < 1 {
			return o, errors.New("--dcs must be positive")
		}
		if o.crossDC && o.dcs < 2 {
			if flagSet(fs, "cross-dc") {
				return o, errors.New("--cross-dc needs --dcs 2 or more: one DC goes dark while others watch")
			}
			o.crossDC = false
		}
		return o, nil
	}
}

// flagSet reports whether a flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// GossipRow is one protocol at one cluster size, measured in the simulator
// (source "sim") or over real sockets (source "real").
type GossipRow struct {
	Source string `json:"source"`
	// The table shows the traffic, the detection times and the cross-DC scenario's
	// WAN traffic and detection; the JSON every figure.
	experiment.Row `table:"protocol,nodes,total_bps,interdc_bps,join_convergence_s_max,failure_detection_s_max,false_suspicions,lone_dc_interdc_bps,dark_dc_detection_s_max"`
	// Real rows only: the transport's own count (frame headers + payload),
	// the share of the wall clock's rounds the drivers ran, and the
	// differences from the simulator's row of the same size.
	TransportFrameBps *float64 `json:"transport_frame_bps,omitempty" table:"-"`
	RoundsRunPct      *float64 `json:"rounds_run_pct,omitempty" table:"-"`
	TotalDiffPct      *float64 `json:"total_diff_pct,omitempty"`
	InterDCDiffPct    *float64 `json:"interdc_diff_pct,omitempty" table:"-"`
}

// GossipFit is T = a n² + b n fitted to one protocol's total traffic, with
// the paper's fit of Cassandra beside it.
type GossipFit struct {
	Protocol string  `json:"protocol"`
	A        float64 `json:"a"`
	B        float64 `json:"b"`
	PaperA   float64 `json:"paper_a"`
	PaperB   float64 `json:"paper_b"`
}

// gossipSchedule is the experiment configuration of one (protocol, size)
// run: the options' schedule over experiment.DefaultConfig.
func (o gossipOptions) gossipSchedule(protocol string, n int) experiment.Config {
	c := experiment.DefaultConfig
	s := o.schedule
	if s.Batches > 0 {
		c.Batches = s.Batches
	}
	if s.BatchInterval > 0 {
		c.BatchInterval = s.BatchInterval
	}
	if s.WindowEnd > 0 {
		c.WindowStart, c.WindowEnd = s.WindowStart, s.WindowEnd
	}
	if s.Kills > 0 {
		c.Kills = s.Kills
	}
	if s.DetectTimeout > 0 {
		c.DetectTimeout = s.DetectTimeout
	}
	c.Protocols, c.Sizes = []string{protocol}, []int{n}
	c.DCs, c.Loss, c.Seed, c.CrossDC = o.dcs, o.loss, o.seed, o.crossDC
	return c
}

// runGossip runs the sweep: every protocol at every size in the simulator
// and, with --real, over real sockets too.
func runGossip(ctx context.Context, env Env, o gossipOptions) (*Report, error) {
	var rows []GossipRow
	// A run's work grows about as n² (every node gossips state about every other), and
	// each of its phases is counted done as the next begins.
	weight := func(n int) float64 { return float64(n) * float64(n) }
	total := 0.0
	for _, n := range o.sizes {
		total += weight(n) * float64(len(o.protocols))
		if o.real {
			total += weight(n) * float64(len(o.protocols))
		}
	}
	progress := env.StartProgress("gossip", total)
	defer progress.Done()
	phases := gossipPhases(o.crossDC)
	track := func(source, protocol string, n int) func(string) {
		at := 0
		return func(phase string) {
			next := max(at, slices.Index(phases, phase))
			progress.Add(weight(n)*float64(next-at)/float64(len(phases)-1), "%s %s n=%d: %s", source, protocol, n, phase)
			at = next
		}
	}
	for _, p := range o.protocols {
		for _, n := range o.sizes {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			cfg := o.gossipSchedule(p, n)
			simPhase := track("sim", p, n)
			cfg.Progress = func(pr experiment.Progress) { simPhase(pr.Phase) }
			res, err := experiment.RunExperiment(ctx, cfg)
			if err != nil {
				return nil, fmt.Errorf("gossip bench: %w", err)
			}
			sim := simGossipRow(res.Rows[0])
			rows = append(rows, sim)
			if !o.real {
				continue
			}
			measured, err := runRealGossip(ctx, o, cfg, track("real", p, n))
			if err != nil {
				return nil, fmt.Errorf("gossip bench: real %s n=%d: %w", p, n, err)
			}
			measured.TotalDiffPct = diffPct(measured.TotalBps, sim.TotalBps)
			measured.InterDCDiffPct = diffPct(measured.InterDCBps, sim.InterDCBps)
			rows = append(rows, measured)
		}
	}
	return gossipReport(rows, o), nil
}

// gossipPhases are the phases of a run in order, as experiment.Progress names them.
func gossipPhases(crossDC bool) []string {
	phases := []string{"joining", "steady", "detecting"}
	if crossDC {
		phases = append(phases, "cross-dc joining", "cross-dc steady", "dark dc", "lone node")
	}
	return append(phases, "done")
}

// simGossipRow converts the experiment's row.
func simGossipRow(r experiment.Row) GossipRow {
	return GossipRow{Source: "sim", Row: r}
}

// gossipProtocol finds a protocol of the experiment by name.
func gossipProtocol(name string) (membership.Protocol, error) {
	for _, p := range experiment.Protocols {
		if p.Name == name {
			return p, nil
		}
	}
	return membership.Protocol{}, fmt.Errorf("%w: %q", membership.ErrUnknownProtocol, name)
}

// paperTotalBps is paper 001's fit of Cassandra 0.6's traffic at size n.
func paperTotalBps(n int) float64 {
	x := float64(n)
	return experiment.PaperA*x*x + experiment.PaperB*x
}

// diffPct is (got - want) / want in percent; nil when want is 0.
func diffPct(got, want float64) *float64 {
	if want == 0 {
		return nil
	}
	d := (got - want) / want * 100
	return &d
}

// gossipReport assembles the rows, fits, summary, notes and figure.
func gossipReport(rows []GossipRow, o gossipOptions) *Report {
	r := &Report{
		Bench: "gossip",
		Scale: experiment.Scale,
		Rows:  rows,
		Notes: []string{
			fmt.Sprintf("paper_total_bps is paper 001's fit of Cassandra 0.6 on 10 machines: T = %.1f n² + %.1f n bit/s", experiment.PaperA, experiment.PaperB),
			fmt.Sprintf("%d DCs of equal size; loss %.3g on every link; seed %d", o.dcs, o.loss, o.seed),
		},
	}
	if o.crossDC {
		r.Scale += "; " + crossDCScale
		r.Notes = append(r.Notes, crossDCNote)
	}
	if o.real {
		r.Scale += "; --real: " + realGossipScale(o.realInterval)
		r.Notes = append(r.Notes, realGossipNote)
	}
	fits := gossipFits(rows)
	if len(fits) > 0 {
		r.Fits = fits
	}
	r.Summary = gossipSummary(rows, fits)
	r.Plot = func(path string) error { return gossipFigure(rows).Save(path) }
	return r
}

// crossDCScale and crossDCNote tell how the cross-DC columns were measured.
const (
	crossDCScale = "cross-DC columns from a second simulated cluster of the same n, the same schedule and seed, " +
		"with one more DC holding a single node (simulator only)"
	crossDCNote = "cross-DC columns (simulator rows): lone_dc_interdc_bps is the inter-DC traffic of that cluster over the same window " +
		"(the WAN cost of the extra DC, which must not grow with n); dark_dc_detection_s_p50/max time, per node of the sweep's last DC " +
		"killed all at once, until every live node holds it dead, and dark_dc_interdc_bps is the inter-DC traffic meanwhile; " +
		"lone_node_detection_s is the same time for the single node of the extra DC, killed next; cross_dc_undetected counts those kills " +
		"not seen by all within the detection timeout; lone_dc_false_suspicions counts verdicts about running nodes in that cluster's window. " +
		"Compare with failure_detection_s_p50/max, a node killed inside a DC"
)

// gossipFits fits T = a n² + b n to each protocol's simulated rows (at least
// two sizes needed).
func gossipFits(rows []GossipRow) []GossipFit {
	var fits []GossipFit
	for _, p := range gossipProtocols(rows) {
		var ns []int
		var ts []float64
		for _, r := range rows {
			if r.Source == "sim" && r.Protocol == p {
				ns = append(ns, r.N)
				ts = append(ts, r.TotalBps)
			}
		}
		if len(ns) < 2 {
			continue
		}
		a, b := experiment.FitQuadratic(ns, ts)
		fits = append(fits, GossipFit{Protocol: p, A: a, B: b, PaperA: experiment.PaperA, PaperB: experiment.PaperB})
	}
	return fits
}

// gossipProtocols lists the protocols of the rows in order of appearance.
func gossipProtocols(rows []GossipRow) []string {
	var out []string
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1] != r.Protocol {
			out = append(out, r.Protocol)
		}
	}
	return out
}

// gossipSummary states the figures issue 3 judges: per protocol, traffic at
// the largest size, how inter-DC traffic grew from the smallest size of at
// least 100 (else the smallest) to the largest, the slowest join, the false
// suspicions; with --real, the largest differences from the simulator.
func gossipSummary(rows []GossipRow, fits []GossipFit) map[string]any {
	summary := map[string]any{}
	for _, p := range gossipProtocols(rows) {
		var small, large *GossipRow
		joinMax, falseSuspicions := 0.0, 0
		var detectMax, crossDCMax float64
		crossDC, crossUndetected, smallLone, largeLone := false, 0, 0.0, 0.0
		for i := range rows {
			r := &rows[i]
			if r.Source != "sim" || r.Protocol != p {
				continue
			}
			if large == nil || r.N > large.N {
				large = r
			}
			if small == nil || growthBase(r.N, small.N) {
				small = r
			}
			joinMax = math.Max(joinMax, r.JoinConvergenceSMax)
			falseSuspicions += r.FalseSuspicions
			detectMax = math.Max(detectMax, r.FailureDetectionSMax)
			if r.DarkDCDetectionSMax != nil {
				crossDC = true
				crossDCMax = math.Max(crossDCMax, math.Max(*r.DarkDCDetectionSMax, *r.LoneNodeDetectionS))
				crossUndetected += *r.CrossDCUndetected
				falseSuspicions += *r.LoneDCFalseSuspicions
			}
		}
		if crossDC {
			summary[p+"_failure_detection_s_max"] = detectMax
			summary[p+"_cross_dc_detection_s_max"] = crossDCMax
			summary[p+"_cross_dc_undetected"] = crossUndetected
			if small.LoneDCInterDCBps != nil && large.LoneDCInterDCBps != nil {
				smallLone, largeLone = *small.LoneDCInterDCBps, *large.LoneDCInterDCBps
			}
			if small.N != large.N && smallLone > 0 {
				summary[fmt.Sprintf("%s_lone_dc_interdc_growth_n%d_to_n%d", p, small.N, large.N)] = largeLone / smallLone
			}
		}
		summary[p+"_total_bps_at_n"+strconv.Itoa(large.N)] = large.TotalBps
		if small.N != large.N && small.InterDCBps > 0 {
			summary[fmt.Sprintf("%s_interdc_growth_n%d_to_n%d", p, small.N, large.N)] = large.InterDCBps / small.InterDCBps
		}
		summary[p+"_join_convergence_s_max"] = joinMax
		summary[p+"_false_suspicions"] = falseSuspicions
	}
	for _, f := range fits {
		summary[f.Protocol+"_a_over_paper_a"] = f.A / f.PaperA
	}
	worst := 0.0
	for _, r := range rows {
		for _, d := range []*float64{r.TotalDiffPct, r.InterDCDiffPct} {
			if d != nil {
				worst = math.Max(worst, math.Abs(*d))
			}
		}
	}
	if worst > 0 {
		summary["real_vs_sim_max_abs_diff_pct"] = worst
	}
	return summary
}

// growthBase reports whether size n is a better base than size base to
// measure inter-DC growth from: the smallest size of at least 100 (where the
// paper's quadratic term dominates), else the smallest.
func growthBase(n, base int) bool {
	if (n >= 100) != (base >= 100) {
		return n >= 100
	}
	return n < base
}

// gossipFigure draws total and inter-DC traffic against n, log-log, per
// protocol and source, with the paper's fit.
func gossipFigure(rows []GossipRow) Figure {
	f := Figure{
		Title:  "Membership traffic (paper 001): Scuttlebutt vs Ferry",
		XLabel: "nodes", YLabel: "membership traffic (bit/s)", LogX: true, LogY: true,
	}
	type key struct{ source, protocol, what string }
	bySource := hasReal(rows)
	var order []key
	series := map[key]*Series{}
	var sizes []float64
	add := func(k key, x, y float64) {
		if y <= 0 {
			return // a log axis cannot show it
		}
		s, ok := series[k]
		if !ok {
			name := k.protocol + " " + k.what
			if bySource {
				name += " (" + k.source + ")"
			}
			s = &Series{Name: name}
			series[k] = s
			order = append(order, k)
		}
		s.X = append(s.X, x)
		s.Y = append(s.Y, y)
	}
	for _, r := range rows {
		x := float64(r.N)
		add(key{r.Source, r.Protocol, "total"}, x, r.TotalBps)
		add(key{r.Source, r.Protocol, "inter-DC"}, x, r.InterDCBps)
		if r.Source == "sim" && (len(sizes) == 0 || sizes[len(sizes)-1] < x) {
			sizes = append(sizes, x)
		}
	}
	for _, k := range order {
		f.Series = append(f.Series, *series[k])
	}
	paper := Series{Name: fmt.Sprintf("paper 001: %.1f n² + %.1f n", experiment.PaperA, experiment.PaperB)}
	for _, x := range sizes {
		paper.X = append(paper.X, x)
		paper.Y = append(paper.Y, paperTotalBps(int(x)))
	}
	f.Series = append(f.Series, paper)
	return f
}

// hasReal reports whether any row was measured over real sockets.
func hasReal(rows []GossipRow) bool {
	for _, r := range rows {
		if r.Source == "real" {
			return true
		}
	}
	return false
}
