package bench

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/base/ctxtime"
	"github.com/kuradb/kura/internal/base/stats"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/io/topology"
)

func init() {
	Register(Bench{
		Name:    "scheduling",
		Summary: "paper 004: gets and range scans mixed 9:1 and 5:5 on 12 nodes, ordered keys, 125-1000 clients, under each read policy (O, ReS, P, ReS+P, P+RaS, A, kura): latency, throughput, reduction against O (Figs. 5-8)",
		Setup:   setupScheduling,
	})
}

// The bench's fixed layout, the paper's: 12 nodes in one DC, one evenly spaced token
// each, the ordered partitioner, rows of about 1 KB.
const (
	schedNodes      = 12
	schedValueBytes = 1000 // YCSB's ten fields of 100 bytes
	// schedSplits is how many split keys balance the ordered partitioner: enough that the
	// two outer buckets (keys below the smallest loaded key and above the largest, none
	// here) take under 1 % of the ring, few enough to gossip with the keyspace.
	schedSplits = 256
	// schedOpTimeout bounds one query, so that a run whose queries hang ends with them
	// counted as failed instead of never. It is far above any latency of a default run:
	// a query must not be cut short, or resent, by a timeout.
	schedOpTimeout = 5 * time.Minute
	// schedConnsPerNode is how many clients (client.Client, each with one connection)
	// the query goroutines bound to one node share: enough that no single HTTP/2
	// connection carries the answers of many scans at once, few enough that 1000
	// goroutines do not open 1000 connections. A goroutine waits on its own query only,
	// never on another's.
	schedConnsPerNode = 4
)

// schedMix is a single:scan mix of the paper.
type schedMix struct {
	name   string
	getPct int
}

var schedMixes = []schedMix{{"9:1", 90}, {"5:5", 50}}

// schedOptions are the bench's flags.
type schedOptions struct {
	rows        int
	limitMax    int
	queries     int
	clients     []int
	rf3Clients  []int
	mixes       []schedMix
	variants    []sched.Variant
	readWorkers int
	device      sched.Device
	// sharedDevice: a node's workers share one device (--emulate-disk-shared).
	sharedDevice bool
	repeat       int
	seed         uint64
	// virtual runs the cluster in virtual time on the simulated network (--virtual).
	virtual bool
}

// schedQuickSettings are the values --quick gives the flags not set explicitly: a
// structural run of every variant in seconds.
var schedQuickSettings = map[string]string{
	"rows":         "240",
	"limit-max":    "200",
	"queries":      "40",
	"clients":      "4,8",
	"rf3-clients":  "8",
	"emulate-disk": "100us+2us",
}

func setupScheduling(fs *flag.FlagSet) Runner {
	o := &schedOptions{}
	fs.IntVar(&o.rows, "rows", 600, "rows loaded, ~1 KB each (the paper: 10 M in 1000 column families of 10,000, a scan reading one; see scale)")
	fs.IntVar(&o.limitMax, "limit-max", 500, "a scan's limit is uniform in 1..limit-max (the paper: 10,000, the rows of one column family)")
	fs.IntVar(&o.queries, "queries", 2000, "queries per point, shared by the clients (the paper: 2000)")
	clients := fs.String("clients", "125,250,500,1000", "concurrent clients of each point, comma-separated (the paper: 125,250,500,1000)")
	mixes := fs.String("mixes", "9:1,5:5", "single:scan mixes, comma-separated, of the paper's 9:1 and 5:5 (one alone makes a cheaper run to iterate on)")
	rf3 := fs.String("rf3-clients", "1000", "client counts of the run with three replicas read at ONE, comma-separated; none to skip it")
	variants := fs.String("variants", "all", "read policies compared, comma-separated: the paper's O, ReS, P, ReS+P, P+RaS, A, kura's own kura, or any policy kura --read-policy reads (fair+parallel); O, the baseline, always runs")
	fs.IntVar(&o.readWorkers, "read-workers", 1, "read stage workers per node, each with its own emulated device unless --emulate-disk-shared (1: the disk of the paper's nodes, which served their 32 read threads one read at a time)")
	device := fs.String("emulate-disk", "3.5ms+350us", "device time each read holds its worker: ACCESS+PERKIB, and /IOKiB for IOs of that size at a shared device (the paper's nodes read from disk; here the rows sit in memory)")
	fs.BoolVar(&o.sharedDevice, "emulate-disk-shared", false, "a node's read workers share one emulated device, each waiting its turn in arrival order, as the paper's 32 read threads shared a disk (use with --read-workers 32; default: a device per worker)")
	fs.IntVar(&o.repeat, "repeat", 3, "runs of each point, the variants' order rotated between them; a row gives each figure's median over the runs and its spread (the paper kept the best of 10)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the keys and of the queries; every variant of a point runs the same queries")
	fs.BoolVar(&o.virtual, "virtual", false, "not the default: run the cluster in virtual time on the simulated network, so that the figures are the emulated disk's alone, CPU free, whatever the machine's load (the Go client's hop, the CPUs, the Go scheduler and the GC are left out)")
	quick := fs.Bool("quick", false, "a structural run in seconds: small values for every flag not set explicitly")
	return func(ctx context.Context, env Env) (*Report, error) {
		if *quick {
			if err := applyQuick(fs, schedQuickSettings); err != nil {
				return nil, err
			}
		}
		var err error
		if o.clients, err = parseCounts("--clients", *clients); err != nil {
			return nil, err
		}
		if *rf3 != "none" {
			if o.rf3Clients, err = parseCounts("--rf3-clients", *rf3); err != nil {
				return nil, err
			}
		}
		if o.mixes, err = parseMixes(*mixes); err != nil {
			return nil, err
		}
		if o.variants, err = parseVariants(*variants); err != nil {
			return nil, err
		}
		if o.device, err = sched.ParseDevice(*device); err != nil {
			return nil, fmt.Errorf("--emulate-disk: %w", err)
		}
		switch {
		case o.rows < schedNodes:
			return nil, fmt.Errorf("--rows must be at least %d, a row per node", schedNodes)
		case o.limitMax < 1 || o.queries < 1 || o.readWorkers < 1 || o.repeat < 1:
			return nil, errors.New("--limit-max, --queries, --read-workers and --repeat must be positive")
		case o.sharedDevice && o.device == sched.Device{}:
			return nil, errors.New("--emulate-disk-shared needs a device time (--emulate-disk)")
		}
		return runScheduling(ctx, env, *o)
	}
}

// parseCounts reads a comma-separated list of positive counts.
func parseCounts(flagName, s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s %q: want positive counts, comma-separated", flagName, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseMixes reads --mixes: names of schedMixes, each at most once, in the paper's
// order whatever the order given.
func parseMixes(s string) ([]schedMix, error) {
	var names []string
	for _, part := range strings.Split(s, ",") {
		name := strings.TrimSpace(part)
		if !slices.ContainsFunc(schedMixes, func(m schedMix) bool { return m.name == name }) {
			return nil, fmt.Errorf("--mixes %q: unknown mix %q (want 9:1, 5:5 or both, comma-separated)", s, name)
		}
		names = append(names, name)
	}
	var out []schedMix
	for _, m := range schedMixes {
		if slices.Contains(names, m.name) {
			out = append(out, m)
		}
	}
	return out, nil
}

// parseVariants reads --variants: "all", or names of sched.Variants() and policies, O
// first whether named or not, since every reduction is against it.
func parseVariants(s string) ([]sched.Variant, error) {
	if s == "all" {
		return sched.Variants(), nil
	}
	baseline := sched.Variants()[0]
	out := []sched.Variant{baseline}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		v := sched.Variant{Name: part}
		if i := slices.IndexFunc(sched.Variants(), func(v sched.Variant) bool { return strings.EqualFold(v.Name, part) }); i >= 0 {
			v = sched.Variants()[i]
		} else {
			p, err := sched.ParsePolicy(part)
			if err != nil {
				return nil, fmt.Errorf("--variants: %w", err)
			}
			v.Policy = p
		}
		if v.Policy == baseline.Policy || slices.ContainsFunc(out, func(o sched.Variant) bool { return o.Name == v.Name }) {
			continue
		}
		out = append(out, v)
	}
	return out, nil
}

// SchedulingRow is one point: a run's replication and mix, a client count and a variant.
// Its figures are the medians over the point's repeats, which Repeats keeps one by one.
type SchedulingRow struct {
	RF      int    `json:"rf" table:"group"`
	Mix     string `json:"mix" table:"group"`
	Clients int    `json:"clients"`
	Variant string `json:"variant"`
	SchedulingFigures
	// GetMeanSpreadPct and ScanMeanSpreadPct are the spread of the two mean latencies
	// over the repeats, (max - min) / median in percent: how far apart the runs were,
	// beside a reduction against O.
	GetMeanSpreadPct  float64 `json:"get_mean_spread_pct"`
	ScanMeanSpreadPct float64 `json:"scan_mean_spread_pct"`
	// Spread is every figure's [min, max] over the repeats, by the figure's JSON name.
	Spread map[string][2]float64 `json:"spread" table:"-"`
	// Repeats are the point's runs of this variant, each figure as measured, and where
	// in its repeat's order of variants the run came.
	Repeats []SchedulingRun `json:"repeats" table:"-"`
}

// SchedulingRun is one run of a variant at a point.
type SchedulingRun struct {
	Repeat int `json:"repeat"`
	// Position is the run's place in its repeat's order of variants, 0 for the first.
	Position int `json:"position"`
	SchedulingFigures
}

// SchedulingFigures are what a run of a point measured; in a SchedulingRow, the medians
// over its repeats, but Failed, their sum.
type SchedulingFigures struct {
	GetLatencyMsMean  float64 `json:"get_latency_ms_mean"`
	GetLatencyMsP99   float64 `json:"get_latency_ms_p99"`
	ScanLatencyMsMean float64 `json:"scan_latency_ms_mean"`
	ScanLatencyMsP99  float64 `json:"scan_latency_ms_p99"`
	ThroughputQPS     float64 `json:"throughput_qps"`
	// Where the time went, for the JSON: the mean wait of a get and of a scan page in a
	// node's read-stage queue, and of a goroutine ready to run for a CPU (the Go
	// scheduler's latency, sampled by the runtime). The first two should carry the
	// queueing.
	GetStageWaitMsMean      float64 `json:"get_stage_wait_ms_mean" table:"-"`
	ScanPageStageWaitMsMean float64 `json:"scan_page_stage_wait_ms_mean" table:"-"`
	GoSchedWaitMsMean       float64 `json:"go_sched_wait_ms_mean" table:"-"`
	// ScanPagesMean is how many pages the read stages served per scan: P reads the
	// ranges its estimate names at once, and the limit may not need all of them.
	ScanPagesMean float64 `json:"scan_pages_mean" table:"-"`
	// GetDeviceWaitMsMean and ScanPageDeviceWaitMsMean are, with a shared device, the
	// mean wait of a get and of a scan page for the device after their read, holding
	// their worker: the device's own queue, in arrival order (0 with a device per
	// worker).
	GetDeviceWaitMsMean      float64 `json:"get_device_wait_ms_mean" table:"-"`
	ScanPageDeviceWaitMsMean float64 `json:"scan_page_device_wait_ms_mean" table:"-"`
	// ScanDeviceMsMean is the emulated device time a scan's pages cost, summed over
	// the nodes (sched.Device.Work of what they read): the work a scan costs the read
	// stages, whatever it waited and however loaded the machine. P's estimate can make
	// a scan read rows its limit does not need.
	ScanDeviceMsMean float64 `json:"scan_device_ms_mean" table:"-"`
	// ScanPagesOverduePct is the share of the scan pages served that kura's Fair
	// discipline served past their deadline, by deadline rather than in RaS's order (0
	// under the other disciplines).
	ScanPagesOverduePct float64 `json:"scan_pages_overdue_pct" table:"-"`
	// Failed counts the queries that returned an error.
	Failed int `json:"failed" table:"-"`
}

// schedFigure is one figure of SchedulingFigures, by its JSON name.
type schedFigure struct {
	name  string
	value *float64
}

// figures lists the figures a row gives the median and spread of.
func (f *SchedulingFigures) figures() []schedFigure {
	return []schedFigure{
		{"get_latency_ms_mean", &f.GetLatencyMsMean}, {"get_latency_ms_p99", &f.GetLatencyMsP99},
		{"scan_latency_ms_mean", &f.ScanLatencyMsMean}, {"scan_latency_ms_p99", &f.ScanLatencyMsP99},
		{"throughput_qps", &f.ThroughputQPS}, {"get_stage_wait_ms_mean", &f.GetStageWaitMsMean},
		{"scan_page_stage_wait_ms_mean", &f.ScanPageStageWaitMsMean}, {"go_sched_wait_ms_mean", &f.GoSchedWaitMsMean},
		{"get_device_wait_ms_mean", &f.GetDeviceWaitMsMean}, {"scan_page_device_wait_ms_mean", &f.ScanPageDeviceWaitMsMean},
		{"scan_pages_mean", &f.ScanPagesMean}, {"scan_device_ms_mean", &f.ScanDeviceMsMean},
		{"scan_pages_overdue_pct", &f.ScanPagesOverduePct},
	}
}

// schedMedianRow makes a point's row of a variant from its runs: each figure's median
// and [min, max], the failed queries of every run, and the runs themselves.
func schedMedianRow(rf int, mix string, clients int, variant string, runs []SchedulingRun) SchedulingRow {
	row := SchedulingRow{RF: rf, Mix: mix, Clients: clients, Variant: variant, Spread: map[string][2]float64{}, Repeats: runs}
	for i, f := range row.figures() {
		values := make([]float64, len(runs))
		for j := range runs {
			values[j] = *runs[j].figures()[i].value
		}
		// Two decimals: the mean of two middle runs, without binary noise.
		*f.value = round(stats.Median(values), 2)
		row.Spread[f.name] = [2]float64{slices.Min(values), slices.Max(values)}
	}
	for _, r := range runs {
		row.Failed += r.Failed
	}
	spreadPct := func(name string, median float64) float64 {
		if median == 0 {
			return 0
		}
		return round(100*(row.Spread[name][1]-row.Spread[name][0])/median, 1)
	}
	row.GetMeanSpreadPct = spreadPct("get_latency_ms_mean", row.GetLatencyMsMean)
	row.ScanMeanSpreadPct = spreadPct("scan_latency_ms_mean", row.ScanLatencyMsMean)
	return row
}

// schedOrder is the order in which repeat r (from 0) runs n variants, as indexes: the
// variants rotated by r, so that over n repeats each runs once in each place, and no
// variant always runs first, right after a switch of policy, or after the same one.
func schedOrder(n, r int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = (r + i) % n
	}
	return order
}

// SchedulingReduction is a variant's reduction of latency against O at the same point,
// in percent of O's: positive is faster than O.
type SchedulingReduction struct {
	RF          int     `json:"rf" table:"group"`
	Mix         string  `json:"mix" table:"group"`
	Clients     int     `json:"clients"`
	Variant     string  `json:"variant"`
	GetMeanPct  float64 `json:"get_mean_pct"`
	GetP99Pct   float64 `json:"get_p99_pct"`
	ScanMeanPct float64 `json:"scan_mean_pct"`
	ScanP99Pct  float64 `json:"scan_p99_pct"`
}

// schedCheck is one target of the "Done when", as measured.
type schedCheck struct {
	Check   string  `json:"check"`
	WantPct float64 `json:"want_pct"`
	GotPct  float64 `json:"got_pct"`
	Met     bool    `json:"met"`
}

// schedRun is one keyspace the points run against: its replication and client counts.
type schedRun struct {
	rf       int
	keyspace string
	clients  []int
}

func (o schedOptions) runs() []schedRun {
	runs := []schedRun{{rf: 1, keyspace: "sched_rf1", clients: o.clients}}
	if len(o.rf3Clients) > 0 {
		runs = append(runs, schedRun{rf: 3, keyspace: "sched_rf3", clients: o.rf3Clients})
	}
	return runs
}

func runScheduling(ctx context.Context, env Env, o schedOptions) (*Report, error) {
	if o.virtual {
		return runSchedulingVirtual(ctx, env, o)
	}
	return measureScheduling(ctx, env, o, startSchedCluster, func(points int) (func(string), func()) {
		progress := env.StartProgress("scheduling", float64(points))
		return func(status string) { progress.Add(1, "%s", status) }, progress.Done
	})
}

// schedProgress starts telling the progress through points once the cluster is loaded:
// pointDone says what each point measured as it ends, done that the run ended.
type schedProgress func(points int) (pointDone func(status string), done func())

// measureScheduling starts the cluster, loads it and measures every point.
func measureScheduling(ctx context.Context, env Env, o schedOptions, start func(Env, schedOptions) (*schedCluster, error), startProgress schedProgress) (*Report, error) {
	started := time.Now()
	keys := schedKeys(o.rows, o.seed)
	sc, err := start(env, o)
	if err != nil {
		return nil, err
	}
	defer sc.close()
	loadStart := time.Now()
	for _, run := range o.runs() {
		if err := sc.load(ctx, run, keys); err != nil {
			return nil, err
		}
	}
	spread, err := sc.rowsPerNode(o.runs()[0].keyspace)
	if err != nil {
		return nil, err
	}
	env.Progressf("scheduling: %d rows loaded into %d keyspace(s) in %.1f s%s; rows per node %v", o.rows, len(o.runs()), time.Since(loadStart).Seconds(), sc.clock, spread)
	clients, err := sc.connect(ctx, slices.Max(slices.Concat(o.clients, o.rf3Clients)), o, keys)
	if err != nil {
		return nil, err
	}
	defer clients.Close()

	var rows []SchedulingRow
	var failed, wrong int
	var scanRows []int
	// Every point runs the same number of queries: a point is a unit of work.
	points := 0
	for _, run := range o.runs() {
		points += len(o.mixes) * len(run.clients) * len(o.variants) * o.repeat
	}
	pointDone, done := startProgress(points)
	defer done()
	for _, run := range o.runs() {
		for _, mix := range o.mixes {
			for _, clientCount := range run.clients {
				plan := planQueries(o, mix, clientCount)
				runs := make([][]SchedulingRun, len(o.variants))
				for r := range o.repeat {
					for position, i := range schedOrder(len(o.variants), r) {
						v := o.variants[i]
						figures, res, err := sc.measure(ctx, clients, run, v, keys, plan, clientCount)
						if err != nil {
							return nil, err
						}
						runs[i] = append(runs[i], SchedulingRun{Repeat: r, Position: position, SchedulingFigures: figures})
						failed, wrong = failed+res.failed, wrong+res.wrong
						scanRows = append(scanRows, res.scanRows...)
						point := fmt.Sprintf("rf %d, %s, %d clients, repeat %d, %s", run.rf, mix.name, clientCount, r+1, v.Name)
						if res.failed > 0 {
							env.Progressf("scheduling %s: %d queries failed (last error: %v)", point, res.failed, res.lastErr)
						}
						pointDone(fmt.Sprintf("%s: gets %s ms, scans %s ms, %s q/s", point, formatFixed(figures.GetLatencyMsMean),
							formatFixed(figures.ScanLatencyMsMean), formatNumber("throughput_qps", figures.ThroughputQPS, false)))
					}
				}
				for i, v := range o.variants {
					rows = append(rows, schedMedianRow(run.rf, mix.name, clientCount, v.Name, runs[i]))
				}
			}
		}
	}
	reductions := schedReductions(rows)
	variantPolicies := map[string]string{}
	var variantNames []string
	for _, v := range o.variants {
		variantPolicies[v.Name] = v.Policy.String()
		variantNames = append(variantNames, v.Name)
	}
	summary := map[string]any{
		"done_when":         doneWhen(reductions, o.clients, o.rf3Clients),
		"virtual":           o.virtual,
		"repeats":           o.repeat,
		"read_workers":      o.readWorkers,
		"emulate_disk":      o.device.String(),
		"device_model":      schedDeviceModel(o),
		"variant_order":     fmt.Sprintf("rotated: repeat r (from 0) runs the variants from the r-th of %s on, wrapping around; each run's position is in its row's repeats", strings.Join(variantNames, ",")),
		"variants":          variantPolicies,
		"rows_per_node_min": slices.Min(spread),
		"rows_per_node_max": slices.Max(spread),
		"scan_rows_mean":    round(stats.Mean(scanRows), 1),
		"queries_failed":    failed,
		"scans_wrong_rows":  wrong,
		"wall_s":            round(time.Since(started).Seconds(), 1),
	}
	return &Report{
		Bench:     "scheduling",
		Scale:     schedScale(o),
		Rows:      rows,
		Reduction: reductions,
		Summary:   summary,
		Notes:     schedNotes(o),
		Plot: func(path string) error {
			return SavePanels(path, 2, schedFigures(rows)...)
		},
	}, nil
}

func schedScale(o schedOptions) string {
	var rf3 string
	if len(o.rf3Clients) > 0 {
		rf3 = fmt.Sprintf(", and one run with three replicas (simple=3) read at ONE, at %s clients", joinInts(o.rf3Clients))
	}
	cluster := fmt.Sprintf("%d nodes in one process on %d cores (one DC over loopback, no emulated network)", schedNodes, runtime.NumCPU())
	if o.virtual {
		cluster = fmt.Sprintf("VIRTUAL TIME (--virtual, not the default): the disk model alone, CPU free. %d nodes in one process in a testing/synctest bubble, "+
			"whose clock moves only while every goroutine waits (on an emulated device, the simulated network, a timer): the time the CPUs take is none of the figures', "+
			"so neither the machine's cores nor its load enter them; one DC on the simulated network (%s), each client goroutine calling its node's coordinator directly, "+
			"without the Go client and its connection", schedNodes, schedLANText)
	}
	return fmt.Sprintf("%s, one evenly spaced token each (ring.EvenTokens), "+
		"ordered partitioner balanced by %d split keys of the loaded keys; no replication (simple=1) as in the paper%s. "+
		"%d rows of %d bytes, keys user+FNV digits as YCSB's (the paper: 10 M rows in 1000 column families of 10,000, a scan reading one family; here one keyspace of %d rows stands for a family); "+
		"scan limit uniform in 1..%d (the paper: 1..10,000, a family's rows; scaled with the rows, so that a scan spans as many nodes), scan start a random loaded key; "+
		"%d queries per point (the paper: 2000) from %s concurrent clients, each bound to a random node as YCSB's threads are, gets and scans at ONE. "+
		"Read stage: %d worker(s) per node, %s, each read holding it for an emulated device time of %s (access + per KiB read). "+
		"The paper's nodes read from one disk each with the page cache cleared, so they served reads about one at a time whatever their 32 read threads, and a scan's share of a node cost many gets; "+
		"here the rows sit in memory, and the emulated device puts the bottleneck back in each node's read stage rather than in the CPUs (see the JSON rows' stage and Go scheduler waits). "+
		"Each figure is the median over %d runs per point, the variants' order rotated between runs (the paper kept the best of 10); seed %d",
		cluster, schedSplits, rf3,
		o.rows, schedValueBytes, o.rows, o.limitMax, o.queries, joinInts(o.clients), o.readWorkers, schedDeviceModel(o), o.device, o.repeat, o.seed)
}

// schedDeviceModel says how a node's workers hold the emulated device, and in what time.
func schedDeviceModel(o schedOptions) string {
	model := "each with its own device"
	if o.sharedDevice {
		model = "sharing one device: a worker that ran its read waits its turn at the device in arrival order, the disk's own queue, whatever the policy (--emulate-disk-shared)"
	}
	if o.virtual {
		model += "; in virtual time, the disk model alone, CPU free (--virtual)"
	}
	return model
}

func schedNotes(o schedOptions) []string {
	notes := []string{
		"variants (sched.Variants): O = fifo, the paper's original; ReS = gets before scan pages; P = a scan's sub-requests sent at once, to the nodes the gossiped row counts say it needs; RaS = scan pages ordered by the nodes their scan still waits for, then its limit, raised as its other nodes answer; A = ReS+P+RaS; kura = fair+parallel+ras, ordered as A until a scan page is past its deadline at a node, sched.DefaultScanWait per node its scan waits for: overdue pages then go before other scans, earliest deadline first, and alternate with gets once sched.DefaultScanPass gets have gone ahead of them, so that no stream of gets or of smaller scans starves a scan",
		"every variant of a point runs the same queries on the same cluster and data; the policy is switched on every node between runs (node.SetReadPolicy)",
		"repeats: every point runs each variant --repeat times; repeat r runs them in the order of --variants rotated by r, so no variant always runs first. A row's figures are the medians over the repeats, get_mean_spread_pct and scan_mean_spread_pct the (max - min) / median of the mean latencies; the JSON rows have every figure's [min, max] (spread) and each run as measured (repeats, with its position in its repeat's order)",
		"reduction: 100 x (O - variant) / O of the median mean and p99 latency at the same point, as are the done_when checks; positive is faster than O. The paper at 1000 clients: ReS gets -25 % (9:1) and -80 % (5:5), A scans -10 % and -17 %, P gets 2.4 x slower",
		"throughput_qps: the point's queries over the time from the first sent to the last answered",
		"where the time went, in the JSON rows: get_stage_wait_ms_mean and scan_page_stage_wait_ms_mean, the mean wait of a read in a read stage's queue; get_device_wait_ms_mean and scan_page_device_wait_ms_mean, with a shared device (--emulate-disk-shared), its mean wait for the device after its read, holding its worker; go_sched_wait_ms_mean, of a goroutine ready to run for a CPU; scan_pages_mean, the pages read per scan (P reads the ranges its estimate names at once, some of which the limit may not need); scan_device_ms_mean, the emulated device time a scan's pages cost in all, the work it took from the read stages",
		"scans_wrong_rows counts scans that did not return exactly min(limit, rows from the start key on) rows starting at the start key",
	}
	if o.virtual {
		notes = append(notes, "virtual time (--virtual, not the default): every latency and throughput is in virtual time, the emulated devices' and the simulated network's alone; "+
			"what the default run measures besides, the CPUs, the Go scheduler, the GC, the Go client and its HTTP/2 connection, costs nothing here (go_sched_wait_ms_mean is 0, not measured). "+
			"Goroutines that run at one virtual instant run in the Go scheduler's order, so repeats may still differ (their spread says by how much). "+
			"The summary's wall_s is the run's real time, virtual_s its virtual time")
	}
	return notes
}

// ---- keys, cluster and load

// schedKeys returns n distinct keys of YCSB's shape, "user" followed by the decimal FNV-1a
// hash of the row's number (its 8 bytes, least significant first, as YCSB's
// FNVhash64), in key order. The seed offsets the row numbers.
func schedKeys(n int, seed uint64) [][]byte {
	keys := make([][]byte, 0, n)
	seen := map[string]bool{}
	for i := uint64(0); len(keys) < n; i++ {
		h := fnv.New64a()
		var b [8]byte
		for j, v := 0, seed<<32+i; j < 8; j, v = j+1, v>>8 {
			b[j] = byte(v)
		}
		h.Write(b[:])
		k := "user" + strconv.FormatUint(h.Sum64()&(1<<63-1), 10) // YCSB takes the absolute value
		if !seen[k] {
			seen[k] = true
			keys = append(keys, []byte(k))
		}
	}
	slices.SortFunc(keys, bytes.Compare)
	return keys
}

// schedCluster is the bench's 12 nodes, however they run: in this process over loopback
// (startSchedCluster), or in virtual time on the simulated network (--virtual,
// startVirtualSchedCluster).
type schedCluster struct {
	nodes  []*node.Node
	device sched.Device
	// virtual: the nodes run in virtual time, where the CPU costs nothing and the Go
	// scheduler's waits are none of the figures'.
	virtual bool
	// clock names the seconds the progress lines give: "" for real ones.
	clock string
	// connect returns the clients of up to clients query goroutines, each bound to a
	// random node as YCSB binds each of its threads to a random host: that node
	// coordinates the goroutine's gets and scans, reading other nodes' rows as remote
	// reads. Routing to a replica instead, as the Go client does when it knows every
	// node, would send all the gets of a range to the same one of its replicas, the
	// first in node order, and the run with three replicas would measure that node.
	connect func(ctx context.Context, clients int, o schedOptions, keys [][]byte) (schedClients, error)
	close   func() error
}

// schedClients sends the query goroutines' queries, each goroutine's to its node.
type schedClients interface {
	get(ctx context.Context, w int, keyspace string, key []byte) error
	// scan returns how many rows the scan returned and the first one's key.
	scan(ctx context.Context, w int, keyspace string, start []byte, limit int) (rows int, first []byte, err error)
	Close()
}

// configureNode sets what the bench gives every node: the read stage, and a replica
// timeout no saturated read stage reaches.
func (o schedOptions) configureNode(cfg *node.Config) {
	cfg.DefaultReplication = node.NoDefaultKeyspace
	cfg.ReadWorkers = o.readWorkers
	cfg.ReadPolicy = o.variants[0].Policy
	cfg.ReadDevice = o.device
	cfg.ReadDeviceShared = o.sharedDevice
	// A replica read may wait in a saturated read stage far longer than the default
	// 10 s; it must not time out and fail the query.
	cfg.ReplicaTimeout = schedOpTimeout
}

// schedNodeID names node i (from 0).
func schedNodeID(i int) string { return fmt.Sprintf("node-%02d", i+1) }

// bindClients draws the node each of clients query goroutines is bound to.
func bindClients(clients int, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 2))
	nodeOf := make([]int, clients)
	for w := range nodeOf {
		nodeOf[w] = rng.IntN(schedNodes)
	}
	return nodeOf
}

// startSchedCluster starts 12 nodes of one DC in this process, over loopback, one
// evenly spaced token each, with the read stage configured; the queries go through the
// Go client.
func startSchedCluster(env Env, o schedOptions) (*schedCluster, error) {
	dc := topology.Datacenter{Name: "lan"}
	for i := range schedNodes {
		dc.Nodes = append(dc.Nodes, topology.Node{ID: schedNodeID(i)})
	}
	topo := &topology.Topology{Name: "sched-12", Description: "paper 004's cluster: 12 nodes on one LAN", Datacenters: []topology.Datacenter{dc}}
	if err := topo.Validate(); err != nil {
		return nil, err
	}
	tokens := ring.EvenTokens(schedNodes)
	start := time.Now()
	opts := embedded.Options{
		ClientAPI: true,
		Tokens:    func(i int, _ topology.NodeInDC) []uint64 { return []uint64{uint64(tokens[i])} },
	}
	o.configureNode(&opts.Node)
	c, err := embedded.Start(topo, opts)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, n := range c.Nodes {
		addrs = append(addrs, n.ClientAddr())
	}
	env.Progressf("scheduling: %d nodes up in %.1f s, %d read workers each, device %s, shared %v", len(c.Nodes), time.Since(start).Seconds(), o.readWorkers, o.device, o.sharedDevice)
	return &schedCluster{nodes: c.Nodes, device: o.device, close: c.Close,
		connect: func(ctx context.Context, clients int, o schedOptions, keys [][]byte) (schedClients, error) {
			pool, err := dial(ctx, addrs, clients, o.seed)
			if err != nil {
				return nil, err
			}
			if err := warmUp(ctx, pool.all(), o.runs(), keys); err != nil {
				pool.Close()
				return nil, err
			}
			return pool, nil
		}}, nil
}

// schedPool is the Go clients the query goroutines share: byNode[i] are bound to node i.
type schedPool struct {
	byNode [][]*client.Client
	// nodeOf is the node each query goroutine sends its queries to.
	nodeOf []int
}

// dial connects schedConnsPerNode clients to each node, each knowing that node alone
// (StaticNodes keeps it so), and binds each of up to clients query goroutines to a
// random node (bindClients).
func dial(ctx context.Context, addrs []string, clients int, seed uint64) (*schedPool, error) {
	pool := &schedPool{byNode: make([][]*client.Client, len(addrs)), nodeOf: bindClients(clients, seed)}
	for i, addr := range addrs {
		for range schedConnsPerNode {
			c, err := client.Dial(ctx, []string{addr}, client.Options{StaticNodes: true, AttemptTimeout: schedOpTimeout})
			if err != nil {
				pool.Close()
				return nil, err
			}
			pool.byNode[i] = append(pool.byNode[i], c)
		}
	}
	return pool, nil
}

// client returns query goroutine w's client.
func (p *schedPool) client(w int) *client.Client {
	conns := p.byNode[p.nodeOf[w]]
	return conns[w%len(conns)]
}

func (p *schedPool) get(ctx context.Context, w int, keyspace string, key []byte) error {
	_, _, err := p.client(w).Get(ctx, keyspace, key, consistency.One)
	return err
}

func (p *schedPool) scan(ctx context.Context, w int, keyspace string, start []byte, limit int) (int, []byte, error) {
	got, err := p.client(w).Scan(ctx, keyspace, start, nil, limit, consistency.One)
	if err != nil || len(got) == 0 {
		return 0, nil, err
	}
	return len(got), got[0].Key, nil
}

// all returns every client of the pool.
func (p *schedPool) all() []*client.Client {
	var out []*client.Client
	for _, conns := range p.byNode {
		out = append(out, conns...)
	}
	return out
}

// Close closes every client.
func (p *schedPool) Close() { closeClients(p.all()) }

// load creates the run's keyspace through the first node, ordered and balanced by split
// keys of the bench's keys, waits until every node knows it, then writes every key once
// at ALL through the first node's coordinator, a few at a time.
func (sc *schedCluster) load(ctx context.Context, run schedRun, keys [][]byte) error {
	first := sc.nodes[0]
	ks := schema.Keyspace{Name: run.keyspace, Replication: fmt.Sprintf("simple=%d", run.rf), Partitioner: "ordered",
		Splits: schema.SplitsFromSample(keys, schedSplits)}
	if err := first.CreateKeyspace(ctx, ks); err != nil {
		return err
	}
	known, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for i := 0; i < len(sc.nodes); {
		if _, err := sc.nodes[i].Keyspace(run.keyspace); err == nil {
			i++
			continue
		}
		if !ctxtime.Sleep(known, 20*time.Millisecond) {
			return fmt.Errorf("keyspace %s: not known to %s within a minute: %w", run.keyspace, sc.nodes[i].ID(), known.Err())
		}
	}
	const workers = 16
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			value := make([]byte, schedValueBytes)
			random := rand.NewChaCha8([32]byte{byte(w)})
			for {
				i := int(next.Add(1) - 1)
				if i >= len(keys) || ctx.Err() != nil {
					return
				}
				// Random bytes, so that the storage engine's compression does not shrink
				// what a read returns.
				random.Read(value)
				if _, err := first.Coordinator().Put(ctx, run.keyspace, keys[i], value, 0, consistency.All); err != nil {
					errs <- fmt.Errorf("load %s row %d: %w", run.keyspace, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return errors.Join(<-errs, ctx.Err())
}

// rowsPerNode returns how many rows of keyspace each node stores.
func (sc *schedCluster) rowsPerNode(keyspace string) ([]int, error) {
	out := make([]int, len(sc.nodes))
	for i, n := range sc.nodes {
		records, _, err := n.StoredBytes(keyspace)
		if err != nil {
			return nil, err
		}
		out[i] = records
	}
	return out, nil
}

// warmUp has every client read a few keys of every node of every run, and scan once, so
// that no point's first queries pay for connections being set up, between the clients
// and their nodes and between the nodes.
func warmUp(ctx context.Context, pool []*client.Client, runs []schedRun, keys [][]byte) error {
	for _, c := range pool {
		for _, run := range runs {
			for i := range 2 * schedNodes {
				key := keys[i*len(keys)/(2*schedNodes)]
				if _, _, err := c.Get(ctx, run.keyspace, key, consistency.One); err != nil {
					return fmt.Errorf("warm-up: %w", err)
				}
			}
			if _, err := c.Scan(ctx, run.keyspace, keys[0], nil, 1, consistency.One); err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
		}
	}
	return nil
}

// ---- the queries

// schedQuery is one query of a point: a get of keys[key], or a scan from keys[key] of
// up to limit rows.
type schedQuery struct {
	scan  bool
	key   int
	limit int
}

// planQueries draws a point's queries: exactly the mix's share of gets, in random order,
// each key uniform among the loaded ones, each scan's limit uniform in 1..limitMax. The
// plan depends on the seed, the mix and the client count only, so that every variant and
// both replications of a point run the same queries.
func planQueries(o schedOptions, mix schedMix, clients int) []schedQuery {
	rng := rand.New(rand.NewPCG(o.seed, uint64(mix.getPct)<<32|uint64(clients)))
	gets := (o.queries*mix.getPct + 50) / 100
	plan := make([]schedQuery, o.queries)
	for i := range plan {
		plan[i] = schedQuery{scan: i >= gets, key: rng.IntN(o.rows)}
		if plan[i].scan {
			plan[i].limit = 1 + rng.IntN(o.limitMax)
		}
	}
	rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	return plan
}

// measure switches every node to variant v once their read stages are idle, runs one
// point's queries and returns its figures: what the clients saw, and where the time went.
func (sc *schedCluster) measure(ctx context.Context, clients schedClients, run schedRun, v sched.Variant, keys [][]byte, plan []schedQuery, clientCount int) (SchedulingFigures, pointResult, error) {
	for _, n := range sc.nodes {
		n.SetReadPolicy(v.Policy)
	}
	if err := sc.waitIdle(ctx); err != nil {
		return SchedulingFigures{}, pointResult{}, err
	}
	stagesBefore, schedBefore := sc.readStages(), goSchedLatencies()
	res := runPoint(ctx, clients, run.keyspace, keys, plan, clientCount)
	if err := ctx.Err(); err != nil {
		return SchedulingFigures{}, pointResult{}, err
	}
	row := res.figures()
	row.stageFigures(stagesBefore, sc.readStages(), len(res.scans), sc.device)
	// In virtual time no goroutine waits for a CPU: the runtime's figure would be the
	// simulation's own, none of the cluster's.
	if !sc.virtual {
		row.GoSchedWaitMsMean = goSchedWaitMs(schedBefore, goSchedLatencies())
	}
	return row, res, nil
}

// pointResult is what one point measured.
type pointResult struct {
	gets, scans   []time.Duration
	scanRows      []int
	failed, wrong int
	lastErr       error
	elapsed       time.Duration
}

// runPoint runs plan from clients goroutines, each sending its share of the queries one
// after another (client i: queries i, i+clients, ...), all starting at once, as YCSB's
// threads do.
func runPoint(ctx context.Context, pool schedClients, keyspace string, keys [][]byte, plan []schedQuery, clients int) pointResult {
	var mu sync.Mutex
	var res pointResult
	var wg sync.WaitGroup
	begin := make(chan struct{})
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine pointResult
			<-begin
			for i := w; i < len(plan); i += clients {
				q := plan[i]
				opCtx, cancel := context.WithTimeout(ctx, schedOpTimeout)
				t := time.Now()
				var err error
				if q.scan {
					var rows int
					var first []byte
					rows, first, err = pool.scan(opCtx, w, keyspace, keys[q.key], q.limit)
					if err == nil {
						mine.scans = append(mine.scans, time.Since(t))
						mine.scanRows = append(mine.scanRows, rows)
						if want := min(q.limit, len(keys)-q.key); rows != want || !bytes.Equal(first, keys[q.key]) {
							mine.wrong++
						}
					}
				} else {
					err = pool.get(opCtx, w, keyspace, keys[q.key])
					if err == nil {
						mine.gets = append(mine.gets, time.Since(t))
					}
				}
				cancel()
				if err != nil {
					mine.failed++
					mine.lastErr = err
				}
			}
			mu.Lock()
			defer mu.Unlock()
			res.gets = append(res.gets, mine.gets...)
			res.scans = append(res.scans, mine.scans...)
			res.scanRows = append(res.scanRows, mine.scanRows...)
			res.failed += mine.failed
			res.wrong += mine.wrong
			if mine.lastErr != nil {
				res.lastErr = mine.lastErr
			}
		}()
	}
	start := time.Now()
	close(begin)
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// ms converts a duration to milliseconds, to a tenth.
func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 1) }

func (r pointResult) figures() SchedulingFigures {
	return SchedulingFigures{
		GetLatencyMsMean:  ms(time.Duration(stats.Mean(r.gets))),
		GetLatencyMsP99:   ms(stats.Percentile(r.gets, 0.99)),
		ScanLatencyMsMean: ms(time.Duration(stats.Mean(r.scans))),
		ScanLatencyMsP99:  ms(stats.Percentile(r.scans, 0.99)),
		ThroughputQPS:     round(float64(len(r.gets)+len(r.scans))/r.elapsed.Seconds(), 0),
		Failed:            r.failed,
	}
}

// ---- where the time went

// readStages snapshots every node's read stage.
func (sc *schedCluster) readStages() []sched.Stats {
	out := make([]sched.Stats, len(sc.nodes))
	for i, n := range sc.nodes {
		out[i] = n.ReadStage()
	}
	return out
}

// waitIdle waits until no node's read stage runs or queues a read, so that a point
// starts on empty queues even when the last one left reads behind (a parallel scan's
// sub-requests it no longer needed).
func (sc *schedCluster) waitIdle(ctx context.Context) error {
	for {
		idle := true
		for _, st := range sc.readStages() {
			for _, c := range st.ByClass {
				idle = idle && c.Queued == 0
			}
			idle = idle && st.Busy == 0
		}
		if idle {
			return nil
		}
		if !ctxtime.Sleep(ctx, 10*time.Millisecond) {
			return ctx.Err()
		}
	}
}

// stageFigures sets the figures of the read stages between two snapshots of every
// node's: the mean wait in a queue of the gets (local and remote) and of the scan pages
// served, the pages served per scan, their device time per scan, and the share of them
// served past Fair's deadline.
func (f *SchedulingFigures) stageFigures(before, after []sched.Stats, scans int, device sched.Device) {
	var getWait, pageWait, getDeviceWait, pageDeviceWait time.Duration
	var gets, pages, pageBytes, overdue uint64
	for i := range after {
		overdue += after[i].ScanPagesOverdue - before[i].ScanPagesOverdue
		for class, c := range after[i].ByClass {
			b := before[i].ByClass[class]
			wait, deviceWait, served := c.Wait-b.Wait, c.DeviceWait-b.DeviceWait, c.Served-b.Served
			if sched.Class(class) == sched.ScanPage {
				pageWait, pageDeviceWait, pages, pageBytes = pageWait+wait, pageDeviceWait+deviceWait, pages+served, pageBytes+c.ReadBytes-b.ReadBytes
			} else {
				getWait, getDeviceWait, gets = getWait+wait, getDeviceWait+deviceWait, gets+served
			}
		}
	}
	mean := func(total time.Duration, n uint64) float64 {
		if n == 0 {
			return 0
		}
		return ms(total / time.Duration(n))
	}
	f.GetStageWaitMsMean, f.ScanPageStageWaitMsMean = mean(getWait, gets), mean(pageWait, pages)
	f.GetDeviceWaitMsMean, f.ScanPageDeviceWaitMsMean = mean(getDeviceWait, gets), mean(pageDeviceWait, pages)
	f.ScanPagesMean = round(float64(pages)/float64(max(1, scans)), 1)
	f.ScanDeviceMsMean = mean(device.Work(pages, pageBytes), uint64(scans))
	if pages > 0 {
		f.ScanPagesOverduePct = round(100*float64(overdue)/float64(pages), 1)
	}
}

// goSchedMetric is the runtime's histogram of how long goroutines were ready to run
// before they ran: queueing for a CPU rather than in a read stage.
const goSchedMetric = "/sched/latencies:seconds"

func goSchedLatencies() *metrics.Float64Histogram {
	sample := []metrics.Sample{{Name: goSchedMetric}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return sample[0].Value.Float64Histogram()
}

// goSchedWaitMs returns the mean of the scheduler latencies sampled between two reads of
// the histogram, each counted at its bucket's middle (the finite bound of an open
// bucket).
func goSchedWaitMs(before, after *metrics.Float64Histogram) float64 {
	if before == nil || after == nil {
		return 0
	}
	var n uint64
	var sum float64
	for i, count := range after.Counts {
		count -= before.Counts[i]
		lo, hi := after.Buckets[i], after.Buckets[i+1]
		mid := (lo + hi) / 2
		switch {
		case math.IsInf(lo, -1):
			mid = hi
		case math.IsInf(hi, 1):
			mid = lo
		}
		n += count
		sum += float64(count) * mid
	}
	if n == 0 {
		return 0
	}
	return round(1000*sum/float64(n), 2)
}

// ---- reductions, targets and the figure

// schedReductions compares every variant but O with O at the same point, the medians of
// each; rows list a point's variants O first, whatever order they ran in.
func schedReductions(rows []SchedulingRow) []SchedulingReduction {
	pct := func(o, v float64) float64 {
		if o == 0 {
			return 0
		}
		return round(100*(o-v)/o, 1)
	}
	var out []SchedulingReduction
	var base SchedulingRow
	for i, r := range rows {
		if i == 0 || r.RF != base.RF || r.Mix != base.Mix || r.Clients != base.Clients {
			base = r
			continue
		}
		out = append(out, SchedulingReduction{RF: r.RF, Mix: r.Mix, Clients: r.Clients, Variant: r.Variant,
			GetMeanPct: pct(base.GetLatencyMsMean, r.GetLatencyMsMean), GetP99Pct: pct(base.GetLatencyMsP99, r.GetLatencyMsP99),
			ScanMeanPct: pct(base.ScanLatencyMsMean, r.ScanLatencyMsMean), ScanP99Pct: pct(base.ScanLatencyMsP99, r.ScanLatencyMsP99)})
	}
	return out
}

// doneWhen measures the targets at the run's largest client count (the paper's
// 1000) without replication: ReS's gets and A's scans against O, kura's against A's,
// and kura's scan p99 against O's; and, at the largest count of the run with three
// replicas (rf3Clients, none when empty), kura's against A's again. A variant the run
// left out is not checked.
func doneWhen(reductions []SchedulingReduction, clients, rf3Clients []int) []schedCheck {
	var out []schedCheck
	for _, run := range []struct {
		rf      int
		clients []int
		suffix  string
	}{{1, clients, ""}, {3, rf3Clients, ", rf 3"}} {
		if len(run.clients) == 0 {
			continue
		}
		most := slices.Max(run.clients)
		find := func(mix, variant string) (SchedulingReduction, bool) {
			i := slices.IndexFunc(reductions, func(r SchedulingReduction) bool {
				return r.RF == run.rf && r.Mix == mix && r.Clients == most && r.Variant == variant
			})
			if i < 0 {
				return SchedulingReduction{}, false
			}
			return reductions[i], true
		}
		add := func(check string, want, got float64) {
			out = append(out, schedCheck{Check: fmt.Sprintf("%s%s, %d clients", check, run.suffix, most), WantPct: want, GotPct: got, Met: got >= want})
		}
		for _, t := range []struct {
			mix           string
			resGet, aScan float64
		}{{"9:1", 25, 10}, {"5:5", 80, 17}} {
			res, okRes := find(t.mix, "ReS")
			a, okA := find(t.mix, "A")
			k, okK := find(t.mix, "kura")
			// The paper's targets are without replication.
			if okRes && run.rf == 1 {
				add("ReS get mean vs O, "+t.mix, t.resGet, res.GetMeanPct)
			}
			if okA && run.rf == 1 {
				add("A scan mean vs O, "+t.mix, t.aScan, a.ScanMeanPct)
			}
			if okK && okA {
				add("kura get mean vs O (want A's), "+t.mix, a.GetMeanPct, k.GetMeanPct)
				add("kura scan mean vs O (want A's), "+t.mix, a.ScanMeanPct, k.ScanMeanPct)
			}
			if okK && run.rf == 1 {
				add("kura scan p99 vs O, "+t.mix, 0, k.ScanP99Pct)
			}
		}
	}
	return out
}

// schedFigures draws the paper's Figs. 5-8 from the run without replication: the mean
// latency of gets and of scans against the clients, one line per variant, for each mix.
func schedFigures(rows []SchedulingRow) []Figure {
	var figures []Figure
	fig := 5
	for _, mix := range schedMixes {
		for _, kind := range []string{"gets", "scans"} {
			f := Figure{Title: fmt.Sprintf("Fig. %d: %s, single:scan %s", fig, kind, mix.name), XLabel: "clients", YLabel: "mean latency (ms)"}
			fig++
			var order []string
			byVariant := map[string]*Series{}
			for _, r := range rows {
				if r.RF != 1 || r.Mix != mix.name {
					continue
				}
				s, ok := byVariant[r.Variant]
				if !ok {
					s = &Series{Name: r.Variant}
					byVariant[r.Variant] = s
					order = append(order, r.Variant)
				}
				y := r.GetLatencyMsMean
				if kind == "scans" {
					y = r.ScanLatencyMsMean
				}
				s.X, s.Y = append(s.X, float64(r.Clients)), append(s.Y, y)
				if !slices.Contains(f.XTicks, float64(r.Clients)) {
					f.XTicks = append(f.XTicks, float64(r.Clients))
				}
			}
			for _, name := range order {
				f.Series = append(f.Series, *byVariant[name])
			}
			figures = append(figures, f)
		}
	}
	return figures
}
