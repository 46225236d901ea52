package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/base/ctxtime"
	"github.com/kuradb/kura/internal/base/stats"
	"github.com/kuradb/kura/internal/core/power"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/io/topology"
)

func init() {
	Register(Bench{
		Name:    "power",
		Summary: "paper 003: 16 real nodes, some put to sleep: power %, latency and lost writes (Exp. 1), stale clients with and without timeout suppression (Exp. 2), the power controller over a compressed day",
		Setup:   setupPower,
	})
}

// The bench's fixed layout, the paper's: 16 nodes on a LAN, three replicas of every
// object, five nodes that never sleep (tier 0), so that the ring keeps one replica of
// every range on a node that stays awake.
const (
	powerTopology    = "power-16"
	powerKeyspace    = "power"
	powerReplication = "simple=3"
	powerTier0Nodes  = 5
)

// The paper's client pacing.
const (
	exp1Period = 100 * time.Millisecond // Exp. 1: each client updates and reads one object per period
	exp2Period = 200 * time.Millisecond // Exp. 2: each client sends one request per period
)

// powerOpTimeout bounds one client request, so that a run whose requests hang ends with
// them counted as failed instead of never.
const powerOpTimeout = time.Minute

// The runs the bench knows, in the order it runs them.
const (
	runExp1       = "exp1"
	runQuorum     = "quorum"
	runExp2       = "exp2"
	runController = "controller"
)

// powerRuns lists the runs in the order they run.
var powerRuns = []string{runExp1, runQuorum, runExp2, runController}

// clientLevels declares the levels the paper's clients use on the bench's keyspace:
// they read at ONE and write at QUORUM, and a write needs no awake replica beyond what
// ONE keeps (a sleeping replica's writes go to its holder), so the sleep rule keeps one
// awake replica per range, as the paper's placement does. The quorum run declares
// QUORUM instead (quorumLevels).
var clientLevels = power.Levels{powerKeyspace: {consistency.One}}

// quorumLevels declares the quorum run's levels: its clients read and write at QUORUM.
var quorumLevels = power.Levels{powerKeyspace: {consistency.Quorum}}

// Variants of Exp. 2, as they appear in the rows.
const (
	exp2Suppression = "exp2-suppression"
	exp2NoControl   = "exp2-no-control"
)

// powerOptions are the bench's flags.
type powerOptions struct {
	runs                 []string
	objects              int
	valueBytes           int
	clients              int
	interval             time.Duration
	sleepers             int
	bucket               time.Duration
	profile              string
	requests             int
	sleepAt              time.Duration
	attemptTimeout       time.Duration
	day                  time.Duration
	peakOpsPerSecond     float64
	troughPct            float64
	capacityOpsPerSecond float64
	latencyTarget        time.Duration
	controllerProfile    string
	controllerValueBytes int
	gossipInterval       time.Duration
	dataDir              string
	tracePrefix          string
	traceOver            time.Duration
	quick                bool
	// slow is the tracer runPower starts when --trace asks for one; nil otherwise.
	slow *slowTracer
}

// quickSettings are the values --quick gives the flags not set explicitly: a smoke run
// of every experiment in about two minutes.
var quickSettings = map[string]string{
	"objects":                "48",
	"interval":               "6s",
	"bucket":                 "2s",
	"profile":                "s1",
	"requests":               "120",
	"sleep-at":               "3s",
	"attempt-timeout":        "1s",
	"day":                    "40s",
	"peak-ops":               "80",
	"controller-value-bytes": "256",
	"gossip-interval":        "250ms",
}

func setupPower(fs *flag.FlagSet) Runner {
	o := &powerOptions{}
	runs := fs.String("runs", strings.Join(powerRuns, ","), "which runs, comma-separated: "+strings.Join(powerRuns, ", ")+" (quorum: exp1 with clients reading and writing at QUORUM)")
	fs.IntVar(&o.objects, "objects", 1200, "objects loaded (the paper: 12,000; see scale)")
	fs.IntVar(&o.valueBytes, "value-bytes", 64<<10, "size of an object in Exp. 1 and 2 (the paper: 64 KB)")
	fs.IntVar(&o.clients, "clients", 4, "clients of Exp. 1 and 2 (the paper: 4)")
	fs.DurationVar(&o.interval, "interval", 30*time.Second, "Exp. 1: time between two sleeps, and before the first (the paper: 3 min)")
	fs.IntVar(&o.sleepers, "sleepers", 3, "Exp. 1: nodes put to sleep one by one (the paper: 3)")
	fs.DurationVar(&o.bucket, "bucket", 5*time.Second, "Exp. 1: length of a row of the timeline")
	fs.StringVar(&o.profile, "profile", "s4", "energy profile of Exp. 1 and 2: s4 (hibernate: 1.65 W asleep, 18 s to enter) or s1 (122 W, 2 s)")
	fs.IntVar(&o.requests, "requests", 1600, "Exp. 2: requests in all, shared by the clients (the paper: 1,600)")
	fs.DurationVar(&o.sleepAt, "sleep-at", 30*time.Second, "Exp. 2: when a node is put to sleep (the paper: 30 s)")
	fs.DurationVar(&o.attemptTimeout, "attempt-timeout", 3*time.Second, "what one attempt at a node that does not answer costs a client before it tries the next (stands for the TCP timeout)")
	fs.DurationVar(&o.day, "day", 2*time.Minute, "controller run: how long the 24 hours of the load curve last")
	fs.Float64Var(&o.peakOpsPerSecond, "peak-ops", 300, "controller run: the load at the peak of the day, requests per second")
	fs.Float64Var(&o.troughPct, "trough-pct", 10, "controller run: the load at the trough of the day, % of the peak")
	fs.Float64Var(&o.capacityOpsPerSecond, "capacity-ops", 0, "controller run: what one node serves within the latency target, requests per second, as the controller is told (0: the peak needs 60 % of the 16 nodes' capacity)")
	fs.DurationVar(&o.latencyTarget, "latency-target", 100*time.Millisecond, "controller run: the latency the controller keeps (its p99), and the one requests are counted against")
	fs.StringVar(&o.controllerProfile, "controller-profile", "s1", "controller run: energy profile (s1 fits a compressed day; s4's 18 s to enter needs a --day of tens of minutes)")
	fs.IntVar(&o.controllerValueBytes, "controller-value-bytes", 1024, "controller run: size of an object")
	fs.DurationVar(&o.gossipInterval, "gossip-interval", 0, "every node's gossip round; a sleep and a wake each wait a ring delay of five rounds (0: the node's default, 1 s)")
	fs.StringVar(&o.dataDir, "data-dir", "", "each run's nodes keep their storage in a new directory under this one, removed after the run (e.g. /dev/shm: in memory, outside the bench's Go heap); empty: Pebble's in-memory files, inside the bench process's Go heap")
	fs.StringVar(&o.tracePrefix, "trace", "", "keep the Go execution trace of the last 2 s in a flight recorder, and write it to PREFIX.N.trace after each client request slower than --trace-over (at most 100 files; read them with go tool trace); the summary lists every request over it with the wait of the process's threads for a CPU meanwhile")
	fs.DurationVar(&o.traceOver, "trace-over", 50*time.Millisecond, "with --trace: the latency above which a request's trace is written")
	fs.BoolVar(&o.quick, "quick", false, "a smoke run in about two minutes: small values for every flag not set explicitly")
	return func(ctx context.Context, env Env) (*Report, error) {
		if o.quick {
			if err := applyQuick(fs, quickSettings); err != nil {
				return nil, err
			}
		}
		o.runs = nil
		for _, r := range strings.Split(*runs, ",") {
			r = strings.TrimSpace(r)
			if !slices.Contains(powerRuns, r) {
				return nil, fmt.Errorf("--runs %q: want %s, comma-separated", *runs, strings.Join(powerRuns, ", "))
			}
			o.runs = append(o.runs, r)
		}
		if err := o.validate(); err != nil {
			return nil, err
		}
		return runPower(ctx, env, *o)
	}
}

// applyQuick gives the flags not set on the command line the values of a bench's --quick.
func applyQuick(fs *flag.FlagSet, settings map[string]string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, value := range settings {
		if !set[name] {
			if err := fs.Set(name, value); err != nil {
				return fmt.Errorf("--quick: %w", err)
			}
		}
	}
	return nil
}

func (o powerOptions) validate() error {
	for _, name := range []string{o.profile, o.controllerProfile} {
		if _, err := power.ProfileByName(name); err != nil {
			return err
		}
	}
	switch {
	case o.objects < 1 || o.valueBytes < objectHeaderBytes || o.controllerValueBytes < objectHeaderBytes || o.clients < 1:
		return fmt.Errorf("--objects and --clients must be positive, --value-bytes and --controller-value-bytes at least %d", objectHeaderBytes)
	case o.sleepers < 1 || o.sleepers > topologyNodes-powerTier0Nodes:
		return fmt.Errorf("--sleepers must be between 1 and %d (the nodes of tier 1)", topologyNodes-powerTier0Nodes)
	case o.interval <= 0 || o.bucket <= 0 || o.attemptTimeout <= 0 || o.day <= 0 || o.latencyTarget <= 0 || o.gossipInterval < 0 || o.traceOver <= 0:
		return errors.New("--interval, --bucket, --attempt-timeout, --day, --latency-target and --trace-over must be positive")
	case o.requests < o.clients:
		return errors.New("--requests must be at least --clients")
	case o.sleepAt <= 0 || o.sleepAt >= time.Duration(o.requests/o.clients)*exp2Period:
		return fmt.Errorf("--sleep-at must fall within Exp. 2's %v of requests (--requests / --clients x %v)", time.Duration(o.requests/o.clients)*exp2Period, exp2Period)
	case !(o.peakOpsPerSecond > 0) || !(o.troughPct > 0 && o.troughPct <= 100) || o.capacityOpsPerSecond < 0:
		return errors.New("--peak-ops must be positive, --trough-pct in (0, 100], --capacity-ops not negative")
	}
	return nil
}

// topologyNodes is the size of the power-16 topology.
const topologyNodes = 16

// capacity is what the controller is told one node serves: given, or such that the peak
// takes 60 % of the cluster's capacity, which leaves the controller's band (sleep below
// 40 % of the awake nodes' capacity, wake above 70 %) room to act over the day.
func (o powerOptions) capacity() float64 {
	if o.capacityOpsPerSecond > 0 {
		return o.capacityOpsPerSecond
	}
	return o.peakOpsPerSecond / (topologyNodes * 0.6)
}

// PowerRow is one window of a run: a bucket of Exp. 1's or the controller's timeline, or
// the part of an Exp. 2 variant before or after its node sleeps.
type PowerRow struct {
	Run string `json:"run" table:"group"`
	// FromS is when the window starts, seconds into the run; it ends where the run's
	// next row starts, the last at the run's end (run_s or total_s in the summary).
	FromS float64 `json:"from_s"`
	// toS is when the window ends, for the figure: the table has no room for it.
	toS float64
	// Asleep is how many nodes were asleep at the window's end.
	Asleep int `json:"asleep"`
	// LoadPct is the controller run's offered load, % of the peak.
	LoadPct *float64 `json:"load_pct,omitempty"`
	// PowerPct is the cluster's modelled energy over the window (every node's meter)
	// over what all its nodes awake would have drawn at the same measured utilization.
	PowerPct      float64 `json:"power_pct"`
	Ops           int     `json:"ops"`
	LatencyMsMean float64 `json:"latency_ms_mean"`
	LatencyMsMax  float64 `json:"latency_ms_max"`
	Failed        int     `json:"failed"`
	// Timeouts counts requests that waited at least one attempt timeout.
	Timeouts int `json:"timeouts"`
	// GCCPUPct, GCPauseMsMax, GoSchedWaitMsMax and HeapLiveMB break the window's latency
	// down by what the nodes and clients of this one process share: the Go collector's
	// share of its CPU, its longest stop-the-world pause, the longest a goroutine ready
	// to run waited for a CPU, and the live heap (runtimeBreakdown).
	// They are in the JSON and the progress lines: the table has no room for them.
	GCCPUPct         float64 `json:"gc_cpu_pct" table:"-"`
	GCPauseMsMax     float64 `json:"gc_pause_ms_max" table:"-"`
	GoSchedWaitMsMax float64 `json:"go_sched_wait_ms_max" table:"-"`
	HeapLiveMB       float64 `json:"heap_live_mb" table:"-"`
	// OSRunWaitMsMax is what the Go runtime cannot see: the most the process's threads
	// waited, summed, for a CPU of the operating system within one sampler tick
	// (samplerTick) of the window, while other processes, or more threads than cores,
	// held the CPUs (osRunWait; 0 where the system does not say).
	OSRunWaitMsMax float64 `json:"os_run_wait_ms_max" table:"-"`
	// Events are the power transitions seen in the window, and the bench's own steps.
	Events string `json:"events"`
}

func runPower(ctx context.Context, env Env, o powerOptions) (*Report, error) {
	topo, err := topology.Example(powerTopology)
	if err != nil {
		return nil, err
	}
	var rows []PowerRow
	summary := map[string]any{}
	var exp1, controller *runResult
	// The runs keep to schedules: each is measured by its planned length.
	planned := map[string]time.Duration{
		runExp1:       o.bucket + time.Duration(o.sleepers+2)*o.interval,
		runQuorum:     o.bucket + time.Duration(o.sleepers+2)*o.interval,
		runExp2:       2 * time.Duration(o.requests/max(1, o.clients)) * exp2Period,
		runController: o.day,
	}
	total := time.Duration(0)
	for _, run := range o.runs {
		total += planned[run]
	}
	progress := env.StartProgress("power", total.Seconds())
	defer progress.Done()
	if o.tracePrefix != "" {
		if o.slow, err = startSlowTracer(o.tracePrefix, o.traceOver, env.Progressf); err != nil {
			return nil, err
		}
		defer o.slow.stop()
	}
	for _, run := range o.runs {
		progress.Add(0, "%s: running, about %v planned", run, planned[run])
		switch run {
		case runExp1, runQuorum:
			variant := exp1Variant{name: runExp1, read: consistency.One, levels: clientLevels}
			if run == runQuorum {
				variant = exp1Variant{name: runQuorum, read: consistency.Quorum, levels: quorumLevels}
			}
			r, err := runExp1Sleeps(ctx, env, topo, o, variant)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", run, err)
			}
			if run == runExp1 {
				exp1 = r
			}
			rows = append(rows, r.rows...)
			summary[run] = r.summary
		case runExp2:
			variants := map[string]any{}
			for _, noControl := range []bool{false, true} {
				r, err := runExp2StaleClients(ctx, env, topo, o, noControl)
				if err != nil {
					return nil, fmt.Errorf("exp2: %w", err)
				}
				rows = append(rows, r.rows...)
				variants[r.name] = r.summary
			}
			summary[runExp2] = variants
		case runController:
			r, err := runControllerDay(ctx, env, topo, o)
			if err != nil {
				return nil, fmt.Errorf("controller: %w", err)
			}
			controller = r
			rows = append(rows, r.rows...)
			summary[runController] = r.summary
		}
		progress.Add(planned[run].Seconds(), "%s: done", run)
	}
	if o.slow != nil {
		summary["slow_requests"] = o.slow.slowRequests()
	}
	return &Report{
		Bench:   "power",
		Scale:   powerScale(o),
		Rows:    rows,
		Summary: summary,
		Notes:   powerNotes(o),
		Plot: func(path string) error {
			figures := powerFigures(exp1, controller)
			if len(figures) == 0 {
				return errors.New("no run with a timeline (exp1 or controller) ran")
			}
			return SavePanels(path, 2, figures...)
		},
	}, nil
}

func powerScale(o powerOptions) string {
	enter := func(name string) time.Duration { p, _ := power.ProfileByName(name); return p.Enter }
	storage := "Pebble's in-memory files, in the process's Go heap"
	if o.dataDir != "" {
		storage = "Pebble on disk under " + o.dataDir
	}
	return fmt.Sprintf("16 real nodes in one process (topology %s: one DC, 0.05 ms one-way, 1 Gbps, emulated), keyspace %s, %d tier-0 nodes that never sleep, gossip %s, storage: %s; %d cores shared by every node and client. "+
		"Exp. 1: %d objects of %d bytes (the paper: 12,000 of 64 KB, 2.3 GB with its replicas, scaled down so that the load fits this machine's memory and loads in seconds), %d clients each updating (QUORUM) and reading (ONE; QUORUM in the quorum run) a random object every %v (the timeline starts after a row's length of load, a warm-up), "+
		"%d nodes put to sleep %v apart (the paper: 3 nodes, 3 min apart), profile %s (%v to enter sleep), rows of %v. "+
		"Exp. 2: %d requests from %d clients, one per %v each, a node put to sleep at %v (the paper: 1,600 requests, 30 s), an attempt at a node that does not answer costs %v (the paper: TCP timeouts of seconds to tens of seconds). "+
		"Controller: 24 hours of load in %v, %.0f %% to 100 %% of %.0f requests/s, %d-byte objects, profile %s (%v to enter sleep), %.1f requests/s per node of capacity, latency target %v",
		powerTopology, powerReplication, powerTier0Nodes, orDefault(o.gossipInterval, "1s (default)"), storage, runtime.NumCPU(),
		o.objects, o.valueBytes, o.clients, exp1Period,
		o.sleepers, o.interval, o.profile, enter(o.profile), o.bucket,
		o.requests, o.clients, exp2Period, o.sleepAt, o.attemptTimeout,
		o.day, o.troughPct, o.peakOpsPerSecond, o.controllerValueBytes, o.controllerProfile, enter(o.controllerProfile), o.capacity(), o.latencyTarget)
}

func orDefault(d time.Duration, def string) string {
	if d == 0 {
		return def
	}
	return d.String()
}

func powerNotes(o powerOptions) []string {
	return []string{
		"power_pct = the sum of every node's modelled energy over the window (node.Energy: awake between 137 W idle and 182 W busy in proportion to the node's measured utilization, asleep per profile, the awake draw while a node enters sleep or wakes) / what the 16 nodes awake would have drawn at the same utilization (16 x 137 W + 45 W x the utilizations summed, over the window); ideal_pct for k asleep = (16 - k + k x asleep W / 137 W) / 16, the paper's ideal, which leaves out the load's draw",
		"utilization: every second the process's CPU time (user and system: the 16 nodes and the bench's clients, which share it) is split over the nodes in proportion to the requests each served (client requests it coordinated and requests from other nodes), over the cores one node has when they are shared evenly (cores / 16); energy_kind says whether RAPL counters measured the machine beside the model",
		"the paper's figures: Exp. 1 power 82.9 % measured at the wall with 3 of 16 asleep (ideal 81.5 %), max latency < 100 ms; Exp. 2 ~80 s and no timeouts with suppression, > 300 s without",
		fmt.Sprintf("timeouts counts requests that took at least --attempt-timeout (%v): they waited on a node that did not answer before the client moved on", o.attemptTimeout),
		"writes_lost: every object is read back at QUORUM; lost when the read finds no value or one older than the newest write acknowledged before the read began; exp1 checks with the nodes asleep and again after they woke",
		"no-control: sleeping nodes freeze like stopped processes (node.Config.NoTimeoutSuppression); suppression: a neighbour answers on their addresses with a redirect at once",
		"exp2 clients (client.Options.StaticNodes) load the node list once and never refresh it; each request goes where the client's routing sends it first (a replica of the key), which spreads the requests over the 16 nodes as round-robin would; paced_s = (requests per client - 1) x 200 ms, what the pacing alone takes",
		"the controller wakes a node through its HTTP admin port, which the bench's nodes serve; the load pauses while exp1 reads every object back, so that the check's reads weigh on no request's latency",
		"exp1 clients write at QUORUM and read at ONE, and the cluster declares ONE for the keyspace (--power-levels power=ONE), as do exp2's and the controller's; the checks read at QUORUM: a range with two of its three replicas asleep (ranges_one_replica_awake) has a single awake replica, too few for QUORUM, so its objects count as unreadable (not lost) in check_asleep",
		"the latency breakdown of each row (the JSON's gc_cpu_pct, gc_pause_ms_max, go_sched_wait_ms_max, heap_live_mb): the 16 nodes and the clients share one process, so its Go collector and its CPUs are every request's; go_sched_wait_ms_max is the longest a goroutine ready to run waited for a CPU in the row, gc_pause_ms_max the collector's longest stop-the-world pause (each the upper bound of a runtime histogram's bucket)",
		"quorum: exp1 with clients reading and writing at QUORUM and the cluster declaring QUORUM (power=QUORUM): each sleep asks the tier-1 nodes in turn until one accepts; a node whose sleep would leave a range with one awake replica refuses (sleeps_refused, refusals), so asleep may be fewer than sleeps_asked, and no request may fail",
	}
}

// runResult is what one run adds to the report.
type runResult struct {
	name    string
	rows    []PowerRow
	summary map[string]any
	ideal   func(asleep int) float64 // exp1's ideal power, % of full, for the figure
	target  time.Duration            // the controller's latency target, for the figure
}

// powerCluster is one embedded cluster of the bench, with what the runs need of it.
type powerCluster struct {
	*embedded.Cluster
	dataDir string // the nodes' storage, removed by Close; empty when in memory
	profile power.Profile
	tier1   []*node.Node // the nodes that may sleep, in topology order
	addrs   []string     // every node's client address
}

// startPowerCluster starts the power-16 cluster with the WAN emulated, the client API on,
// powerTier0Nodes nodes of tier 0 spread over the topology and the others of tier 1, and
// the bench's keyspace, declared used at clientLevels unless configure says otherwise.
func startPowerCluster(ctx context.Context, env Env, topo *topology.Topology, o powerOptions, profile string, configure func(*node.Config)) (*powerCluster, error) {
	p, err := power.ProfileByName(profile)
	if err != nil {
		return nil, err
	}
	cfg := node.Config{GossipInterval: o.gossipInterval, PowerProfile: profile, DefaultReplication: node.NoDefaultKeyspace,
		PowerLevels: clientLevels}
	if configure != nil {
		configure(&cfg)
	}
	var dataDir string
	if o.dataDir != "" {
		if dataDir, err = os.MkdirTemp(o.dataDir, "kura-power-"); err != nil {
			return nil, fmt.Errorf("--data-dir: %w", err)
		}
	}
	start := time.Now()
	c, err := embedded.Start(topo, embedded.Options{
		DataDir:    dataDir,
		ClientAPI:  true,
		EmulateWAN: true,
		// A sleeping node is woken through its HTTP admin port, which stays up while it
		// sleeps (kura power wake, and the controller's wakes).
		HTTP: true,
		Node: cfg,
		PowerTier: func(index int, _ topology.NodeInDC) int {
			return tierOf(index, len(topo.Nodes()))
		},
	})
	if err != nil {
		os.RemoveAll(dataDir)
		return nil, err
	}
	pc := &powerCluster{Cluster: c, dataDir: dataDir, profile: p}
	for i, n := range c.Nodes {
		if tierOf(i, len(c.Nodes)) > 0 {
			pc.tier1 = append(pc.tier1, n)
		}
		pc.addrs = append(pc.addrs, n.ClientAddr())
	}
	if err := c.CreateKeyspace(ctx, schema.Keyspace{Name: powerKeyspace, Replication: powerReplication}); err != nil {
		pc.Close()
		return nil, err
	}
	convCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := c.WaitConverged(convCtx); err != nil {
		pc.Close()
		return nil, err
	}
	env.Progressf("power: %d nodes up in %.1f s (%d of tier 1), profile %s", len(c.Nodes), time.Since(start).Seconds(), len(pc.tier1), p.Name)
	return pc, nil
}

// Close stops the nodes and removes their storage.
func (pc *powerCluster) Close() error {
	err := pc.Cluster.Close()
	if pc.dataDir != "" {
		err = errors.Join(err, os.RemoveAll(pc.dataDir))
	}
	return err
}

// tierOf spreads powerTier0Nodes nodes of tier 0 evenly over n nodes in topology order:
// node i is of tier 0 when i × powerTier0Nodes mod n < powerTier0Nodes (for 16 nodes:
// the 1st, 5th, 8th, 11th and 14th).
func tierOf(i, n int) int {
	if i*powerTier0Nodes%n < powerTier0Nodes {
		return 0
	}
	return 1
}

// spread picks k of nodes, evenly spaced.
func spread(nodes []*node.Node, k int) []*node.Node {
	out := make([]*node.Node, 0, k)
	for j := range k {
		out = append(out, nodes[j*len(nodes)/k])
	}
	return out
}

// dialClients connects n clients, each given every node's address; client i's list
// starts i/n of the way round, so that clients that dial through the first address they
// are given do not all start at one node.
func (pc *powerCluster) dialClients(ctx context.Context, n int, opts client.Options) ([]*client.Client, error) {
	var clients []*client.Client
	for i := range n {
		k := i * len(pc.addrs) / n
		addrs := append(append([]string(nil), pc.addrs[k:]...), pc.addrs[:k]...)
		c, err := client.Dial(ctx, addrs, opts)
		if err != nil {
			closeClients(clients)
			return nil, err
		}
		clients = append(clients, c)
	}
	return clients, nil
}

// loadAndDial loads the run's objects at ALL, then dials its clients and one more, the
// checker that reads every object back at the end.
func (pc *powerCluster) loadAndDial(ctx context.Context, env Env, run string, o powerOptions, opts client.Options) (objs *objects, clients []*client.Client, checker *client.Client, err error) {
	objs = newObjects(o.objects, o.valueBytes)
	loadStart := time.Now()
	if err := objs.load(ctx, pc.Nodes); err != nil {
		return nil, nil, nil, err
	}
	env.Progressf("%s: %d objects of %d bytes loaded at ALL in %.1f s", run, o.objects, o.valueBytes, time.Since(loadStart).Seconds())
	all, err := pc.dialClients(ctx, o.clients+1, opts)
	if err != nil {
		return nil, nil, nil, err
	}
	return objs, all[:o.clients], all[o.clients], nil
}

func closeClients(clients []*client.Client) {
	for _, c := range clients {
		c.Close()
	}
}

// rangesShort counts the ranges of the bench's keyspace, and those with more than one
// replica among asleep: while those nodes sleep such a range has one awake replica, too
// few for a QUORUM read.
func (pc *powerCluster) rangesShort(asleep []*node.Node) (ranges, short int, err error) {
	ks, err := schema.Keyspace{Name: powerKeyspace, Replication: powerReplication}.Compile()
	if err != nil {
		return 0, 0, err
	}
	r, err := pc.Nodes[0].Ring()
	if err != nil {
		return 0, 0, err
	}
	sets := power.SetsOf(r.Placement(ks.Strategy()))
	for _, set := range sets {
		k := 0
		for _, n := range asleep {
			if slices.Contains(set, n.ID()) {
				k++
			}
		}
		if k > 1 {
			short++
		}
	}
	return len(sets), short, nil
}

// fullWatts is what the cluster draws with every node awake.
func (pc *powerCluster) fullWatts() float64 { return pc.profile.ActiveWatts * float64(len(pc.Nodes)) }

// idealPct is the power of the cluster with k nodes asleep (past their enter time), % of
// full.
func idealPct(p power.Profile, nodes, k int) float64 {
	return 100 * (float64(nodes-k)*p.ActiveWatts + float64(k)*p.SleepWatts) / (float64(nodes) * p.ActiveWatts)
}

// ---- objects and their newest acknowledged writes

// objectHeaderBytes is the part of an object's value that names it: its index, the
// writer and the writer's sequence number.
const objectHeaderBytes = 24

// objects are the bench's objects and, for each, the timestamp of its newest write that
// a client saw acknowledged.
type objects struct {
	valueBytes int
	mu         sync.Mutex
	acked      []hlc.Timestamp
}

func newObjects(n, valueBytes int) *objects {
	return &objects{valueBytes: valueBytes, acked: make([]hlc.Timestamp, n)}
}

func (o *objects) count() int { return len(o.acked) }

func objectKey(i int) []byte { return fmt.Appendf(nil, "object-%06d", i) }

// value returns a value of object i written by writer as its seq-th write: the header,
// then filler.
func (o *objects) value(i int, writer, seq uint64) []byte {
	v := make([]byte, o.valueBytes)
	binary.BigEndian.PutUint64(v[0:], uint64(i))
	binary.BigEndian.PutUint64(v[8:], writer)
	binary.BigEndian.PutUint64(v[16:], seq)
	for j := objectHeaderBytes; j < len(v); j++ {
		v[j] = byte(j)
	}
	return v
}

// belongs reports whether value is one of object i's.
func belongs(value []byte, i int) bool {
	return len(value) >= objectHeaderBytes && binary.BigEndian.Uint64(value) == uint64(i)
}

// ack records that a write of object i with timestamp ts was acknowledged.
func (o *objects) ack(i int, ts hlc.Timestamp) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.acked[i] = max(o.acked[i], ts)
}

// newest returns the timestamp of object i's newest acknowledged write.
func (o *objects) newest(i int) hlc.Timestamp {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.acked[i]
}

// load writes every object once at ALL, through the nodes' coordinators, a few at a
// time.
func (o *objects) load(ctx context.Context, nodes []*node.Node) error {
	const workers = 8
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= o.count() || ctx.Err() != nil {
					return
				}
				co := nodes[(i+w)%len(nodes)].Coordinator()
				ts, err := co.Put(ctx, powerKeyspace, objectKey(i), o.value(i, 0, 0), 0, consistency.All)
				if err != nil {
					errs <- fmt.Errorf("load object %d: %w", i, err)
					return
				}
				o.ack(i, ts)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return errors.Join(<-errs, ctx.Err())
}

// checkResult is what a read-back of every object found.
type checkResult struct {
	Objects    int `json:"objects"`
	Lost       int `json:"writes_lost"`
	Unreadable int `json:"unreadable"`
	// Error is the last error of an unreadable object, for the reader to see why.
	Error string `json:"error,omitempty"`
}

// check reads every object back at QUORUM and counts those whose newest write
// acknowledged before the read began is missing. An object no read could fetch (after a
// few tries) counts as unreadable, not lost: the check could not tell.
func (o *objects) check(ctx context.Context, c *client.Client) (checkResult, error) {
	const workers, tries = 8, 3
	var lost, unreadable, next atomic.Int64
	var lastErr atomic.Value
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= o.count() || ctx.Err() != nil {
					return
				}
				want := o.newest(i)
				var err error
				for range tries {
					var item client.Item
					var found bool
					rctx, cancel := context.WithTimeout(ctx, powerOpTimeout)
					item, found, err = c.Get(rctx, powerKeyspace, objectKey(i), consistency.Quorum)
					cancel()
					if err != nil {
						continue
					}
					if !found || item.Timestamp < want || !belongs(item.Value, i) {
						lost.Add(1)
					}
					break
				}
				if err != nil {
					unreadable.Add(1)
					lastErr.Store(fmt.Sprintf("object %d: %v", i, err))
				}
			}
		}()
	}
	wg.Wait()
	res := checkResult{Objects: o.count(), Lost: int(lost.Load()), Unreadable: int(unreadable.Load())}
	res.Error, _ = lastErr.Load().(string)
	return res, ctx.Err()
}

// ---- what the clients saw

// opRecord is one client request.
type opRecord struct {
	at      time.Time // when it was sent
	latency time.Duration
	write   bool
	failed  bool
}

// opLog keeps every request of a run.
type opLog struct {
	// slow traces the requests; nil without --trace.
	slow *slowTracer
	mu   sync.Mutex
	ops  []opRecord
}

func (l *opLog) add(r opRecord) {
	l.mu.Lock()
	l.ops = append(l.ops, r)
	l.mu.Unlock()
}

// between returns the requests sent in [from, to).
func (l *opLog) between(from, to time.Time) []opRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []opRecord
	for _, r := range l.ops {
		if !r.at.Before(from) && r.at.Before(to) {
			out = append(out, r)
		}
	}
	return out
}

// opStats summarises requests.
type opStats struct {
	ops, failed, timeouts, overTarget int
	writesFailed, readsFailed         int
	meanMs, maxMs, p99Ms              float64
}

func summarise(ops []opRecord, attemptTimeout, target time.Duration) opStats {
	var s opStats
	var ms []float64
	for _, r := range ops {
		s.ops++
		if r.latency >= attemptTimeout {
			s.timeouts++
		}
		if target > 0 && r.latency > target {
			s.overTarget++
		}
		if r.failed {
			s.failed++
			if r.write {
				s.writesFailed++
			} else {
				s.readsFailed++
			}
			continue
		}
		ms = append(ms, float64(r.latency)/float64(time.Millisecond))
	}
	s.meanMs, s.maxMs, s.p99Ms = round(stats.Mean(ms), 2), pct(ms, 1), pct(ms, 0.99)
	return s
}

// update writes a new value of object i at QUORUM and records it.
func update(ctx context.Context, c *client.Client, objs *objects, log *opLog, i int, writer, seq uint64) {
	tctx, traced := log.slow.request(ctx, "update")
	start := time.Now()
	rctx, cancel := context.WithTimeout(tctx, powerOpTimeout)
	ts, err := c.Put(rctx, powerKeyspace, objectKey(i), objs.value(i, writer, seq), consistency.Quorum)
	cancel()
	latency := time.Since(start)
	traced(latency)
	log.add(opRecord{at: start, latency: latency, write: true, failed: err != nil})
	if err == nil {
		objs.ack(i, ts)
	}
}

// read reads object i at level and records it; a read that finds no value of the object
// failed (every object was loaded).
func read(ctx context.Context, c *client.Client, log *opLog, i int, level consistency.Level) {
	tctx, traced := log.slow.request(ctx, "read")
	start := time.Now()
	rctx, cancel := context.WithTimeout(tctx, powerOpTimeout)
	item, found, err := c.Get(rctx, powerKeyspace, objectKey(i), level)
	cancel()
	latency := time.Since(start)
	traced(latency)
	log.add(opRecord{at: start, latency: latency, failed: err != nil || !found || !belongs(item.Value, i)})
}

// paced calls step every period until step returns false or stop closes; a step that
// overruns its period is followed at once by the next, without a burst to catch up.
func paced(ctx context.Context, stop <-chan struct{}, period time.Duration, step func(seq uint64) bool) {
	next := time.Now()
	for seq := uint64(0); ; seq++ {
		timer := time.NewTimer(time.Until(next))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-stop:
			timer.Stop()
			return
		case <-timer.C:
		}
		if !step(seq) {
			return
		}
		next = next.Add(period)
		if now := time.Now(); next.Before(now) {
			next = now
		}
	}
}

// ---- the cluster's power over time

// powerSample is the cluster at one moment: its energy so far and its nodes' states.
type powerSample struct {
	at     time.Time
	joules float64
	// allAwakeJoules is what every node awake would have drawn so far at the same
	// measured utilization: the reference power_pct is taken against.
	allAwakeJoules float64
	// raplJoules is the machine's energy so far as its RAPL counters measured it; 0
	// without them.
	raplJoules float64
	states     []power.State
	runtime    runtimeSample // the bench process's, shared by every node and client
}

func (s powerSample) asleep() int {
	k := 0
	for _, st := range s.states {
		if st == power.Asleep {
			k++
		}
	}
	return k
}

// sampler reads every node's meter and state at a steady pace, and keeps the bench's
// own events.
type sampler struct {
	pc     *powerCluster
	ids    []string
	stop   chan struct{}
	done   chan struct{}
	finish func() // stops the sampler after a last sample; safe to call again
	load   *loadSplit
	rapl   *raplMeter // nil without RAPL counters

	mu          sync.Mutex
	samples     []powerSample
	events      []event
	utilization float64   // the nodes' utilizations summed, as last set
	measured    time.Time // when the utilizations were last set
}

// event is something that happened at a moment: a power transition seen, or a step of
// the bench.
type event struct {
	at   time.Time
	text string
}

// samplerTick is how often the sampler reads the meters: the meters integrate exactly, so
// the tick only sets how closely a window's ends are matched, and how soon a transition
// is seen.
const samplerTick = 250 * time.Millisecond

func startSampler(pc *powerCluster) *sampler {
	s := &sampler{pc: pc, stop: make(chan struct{}), done: make(chan struct{}), load: newLoadSplit(pc.Nodes), rapl: newRAPLMeter(powercapRoot)}
	s.finish = sync.OnceFunc(func() {
		close(s.stop)
		<-s.done
	})
	for _, n := range pc.Nodes {
		s.ids = append(s.ids, n.ID())
	}
	s.sample()
	go func() {
		defer close(s.done)
		t := time.NewTicker(samplerTick)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				s.sample()
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *sampler) sample() {
	now := time.Now()
	cur := powerSample{at: now, states: make([]power.State, len(s.pc.Nodes))}
	for i, n := range s.pc.Nodes {
		_, j := n.Energy(now)
		cur.joules += j
		cur.states[i] = n.Power()
	}
	if s.rapl != nil {
		cur.raplJoules = s.rapl.read()
	}
	cur.runtime = readRuntime()
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := len(s.samples); k > 0 {
		prev := s.samples[k-1]
		s.events = append(s.events, transitions(s.ids, prev, cur)...)
		// Every node awake, at the utilizations in force since the last sample: each
		// draws its idle watts, and the work adds the same dynamic draw wherever it runs.
		p := s.pc.profile
		watts := p.ActiveWatts*float64(len(s.pc.Nodes)) + (p.PeakWatts-p.ActiveWatts)*s.utilization
		cur.allAwakeJoules = prev.allAwakeJoules + watts*now.Sub(prev.at).Seconds()
	}
	s.samples = append(s.samples, cur)
	if now.Sub(s.measured) >= utilizationTick {
		s.utilization, s.measured = s.load.step(now), now
	}
}

// utilizationTick is how often the sampler measures the nodes' utilizations and sets
// them: often enough to follow the load, seldom enough that the gossip of each
// node's utilization stays light.
const utilizationTick = time.Second

// loadSplit measures the utilization of nodes that share this process. The process's CPU
// time (user and system, its every thread: the nodes' and the bench's clients') is
// split over the nodes in proportion to the requests each served (node.Served), and a
// node's utilization is its share over the cores one node has when the machine's are
// shared evenly: cores / nodes, as if each node ran on its own small machine.
type loadSplit struct {
	nodes  []*node.Node
	at     time.Time
	cpu    time.Duration
	served []uint64
}

func newLoadSplit(nodes []*node.Node) *loadSplit {
	l := &loadSplit{nodes: nodes, served: make([]uint64, len(nodes))}
	l.at, l.cpu = time.Now(), ownCPU()
	for i, n := range nodes {
		l.served[i] = n.Served()
	}
	return l
}

// step measures the time since the last step, sets every node's utilization from now
// on, and returns their sum.
func (l *loadSplit) step(now time.Time) float64 {
	cpu := ownCPU()
	served := make([]uint64, len(l.nodes))
	for i, n := range l.nodes {
		served[i] = n.Served()
	}
	deltas := make([]uint64, len(served))
	for i := range served {
		deltas[i] = served[i] - l.served[i]
	}
	sum := 0.0
	for i, u := range splitUtilization(cpu-l.cpu, now.Sub(l.at), float64(runtime.NumCPU()), deltas) {
		l.nodes[i].SetUtilization(now, u)
		sum += u
	}
	l.at, l.cpu, l.served = now, cpu, served
	return sum
}

// splitUtilization gives each of len(served) nodes sharing cores its utilization over
// wall: its share of cpu, in proportion to the requests it served, over cores /
// len(served). With no request served, the CPU time is split evenly.
func splitUtilization(cpu, wall time.Duration, cores float64, served []uint64) []float64 {
	var total uint64
	for _, n := range served {
		total += n
	}
	out := make([]float64, len(served))
	for i, n := range served {
		share := 1 / float64(len(served))
		if total > 0 {
			share = float64(n) / float64(total)
		}
		out[i] = power.Utilization(time.Duration(share*float64(cpu)), wall, cores/float64(len(served)))
	}
	return out
}

// raplMeter reads the machine's energy from its RAPL counters (Linux powercap,
// /sys/class/powercap/intel-rapl:N/energy_uj, one per processor package), adding up
// what each counted since the last read, its wraparound undone.
type raplMeter struct {
	files  []string
	ranges []float64 // max_energy_range_uj of each
	last   []float64
	joules float64
}

// powercapRoot is where Linux shows its power capping zones, RAPL's among them.
const powercapRoot = "/sys/class/powercap"

// newRAPLMeter returns a meter over the RAPL package counters under root (powercapRoot),
// nil when there are none (or they cannot be read).
func newRAPLMeter(root string) *raplMeter {
	dirs, _ := filepath.Glob(filepath.Join(root, "intel-rapl:*"))
	m := &raplMeter{}
	for _, dir := range dirs {
		if strings.Count(filepath.Base(dir), ":") != 1 {
			continue // a sub-domain (core, DRAM...), counted in its package
		}
		uj, err1 := readMicrojoules(filepath.Join(dir, "energy_uj"))
		span, err2 := readMicrojoules(filepath.Join(dir, "max_energy_range_uj"))
		if err1 != nil || err2 != nil {
			continue
		}
		m.files, m.ranges, m.last = append(m.files, filepath.Join(dir, "energy_uj")), append(m.ranges, span), append(m.last, uj)
	}
	if len(m.files) == 0 {
		return nil
	}
	return m
}

// read returns the joules counted since the meter was made.
func (m *raplMeter) read() float64 {
	for i, f := range m.files {
		uj, err := readMicrojoules(f)
		if err != nil {
			continue
		}
		delta := uj - m.last[i]
		if delta < 0 {
			delta += m.ranges[i]
		}
		m.joules += delta / 1e6
		m.last[i] = uj
	}
	return m.joules
}

func readMicrojoules(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
}

// transitions names the sleeps and wakes between two samples.
func transitions(ids []string, prev, cur powerSample) []event {
	var out []event
	for i, st := range cur.states {
		was := prev.states[i]
		switch {
		case was == power.Active && st != power.Active:
			out = append(out, event{cur.at, "sleep " + ids[i]})
		case (was == power.Asleep || was == power.Draining) && (st == power.Waking || st == power.Active):
			out = append(out, event{cur.at, "wake " + ids[i]})
		}
	}
	return out
}

// note records a step of the bench.
func (s *sampler) note(text string) {
	s.mu.Lock()
	s.events = append(s.events, event{time.Now(), text})
	s.mu.Unlock()
}

// all returns the samples so far.
func (s *sampler) all() []powerSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples
}

// count returns how many events so far start with prefix.
func (s *sampler) count(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := 0
	for _, e := range s.events {
		if strings.HasPrefix(e.text, prefix) {
			k++
		}
	}
	return k
}

// nearest returns the sample taken closest to at.
func (s *sampler) nearest(at time.Time) powerSample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return nearestSample(s.samples, at)
}

func nearestSample(samples []powerSample, at time.Time) powerSample {
	i, _ := slices.BinarySearchFunc(samples, at, func(s powerSample, t time.Time) int { return s.at.Compare(t) })
	switch {
	case i == len(samples):
		return samples[i-1]
	case i > 0 && at.Sub(samples[i-1].at) < samples[i].at.Sub(at):
		return samples[i-1]
	}
	return samples[i]
}

// powerPct is the cluster's mean power over [from, to], % of what every node awake would
// have drawn at the same measured utilization: the energy between the samples nearest
// to the ends over that of every node awake. It is 0 for a window shorter than the
// sampler's tick, whose ends fall on one sample: the bench's windows are longer
// (timeline merges a short last bucket into the one before).
func powerPct(samples []powerSample, from, to time.Time) float64 {
	a, b := nearestSample(samples, from), nearestSample(samples, to)
	if !b.at.After(a.at) || b.allAwakeJoules <= a.allAwakeJoules {
		return 0
	}
	return 100 * (b.joules - a.joules) / (b.allAwakeJoules - a.allAwakeJoules)
}

// meanWatts is the cluster's mean power over [from, to], as its meters model it, and as
// the machine's RAPL counters measured it (0 without them).
func meanWatts(samples []powerSample, from, to time.Time) (modelled, rapl float64) {
	a, b := nearestSample(samples, from), nearestSample(samples, to)
	seconds := b.at.Sub(a.at).Seconds()
	if seconds <= 0 {
		return 0, 0
	}
	return (b.joules - a.joules) / seconds, (b.raplJoules - a.raplJoules) / seconds
}

// eventsBetween joins the events of [from, to).
func (s *sampler) eventsBetween(from, to time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var texts []string
	for _, e := range s.events {
		if !e.at.Before(from) && e.at.Before(to) {
			texts = append(texts, e.text)
		}
	}
	return strings.Join(texts, ", ")
}

// window builds the row of [from, to) of a run that started at start.
func (s *sampler) window(run string, start, from, to time.Time, ops []opRecord, attemptTimeout time.Duration) PowerRow {
	st := summarise(ops, attemptTimeout, 0)
	s.mu.Lock()
	pct := powerPct(s.samples, from, to)
	s.mu.Unlock()
	first, last := s.nearest(from), s.nearest(to)
	rt := breakdown(first.runtime, last.runtime)
	var ticks []runtimeSample
	for _, smp := range s.all() {
		if !smp.at.Before(first.at) && !smp.at.After(last.at) {
			ticks = append(ticks, smp.runtime)
		}
	}
	return PowerRow{
		Run: run, FromS: round(from.Sub(start).Seconds(), 1), toS: round(to.Sub(start).Seconds(), 1),
		Asleep: last.asleep(), PowerPct: round(pct, 2),
		Ops: st.ops, LatencyMsMean: st.meanMs, LatencyMsMax: st.maxMs, Failed: st.failed, Timeouts: st.timeouts,
		Events:   s.eventsBetween(from, to),
		GCCPUPct: rt.GCCPUPct, GCPauseMsMax: rt.GCPauseMsMax, GoSchedWaitMsMax: rt.GoSchedWaitMsMax, HeapLiveMB: rt.HeapLiveMB,
		OSRunWaitMsMax: round(float64(osRunWaitMax(ticks))/float64(time.Millisecond), 1),
	}
}

// timeline cuts [start, end) into buckets and builds a row for each.
func (s *sampler) timeline(run string, start, end time.Time, bucket time.Duration, log *opLog, attemptTimeout time.Duration) []PowerRow {
	var rows []PowerRow
	for _, w := range buckets(start, end, bucket) {
		rows = append(rows, s.window(run, start, w[0], w[1], log.between(w[0], w[1]), attemptTimeout))
	}
	return rows
}

// buckets cuts [start, end) into windows of length bucket; a last window shorter than
// half a bucket joins the one before.
func buckets(start, end time.Time, bucket time.Duration) [][2]time.Time {
	var out [][2]time.Time
	for from := start; from.Before(end); from = from.Add(bucket) {
		to := from.Add(bucket)
		if end.Sub(to) < bucket/2 {
			to = end
		}
		out = append(out, [2]time.Time{from, to})
		if !to.Before(end) {
			break
		}
	}
	return out
}

// ---- Exp. 1: nodes put to sleep one by one under a steady load

// exp1Variant is one Exp. 1 run: the paper's (clients read at ONE), or the quorum run
// (they read at QUORUM); the clients write at QUORUM in both.
type exp1Variant struct {
	name   string
	read   consistency.Level
	levels power.Levels // the cluster's declaration of its levels, which the sleeps obey
}

func runExp1Sleeps(ctx context.Context, env Env, topo *topology.Topology, o powerOptions, v exp1Variant) (*runResult, error) {
	pc, err := startPowerCluster(ctx, env, topo, o, o.profile, func(cfg *node.Config) { cfg.PowerLevels = v.levels })
	if err != nil {
		return nil, err
	}
	defer pc.Close()
	objs, clients, checker, err := pc.loadAndDial(ctx, env, v.name, o, client.Options{AttemptTimeout: o.attemptTimeout})
	if err != nil {
		return nil, err
	}
	defer closeClients(append(clients, checker))

	smp := startSampler(pc)
	defer smp.finish()
	log := &opLog{slow: o.slow}
	stop := make(chan struct{})
	// The clients hold pause for reading while they update and read; a check holds it
	// for writing, so the load pauses while the bench reads every object back, and the
	// check's own reads weigh on no client's latency.
	var pause sync.RWMutex
	var wg sync.WaitGroup
	o.slow.startRun(v.name, time.Now().Add(o.bucket)) // the timeline's start, after the warm-up
	for w, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 3))
			paced(ctx, stop, exp1Period, func(seq uint64) bool {
				pause.RLock()
				defer pause.RUnlock()
				update(ctx, c, objs, log, rng.IntN(objs.count()), uint64(w+1), seq)
				read(ctx, c, log, rng.IntN(objs.count()), v.read)
				return true
			})
		}()
	}
	stopLoad := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopLoad()
	var start time.Time // of the timeline
	check := func(what string) (checkResult, error) {
		pause.Lock()
		defer pause.Unlock()
		smp.note("check")
		env.Progressf("%s %5.1fs: load paused; reading back every object at QUORUM %s", v.name, time.Since(start).Seconds(), what)
		return objs.check(ctx, checker)
	}
	// The first row's length of load warms the clients' connections and the nodes up
	// before the timeline starts.
	if !ctxtime.Sleep(ctx, o.bucket) {
		return nil, ctx.Err()
	}
	start = time.Now()
	o.slow.startRun(v.name, start)

	// The sleeps, an interval apart after an interval of all nodes awake. Each asks the
	// tier-1 nodes in turn, spread ones first, until one accepts: a node the sleep rule
	// refuses (its sleep would leave a range too few awake replicas for the declared
	// levels) says so at once, as kura power sleep would, and the next is asked.
	order := spread(pc.tier1, o.sleepers)
	for _, n := range pc.tier1 {
		if !slices.Contains(order, n) {
			order = append(order, n)
		}
	}
	var sleepers []*node.Node
	refusals := []string{}
	lastAsleep := start.Add(time.Duration(o.sleepers) * o.interval)
	for k := range o.sleepers {
		if !ctxtime.Sleep(ctx, time.Until(start.Add(time.Duration(k+1)*o.interval))) {
			return nil, ctx.Err()
		}
		n, refused, err := sleepOne(ctx, order, sleepers)
		refusals = append(refusals, refused...)
		if err != nil {
			return nil, err
		}
		if n == nil {
			smp.note("no node may sleep")
			env.Progressf("%s %5.1fs: sleep %d of %d refused by every node: %s", v.name, time.Since(start).Seconds(), k+1, o.sleepers, refused[len(refused)-1])
			continue
		}
		sleepers = append(sleepers, n)
		lastAsleep = time.Now()
		env.Progressf("%s %5.1fs: %s asleep (%d of %d), %d refused before it", v.name, lastAsleep.Sub(start).Seconds(), n.ID(), k+1, o.sleepers, len(refused))
	}
	// The power after the transitions is measured once the last node has entered sleep,
	// over at least two rows: the last interval is stretched when it is too short.
	settled := lastAsleep.Add(pc.profile.Enter)
	asleepEnd := maxTime(start.Add(time.Duration(len(sleepers)+1)*o.interval), settled.Add(2*o.bucket))
	if !ctxtime.Sleep(ctx, time.Until(asleepEnd)) {
		return nil, ctx.Err()
	}
	checkAsleep, err := check(fmt.Sprintf("with %d nodes asleep", len(sleepers)))
	if err != nil {
		return nil, err
	}

	wakeStart := time.Now()
	for _, n := range sleepers {
		t := time.Now()
		if err := n.Wake(ctx); err != nil {
			return nil, fmt.Errorf("wake %s: %w", n.ID(), err)
		}
		env.Progressf("%s %5.1fs: %s active after %.1f s", v.name, time.Since(start).Seconds(), n.ID(), time.Since(t).Seconds())
	}
	if !ctxtime.Sleep(ctx, time.Until(time.Now().Add(o.interval))) {
		return nil, ctx.Err()
	}
	end := time.Now()
	stopLoad()
	checkWoken, err := check("after the wakes, load stopped")
	if err != nil {
		return nil, err
	}
	smp.finish()

	rows := smp.timeline(v.name, start, end, o.bucket, log, o.attemptTimeout)
	for _, r := range rows {
		env.Progressf("%s %5.1f-%5.1fs asleep %d power %6.2f%% ops %4d latency mean %6.2f ms max %7.2f ms failed %d; gc %4.1f%% of cpu, pause max %5.2f ms, cpu wait max %6.2f ms, os cpu wait max %6.1f ms, heap %6.0f MB %s",
			v.name, r.FromS, r.toS, r.Asleep, r.PowerPct, r.Ops, r.LatencyMsMean, r.LatencyMsMax, r.Failed, r.GCCPUPct, r.GCPauseMsMax, r.GoSchedWaitMsMax, r.OSRunWaitMsMax, r.HeapLiveMB, r.Events)
	}
	samples := smp.all()
	all := summarise(log.between(start, end), o.attemptTimeout, 0)
	before := summarise(log.between(start, start.Add(o.interval)), o.attemptTimeout, 0)
	asleep := summarise(log.between(start.Add(o.interval), wakeStart), o.attemptTimeout, 0)
	waking := summarise(log.between(wakeStart, end), o.attemptTimeout, 0)
	after := powerPct(samples, settled, asleepEnd)
	wattsAwake, raplAwake := meanWatts(samples, start, start.Add(o.interval))
	wattsAfter, raplAfter := meanWatts(samples, settled, asleepEnd)
	ideal := idealPct(pc.profile, len(pc.Nodes), len(sleepers))
	ranges, short, err := pc.rangesShort(sleepers)
	if err != nil {
		return nil, err
	}
	summary := map[string]any{
		"client_read_level":  v.read.String(),
		"client_write_level": consistency.Quorum.String(),
		"declared_levels":    v.levels.String(),
		"sleeps_asked":       o.sleepers,
		"asleep":             len(sleepers),
		"sleeps_refused":     len(refusals),
		// The first refusals, as the nodes gave them: which keyspace, which range, how
		// many of its replicas would be awake against what the level needs.
		"refusals": refusals[:min(len(refusals), 3)],
		// The energy is modelled (each node's draw from its power state and its measured
		// utilization), not measured at the wall: it is reported beside the ideal and
		// judged by no check. The RAPL figures, where the machine has the counters, are
		// measured, for the whole machine (every node and the clients).
		"energy_kind":                          energyKind(pc.profile),
		"power_pct_modelled_after_transitions": round(after, 2),
		"watts_modelled_all_awake":             round(wattsAwake, 1),
		"watts_modelled_after_transitions":     round(wattsAfter, 1),
		"power_pct_ideal":                      round(ideal, 2),
		"power_points_modelled_above_ideal":    round(round(after, 2)-round(ideal, 2), 2), // never -0
		"window_after_transitions_s":           round(asleepEnd.Sub(settled).Seconds(), 1),
		"latency_ms_mean_all_awake":            before.meanMs,
		"latency_ms_max_all_awake":             before.maxMs,
		"latency_ms_mean_with_sleeps":          asleep.meanMs,
		"latency_ms_max_with_sleeps":           asleep.maxMs,
		"latency_ms_mean_waking":               waking.meanMs,
		"latency_ms_max_waking":                waking.maxMs,
		"latency_ms_max":                       all.maxMs,
		"latency_ms_p99":                       all.p99Ms,
		"requests":                             all.ops,
		"writes_failed":                        all.writesFailed,
		"reads_failed":                         all.readsFailed,
		"timeouts":                             all.timeouts,
		"check_asleep":                         checkAsleep,
		"ranges":                               ranges,
		"ranges_one_replica_awake":             short,
		"check_woken":                          checkWoken,
		"writes_lost":                          checkAsleep.Lost + checkWoken.Lost,
		"latency_max_under_100ms":              all.maxMs < 100,
		"nothing_lost_or_failed":               nothingLostOrFailed(checkAsleep, checkWoken, short, all.failed),
		"run_s":                                round(end.Sub(start).Seconds(), 1),
	}
	if smp.rapl != nil {
		summary["watts_rapl_all_awake"], summary["watts_rapl_after_transitions"] = round(raplAwake, 1), round(raplAfter, 1)
	}
	return &runResult{name: v.name, rows: rows, summary: summary,
		ideal: func(k int) float64 { return idealPct(pc.profile, len(pc.Nodes), k) }}, nil
}

// energyKind says what kind of figure the bench's energy is, for the summary.
func energyKind(p power.Profile) string {
	rapl := "no RAPL counters on this machine, so nothing measured at the machine"
	if newRAPLMeter(powercapRoot) != nil {
		rapl = "the machine's RAPL counters measured beside it (watts_rapl_*: the whole machine, every node and client)"
	}
	return fmt.Sprintf("modelled: awake %v-%v W linear in each node's utilization (the process's measured CPU time split over the nodes by the requests each served, over %.3g cores per node), asleep %v W; %s",
		p.ActiveWatts, p.PeakWatts, float64(runtime.NumCPU())/topologyNodes, p.SleepWatts, rapl)
}

// nothingLostOrFailed is exp1's verdict: no acknowledged write lost, no client request
// failed, every object readable once the nodes woke, and, while they slept, every object
// readable unless some range kept a single replica awake: its objects cannot be read at
// QUORUM then, as the notes say, and check_asleep counts them as unreadable, by design.
func nothingLostOrFailed(asleep, woken checkResult, rangesOneReplicaAwake, failed int) bool {
	unreadableAsleep := asleep.Unreadable > 0 && rangesOneReplicaAwake == 0
	return asleep.Lost+woken.Lost+woken.Unreadable+failed == 0 && !unreadableAsleep
}

// sleepOne puts the first node of order that is not among asleep and that the sleep rule
// accepts to sleep, and returns it, with the refusals of those asked before it (nil
// when every one refused). An error other than the rule's refusal ends the run.
func sleepOne(ctx context.Context, order, asleep []*node.Node) (*node.Node, []string, error) {
	var refused []string
	for _, n := range order {
		if slices.Contains(asleep, n) {
			continue
		}
		err := n.Sleep(ctx)
		var rule *power.SleepRefused
		switch {
		case errors.As(err, &rule):
			refused = append(refused, err.Error())
		case err != nil:
			return nil, refused, fmt.Errorf("sleep %s: %w", n.ID(), err)
		default:
			return n, refused, nil
		}
	}
	return nil, refused, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// ---- Exp. 2: clients that never refresh their node list

func runExp2StaleClients(ctx context.Context, env Env, topo *topology.Topology, o powerOptions, noControl bool) (*runResult, error) {
	name := exp2Suppression
	if noControl {
		name = exp2NoControl
	}
	pc, err := startPowerCluster(ctx, env, topo, o, o.profile, func(cfg *node.Config) { cfg.NoTimeoutSuppression = noControl })
	if err != nil {
		return nil, err
	}
	defer pc.Close()
	// Each client knows every node from the start and never asks again.
	objs, clients, checker, err := pc.loadAndDial(ctx, env, name, o, client.Options{StaticNodes: true, AttemptTimeout: o.attemptTimeout})
	if err != nil {
		return nil, err
	}
	defer closeClients(append(clients, checker))

	smp := startSampler(pc)
	defer smp.finish()
	log := &opLog{slow: o.slow}
	perClient := o.requests / o.clients
	// The clients stop early only when the run fails.
	clientCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	start := time.Now()
	o.slow.startRun(name, start)
	for w, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			paced(clientCtx, nil, exp2Period, func(seq uint64) bool {
				// Requests alternate between an update and a read.
				if seq%2 == 0 {
					update(clientCtx, c, objs, log, rng.IntN(objs.count()), uint64(w+1), seq)
				} else {
					read(clientCtx, c, log, rng.IntN(objs.count()), consistency.One)
				}
				return seq+1 < uint64(perClient)
			})
		}()
	}
	sleeper := pc.tier1[len(pc.tier1)/2]
	if !ctxtime.Sleep(ctx, time.Until(start.Add(o.sleepAt))) {
		return nil, ctx.Err()
	}
	sleepStart := time.Now()
	if err := sleeper.Sleep(ctx); err != nil {
		return nil, fmt.Errorf("sleep %s: %w", sleeper.ID(), err)
	}
	env.Progressf("%s %5.1fs: %s asleep after %.1f s", name, time.Since(start).Seconds(), sleeper.ID(), time.Since(sleepStart).Seconds())
	wg.Wait()
	end := time.Now()
	env.Progressf("%s: %d requests in %.1f s; reading back every object at QUORUM", name, perClient*o.clients, end.Sub(start).Seconds())
	check, err := objs.check(ctx, checker)
	if err != nil {
		return nil, err
	}
	smp.finish()

	rows := []PowerRow{
		smp.window(name, start, start, sleepStart, log.between(start, sleepStart), o.attemptTimeout),
		smp.window(name, start, sleepStart, end, log.between(sleepStart, end), o.attemptTimeout),
	}
	all := summarise(log.between(start, end), o.attemptTimeout, 0)
	summary := map[string]any{
		"total_s":        round(end.Sub(start).Seconds(), 1),
		"paced_s":        round((time.Duration(perClient-1) * exp2Period).Seconds(), 1),
		"requests":       all.ops,
		"timeouts":       all.timeouts,
		"latency_ms_max": all.maxMs,
		"latency_ms_p99": all.p99Ms,
		"failed":         all.failed,
		"check":          check,
	}
	return &runResult{name: name, rows: rows, summary: summary}, nil
}

// ---- The controller over a compressed day

// dayLoad is the offered load at a point of the day, as a fraction of the peak: a cosine
// from troughFraction at 04:00 to 1 at 16:00.
func dayLoad(hour, troughFraction float64) float64 {
	return troughFraction + (1-troughFraction)*(1-math.Cos(2*math.Pi*(hour-4)/24))/2
}

func runControllerDay(ctx context.Context, env Env, topo *topology.Topology, o powerOptions) (*runResult, error) {
	profile, err := power.ProfileByName(o.controllerProfile)
	if err != nil {
		return nil, err
	}
	ctl := power.ControllerConfig{Profile: profile, CapacityOpsPerSecond: o.capacity(), LatencyTarget: o.latencyTarget}
	pc, err := startPowerCluster(ctx, env, topo, o, o.controllerProfile, func(cfg *node.Config) { cfg.PowerController = &ctl })
	if err != nil {
		return nil, err
	}
	defer pc.Close()
	objs := newObjects(o.objects, o.controllerValueBytes)
	if err := objs.load(ctx, pc.Nodes); err != nil {
		return nil, err
	}
	clients, err := pc.dialClients(ctx, o.clients, client.Options{AttemptTimeout: o.attemptTimeout})
	if err != nil {
		return nil, err
	}
	defer closeClients(clients)

	smp := startSampler(pc)
	defer smp.finish()
	log := &opLog{slow: o.slow}
	offered := &opLog{} // every request the load asked for, sent or not
	tokens := make(chan struct{})
	var dropped atomic.Int64
	var wg sync.WaitGroup
	const workers = 32
	start := time.Now()
	o.slow.startRun(runController, start)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w%len(clients)]
			rng := rand.New(rand.NewPCG(uint64(w), 11))
			for seq := uint64(0); ; seq++ {
				if _, ok := <-tokens; !ok {
					return
				}
				if seq%2 == 0 {
					update(ctx, c, objs, log, rng.IntN(objs.count()), uint64(w+1), seq)
				} else {
					read(ctx, c, log, rng.IntN(objs.count()), consistency.One)
				}
			}
		}()
	}
	// The pacer hands out the day's requests: a worker free takes one at once, and a
	// request no worker is free for is dropped and counted, so that the offered load
	// stays the curve's even when the cluster falls behind.
	const pace = 10 * time.Millisecond
	ticker := time.NewTicker(pace)
	due, last := 0.0, start
	report := start.Add(o.day / 12)
	for now := start; now.Before(start.Add(o.day)); now = <-ticker.C {
		hour := 24 * now.Sub(start).Seconds() / o.day.Seconds()
		if now.After(report) {
			env.Progressf("controller %5.1fs: hour %4.1f, load %5.1f%% of the peak, %d asleep",
				now.Sub(start).Seconds(), hour, 100*dayLoad(hour, o.troughPct/100), smp.nearest(now).asleep())
			report = report.Add(o.day / 12)
		}
		due += o.peakOpsPerSecond * dayLoad(hour, o.troughPct/100) * now.Sub(last).Seconds()
		last = now
		for ; due >= 1; due-- {
			offered.add(opRecord{at: now})
			select {
			case tokens <- struct{}{}:
			default:
				dropped.Add(1)
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	ticker.Stop()
	close(tokens)
	wg.Wait()
	end := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	smp.finish()

	bucket := o.day / 12
	rows := smp.timeline(runController, start, end, bucket, log, o.attemptTimeout)
	for i, w := range buckets(start, end, bucket) {
		from, to := w[0], w[1]
		load := 100 * float64(len(offered.between(from, to))) / to.Sub(from).Seconds() / o.peakOpsPerSecond
		rows[i].LoadPct = ptr(round(load, 1))
	}
	samples := smp.all()
	asleepMax := 0
	for _, s := range samples {
		asleepMax = max(asleepMax, s.asleep())
	}
	all := summarise(log.between(start, end), o.attemptTimeout, o.latencyTarget)
	used := powerPct(samples, start, end)
	dayStart, dayEnd := nearestSample(samples, start), nearestSample(samples, end)
	summary := map[string]any{
		"energy_saved_pct":     round(100-used, 2),
		"run_s":                round(end.Sub(start).Seconds(), 1),
		"asleep_max":           asleepMax,
		"requests":             all.ops,
		"requests_dropped":     int(dropped.Load()),
		"over_target_pct":      round(100*float64(all.overTarget)/float64(max(1, all.ops)), 2),
		"latency_target_ms":    float64(o.latencyTarget) / float64(time.Millisecond),
		"latency_ms_p99":       all.p99Ms,
		"latency_ms_max":       all.maxMs,
		"failed":               all.failed,
		"timeouts":             all.timeouts,
		"sleeps":               smp.count("sleep "),
		"wakes":                smp.count("wake "),
		"capacity_ops_per_s":   round(o.capacity(), 1),
		"peak_ops_per_s":       o.peakOpsPerSecond,
		"controller_profile":   profile.Name,
		"energy_wh_always_on":  round((dayEnd.allAwakeJoules-dayStart.allAwakeJoules)/3600, 3),
		"energy_wh_controlled": round((dayEnd.joules-dayStart.joules)/3600, 3),
		"energy_kind":          energyKind(pc.profile),
	}
	return &runResult{name: runController, rows: rows, summary: summary, target: o.latencyTarget}, nil
}

// ---- the figure

// powerFigures draws Exp. 1 as the paper's Fig. 4 (power and latency over time), and the
// controller's day beside it when it ran.
func powerFigures(exp1, controller *runResult) []Figure {
	var figures []Figure
	mid := func(r PowerRow) float64 { return (r.FromS + r.toS) / 2 }
	if exp1 != nil {
		pw := Figure{Title: "Exp. 1 (paper 003 Fig. 4): cluster power, nodes put to sleep one by one", XLabel: "time (s)", YLabel: "power (% of all awake)"}
		lat := Figure{Title: "Exp. 1: request latency", XLabel: "time (s)", YLabel: "latency (ms)"}
		measured, ideal := Series{Name: "measured"}, Series{Name: "ideal for the nodes asleep"}
		meanS, maxS := Series{Name: "mean"}, Series{Name: "max"}
		for _, r := range exp1.rows {
			x := mid(r)
			measured.X, measured.Y = append(measured.X, x), append(measured.Y, r.PowerPct)
			ideal.X, ideal.Y = append(ideal.X, x), append(ideal.Y, exp1.ideal(r.Asleep))
			meanS.X, meanS.Y = append(meanS.X, x), append(meanS.Y, r.LatencyMsMean)
			maxS.X, maxS.Y = append(maxS.X, x), append(maxS.Y, r.LatencyMsMax)
		}
		pw.Series, lat.Series = []Series{measured, ideal}, []Series{meanS, maxS}
		figures = append(figures, pw, lat)
	}
	if controller != nil {
		pw := Figure{Title: "Controller over a compressed day: load and power", XLabel: "time (s)", YLabel: "percent (of the peak load, of full power, of the nodes)"}
		lat := Figure{Title: "Controller: request latency", XLabel: "time (s)", YLabel: "latency (ms)"}
		load, used, asleep := Series{Name: "offered load"}, Series{Name: "power"}, Series{Name: "nodes asleep"}
		meanS, maxS, target := Series{Name: "mean"}, Series{Name: "max"}, Series{Name: "target"}
		for _, r := range controller.rows {
			x := mid(r)
			if r.LoadPct != nil {
				load.X, load.Y = append(load.X, x), append(load.Y, *r.LoadPct)
			}
			used.X, used.Y = append(used.X, x), append(used.Y, r.PowerPct)
			asleep.X, asleep.Y = append(asleep.X, x), append(asleep.Y, 100*float64(r.Asleep)/topologyNodes)
			meanS.X, meanS.Y = append(meanS.X, x), append(meanS.Y, r.LatencyMsMean)
			maxS.X, maxS.Y = append(maxS.X, x), append(maxS.Y, r.LatencyMsMax)
			target.X, target.Y = append(target.X, x), append(target.Y, float64(controller.target)/float64(time.Millisecond))
		}
		pw.Series, lat.Series = []Series{load, used, asleep}, []Series{meanS, maxS, target}
		figures = append(figures, pw, lat)
	}
	return figures
}
