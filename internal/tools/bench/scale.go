package bench

import (
	"context"
	"flag"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/core/routing/chord"
	membership "github.com/kuradb/kura/internal/tools/membership/experiment"
	routing "github.com/kuradb/kura/internal/tools/routing/experiment"
)

func init() {
	Register(Bench{
		Name: "scale",
		Summary: "internet scale in the simulator: Ferry gossip (a converged cluster that 100 nodes join; --cold: started from nothing) " +
			"and chord/mlchord/onehop routing on 1,000 and 10,000 nodes in 5 unequal DCs, routing alone on 100,000, each run's wall time, CPU time and peak memory",
		Setup: setupScale,
	})
}

// The scale bench's defaults: sizes an operator plans for, five DCs of unequal sizes,
// and the loss a WAN shows on a bad day.
const (
	scaleSizes        = "1000,10000"
	scaleRoutingSizes = "100000"
	scaleDCWeights    = "35,25,20,12,8"
	scaleLoss         = 0.01
	scaleLookups      = 10_000
	// scaleJoiners is how many nodes join the cluster at once in a warm gossip run
	// (see scaleWarmSchedule).
	scaleJoiners = 100
	// scaleMemoryLimit is the Go runtime's soft memory limit during the bench: the
	// experiments collect garbage rarely to save time, which near the limit they may not.
	scaleMemoryLimit = 7 << 30
)

// scaleWarmSchedule is the gossip runs' schedule by default. The cluster starts
// converged, as a cluster whose nodes restart from the view they saved: simulating
// its growth from nothing makes every node learn every join, O(n²) for the run, which
// is not what an operator of a cluster that size waits on. What the operator does wait
// on is measured: a batch of 100 nodes joining the running cluster at once 5 s in (a
// scale-out of a few racks: more than a round's pushes carry, so anti-entropy spreads
// most of it, and the same batch at every size shows what n alone does to a join),
// traffic averaged over 30 s from 20 s, once the joins have converged and their
// rumours died down, then 5 nodes killed.
var scaleWarmSchedule = membership.Config{
	Warm: true, Joiners: scaleJoiners, JoinAt: 5 * time.Second,
	WindowStart: 20 * time.Second, WindowEnd: 50 * time.Second,
	Kills: 5, DetectTimeout: 30 * time.Second,
}

// scaleSchedule is the gossip runs' schedule with --cold, shorter than bench gossip's
// paper schedule: the nodes start in 10 batches 5 s apart, traffic is averaged over
// 30 s once every join has converged, then 5 nodes are killed.
var scaleSchedule = membership.Config{
	Batches: 10, BatchInterval: 5 * time.Second,
	WindowStart: 60 * time.Second, WindowEnd: 90 * time.Second,
	Kills: 5, DetectTimeout: 30 * time.Second,
}

// scaleRoutingProtocols are the DHTs of the routing runs; onehop comes with each. The
// runs build the DHTs' tables stabilised and measure lookups on them (the tables'
// upkeep is bench routing's to measure).
var scaleRoutingProtocols = []chord.Protocol{chord.ProtocolChord, chord.ProtocolMLChord}

// scaleOptions are the bench's flags.
type scaleOptions struct {
	sizes        []int
	routingSizes []int
	dcWeights    []int
	loss         float64
	lookups      int
	seed         uint64
	memoryLimit  int64
	// schedule replaces scaleSchedule (tests run shorter ones).
	schedule membership.Config
}

func setupScale(fs *flag.FlagSet) Runner {
	sizes := fs.String("nodes", scaleSizes, "cluster sizes of the gossip and routing runs, comma-separated")
	routingSizes := fs.String("routing-nodes", scaleRoutingSizes, "cluster sizes of routing runs alone (no gossip), comma-separated; empty for none")
	weights := fs.String("dc-weights", scaleDCWeights, "relative sizes of the DCs, one per DC, comma-separated")
	loss := fs.Float64("loss", scaleLoss, "message loss probability on every link of the gossip runs")
	lookups := fs.Int("lookups", scaleLookups, "lookups per routing protocol")
	seed := fs.Uint64("seed", 1, "seed of the simulations and of the workload")
	memoryLimit := fs.Int64("memory-limit", scaleMemoryLimit, "the Go runtime's soft memory limit in bytes while the bench runs "+
		"(a warm gossip run peaks near 47 bytes × nodes², its live heap 30: raise it for more than about 12,000 nodes)")
	cold := fs.Bool("cold", false, "start the gossip runs' clusters from nothing, in 10 batches 5 s apart, traffic over 60-90 s "+
		"(every node learns every join: minutes at 10,000 nodes), instead of converged with a batch of nodes joining")
	joiners := fs.Int("joiners", scaleJoiners, "how many of each gossip run's nodes join the converged cluster at once, 5 s in (not with --cold)")
	return func(ctx context.Context, env Env) (*Report, error) {
		o := scaleOptions{loss: *loss, lookups: *lookups, seed: *seed, memoryLimit: *memoryLimit, schedule: scaleWarmSchedule}
		o.schedule.Joiners = *joiners
		if *cold {
			o.schedule = scaleSchedule
			joinersSet := false
			fs.Visit(func(f *flag.Flag) { joinersSet = joinersSet || f.Name == "joiners" })
			if joinersSet {
				return nil, fmt.Errorf("--joiners: a cold start has every node join; drop one of --cold and --joiners")
			}
		}
		var err error
		if o.sizes, err = parseCounts("--nodes", *sizes); err != nil {
			return nil, err
		}
		if strings.TrimSpace(*routingSizes) != "" {
			if o.routingSizes, err = parseCounts("--routing-nodes", *routingSizes); err != nil {
				return nil, err
			}
		}
		if o.dcWeights, err = parseCounts("--dc-weights", *weights); err != nil {
			return nil, err
		}
		switch {
		case len(o.dcWeights) < 2:
			return nil, fmt.Errorf("--dc-weights %q: want two DCs or more, to measure the WAN", *weights)
		case o.loss < 0 || o.loss >= 1:
			return nil, fmt.Errorf("--loss %v: want a probability in [0, 1)", o.loss)
		case o.lookups < 1:
			return nil, fmt.Errorf("--lookups %d: want a positive number", o.lookups)
		case o.memoryLimit < 1<<20:
			return nil, fmt.Errorf("--memory-limit %d: want bytes, at least 1 MiB", o.memoryLimit)
		case !*cold && *joiners < 1:
			return nil, fmt.Errorf("--joiners %d: want a positive number", *joiners)
		}
		for _, n := range slices.Concat(o.sizes, o.routingSizes) {
			if n < 10*len(o.dcWeights) {
				return nil, fmt.Errorf("%d nodes over %d DCs: want at least %d", n, len(o.dcWeights), 10*len(o.dcWeights))
			}
		}
		for _, n := range o.sizes {
			if !*cold && 2*o.schedule.Joiners > n {
				return nil, fmt.Errorf("--joiners %d for %d nodes: want at most half of them, so that most start converged", o.schedule.Joiners, n)
			}
		}
		return runScale(ctx, env, o)
	}
}

// ScaleRow is one run: a gossip run of Ferry, or one routing protocol's run. Each has
// its wall time and the peak memory of the process while it ran.
type ScaleRow struct {
	Part     string `json:"part" table:"group"`
	Protocol string `json:"protocol"`
	Nodes    int    `json:"nodes"`
	DCNodes  []int  `json:"dc_nodes" table:"-"`
	// Gossip: traffic over the steady window, in all, between DCs, and on the busiest
	// WAN link (each link's figure is in wan_links); the slowest join; the time until
	// every live node holds a killed node dead; verdicts against running nodes. The
	// table has room for the figures the bench is judged on; the JSON has them all. A
	// warm run (not --cold) adds how many nodes joined the converged cluster, whose
	// joins the join figures time, and what a cold run's table leaves out: joins that
	// never converged and kills never detected.
	TotalBps             *float64             `json:"total_bps,omitempty"`
	InterDCBps           *float64             `json:"interdc_bps,omitempty"`
	WANLinkBpsMax        *float64             `json:"wan_link_bps_max,omitempty" table:"-"`
	WANLinks             []membership.WANLink `json:"wan_links,omitempty" table:"-"`
	Joiners              *int                 `json:"joiners,omitempty" table:"-"`
	JoinConvergenceSP50  *float64             `json:"join_convergence_s_p50,omitempty" table:"-"`
	JoinConvergenceSMax  *float64             `json:"join_convergence_s_max,omitempty" table:"-"`
	JoinsUnconverged     *int                 `json:"joins_unconverged,omitempty" table:"-"`
	FailuresUndetected   *int                 `json:"failures_undetected,omitempty" table:"-"`
	FailureDetectionSP50 *float64             `json:"failure_detection_s_p50,omitempty"`
	FailureDetectionSMax *float64             `json:"failure_detection_s_max,omitempty"`
	FalseSuspicions      *int                 `json:"false_suspicions,omitempty"`
	// Routing: hops of a lookup until it reaches the key's owner, and how many of them
	// crossed between DCs.
	HopsMean        *float64 `json:"hops_mean,omitempty"`
	InterDCHopsMean *float64 `json:"interdc_hops_mean,omitempty"`
	InterDCHopsMax  *int     `json:"interdc_hops_max,omitempty"`
	CorrectFraction *float64 `json:"correct_fraction,omitempty" table:"-"`
	WallS           float64  `json:"wall_s"`
	// CPUS is the process's CPU time (user and system, every thread, the
	// collector's too) during the run: on a shared machine wall time
	// includes waiting for a core, CPU time does not. The table, which has no room
	// for it, shows it by size in the summary (cpu_s_at_N).
	CPUS          float64 `json:"cpu_s" table:"-"`
	PeakRSSBytes  uint64  `json:"peak_rss_bytes"`
	PeakHeapBytes uint64  `json:"peak_heap_bytes" table:"-"`
}

// Parts of the scale bench, as the table heads them.
const (
	scalePartGossip  = "gossip"
	scalePartRouting = "routing"
)

// runScale runs the gossip and routing runs at every size, then the routing runs
// alone.
func runScale(ctx context.Context, env Env, o scaleOptions) (*Report, error) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(o.memoryLimit))
	// Work grows about as n² for gossip and n log n for routing; a run is counted done
	// when it ends.
	var total float64
	for _, n := range o.sizes {
		total += scaleGossipWeight(n, o.schedule) + scaleRoutingWeight(n)*float64(len(scaleRoutingProtocols)+1)
	}
	for _, n := range o.routingSizes {
		total += scaleRoutingWeight(n) * float64(len(scaleRoutingProtocols)+1)
	}
	progress := env.StartProgress("scale", total)
	defer progress.Done()
	var rows []ScaleRow
	for _, n := range o.sizes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		row, err := runScaleGossip(ctx, o, n, func(p membership.Progress) {
			progress.Add(0, "gossip n=%d: %s, %v simulated", n, p.Phase, p.VirtualTime.Truncate(time.Second))
		})
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
		progress.Add(scaleGossipWeight(n, o.schedule), "gossip n=%d: %.1f s", n, row.WallS)
		routed, err := runScaleRouting(ctx, o, n, func(p string) {
			progress.Add(scaleRoutingWeight(n), "routing n=%d: %s", n, p)
		})
		if err != nil {
			return nil, err
		}
		rows = append(rows, routed...)
	}
	for _, n := range o.routingSizes {
		routed, err := runScaleRouting(ctx, o, n, func(p string) {
			progress.Add(scaleRoutingWeight(n), "routing n=%d: %s", n, p)
		})
		if err != nil {
			return nil, err
		}
		rows = append(rows, routed...)
	}
	return scaleReport(rows, o), nil
}

// scaleGossipWeight is the work of a gossip run: every node learns every join, and
// in a warm run, which is steady but for its joiners, runs its rounds.
func scaleGossipWeight(n int, s membership.Config) float64 {
	if s.Warm {
		return float64(n) * float64(s.Joiners+10) / 1000
	}
	return float64(n) * float64(n) / 1000
}

func scaleRoutingWeight(n int) float64 { return float64(n) * 20 }

// scaleDCs names the DCs of the bench: dc1, dc2, ...
func scaleDCs(weights []int) []string {
	out := make([]string, len(weights))
	for i := range out {
		out[i] = fmt.Sprintf("dc%d", i+1)
	}
	return out
}

// runCost is what one run of the bench cost: its wall time, the process's CPU time
// during it, and the peaks of memoryWatch; err is the run's own error.
type runCost struct {
	wall, cpu         time.Duration
	peakRSS, peakHeap uint64
	err               error
}

// measureRun runs run and measures its cost.
func measureRun(run func() error) runCost {
	watch := watchMemory()
	started, cpu := time.Now(), ownCPU()
	err := run()
	c := runCost{wall: time.Since(started), cpu: ownCPU() - cpu, err: err}
	c.peakRSS, c.peakHeap = watch.Stop()
	return c
}

// runScaleGossip runs Ferry on n nodes.
func runScaleGossip(ctx context.Context, o scaleOptions, n int, progress func(membership.Progress)) (ScaleRow, error) {
	cfg := o.schedule
	cfg.Progress = progress
	cfg.Protocols, cfg.Sizes = []string{"ferry"}, []int{n}
	cfg.DCs, cfg.DCWeights, cfg.Loss, cfg.Seed = len(o.dcWeights), o.dcWeights, o.loss, o.seed
	var res membership.Result
	cost := measureRun(func() (err error) {
		res, err = membership.RunExperiment(ctx, cfg)
		return err
	})
	if err := cost.err; err != nil {
		return ScaleRow{}, fmt.Errorf("scale bench: gossip n=%d: %w", n, err)
	}
	r := res.Rows[0]
	busiest := 0.0
	for _, l := range r.WANLinks {
		busiest = max(busiest, l.Bps)
	}
	row := ScaleRow{
		Part: scalePartGossip, Protocol: r.Protocol, Nodes: n, DCNodes: r.DCNodes,
		TotalBps: &r.TotalBps, InterDCBps: &r.InterDCBps, WANLinkBpsMax: &busiest, WANLinks: r.WANLinks,
		JoinConvergenceSMax:  &r.JoinConvergenceSMax,
		FailureDetectionSP50: &r.FailureDetectionSP50, FailureDetectionSMax: &r.FailureDetectionSMax,
		FalseSuspicions: &r.FalseSuspicions,
		WallS:           cost.wall.Seconds(), CPUS: cost.cpu.Seconds(), PeakRSSBytes: cost.peakRSS, PeakHeapBytes: cost.peakHeap,
	}
	if cfg.Warm {
		row.Joiners, row.JoinConvergenceSP50 = &r.Joiners, &r.JoinConvergenceSP50
		row.JoinsUnconverged, row.FailuresUndetected = &r.JoinsUnconverged, &r.FailuresUndetected
	}
	return row, nil
}

// runScaleRouting runs onehop and each protocol of scaleRoutingProtocols on n nodes,
// one run each so that each has its own wall time and peak memory, on the same nodes
// and lookups (the seed makes them).
func runScaleRouting(ctx context.Context, o scaleOptions, n int, done func(protocol string)) ([]ScaleRow, error) {
	dcs := scaleDCs(o.dcWeights)
	sizes := membership.DCSizes(n, o.dcWeights)
	var layout []routing.DCSize
	for i, dc := range dcs {
		layout = append(layout, routing.DCSize{Name: dc, Nodes: sizes[i]})
	}
	var rows []ScaleRow
	// onehop's row comes with every run; the first, with no DHT, gives it alone.
	runs := [][]chord.Protocol{{}}
	for _, p := range scaleRoutingProtocols {
		runs = append(runs, []chord.Protocol{p})
	}
	for _, protocols := range runs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cfg := routing.Config{DCs: layout, Lookups: o.lookups, Seed: o.seed, Protocols: protocols, TablesOnly: true}
		var res routing.Result
		cost := measureRun(func() (err error) {
			res, err = routing.RunExperiment(cfg)
			return err
		})
		if err := cost.err; err != nil {
			return nil, fmt.Errorf("scale bench: routing n=%d: %w", n, err)
		}
		r := res.Rows[len(res.Rows)-1]
		rows = append(rows, ScaleRow{
			Part: scalePartRouting, Protocol: r.Protocol, Nodes: n, DCNodes: sizes,
			HopsMean: &r.HopsMean, InterDCHopsMean: &r.InterDCHopsMean, InterDCHopsMax: &r.InterDCHopsMax,
			CorrectFraction: &r.CorrectFraction,
			WallS:           cost.wall.Seconds(), CPUS: cost.cpu.Seconds(), PeakRSSBytes: cost.peakRSS, PeakHeapBytes: cost.peakHeap,
		})
		done(r.Protocol)
	}
	return rows, nil
}

// scaleReport assembles the table, the summary of the targets and the figure.
func scaleReport(rows []ScaleRow, o scaleOptions) *Report {
	weights := make([]string, len(o.dcWeights))
	for i, w := range o.dcWeights {
		weights[i] = strconv.Itoa(w)
	}
	s := o.schedule
	start := fmt.Sprintf("nodes started in %d batches %v apart", s.Batches, s.BatchInterval)
	if s.Warm {
		start = fmt.Sprintf("the cluster started converged (each node from the view it saved) but %d nodes joining it at once at %v",
			s.Joiners, s.JoinAt)
	}
	r := &Report{
		Bench: "scale",
		Scale: fmt.Sprintf("simulated (virtual time, one process); %d DCs of relative sizes %s; gossip: Ferry, loss %.3g on every link, "+
			"100 µs inside a DC and 50 ms between, %s, traffic over %v-%v, %d nodes killed; "+
			"routing: 0.2 ms inside a DC and 192 ms between, %d lookups per protocol on stabilised tables (their upkeep: bench routing); seed %d",
			len(o.dcWeights), strings.Join(weights, ":"), o.loss, start, s.WindowStart, s.WindowEnd, s.Kills,
			o.lookups, o.seed),
		Rows:    rows,
		Summary: scaleSummary(rows),
		Notes: []string{
			"cpu_s (in the JSON rows; by size, cpu_s_at_N) is the process's CPU time (user+system) during the run: steadier than wall_s on a shared machine; " +
				"peak_rss_bytes is the process's peak resident set during the run (Linux VmHWM, reset as the run starts); peak_heap_bytes the Go heap's, sampled every 20 ms",
			"wan_link_bps_max is the busiest DC pair's membership traffic, both ways; wan_links (JSON) has every pair",
			"failure_detection_s: from a kill until every live node holds the node dead; false_suspicions: suspect or dead verdicts about running nodes in the steady window",
			"routing rows: the paper's hop count (the request's hops until the owner; the owner replies directly); onehop's one hop is the request itself, its inter-DC hops the lower bound",
		},
	}
	if s.Warm {
		r.Notes = append(r.Notes, "join_convergence_s: of the joiners, from their start until every node started no later knows each and each knows them all; "+
			"--cold starts every node in batches instead, and times every join")
	}
	r.Plot = func(path string) error { return SavePanels(path, 2, scaleFigures(rows)...) }
	return r
}

// scaleSummary collects what the bench is judged on: the gossip and routing wall time, CPU
// time and peak memory at each size, the WAN traffic and the slowest join at each size, and
// the routing runs' inter-DC hops.
func scaleSummary(rows []ScaleRow) map[string]any {
	summary := map[string]any{}
	walls, cpus := map[int]float64{}, map[int]float64{}
	peaks := map[int]uint64{}
	for _, r := range rows {
		key := fmt.Sprintf("%d", r.Nodes)
		walls[r.Nodes] += r.WallS
		cpus[r.Nodes] += r.CPUS
		peaks[r.Nodes] = max(peaks[r.Nodes], r.PeakRSSBytes)
		switch {
		case r.Part == scalePartGossip:
			summary["interdc_bps_at_"+key] = *r.InterDCBps
			if r.JoinConvergenceSMax != nil {
				summary["join_convergence_s_max_at_"+key] = *r.JoinConvergenceSMax
			}
		case r.Protocol == chord.ProtocolMLChord.String():
			summary["mlchord_interdc_hops_max_at_"+key] = *r.InterDCHopsMax
		}
	}
	for n, wall := range walls {
		summary[fmt.Sprintf("wall_s_at_%d", n)] = wall
		summary[fmt.Sprintf("cpu_s_at_%d", n)] = cpus[n]
		summary[fmt.Sprintf("peak_rss_bytes_at_%d", n)] = peaks[n]
	}
	return summary
}

// scaleFigures draws the gossip traffic against the cluster size, and each run's wall
// time and peak memory.
func scaleFigures(rows []ScaleRow) []Figure {
	traffic := Figure{Title: "Ferry membership traffic", XLabel: "nodes", YLabel: "traffic (bit/s)", LogX: true, LogY: true}
	total, wan, busiest := Series{Name: "total"}, Series{Name: "inter-DC"}, Series{Name: "busiest WAN link"}
	cost := Figure{Title: "Cost of each run", YLabel: "wall time (s)"}
	memory := Figure{Title: "Peak memory of each run", YLabel: "peak resident set (bytes)"}
	hops := Figure{Title: "Lookup hops", YLabel: "hops per lookup", Categories: []string{"hops, mean", "inter-DC hops, mean"}}
	for _, r := range rows {
		label := fmt.Sprintf("%s %s n=%d", r.Part, r.Protocol, r.Nodes)
		cost.Categories = append(cost.Categories, label)
		memory.Categories = append(memory.Categories, label)
		if r.Part == scalePartGossip {
			x := float64(r.Nodes)
			total.X, total.Y = append(total.X, x), append(total.Y, *r.TotalBps)
			wan.X, wan.Y = append(wan.X, x), append(wan.Y, *r.InterDCBps)
			busiest.X, busiest.Y = append(busiest.X, x), append(busiest.Y, *r.WANLinkBpsMax)
			traffic.XTicks = append(traffic.XTicks, x)
		} else {
			hops.Series = append(hops.Series, Series{Name: fmt.Sprintf("%s n=%d", r.Protocol, r.Nodes), Y: []float64{*r.HopsMean, *r.InterDCHopsMean}})
		}
	}
	traffic.Series = []Series{total, wan, busiest}
	wall, peak := Series{Name: "wall time"}, Series{Name: "peak RSS"}
	for _, r := range rows {
		wall.Y = append(wall.Y, r.WallS)
		peak.Y = append(peak.Y, float64(r.PeakRSSBytes))
	}
	cost.Series, memory.Series = []Series{wall}, []Series{peak}
	return []Figure{traffic, hops, cost, memory}
}
