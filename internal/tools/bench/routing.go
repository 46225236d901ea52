package bench

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/base/stats"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/routing/chord"
	"github.com/kuradb/kura/internal/data/routing"
	"github.com/kuradb/kura/internal/io/topology"
	"github.com/kuradb/kura/internal/tools/routing/experiment"
)

func init() {
	Register(Bench{
		Name:    "routing",
		Summary: "paper 000 ML-Chord: hops, inter-DC hops and lookup latency of onehop, chord and mlchord (Fig. 8, Tokyo/Sao Paulo)",
		Setup:   setupRouting,
	})
}

// Defaults of the two modes, which share --lookups and --nodes-per-dc.
const (
	routingSimulatedNodesPerDC = 500
	routingSimulatedLookups    = 10_000
	routingEmulatedLookups     = 200
	// routingEmulatedScale is how much larger than the topology's own layout the second
	// emulated layout is: 2 + 1 nodes become 10 + 5.
	routingEmulatedScale = 5
	// routingEmulatedWorkers is how many real lookups run at once; the lookups wait on the
	// emulated WAN, not on the CPU, so running a few together does not change their latency.
	routingEmulatedWorkers = 8
	// routingProbePings is how many round trips measure each emulated link for onehop.
	routingProbePings = 5
)

// The paper's figures (paper 000): Fig. 8's reductions at 2 × 500 simulated nodes, and the
// lookup latency measured on its Tokyo / São Paulo deployment.
var paperRoutingReduction = experiment.Reduction{InterDCHopsMean: 0.74, HopsMean: 0.30, LatencyMsMean: 0.74}

// paperMLChordInterDCHopsMax is the paper's claim: an ML-Chord lookup crosses at most once.
const paperMLChordInterDCHopsMax = 1

// routingOptions are the bench's parsed flags.
type routingOptions struct {
	topo *topology.Topology
	// nodesPerDC overrides the topology's node counts, in its DC order; nil keeps the
	// defaults of the mode.
	nodesPerDC         []int
	lookups            int
	churnPercentPerMin float64
	seed               uint64
	emulated           bool
	// protocols are the DHTs the emulated mode starts clusters for.
	protocols []string
}

func setupRouting(fs *flag.FlagSet) Runner {
	nodesPerDC := fs.String("nodes-per-dc", "", fmt.Sprintf("nodes of each DC of the topology, in its order, e.g. 500,500 (default: %d each simulated; emulated: the topology's own nodes and %d times as many)", routingSimulatedNodesPerDC, routingEmulatedScale))
	lookups := fs.Int("lookups", 0, fmt.Sprintf("lookups per protocol, uniform keys from uniform nodes (default: %d simulated, %d per layout emulated)", routingSimulatedLookups, routingEmulatedLookups))
	churn := fs.Float64("churn-per-min", 0, "percent of the nodes replaced per minute in the simulation (1 = 1 %), by crashes and graceful leaves with as many joins; 0 runs on stabilised tables")
	topologyArg := fs.String("topology", "tokyo-saopaulo", "topology file or example name: the DCs and their latencies (and, emulated, the nodes)")
	seed := fs.Uint64("seed", 1, "seed of the workload (keys, coordinators) and of the simulator")
	emulated := fs.Bool("emulated", false, "run real nodes over the emulated WAN instead of the simulator")
	return func(ctx context.Context, env Env) (*Report, error) {
		opts := routingOptions{
			lookups: *lookups, churnPercentPerMin: *churn, seed: *seed, emulated: *emulated,
			protocols: []string{"chord", "mlchord-paper", "mlchord"},
		}
		var err error
		if opts.topo, err = loadRoutingTopology(*topologyArg); err != nil {
			return nil, err
		}
		if opts.nodesPerDC, err = parseNodesPerDC(*nodesPerDC, len(opts.topo.Datacenters)); err != nil {
			return nil, err
		}
		switch {
		case opts.lookups < 0:
			return nil, fmt.Errorf("--lookups %d: want a positive number", opts.lookups)
		case opts.churnPercentPerMin < 0 || opts.churnPercentPerMin > 100:
			return nil, fmt.Errorf("--churn-per-min %v: want a percentage in [0, 100]", opts.churnPercentPerMin)
		case opts.emulated && opts.churnPercentPerMin > 0:
			return nil, errors.New("--churn-per-min is for the simulation; the emulated run measures stabilised rings")
		}
		if opts.emulated {
			return runRoutingEmulated(ctx, env, opts)
		}
		return runRoutingSimulated(env, opts)
	}
}

// loadRoutingTopology reads a topology file, or a shipped example by name.
func loadRoutingTopology(arg string) (*topology.Topology, error) {
	if _, err := os.Stat(arg); err == nil || strings.ContainsAny(arg, "/.") {
		return topology.Load(arg)
	}
	return topology.Example(arg)
}

// parseNodesPerDC reads "500,500": one positive count per DC of the topology.
func parseNodesPerDC(list string, dcs int) ([]int, error) {
	if list == "" {
		return nil, nil
	}
	var counts []int
	for _, field := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--nodes-per-dc %q: want positive node counts, e.g. 500,500", list)
		}
		counts = append(counts, n)
	}
	if len(counts) != dcs {
		return nil, fmt.Errorf("--nodes-per-dc %q names %d DCs, the topology has %d: give one count per DC, or a --topology with %d DCs (e.g. three-dc)", list, len(counts), dcs, len(counts))
	}
	return counts, nil
}

// RoutingRow is one protocol's simulated lookups; the table shows the figures of Fig. 8
// and the cost of keeping the tables, the JSON all of them.
type RoutingRow struct {
	experiment.Row `table:"protocol,hops_mean,interdc_hops_mean,latency_ms_mean,latency_ms_p99,correct_fraction,maintenance_bps_per_node"`
}

// routingReduction is mlchord's reduction against chord, with the paper's beside it.
type routingReduction struct {
	experiment.Reduction
	Paper experiment.Reduction `json:"paper"`
}

func runRoutingSimulated(env Env, opts routingOptions) (*Report, error) {
	cfg := experiment.Config{
		Lookups:        cmp.Or(opts.lookups, routingSimulatedLookups),
		ChurnPerMinute: opts.churnPercentPerMin / 100,
		Seed:           opts.seed,
		Link: func(fromDC, toDC string) time.Duration {
			spec, err := opts.topo.Link(fromDC, toDC)
			if err != nil {
				panic(err) // the experiment's DCs are the topology's: cannot happen
			}
			return spec.Latency
		},
	}
	var sizes []string
	nodes := 0
	for i, dc := range opts.topo.Datacenters {
		n := routingSimulatedNodesPerDC
		if opts.nodesPerDC != nil {
			n = opts.nodesPerDC[i]
		}
		cfg.DCs = append(cfg.DCs, experiment.DCSize{Name: dc.Name, Nodes: n})
		sizes = append(sizes, fmt.Sprintf("%s %d", dc.Name, n))
		nodes += n
	}
	// The experiment tells each step as it starts, two per DHT (onehop, computed first,
	// takes no time); a step is one unit, done when the next starts.
	var progress *Progress
	cfg.Progress = func(p experiment.Progress) {
		if progress == nil {
			progress = env.StartProgress("routing", float64(p.Steps))
		}
		progress.Add(float64(min(p.Step, 1)), "%s: %s, %d nodes, %d lookups", p.Protocol, p.Phase, nodes, cfg.Lookups)
	}
	res, err := experiment.RunExperiment(cfg)
	if progress != nil {
		progress.Add(1, "done")
		progress.Done()
	}
	if err != nil {
		return nil, err
	}
	rows := make([]RoutingRow, len(res.Rows))
	for i, r := range res.Rows {
		rows[i] = RoutingRow{r}
	}
	churn := "no churn (stabilised tables)"
	if cfg.ChurnPerMinute > 0 {
		churn = fmt.Sprintf("churn %.3g %% of the nodes per minute", opts.churnPercentPerMin)
	}
	report := &Report{
		Bench: "routing",
		Scale: fmt.Sprintf("simulated, topology %s: %s nodes; %d lookups per protocol; %s; seed %d",
			opts.topo.Name, strings.Join(sizes, " + "), cfg.Lookups, churn, opts.seed),
		Rows:      rows,
		Reduction: routingReduction{Reduction: res.Reduction, Paper: paperRoutingReduction},
		Summary: map[string]any{
			"interdc_hops_lower_bound_mean":  res.InterDCHopsLowerBoundMean,
			"paper_mlchord_interdc_hops_max": paperMLChordInterDCHopsMax,
			"wall_seconds":                   res.WallSeconds,
		},
		Notes: append(res.Notes,
			"reduction: 1 - mlchord/chord; reduction.paper: paper 000's, -74 % inter-DC hops and -30 % hops (Fig. 8, 2 x 500 simulated nodes) and -74 % lookup latency (its Tokyo/Sao Paulo deployment)",
			"interdc_hops_lower_bound_mean: the share of lookups whose owner is in another DC than the coordinator; the paper claims ML-Chord never crosses more than once (paper_mlchord_interdc_hops_max)"),
	}
	report.Plot = func(path string) error {
		return SavePanels(path, 2, routingFigures("simulated, "+strings.Join(sizes, " + "), res.Rows)...)
	}
	return report, nil
}

// routingFigures draws bars per protocol: the mean hops and inter-DC hops of a lookup in
// one panel, its mean and p99 latency in another.
func routingFigures(title string, rows []experiment.Row) []Figure {
	hops := Figure{Title: "Lookup hops (" + title + ")", YLabel: "hops per lookup", Categories: []string{"hops, mean", "inter-DC hops, mean"}}
	latency := Figure{Title: "Lookup latency (" + title + ")", YLabel: "latency (ms)", Categories: []string{"mean", "p99"}}
	for _, row := range rows {
		hops.Series = append(hops.Series, Series{Name: row.Protocol, Y: []float64{row.HopsMean, row.InterDCHopsMean}})
		latency.Series = append(latency.Series, Series{Name: row.Protocol, Y: []float64{row.LatencyMsMean, row.LatencyMsP99}})
	}
	return []Figure{hops, latency}
}

// RoutingEmulatedRow is one protocol's real lookups on one emulated layout.
type RoutingEmulatedRow struct {
	// Layout names the nodes per DC, e.g. "tokyo 2 + saopaulo 1".
	Layout   string `json:"layout" table:"group"`
	Protocol string `json:"protocol"`
	Lookups  int    `json:"lookups" table:"-"` // the scale says how many
	// Hops and InterDCHops are what the DHT reported for each lookup; onehop's single hop
	// is the request going straight to the owner.
	HopsMean        float64 `json:"hops_mean"`
	HopsP99         float64 `json:"hops_p99" table:"-"`
	InterDCHopsMean float64 `json:"interdc_hops_mean"`
	InterDCHopsMax  int     `json:"interdc_hops_max"`
	// Latency is Router().Lookup's wall time on the coordinator; onehop's is the measured
	// round trip to the owner's DC (0 when the coordinator owns the key).
	LatencyMsMean   float64 `json:"latency_ms_mean"`
	LatencyMsP99    float64 `json:"latency_ms_p99"`
	CorrectFraction float64 `json:"correct_fraction"`
}

// routingEmulatedReduction is mlchord's reduction against chord on one layout.
type routingEmulatedReduction struct {
	Layout string `json:"layout" table:"group"`
	experiment.Reduction
	PaperLatencyMsMean float64 `json:"paper_latency_ms_mean"`
}

// plannedRealLookup is one real lookup: a coordinator and a key.
type plannedRealLookup struct {
	from string
	key  []byte
}

// realLookup is one measured lookup.
type realLookup struct {
	hops, interDC int
	latency       time.Duration
	correct, ok   bool
}

func runRoutingEmulated(ctx context.Context, env Env, opts routingOptions) (*Report, error) {
	started := time.Now()
	lookups := cmp.Or(opts.lookups, routingEmulatedLookups)
	layouts := []*topology.Topology{opts.topo}
	if opts.nodesPerDC != nil {
		layouts = []*topology.Topology{scaledTopology(opts.topo, opts.nodesPerDC)}
	} else {
		var scaled []int
		for _, dc := range opts.topo.Datacenters {
			scaled = append(scaled, routingEmulatedScale*len(dc.Nodes))
		}
		layouts = append(layouts, scaledTopology(opts.topo, scaled))
	}
	var rows []RoutingEmulatedRow
	var reductions []routingEmulatedReduction
	var layoutNames []string
	// A DHT's cluster costs about its number of nodes to start and settle, and as much
	// again for its lookups; onehop's probes a fifth of that.
	weight := func(topo *topology.Topology) float64 { return float64(len(topo.Nodes())) }
	total := 0.0
	for _, topo := range layouts {
		total += weight(topo) * (0.2 + 2*float64(len(opts.protocols)))
	}
	progress := env.StartProgress("routing", total)
	defer progress.Done()
	for _, topo := range layouts {
		name := layoutName(topo)
		layoutNames = append(layoutNames, name)
		layout, plan, err := planRealLookups(topo, lookups, opts.seed)
		if err != nil {
			return nil, err
		}
		progress.Add(0, "%s: probing the emulated links", name)
		oneHop, err := emulatedOneHopRow(ctx, topo, layout, plan)
		if err != nil {
			return nil, err
		}
		progress.Add(0.2*weight(topo), "")
		oneHop.Layout = name
		rows = append(rows, oneHop)
		byProtocol := map[string]RoutingEmulatedRow{}
		for _, protocol := range opts.protocols {
			progress.Add(0, "%s: %s: starting the nodes, waiting for the ring to settle", name, protocol)
			step := func(settled bool, looked int) {
				if settled {
					progress.Add(weight(topo), "%s: %s: settled; %d real lookups", name, protocol, lookups)
					return
				}
				progress.Add(weight(topo)*float64(looked)/float64(lookups), "")
			}
			row, err := runEmulatedProtocol(ctx, topo, protocol, layout, plan, step)
			if err != nil {
				return nil, fmt.Errorf("routing: %s, %s: %w", name, protocol, err)
			}
			row.Layout = name
			rows = append(rows, row)
			byProtocol[protocol] = row
		}
		chordRow, okChord := byProtocol["chord"]
		mlchordRow, okML := byProtocol["mlchord"]
		if okChord && okML {
			reductions = append(reductions, routingEmulatedReduction{
				Layout: name,
				Reduction: experiment.Reduction{
					InterDCHopsMean: 1 - mlchordRow.InterDCHopsMean/chordRow.InterDCHopsMean,
					HopsMean:        1 - mlchordRow.HopsMean/chordRow.HopsMean,
					LatencyMsMean:   1 - mlchordRow.LatencyMsMean/chordRow.LatencyMsMean,
				},
				PaperLatencyMsMean: paperRoutingReduction.LatencyMsMean,
			})
		}
	}
	report := &Report{
		Bench: "routing",
		Scale: fmt.Sprintf("emulated WAN (topology %s), real nodes; layouts %s; %d lookups per protocol and layout from random nodes, random keys, %d at a time; seed %d",
			opts.topo.Name, strings.Join(layoutNames, " and "), lookups, routingEmulatedWorkers, opts.seed),
		Rows:      rows,
		Reduction: reductions,
		Summary:   map[string]any{"wall_seconds": time.Since(started).Seconds()},
		Notes: []string{
			"each DHT runs in its own embedded cluster of real nodes (transport, node runtime, chord core) with the topology's latency and bandwidth emulated; the bench waits until every node has its true predecessor and successor, its lookups of a sample of keys find the true owner, and their hop counts have stopped changing (finger tables built), then times Router().Lookup",
			"onehop: the reference of one direct request, the round trip to the owner's DC measured on the emulated links (0 when the coordinator owns the key); no forwarding",
			"reduction: 1 - mlchord/chord per layout; paper_latency_ms_mean: the paper's -74 % on its 2 + 1 node Tokyo/Sao Paulo deployment",
		},
	}
	report.Plot = func(path string) error {
		return SavePanels(path, 2, emulatedRoutingFigures(opts.topo.Name, rows, layoutNames)...)
	}
	return report, nil
}

// scaledTopology returns topo with its nodes replaced by counts[i] nodes named
// "<dc>-<n>" in DC i; the DCs and links stay.
func scaledTopology(topo *topology.Topology, counts []int) *topology.Topology {
	scaled := *topo
	scaled.Datacenters = slices.Clone(topo.Datacenters)
	for i := range scaled.Datacenters {
		dc := &scaled.Datacenters[i]
		dc.Nodes = nil
		for j := range counts[i] {
			dc.Nodes = append(dc.Nodes, topology.Node{ID: fmt.Sprintf("%s-%d", dc.Name, j+1)})
		}
	}
	return &scaled
}

// layoutName names a layout by its nodes per DC: "tokyo 2 + saopaulo 1".
func layoutName(topo *topology.Topology) string {
	var parts []string
	for _, dc := range topo.Datacenters {
		parts = append(parts, fmt.Sprintf("%s %d", dc.Name, len(dc.Nodes)))
	}
	return strings.Join(parts, " + ")
}

// planRealLookups returns the DHT's true ring over the topology's nodes and the lookups to
// time: uniform coordinators, uniform keys.
func planRealLookups(topo *topology.Topology, lookups int, seed uint64) (*chord.Layout, []plannedRealLookup, error) {
	var peers []chord.Peer
	for _, n := range topo.Nodes() {
		peers = append(peers, chord.Peer{ID: chord.NodeID(n.ID), Name: n.ID, DC: n.DC})
	}
	layout, err := chord.NewLayout(peers)
	if err != nil {
		return nil, nil, fmt.Errorf("routing: layout of %s: %w", topo.Name, err)
	}
	rng := rand.New(rand.NewPCG(seed, 4))
	plan := make([]plannedRealLookup, lookups)
	for i := range plan {
		plan[i] = plannedRealLookup{from: peers[rng.IntN(len(peers))].Name, key: fmt.Appendf(nil, "key-%016x", rng.Uint64())}
	}
	return layout, plan, nil
}

// emulatedOneHopRow is the reference: each lookup is one request straight to the owner,
// taking the round trip measured on the emulated link between the two DCs.
func emulatedOneHopRow(ctx context.Context, topo *topology.Topology, layout *chord.Layout, plan []plannedRealLookup) (RoutingEmulatedRow, error) {
	// Links are symmetric: each pair of DCs (and each DC with itself) is probed once.
	roundTrips := map[string]map[string]time.Duration{}
	for i, from := range topo.Datacenters {
		for _, to := range topo.Datacenters[i:] {
			rtt, err := probeRoundTrip(ctx, topo, from.Name, to.Name, routingProbePings)
			if err != nil {
				return RoutingEmulatedRow{}, fmt.Errorf("probe %s -> %s: %w", from.Name, to.Name, err)
			}
			for _, pair := range [][2]string{{from.Name, to.Name}, {to.Name, from.Name}} {
				if roundTrips[pair[0]] == nil {
					roundTrips[pair[0]] = map[string]time.Duration{}
				}
				roundTrips[pair[0]][pair[1]] = rtt
			}
		}
	}
	dcOf := map[string]string{}
	for _, p := range layout.Peers() {
		dcOf[p.Name] = p.DC
	}
	measured := make([]realLookup, len(plan))
	for i, l := range plan {
		owner := layout.Owner(chord.KeyID(l.key))
		m := realLookup{correct: true, ok: true}
		if owner.Name != l.from {
			m.hops, m.latency = 1, roundTrips[dcOf[l.from]][owner.DC]
		}
		if owner.DC != dcOf[l.from] {
			m.interDC = 1
		}
		measured[i] = m
	}
	return emulatedRow("onehop", measured), nil
}

// emulatedDHTTimeout is the DHT's request timeout on an emulated topology: three of its
// longest round trips, and at least 2 s, so that neither a hop across the WAN nor a stall
// of the many nodes sharing this machine's cores is taken for a failure.
func emulatedDHTTimeout(topo *topology.Topology) time.Duration {
	longest := time.Duration(0)
	for _, from := range topo.Datacenters {
		for _, to := range topo.Datacenters {
			if spec, err := topo.Link(from.Name, to.Name); err == nil {
				longest = max(longest, spec.Latency+spec.Jitter)
			}
		}
	}
	return max(2*time.Second, 3*2*longest)
}

// runEmulatedProtocol starts the topology's nodes routing with protocol over the emulated
// WAN, waits for the ring to settle, and times the planned lookups; it tells step once
// the ring settled (settled set), then as each lookup ends (looked 1).
func runEmulatedProtocol(ctx context.Context, topo *topology.Topology, protocol string, layout *chord.Layout, plan []plannedRealLookup, step func(settled bool, looked int)) (RoutingEmulatedRow, error) {
	c, err := embedded.Start(topo, embedded.Options{
		EmulateWAN: true,
		Node: node.Config{
			Routing:           protocol,
			DHTRequestTimeout: emulatedDHTTimeout(topo),
			Logger:            slog.New(slog.DiscardHandler),
		},
	})
	if err != nil {
		return RoutingEmulatedRow{}, err
	}
	defer c.Close()
	nodes := map[string]*routing.DHT{}
	for _, n := range c.Nodes {
		nodes[n.ID()] = n.Router()
	}
	if err := settleDHT(ctx, nodes, layout); err != nil {
		return RoutingEmulatedRow{}, err
	}
	step(true, 0)
	measured := make([]realLookup, len(plan))
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for range routingEmulatedWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				mine := i
				i++
				next.Unlock()
				if mine >= len(plan) {
					return
				}
				measured[mine] = timeLookup(ctx, nodes[plan[mine].from], layout, plan[mine].key)
				step(false, 1)
			}
		}()
	}
	wg.Wait()
	return emulatedRow(protocol, measured), ctx.Err()
}

// timeLookup runs one real lookup and checks its owner against the true ring.
func timeLookup(ctx context.Context, dht *routing.DHT, layout *chord.Layout, key []byte) realLookup {
	start := time.Now()
	route, err := dht.Lookup(ctx, ring.Token(chord.KeyID(key)))
	if err != nil {
		return realLookup{}
	}
	return realLookup{
		hops: route.Hops, interDC: route.InterDCHops, latency: time.Since(start),
		correct: route.Owner == layout.Owner(chord.KeyID(key)).Name, ok: true,
	}
}

// settleDHT waits until the nodes' rings are stabilised: every node has its true
// predecessor and successor, its lookups of a sample of keys find the true owner, and the
// sample's hop counts stay the same for three rounds in a row, so fix_fingers has built
// the finger tables the timed lookups use.
func settleDHT(ctx context.Context, nodes map[string]*routing.DHT, layout *chord.Layout) error {
	const rounds, sampleKeys = 3, 8
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var keys [][]byte
	for i := range sampleKeys {
		keys = append(keys, fmt.Appendf(nil, "settle-%d", i))
	}
	var names []string
	for name := range nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	var last []int
	same := 0
	for {
		hops := make([]int, len(names)*len(keys))
		wrong := 0
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i, name := range names {
			for j, key := range keys {
				wg.Add(1)
				go func() {
					defer wg.Done()
					m := timeLookup(ctx, nodes[name], layout, key)
					mu.Lock()
					defer mu.Unlock()
					hops[i*len(keys)+j] = m.hops
					if !m.correct {
						wrong++
					}
				}()
			}
		}
		wg.Wait()
		if wrong == 0 && slices.Equal(hops, last) && ringsTrue(nodes, layout) {
			same++
		} else {
			same = 0
		}
		if same >= rounds-1 {
			return nil
		}
		last = hops
		select {
		case <-ctx.Done():
			return fmt.Errorf("ring did not settle: %d of %d sample lookups wrong: %w", wrong, len(hops), ctx.Err())
		case <-time.After(time.Second):
		}
	}
}

// ringsTrue reports whether every node's predecessor and successor on the global ring are
// the true ones.
func ringsTrue(nodes map[string]*routing.DHT, layout *chord.Layout) bool {
	peers := layout.Peers() // by identifier: the ring's order
	for i, p := range peers {
		pred, succs := nodes[p.Name].Neighbors()
		if pred != peers[(i+len(peers)-1)%len(peers)].Name || len(succs) == 0 || succs[0] != peers[(i+1)%len(peers)].Name {
			return false
		}
	}
	return true
}

// emulatedRow summarises measured lookups; a failed lookup counts as wrong and has no hops
// or latency.
func emulatedRow(protocol string, measured []realLookup) RoutingEmulatedRow {
	row := RoutingEmulatedRow{Protocol: protocol, Lookups: len(measured)}
	var hops, interDC, latencyMs []float64
	correct := 0
	for _, m := range measured {
		if m.correct {
			correct++
		}
		if !m.ok {
			continue
		}
		hops = append(hops, float64(m.hops))
		interDC = append(interDC, float64(m.interDC))
		latencyMs = append(latencyMs, milliseconds(m.latency))
		row.InterDCHopsMax = max(row.InterDCHopsMax, m.interDC)
	}
	row.CorrectFraction = float64(correct) / float64(max(1, len(measured)))
	row.HopsMean = stats.Mean(hops)
	row.HopsP99 = stats.Percentile(hops, 0.99)
	row.InterDCHopsMean = stats.Mean(interDC)
	row.LatencyMsMean = stats.Mean(latencyMs)
	row.LatencyMsP99 = stats.Percentile(latencyMs, 0.99)
	return row
}

// emulatedRoutingFigures draws bars per protocol on each layout: the mean hops of a
// lookup in one panel, its mean latency in another.
func emulatedRoutingFigures(topoName string, rows []RoutingEmulatedRow, layouts []string) []Figure {
	hops := Figure{Title: "Lookup hops, real nodes, emulated WAN (" + topoName + ")", XLabel: "nodes per DC", YLabel: "hops per lookup, mean"}
	latency := Figure{Title: "Lookup latency, real nodes, emulated WAN (" + topoName + ")", XLabel: "nodes per DC", YLabel: "latency, mean (ms)"}
	hops.Categories, latency.Categories = layouts, layouts
	var protocols []string
	for _, row := range rows {
		if !slices.Contains(protocols, row.Protocol) {
			protocols = append(protocols, row.Protocol)
		}
	}
	for _, protocol := range protocols {
		h, l := Series{Name: protocol}, Series{Name: protocol}
		for _, layout := range layouts {
			i := slices.IndexFunc(rows, func(r RoutingEmulatedRow) bool { return r.Layout == layout && r.Protocol == protocol })
			if i < 0 {
				h.Y, l.Y = append(h.Y, 0), append(l.Y, 0)
				continue
			}
			h.Y, l.Y = append(h.Y, rows[i].HopsMean), append(l.Y, rows[i].LatencyMsMean)
		}
		hops.Series, latency.Series = append(hops.Series, h), append(latency.Series, l)
	}
	return []Figure{hops, latency}
}
