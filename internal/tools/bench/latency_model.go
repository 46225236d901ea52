package bench

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/base/stats"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/io/topology"
	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/tools/model"
)

func init() {
	Register(Bench{
		Name:    "latency-model",
		Summary: "paper 002: predicted against measured write and read latency over delayed links",
		Setup:   setupLatencyModel,
	})
}

// latencyModelConfig holds the bench's flags.
type latencyModelConfig struct {
	ops        int
	delays     string
	setups     string
	valueBytes int
	blocks     int
	pings      int
}

func setupLatencyModel(fs *flag.FlagSet) Runner {
	cfg := &latencyModelConfig{}
	fs.IntVar(&cfg.ops, "ops", 180, "operations per row, all through node 1 (the paper ran 100,000 inserts); a multiple of --blocks")
	fs.IntVar(&cfg.blocks, "blocks", 10, "blocks each row's operations are split into, run at different times; a row's measurement is the median of its block means")
	fs.StringVar(&cfg.delays, "delays", "", "one-way delays in ms for every setup, e.g. 0,4 (default: the paper's, 0,4,8,16 and 0,4,8); 0 is always run, it calibrates t_proc")
	fs.StringVar(&cfg.setups, "setups", strings.Join(paperSetupNames(), ","), "setups to run")
	fs.IntVar(&cfg.valueBytes, "value-bytes", 256, "value size")
	fs.IntVar(&cfg.pings, "pings", 10, "round trips that measure each emulated link before each block")
	return func(ctx context.Context, env Env) (*Report, error) {
		return runLatencyModel(ctx, env, *cfg)
	}
}

// paperSetup is one of paper 002's two test beds.
type paperSetup struct {
	name     string
	delaysMs []float64
	// topology builds the setup with the given one-way delay on its delayed links.
	topology func(delayMs float64) *topology.Topology
	// paperP is the p the paper prints for inserts, by level and RF - 1.
	paperP map[consistency.Level][3]float64
}

// paperSetups are the paper's setups. The three nodes of the first sit behind their own
// delayed links, so the bench gives each its own DC: "another node" is "another DC".
var paperSetups = []paperSetup{
	{
		name:     "3-node",
		delaysMs: []float64{0, 4, 8, 16},
		topology: func(delayMs float64) *topology.Topology {
			return delayedTopology("paper002-3-node", delayMs, [][]string{{"node-1"}, {"node-2"}, {"node-3"}})
		},
		paperP: map[consistency.Level][3]float64{
			consistency.Any:    {3. / 4, 2. / 4, 0},
			consistency.One:    {3. / 4, 2. / 4, 0},
			consistency.Quorum: {2. / 4, 1, 1},
			consistency.All:    {2. / 4, 1, 1},
		},
	},
	{
		name:     "6-node-2dc",
		delaysMs: []float64{0, 4, 8},
		topology: func(delayMs float64) *topology.Topology {
			return delayedTopology("paper002-6-node-2dc", delayMs, [][]string{{"node-1", "node-2", "node-3"}, {"node-4", "node-5", "node-6"}})
		},
		paperP: map[consistency.Level][3]float64{
			consistency.Any:    {3. / 6, 2. / 6, 1. / 6},
			consistency.One:    {3. / 6, 2. / 6, 1. / 6},
			consistency.Quorum: {3. / 6, 4. / 6, 3. / 6},
			consistency.All:    {3. / 6, 4. / 6, 5. / 6},
		},
	},
}

func paperSetupNames() []string {
	names := make([]string, len(paperSetups))
	for i, s := range paperSetups {
		names[i] = s.name
	}
	return names
}

// delayedTopology puts each group of nodes in its own DC, DCs dc1, dc2 ...: no delay
// inside a DC, delayMs one way between any two, bandwidth unlimited.
func delayedTopology(name string, delayMs float64, groups [][]string) *topology.Topology {
	topo := &topology.Topology{
		Name:        name,
		Description: fmt.Sprintf("paper 002: %.0f ms one way between DCs, none inside, bandwidth unlimited", delayMs),
	}
	for i, group := range groups {
		dc := topology.Datacenter{Name: "dc" + strconv.Itoa(i+1)}
		for _, id := range group {
			dc.Nodes = append(dc.Nodes, topology.Node{ID: id})
		}
		topo.Datacenters = append(topo.Datacenters, dc)
		for j := range i {
			topo.Links = append(topo.Links, topology.Link{Between: [2]string{"dc" + strconv.Itoa(j+1), dc.Name}, LatencyMs: delayMs})
		}
	}
	return topo
}

// latencyCell is one row's workload on one cluster.
type latencyCell struct {
	rf    int
	level consistency.Level
	op    model.Op
	// incr marks a counter's INCR (a write at SERIAL that reads the key it writes, as
	// Redis's INCR runs by default), measured on a key a first INCR just created.
	incr bool
}

// name is the cell's operation as the report names it.
func (c latencyCell) name() string {
	if c.incr {
		return "incr"
	}
	return c.op.String()
}

// latencyCells lists the rows of one cluster: per RF, inserts at the paper's four levels
// and at SERIAL (a lightweight transaction that writes whatever it finds), INCRs at
// SERIAL, then reads at the three read levels and at SERIAL of the keys the ALL inserts
// wrote (so every replica holds them and no read repairs).
func latencyCells() []latencyCell {
	var cells []latencyCell
	for rf := 1; rf <= 3; rf++ {
		for _, level := range []consistency.Level{consistency.Any, consistency.One, consistency.Quorum, consistency.All, consistency.Serial} {
			cells = append(cells, latencyCell{rf: rf, level: level, op: model.Write})
		}
		cells = append(cells, latencyCell{rf: rf, level: consistency.Serial, op: model.Write, incr: true})
		for _, level := range []consistency.Level{consistency.One, consistency.Quorum, consistency.All, consistency.Serial} {
			cells = append(cells, latencyCell{rf: rf, level: level, op: model.Read})
		}
	}
	return cells
}

// latencyModelRow is one row of the report.
type latencyModelRow struct {
	Setup       string  `json:"setup" table:"group"`
	DelayMs     float64 `json:"delay_ms" table:"group"`
	RF          int     `json:"rf"`
	Consistency string  `json:"consistency"`
	Op          string  `json:"op"`
	// P is kura's p derived from the placement; PaperP the paper's printed one (inserts).
	P      float64  `json:"p"`
	PaperP *float64 `json:"paper_p"`
	// RoundTrips is how many times a request waits for the level's replies: 2 for a
	// SERIAL insert or INCR (prepare, propose; the commit is not waited for), 1 otherwise.
	RoundTrips int `json:"round_trips"`
	// LatencyMsPredicted uses the calibrated t_proc and the measured round trips of the
	// emulated links; LatencyMsNominal the same t_proc with the topology's nominal latency.
	LatencyMsPredicted float64 `json:"latency_ms_predicted"`
	LatencyMsNominal   float64 `json:"latency_ms_nominal"`
	// LatencyMsMeasured is the median of the row's block means; LatencyMsAllOps the plain
	// mean of all its operations, for comparison.
	LatencyMsMeasured float64 `json:"latency_ms_measured"`
	LatencyMsAllOps   float64 `json:"latency_ms_all_ops" table:"-"`
	// ErrorFraction is |predicted - measured| / measured.
	ErrorFraction float64 `json:"error_fraction"`
	// WithinBound: |predicted - measured| <= max(10 % of measured, 0.5 ms).
	WithinBound bool `json:"within_bound"`
}

// latencyRun is one cluster's measurements, kept until its setup's t_proc is known.
type latencyRun struct {
	delayMs  float64
	topo     *topology.Topology
	probed   probedLinks
	keyBytes int // a typical key's size, for sizing messages
	// blockMeans[i][b] is cell i's mean latency in block b (cells in latencyCells order).
	blockMeans [][]time.Duration
}

// measured is cell i's measurement: the median of its block means. A block that another
// process's burst of CPU use slowed is outvoted by the others.
func (r latencyRun) measured(i int) time.Duration { return stats.Median(r.blockMeans[i]) }

// allOps is cell i's plain mean over all its operations (blocks are of equal size).
func (r latencyRun) allOps(i int) time.Duration {
	var total time.Duration
	for _, mean := range r.blockMeans[i] {
		total += mean
	}
	return total / time.Duration(len(r.blockMeans[i]))
}

// latencyCoordinator is the node every request goes to: node 1, as in the paper.
const latencyCoordinator = "node-1"

func runLatencyModel(ctx context.Context, env Env, cfg latencyModelConfig) (*Report, error) {
	started := time.Now()
	loadAtStart, _ := loadAverage()
	if cfg.ops <= 0 || cfg.blocks <= 0 || cfg.pings <= 0 || cfg.valueBytes < 0 || cfg.ops%cfg.blocks != 0 {
		return nil, fmt.Errorf("latency-model: --ops %d, --blocks %d and --pings %d must be positive, --ops a multiple of --blocks, --value-bytes %d not negative",
			cfg.ops, cfg.blocks, cfg.pings, cfg.valueBytes)
	}
	setups, err := chooseSetups(cfg.setups)
	if err != nil {
		return nil, err
	}
	var overrideDelays []float64
	if cfg.delays != "" {
		if overrideDelays, err = parseDelays(cfg.delays); err != nil {
			return nil, err
		}
	}
	delaysOf := func(setup paperSetup) []float64 {
		if overrideDelays != nil {
			return withZero(overrideDelays)
		}
		return withZero(setup.delaysMs)
	}
	// A block's operations wait on the delayed links: its cost grows with the delay.
	blockWeight := func(delayMs float64) float64 { return 1 + delayMs }
	total := 0.0
	for _, setup := range setups {
		for _, delayMs := range delaysOf(setup) {
			total += blockWeight(delayMs) * float64(cfg.blocks)
		}
	}
	progress := env.StartProgress("latency-model", total)
	defer progress.Done()
	var rows []latencyModelRow
	processingMs := map[string]float64{}
	roundTripMs := map[string]map[string]float64{}
	for _, setup := range setups {
		var runs []latencyRun
		for _, delayMs := range delaysOf(setup) {
			block := func(b int) {
				doing := fmt.Sprintf("block %d of %d", b+1, cfg.blocks)
				if b == cfg.blocks {
					doing = "measured"
				}
				progress.Add(blockWeight(delayMs)*float64(min(b, 1)), "%s, %v ms one way, %d rows of %d operations: %s",
					setup.name, delayMs, len(latencyCells()), cfg.ops, doing)
			}
			run, err := runLatencyCluster(ctx, setup.topology(delayMs), cfg, block)
			if err != nil {
				return nil, fmt.Errorf("latency-model %s at %v ms: %w", setup.name, delayMs, err)
			}
			run.delayMs = delayMs
			runs = append(runs, run)
			roundTripMs[fmt.Sprintf("%s/%vms", setup.name, delayMs)] = run.probed.roundTripMs()
		}
		processing, err := calibrateProcessing(runs[0], cfg)
		if err != nil {
			return nil, err
		}
		processingMs[setup.name] = milliseconds(processing)
		for _, run := range runs {
			setupRows, err := predictRows(setup, run, processing, cfg)
			if err != nil {
				return nil, err
			}
			rows = append(rows, setupRows...)
		}
	}
	tally := tallyLatencyRows(rows)
	summary := map[string]any{
		"rows":                     len(rows),
		"rows_within_bound":        tally.within,
		"rows_calibration":         tally.calibration,
		"rows_under_floor":         tally.underFloor,
		"rows_tested":              tally.tested,
		"rows_tested_within_bound": tally.testedWithin,
		"wall_time_s":              math.Round(time.Since(started).Seconds()),
	}
	// Other processes on the machine slow the measurement, not the model: say how busy it was.
	if loadAtEnd, ok := loadAverage(); ok {
		summary["load_average_1m"] = []float64{loadAtStart, loadAtEnd}
	}
	return &Report{
		Bench: "latency-model",
		Scale: fmt.Sprintf("%d operations per row in %d blocks (the paper: 100,000 inserts), %d-byte values, one at a time through node 1's coordinator in process; %d pings per emulated link before each block",
			cfg.ops, cfg.blocks, cfg.valueBytes, cfg.pings),
		Rows:    rows,
		Fits:    map[string]any{"t_proc_ms": processingMs, "round_trip_ms_from_node_1": roundTripMs},
		Summary: summary,
		Notes: []string{
			"p: share of the key space whose request must wait on a reply from outside node 1's DC, derived from the ring; in the 3-node setup every node is its own DC, so it is the paper's \"other node\" rate. paper_p is the paper's printed value (it gives inserts only); see docs/latency-model.md for its slips.",
			"t_proc (fits) is calibrated per setup: measured latency minus the model's network wait over the setup's 0 ms rows, per round trip (a SERIAL insert or INCR waits twice: prepare, propose; its commit is not waited for). It is the only figure fitted to the workload.",
			"latency_ms_predicted feeds the model the round trips the emulated links actually deliver, measured with bare transports before each block (fits: round_trip_ms_from_node_1, the median of the block means); latency_ms_nominal uses the topology's nominal delay. The difference is the emulator's timer lateness: Go's netpoller sleeps in whole milliseconds, so a delayed frame arrives up to 1 ms late.",
			"Each row's operations run in blocks at different times (block 1 of every row, then block 2 ...), each block a complete stratified sample; latency_ms_measured is the median of the block means, so a few blocks slowed by another process's burst of CPU use (summary: load_average_1m at start and end) do not decide the row. latency_ms_all_ops is the plain mean.",
			"incr rows: a counter's INCR as Redis's default INCR runs it, a lightweight transaction that reads the stored decimal and writes it plus one; each key is incremented twice back to back through node 1 and the second INCR is timed, an existing key with the first's commit perhaps still on its way. The model predicts it as a SERIAL write.",
			"Keys change with every insert and are stratified: the i-th of n keys of a row hashes into the i-th of n equal slices of the ring, so a few hundred operations weigh each token range by its exact share, as the paper's 100,000 random keys do by volume. Operations go in a shuffled order.",
			"Requests go straight to node 1's coordinator in this process, not through the gRPC client: the model is about the coordinator's wait on replicas, and a client hop would only add a constant and contend for the 2 cores.",
			"within_bound: |predicted - measured| <= max(10 % of measured, 0.5 ms). Not every row tests the model: the 0 ms rows calibrate t_proc (rows_calibration), and a row measured under 5 ms is judged by the 0.5 ms floor, which a wrong model can meet too (rows_under_floor); rows_tested counts the others, rows_tested_within_bound those of them within the bound.",
		},
		Plot: func(path string) error { return plotLatencyModel(rows, path) },
	}, nil
}

// latencyFloorMs is the bound's floor: under 5 ms measured, 10 % is less than it.
const latencyFloorMs = 0.5

// latencyTally counts the rows by what they can show of the model.
type latencyTally struct {
	within, calibration, underFloor, tested, testedWithin int
}

// tallyLatencyRows sorts the rows into those that calibrate t_proc (0 ms delay), those the
// floor judges, and those that test the model.
func tallyLatencyRows(rows []latencyModelRow) latencyTally {
	var t latencyTally
	for _, r := range rows {
		if r.WithinBound {
			t.within++
		}
		switch {
		case r.DelayMs == 0:
			t.calibration++
		case 0.1*r.LatencyMsMeasured < latencyFloorMs:
			t.underFloor++
		default:
			t.tested++
			if r.WithinBound {
				t.testedWithin++
			}
		}
	}
	return t
}

// loadAverage returns the machine's one-minute load average, where the system reports it
// (/proc/loadavg on Linux).
func loadAverage() (float64, bool) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0, false
	}
	load, err := strconv.ParseFloat(fields[0], 64)
	return load, err == nil
}

// chooseSetups resolves the --setups list.
func chooseSetups(list string) ([]paperSetup, error) {
	var chosen []paperSetup
	for _, name := range strings.Split(list, ",") {
		i := slices.IndexFunc(paperSetups, func(s paperSetup) bool { return s.name == strings.TrimSpace(name) })
		if i < 0 {
			return nil, fmt.Errorf("latency-model: unknown setup %q (have %s)", name, strings.Join(paperSetupNames(), ", "))
		}
		chosen = append(chosen, paperSetups[i])
	}
	return chosen, nil
}

func parseDelays(list string) ([]float64, error) {
	var delays []float64
	for _, field := range strings.Split(list, ",") {
		d, err := strconv.ParseFloat(strings.TrimSpace(field), 64)
		if err != nil || d < 0 || math.IsInf(d, 0) {
			return nil, fmt.Errorf("latency-model: --delays: %q is not a non-negative number of ms", field)
		}
		delays = append(delays, d)
	}
	return delays, nil
}

// withZero returns the delays sorted, 0 first and once: the 0 ms run calibrates t_proc.
func withZero(delays []float64) []float64 {
	out := slices.Sorted(slices.Values(append([]float64{0}, delays...)))
	return slices.Compact(out)
}

// runLatencyCluster starts the cluster of topo with one evenly spaced token per node,
// measures its links and runs every cell through node 1; it calls block with each
// block's index as the block starts (those before it done), and with cfg.blocks at the end.
func runLatencyCluster(ctx context.Context, topo *topology.Topology, cfg latencyModelConfig, block func(int)) (latencyRun, error) {
	layout := model.EvenLayout(len(topo.Nodes()))
	c, err := embedded.Start(topo, embedded.Options{
		EmulateWAN: true,
		Tokens: func(index int, node topology.NodeInDC) []uint64 {
			tokens := layout(index, node)
			out := make([]uint64, len(tokens))
			for i, t := range tokens {
				out[i] = uint64(t)
			}
			return out
		},
	})
	if err != nil {
		return latencyRun{}, err
	}
	defer c.Close()
	for rf := 1; rf <= 3; rf++ {
		if err := c.CreateKeyspace(ctx, schema.Keyspace{Name: latencyKeyspace(rf), Replication: fmt.Sprintf("simple=%d", rf)}); err != nil {
			return latencyRun{}, err
		}
	}
	convergeCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.WaitConverged(convergeCtx); err != nil {
		return latencyRun{}, err
	}
	coordinatorDC, _ := topo.DCOf(latencyCoordinator)
	cells := latencyCells()
	run := latencyRun{topo: topo, blockMeans: make([][]time.Duration, len(cells))}
	probes := map[string][]time.Duration{} // by DC: each block's mean round trip
	co := c.Node(latencyCoordinator).Coordinator()
	value := make([]byte, cfg.valueBytes)
	for b := range cfg.blocks {
		block(b)
		roundTrips, err := probeLinks(ctx, topo, coordinatorDC, cfg.pings)
		if err != nil {
			return latencyRun{}, err
		}
		for dc, rtt := range roundTrips {
			probes[dc] = append(probes[dc], rtt)
		}
		written := map[int][][]byte{} // by RF: the keys this block's ALL inserts wrote
		for i, cell := range cells {
			keys := written[cell.rf]
			if cell.op == model.Write {
				prefix := fmt.Sprintf("%s/rf%d/%v/%d", topo.Name, cell.rf, cell.level, b)
				if cell.incr {
					prefix += "/incr"
				}
				keys = stratifiedKeys(prefix, cfg.ops/cfg.blocks)
				if cell.level == consistency.All {
					written[cell.rf] = keys
				}
				run.keyBytes = len(keys[0])
			}
			mean, err := measureCell(ctx, co, cell, keys, value)
			if err != nil {
				return latencyRun{}, fmt.Errorf("RF %d %v %v: %w", cell.rf, cell.level, cell.name(), err)
			}
			run.blockMeans[i] = append(run.blockMeans[i], mean)
		}
	}
	block(cfg.blocks)
	run.probed = probedLinks{topo: topo, from: coordinatorDC, roundTrip: map[string]time.Duration{}}
	for dc, rtts := range probes {
		run.probed.roundTrip[dc] = stats.Median(rtts)
	}
	return run, nil
}

func latencyKeyspace(rf int) string { return "latency_rf" + strconv.Itoa(rf) }

// measureCell runs a cell's operations one after another and returns their mean latency.
// An INCR cell increments each key twice, back to back, and times the second: an INCR of
// an existing counter, with the first's commit perhaps still on its way, as a client's
// INCRs of one key through one node run.
func measureCell(ctx context.Context, co *coord.Coordinator, cell latencyCell, keys [][]byte, value []byte) (time.Duration, error) {
	keyspace := latencyKeyspace(cell.rf)
	var total time.Duration
	for _, key := range keys {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if cell.incr {
			if _, err := co.Update(ctx, keyspace, key, cell.level, increment); err != nil {
				return 0, err
			}
		}
		start := time.Now()
		var err error
		switch {
		case cell.incr:
			var res coord.UpdateResult
			res, err = co.Update(ctx, keyspace, key, cell.level, increment)
			if err == nil && string(res.Record.Value) != "2" {
				err = fmt.Errorf("key %q: the second INCR wrote %q, want 2", key, res.Record.Value)
			}
		case cell.op == model.Write && cell.level.IsSerial():
			_, err = co.Update(ctx, keyspace, key, cell.level, func(lww.Record, bool) (lww.Record, bool, error) {
				return lww.Record{Value: value}, true, nil
			})
		case cell.op == model.Write:
			_, err = co.Put(ctx, keyspace, key, value, 0, cell.level)
		default:
			var found bool
			_, found, err = co.Get(ctx, keyspace, key, cell.level)
			if err == nil && !found {
				err = fmt.Errorf("key %q was written at ALL but is not found", key)
			}
		}
		total += time.Since(start)
		if err != nil {
			return 0, err
		}
	}
	return total / time.Duration(len(keys)), nil
}

// increment is INCR's transaction: the stored decimal plus one, 1 on a missing key.
func increment(current lww.Record, found bool) (lww.Record, bool, error) {
	var n int64
	if found {
		var err error
		if n, err = strconv.ParseInt(string(current.Value), 10, 64); err != nil {
			return lww.Record{}, false, err
		}
	}
	return lww.Record{Value: strconv.AppendInt(nil, n+1, 10)}, true, nil
}

// stratifiedKeys returns n distinct keys, the i-th hashing into the i-th of n equal slices
// of the ring, in a shuffled order: every token range gets its exact share of a few
// hundred keys, where random keys would need the paper's 100,000 to get close.
func stratifiedKeys(prefix string, n int) [][]byte {
	partitioner := ring.HashPartitioner()
	slice := math.MaxUint64/uint64(n) + 1
	keys := make([][]byte, n)
	for i := range keys {
		base := []byte(fmt.Sprintf("%s/%d/", prefix, i))
		for attempt := 0; ; attempt++ {
			key := strconv.AppendInt(slices.Clip(base), int64(attempt), 10)
			if uint64(partitioner.Token(key))/slice == uint64(i) {
				keys[i] = key
				break
			}
		}
	}
	shuffle := rand.New(rand.NewPCG(uint64(n), 2))
	shuffle.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return keys
}

// calibrateProcessing fits t_proc to the 0 ms run: measured latency minus the model's
// network wait, summed over its rows, per round trip (a lightweight transaction's row
// pays it twice: prepare, propose).
func calibrateProcessing(zero latencyRun, cfg latencyModelConfig) (time.Duration, error) {
	waits, err := predictRun(zero, zero.probed, 0, cfg)
	if err != nil {
		return 0, err
	}
	var excess time.Duration
	roundTrips := 0
	for i, wait := range waits {
		excess += zero.measured(i) - wait.Latency
		roundTrips += wait.RoundTrips // t_proc is paid once per round trip
	}
	return max(0, excess/time.Duration(roundTrips)), nil
}

// predictRun predicts every cell of a run with the given links and t_proc.
func predictRun(run latencyRun, links transport.LinkModel, processing time.Duration, cfg latencyModelConfig) ([]model.Prediction, error) {
	r, err := model.Ring(run.topo, model.EvenLayout(len(run.topo.Nodes())))
	if err != nil {
		return nil, err
	}
	m, err := model.New(r, links, model.Params{Processing: processing, KeyBytes: run.keyBytes, ValueBytes: cfg.valueBytes})
	if err != nil {
		return nil, err
	}
	var preds []model.Prediction
	for _, cell := range latencyCells() {
		pred, err := m.Predict(latencyCoordinator, ring.Simple(cell.rf), cell.level, cell.op)
		if err != nil {
			return nil, err
		}
		preds = append(preds, pred)
	}
	return preds, nil
}

// predictRows turns a run into report rows.
func predictRows(setup paperSetup, run latencyRun, processing time.Duration, cfg latencyModelConfig) ([]latencyModelRow, error) {
	predicted, err := predictRun(run, run.probed, processing, cfg)
	if err != nil {
		return nil, err
	}
	nominal, err := predictRun(run, run.topo, processing, cfg)
	if err != nil {
		return nil, err
	}
	rows := make([]latencyModelRow, len(predicted))
	for i, cell := range latencyCells() {
		pred, meas := milliseconds(predicted[i].Latency), milliseconds(run.measured(i))
		diff := math.Abs(pred - meas)
		rows[i] = latencyModelRow{
			Setup:              setup.name,
			DelayMs:            run.delayMs,
			RF:                 cell.rf,
			Consistency:        cell.level.String(),
			Op:                 cell.name(),
			P:                  predicted[i].P,
			RoundTrips:         predicted[i].RoundTrips,
			LatencyMsPredicted: pred,
			LatencyMsNominal:   milliseconds(nominal[i].Latency),
			LatencyMsMeasured:  meas,
			LatencyMsAllOps:    milliseconds(run.allOps(i)),
			ErrorFraction:      diff / meas,
			WithinBound:        diff <= max(0.1*meas, latencyFloorMs),
		}
		if ps, ok := setup.paperP[cell.level]; ok && cell.op == model.Write {
			rows[i].PaperP = &ps[cell.rf-1]
		}
	}
	return rows, nil
}

func milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// probedLinks is a topology with the round trips measured from one DC put in place of the
// nominal latency of that DC's paths (half each way). On an idle Go runtime the
// emulator's timers fire up to a millisecond late, so its links are slower than their
// figures; the model is given them as they are, like any measured ping time.
type probedLinks struct {
	topo      *topology.Topology
	from      string
	roundTrip map[string]time.Duration // by destination DC
}

// Link implements transport.LinkModel.
func (p probedLinks) Link(fromDC, toDC string) (topology.LinkSpec, error) {
	spec, err := p.topo.Link(fromDC, toDC)
	if err != nil {
		return spec, err
	}
	other := toDC
	if toDC == p.from {
		other = fromDC
	}
	if rtt, ok := p.roundTrip[other]; ok && (fromDC == p.from || toDC == p.from) {
		spec.Latency, spec.Jitter = rtt/2, 0
	}
	return spec, nil
}

func (p probedLinks) roundTripMs() map[string]float64 {
	out := make(map[string]float64, len(p.roundTrip))
	for dc, rtt := range p.roundTrip {
		out[p.from+"-"+dc] = math.Round(milliseconds(rtt)*1000) / 1000
	}
	return out
}

// probeLinks measures the mean round trip from fromDC to every DC of topo (its own
// included) with pairs of bare transports shaped by topo, as the nodes' are.
func probeLinks(ctx context.Context, topo *topology.Topology, fromDC string, pings int) (map[string]time.Duration, error) {
	roundTrips := map[string]time.Duration{}
	for _, dc := range topo.Datacenters {
		rtt, err := probeRoundTrip(ctx, topo, fromDC, dc.Name, pings)
		if err != nil {
			return nil, fmt.Errorf("probe %s -> %s: %w", fromDC, dc.Name, err)
		}
		roundTrips[dc.Name] = rtt
	}
	return roundTrips, nil
}

func probeRoundTrip(ctx context.Context, topo *topology.Topology, fromDC, toDC string, pings int) (time.Duration, error) {
	echo := transport.HandlerFunc(func(_ context.Context, _ transport.Peer, _ transport.Kind, payload []byte) ([]byte, error) {
		return payload, nil
	})
	var ends [2]*transport.Transport
	for i, dc := range []string{fromDC, toDC} {
		t, err := transport.Listen(transport.Config{
			Self:    transport.Peer{ID: fmt.Sprintf("probe-%d", i), DC: dc, Addr: "127.0.0.1:0"},
			Handler: echo,
			Links:   topo,
		})
		if err != nil {
			return 0, err
		}
		defer t.Close()
		ends[i] = t
	}
	peer := ends[1].Self()
	peer.Addr = ends[1].Addr()
	var total time.Duration
	// The first call dials; it is not timed.
	for i := -1; i < pings; i++ {
		start := time.Now()
		if _, err := ends[0].Call(ctx, peer, transport.KindLatencyProbe, []byte("ping")); err != nil {
			return 0, err
		}
		if i >= 0 {
			total += time.Since(start)
		}
	}
	return total / time.Duration(pings), nil
}

// plotLatencyModel draws predicted against measured latency, one series per setup, with
// the line where they are equal.
func plotLatencyModel(rows []latencyModelRow, path string) error {
	fig := Figure{
		Title:  "paper 002 latency model: predicted vs measured (node 1)",
		XLabel: "measured mean latency (ms)",
		YLabel: "predicted mean latency (ms)",
	}
	var top float64
	for _, name := range paperSetupNames() {
		var points []latencyModelRow
		for _, r := range rows {
			if r.Setup == name {
				points = append(points, r)
				top = max(top, r.LatencyMsMeasured, r.LatencyMsPredicted)
			}
		}
		if len(points) == 0 {
			continue
		}
		slices.SortFunc(points, func(a, b latencyModelRow) int {
			return cmp.Compare(a.LatencyMsMeasured, b.LatencyMsMeasured)
		})
		series := Series{Name: name}
		for _, r := range points {
			series.X = append(series.X, r.LatencyMsMeasured)
			series.Y = append(series.Y, r.LatencyMsPredicted)
		}
		fig.Series = append(fig.Series, series)
	}
	fig.Series = append(fig.Series, Series{Name: "predicted = measured", X: []float64{0, top}, Y: []float64{0, top}})
	return fig.Save(path)
}
