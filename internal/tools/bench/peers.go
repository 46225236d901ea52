package bench

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/client"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/base/stats"
	"github.com/kuradb/kura/internal/base/stats/hdr"
	"github.com/kuradb/kura/internal/tools/nemesis"
)

func init() {
	Register(Bench{
		Name:    "peers",
		Summary: "kura beside redis-server and Cassandra 5 on YCSB workloads A, B, C, E and write-only, at equal durability",
		Setup:   setupPeers,
	})
}

// The systems a run can include (--systems).
const (
	peerKura      = "kura"
	peerRedis     = "redis"
	peerCassandra = "cassandra"
)

// The rows' system names: what ran and through which client.
const (
	sysKura    = "kura"     // kura through its Go client (gRPC)
	sysKuraWAN = "kura-wan" // the same, the WAN between the DCs emulated
	// The same two through a client that batches waiting requests (--client-batching on):
	// labelled rows, shown beside the like-for-like ones and judged by no goal.
	sysKuraBatching    = "kura-batching"
	sysKuraWANBatching = "kura-wan-batching"
	sysKuraRESP        = "kura-resp"     // kura's Redis port through go-redis
	sysRedisAlways     = "redis-always"  // redis-server, appendfsync always
	sysRedisDefault    = "redis-default" // redis-server as it comes (RDB snapshots, no AOF)
	sysCassandra       = "cassandra"     // Cassandra 5 through gocql, token-aware, no write coalescing
	// sysCassandraCoalescing is the same through gocql's default, which coalesces the
	// writes to a connection for up to 200 µs (--gocql-coalescing on): a labelled row.
	sysCassandraCoalescing = "cassandra-coalescing"
)

// The layouts (--layouts): one node; three nodes in two DCs, 2 + 1, where every node
// holds every key; four nodes in two DCs, 2 + 2, one replica in each DC, where each node
// holds half the keys, so that neither a row cache nor a scan is flattered by a node
// that holds everything.
const (
	layoutOne   = "1 node"
	layoutThree = "3 nodes, 2 DCs (2+1)"
	layoutFour  = "4 nodes, 2 DCs (2+2), RF 1 per DC"
)

// layoutReplicas is a layout's replicas per DC, by node count.
var layoutReplicas = map[int]map[string]int{
	1: {"dc1": 1},
	3: {"dc1": 2, "dc2": 1},
	4: {"dc1": 1, "dc2": 1},
}

// kuraReplication is the layout's replication in kura's syntax: "dc1=2,dc2=1".
func kuraReplication(nodes int) string {
	var parts []string
	for _, dc := range slices.Sorted(maps.Keys(layoutReplicas[nodes])) {
		parts = append(parts, fmt.Sprintf("%s=%d", dc, layoutReplicas[nodes][dc]))
	}
	return strings.Join(parts, ",")
}

// peersKeyspace is the keyspace (kura, Cassandra) every row reads and writes.
const peersKeyspace = "ycsb"

// peersOptions are the bench's flags.
type peersOptions struct {
	systems       []string
	layouts       []int // node counts: 1, 3 and 4
	wan           bool
	wanLatency    time.Duration
	keys          int
	valueBytes    int
	clients       []int // closed-loop clients, one set of rows per count
	pipelines     []int // commands per round trip of the Redis-protocol rows
	duration      time.Duration
	warmup        time.Duration
	ops           int
	opTimeout     time.Duration
	distributions []string
	workloads     []workloadMix
	levels        []consistency.Level
	scratch       string
	keep          bool
	bin           string
	cache         string
	heap          string
	quick         bool
	repeats       int
	// batching lists the kura client's batching settings to run, in order: false (one
	// call per request, as gocql and go-redis send them: the like-for-like rows), true
	// (waiting requests go together as GetMany/PutMany: labelled rows).
	batching []bool
	// coalescing lists gocql's write coalescing settings to run, in order, as batching
	// does kura's client's.
	coalescing []bool
}

// peersQuick are --quick's values of the flags not set explicitly: a smoke run of every
// system and layout in a few minutes (Cassandra's start-up is most of it).
var peersQuick = map[string]string{
	"keys":     "2000",
	"duration": "2s",
	"warmup":   "2s",
}

func setupPeers(fs *flag.FlagSet) Runner {
	o := &peersOptions{}
	systems := fs.String("systems", "kura,redis,cassandra", "systems to run, comma-separated: kura, redis, cassandra")
	layouts := fs.String("layouts", "1,3,4", "layouts, comma-separated: 1 (one node), 3 (3 nodes in 2 DCs, 2+1, every node holding every key) and 4 (4 nodes in 2 DCs, 2+2, one replica per DC); redis runs on 1 only")
	fs.BoolVar(&o.wan, "wan", true, "also run kura's 3-node layout with the WAN between its DCs emulated (Cassandra runs without)")
	fs.DurationVar(&o.wanLatency, "wan-latency", 20*time.Millisecond, "one-way latency between the two DCs when the WAN is emulated")
	fs.IntVar(&o.keys, "keys", 100000, "keys loaded before the workloads, which read and write only them")
	fs.IntVar(&o.valueBytes, "value-bytes", 256, "size of every value")
	clients := fs.String("clients", "16", "concurrent clients (closed loop: each sends its next request when the last returns), the same for every system; a comma-separated list runs every row at each count")
	pipeline := fs.String("pipeline", "1", "commands each client sends per round trip on the Redis protocol (kura-resp and redis rows; go-redis pipelining, N commands counted as N operations); a comma-separated list runs those rows at each depth")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "length of each row's run")
	fs.DurationVar(&o.warmup, "warmup", 10*time.Second, "workload A, unmeasured, after the load and before the first row of each system: JIT compilation and caches warm up")
	fs.IntVar(&o.ops, "ops", 0, "end each row's run after this many operations, if sooner than --duration (0: the duration only)")
	fs.DurationVar(&o.opTimeout, "op-timeout", 10*time.Second, "give up on one operation after this long (it counts as an error)")
	dist := fs.String("distribution", distZipfian+","+distUniform, "key choice: zipfian (YCSB's scrambled zipfian), uniform, or both comma-separated")
	workloads := fs.String("workloads", "A,B,C,E,W", "YCSB workloads, comma-separated: A (50/50 read/update), B (95/5), C (read only), E (scans), W (write only)")
	levels := fs.String("consistency", "QUORUM", "consistency levels of the 3- and 4-node layouts, comma-separated (kura and Cassandra alike)")
	fs.StringVar(&o.scratch, "scratch", "", "directory for the servers' data and logs (default: a new one under $TMPDIR, removed at the end)")
	fs.BoolVar(&o.keep, "keep", false, "keep the scratch directory (data and logs) at the end")
	fs.StringVar(&o.bin, "bin", "", "the kura binary whose server subcommand runs kura's nodes (default: the kura that ran kura bench, else kura beside kura-bench or on PATH)")
	fs.StringVar(&o.cache, "cache", defaultPeersCache(), "where Cassandra's jars are kept between runs")
	fs.StringVar(&o.heap, "cassandra-heap", "1G", "heap of each Cassandra node (-Xms and -Xmx)")
	batching := fs.String("client-batching", "both", "kura's Go client: off (one call per request, as gocql and go-redis: the like-for-like rows the goals are judged on), on (requests waiting behind a call in flight go together as one GetMany/PutMany: rows labelled kura-batching), or both")
	coalescing := fs.String("gocql-coalescing", "both", "gocql's write coalescing: off (each request written at once: the rows the goals are judged on), on (gocql's default, up to 200 µs: rows labelled cassandra-coalescing), or both")
	fs.IntVar(&o.repeats, "repeats", 3, "rounds of every row; the systems take turns within each round, and each row reports the median round with the others beside it")
	fs.BoolVar(&o.quick, "quick", false, "a short run: 2,000 keys, 2 s per row and of warm-up, for every flag not set explicitly")
	return func(ctx context.Context, env Env) (*Report, error) {
		if o.quick {
			if err := applyQuick(fs, peersQuick); err != nil {
				return nil, err
			}
		}
		var err error
		if o.systems, err = parseChoices("--systems", *systems, []string{peerKura, peerRedis, peerCassandra}); err != nil {
			return nil, err
		}
		layoutNames, err := parseChoices("--layouts", *layouts, []string{"1", "3", "4"})
		if err != nil {
			return nil, err
		}
		for _, l := range layoutNames {
			n, _ := strconv.Atoi(l)
			o.layouts = append(o.layouts, n)
		}
		if o.batching, err = parseOnOff("--client-batching", *batching); err != nil {
			return nil, err
		}
		if o.coalescing, err = parseOnOff("--gocql-coalescing", *coalescing); err != nil {
			return nil, err
		}
		if o.distributions, err = parseDistributions(*dist); err != nil {
			return nil, err
		}
		if o.workloads, err = parseWorkloads(*workloads); err != nil {
			return nil, err
		}
		for _, l := range strings.Split(*levels, ",") {
			cl, err := consistency.Parse(strings.TrimSpace(l))
			if err != nil {
				return nil, fmt.Errorf("--consistency: %w", err)
			}
			o.levels = append(o.levels, cl)
		}
		if o.clients, err = parseCounts("--clients", *clients); err != nil {
			return nil, err
		}
		if o.pipelines, err = parseCounts("--pipeline", *pipeline); err != nil {
			return nil, err
		}
		if o.keys < 1 || o.valueBytes < 1 || o.duration <= 0 || o.ops < 0 || o.opTimeout <= 0 || o.warmup < 0 || o.repeats < 1 {
			return nil, errors.New("--keys, --value-bytes, --duration, --op-timeout and --repeats must be positive, --ops and --warmup not negative")
		}
		if o.bin == "" && slices.Contains(o.systems, peerKura) {
			if env.KuraBinary == nil {
				return nil, errors.New("name the kura binary whose server subcommand runs kura's nodes: --bin")
			}
			if o.bin, err = env.KuraBinary(); err != nil {
				return nil, fmt.Errorf("find the kura binary: %w", err)
			}
		}
		return runPeers(ctx, env, *o)
	}
}

// parseOnOff reads a setting that runs off, on, or both, in that order.
func parseOnOff(flagName, s string) ([]bool, error) {
	switch s {
	case "off":
		return []bool{false}, nil
	case "on":
		return []bool{true}, nil
	case "both":
		return []bool{false, true}, nil
	}
	return nil, fmt.Errorf("%s %q: want off, on or both", flagName, s)
}

// defaultPeersCache is ~/.cache/kura-peers, or one under the temporary dir without a home.
func defaultPeersCache() string {
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "kura-peers")
	}
	return filepath.Join(os.TempDir(), "kura-peers-cache")
}

// parseChoices reads a comma-separated flag whose values must be among allowed.
func parseChoices(flagName, s string, allowed []string) ([]string, error) {
	var out []string
	for _, v := range strings.Split(s, ",") {
		v = strings.TrimSpace(strings.ToLower(v))
		if !slices.Contains(allowed, v) {
			return nil, fmt.Errorf("%s %q: want %s, comma-separated", flagName, s, strings.Join(allowed, ", "))
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// PeerRow is one workload on one system in one layout, at one client count and
// pipeline depth.
type PeerRow struct {
	Layout      string `json:"layout" table:"group"`
	System      string `json:"system"`
	Consistency string `json:"cl"`
	Clients     int    `json:"clients" table:"group"`
	// Pipeline is how many commands a client sent per round trip: more than 1 on the
	// Redis protocol only. The latencies are then of the round trips.
	Pipeline     int    `json:"pipeline" table:"group"`
	Workload     string `json:"workload"`
	Distribution string `json:"dist"`
	Ops          int    `json:"ops" table:"-"`
	Errors       int    `json:"errors"`
	// FirstError is the first failed operation's error, for the JSON.
	FirstError    string  `json:"first_error,omitempty" table:"-"`
	OpsPerS       float64 `json:"ops_per_s"`
	LatencyMsP50  float64 `json:"latency_ms_p50"`
	LatencyMsP99  float64 `json:"latency_ms_p99"`
	LatencyMsP999 float64 `json:"latency_ms_p999"`
	// CPUSPerKop is the server processes' CPU time (user and system, every node) per
	// 1,000 operations that succeeded.
	CPUSPerKop float64 `json:"cpu_s_per_kop"`
	// PeakRSSBytes is the largest node's peak resident set (VmHWM) so far, since the
	// node started: the load and earlier rows included.
	PeakRSSBytes        uint64   `json:"peak_rss_bytes"`
	PeakRSSBytesPerNode []uint64 `json:"peak_rss_bytes_per_node" table:"-"`
	// StartS is how long the system took from its first process's start until it
	// served requests (a cluster converged, the keyspace created).
	StartS float64 `json:"start_s" table:"-"`
	// ClientCPUSPerKop is the bench process's own CPU time (user and system: the
	// clients, and whatever else the process ran meanwhile) per 1,000 operations.
	ClientCPUSPerKop float64 `json:"client_cpu_s_per_kop" table:"-"`
	// WarmupS is how long the client's warm-up took to reach a stable throughput.
	WarmupS float64 `json:"warmup_s" table:"-"`
	// Rounds are the row's figures in each round, in round order: the row's own figures
	// are their medians (its errors and operations their sums, its peak RSS their
	// largest). OpsSpreadPct is the rounds' ops/s from the lowest to the highest, as a
	// percentage of the median.
	Rounds       []PeerRound `json:"rounds" table:"-"`
	OpsSpreadPct float64     `json:"ops_spread_pct"`
}

// PeerRound is one round's figures of a row.
type PeerRound struct {
	OpsPerS          float64 `json:"ops_per_s"`
	LatencyMsP99     float64 `json:"latency_ms_p99"`
	CPUSPerKop       float64 `json:"cpu_s_per_kop"`
	ClientCPUSPerKop float64 `json:"client_cpu_s_per_kop"`
}

// medianPeerRow is the row of several rounds of one system and cell: the median of each
// figure, the sum of the counts, the largest peak RSS, and every round's figures.
func medianPeerRow(rounds []PeerRow) PeerRow {
	row := rounds[0]
	row.Ops, row.Errors = 0, 0
	figure := func(get func(PeerRow) float64) float64 {
		values := make([]float64, len(rounds))
		for i, r := range rounds {
			values[i] = get(r)
		}
		return stats.Median(values)
	}
	for _, r := range rounds {
		row.Ops += r.Ops
		row.Errors += r.Errors
		if row.FirstError == "" {
			row.FirstError = r.FirstError
		}
		if r.PeakRSSBytes > row.PeakRSSBytes {
			row.PeakRSSBytes, row.PeakRSSBytesPerNode = r.PeakRSSBytes, r.PeakRSSBytesPerNode
		}
		row.Rounds = append(row.Rounds, PeerRound{OpsPerS: r.OpsPerS, LatencyMsP99: r.LatencyMsP99, CPUSPerKop: r.CPUSPerKop, ClientCPUSPerKop: r.ClientCPUSPerKop})
	}
	row.OpsPerS = figure(func(r PeerRow) float64 { return r.OpsPerS })
	row.LatencyMsP50 = figure(func(r PeerRow) float64 { return r.LatencyMsP50 })
	row.LatencyMsP99 = figure(func(r PeerRow) float64 { return r.LatencyMsP99 })
	row.LatencyMsP999 = figure(func(r PeerRow) float64 { return r.LatencyMsP999 })
	row.CPUSPerKop = figure(func(r PeerRow) float64 { return r.CPUSPerKop })
	row.ClientCPUSPerKop = figure(func(r PeerRow) float64 { return r.ClientCPUSPerKop })
	lowest := slices.MinFunc(rounds, func(a, b PeerRow) int { return cmp.Compare(a.OpsPerS, b.OpsPerS) }).OpsPerS
	highest := slices.MaxFunc(rounds, func(a, b PeerRow) int { return cmp.Compare(a.OpsPerS, b.OpsPerS) }).OpsPerS
	if row.OpsPerS > 0 {
		row.OpsSpreadPct = round(100*(highest-lowest)/row.OpsPerS, 1)
	}
	return row
}

// PeerRatio compares kura's row with a peer's of the same layout, level, workload and
// distribution: kura's figure over the peer's.
type PeerRatio struct {
	Layout       string `json:"layout" table:"group"`
	Kura         string `json:"kura"`
	Peer         string `json:"peer"`
	Consistency  string `json:"cl"`
	Clients      int    `json:"clients" table:"group"`
	Pipeline     int    `json:"pipeline" table:"group"`
	Workload     string `json:"workload"`
	Distribution string `json:"dist"`
	// OpsRatio is kura's ops/s over the peer's: above 1, kura did more.
	OpsRatio *float64 `json:"ops_ratio"`
	// P99Ratio, CPURatio and RSSRatio are kura's p99, CPU per operation and peak RSS per
	// node over the peer's: below 1, kura needed less.
	P99Ratio *float64 `json:"p99_ratio"`
	CPURatio *float64 `json:"cpu_ratio"`
	RSSRatio *float64 `json:"rss_ratio"`
	// The ratios are of the rows' medians; the Min and Max fields are the lowest and
	// highest of the rounds' own ratios (kura's round i over the peer's round i, which
	// ran back to back).
	OpsRatioMin *float64 `json:"ops_ratio_min" table:"-"`
	OpsRatioMax *float64 `json:"ops_ratio_max" table:"-"`
	P99RatioMin *float64 `json:"p99_ratio_min" table:"-"`
	P99RatioMax *float64 `json:"p99_ratio_max" table:"-"`
	CPURatioMin *float64 `json:"cpu_ratio_min" table:"-"`
	CPURatioMax *float64 `json:"cpu_ratio_max" table:"-"`
	Note        string   `json:"note,omitempty"`
}

// roundRatios returns the lowest and highest of kura's round figure over the peer's
// same round, nil where a round lacks either.
func roundRatios(kura, peer []PeerRound, figure func(PeerRound) float64) (lowest, highest *float64) {
	for i := range min(len(kura), len(peer)) {
		r := ratioOf(figure(kura[i]), figure(peer[i]))
		if r == nil {
			continue
		}
		if lowest == nil || *r < *lowest {
			lowest = r
		}
		if highest == nil || *r > *highest {
			highest = r
		}
	}
	return lowest, highest
}

// peerPairs are the comparisons the ratios make: kura's rows against the peer's that
// ran at the same durability through the same kind of client.
var peerPairs = []struct{ kura, peer string }{
	{sysKura, sysCassandra},
	{sysKuraWAN, sysCassandra},
	{sysKuraBatching, sysCassandra},
	{sysKuraWANBatching, sysCassandra},
	{sysKura, sysCassandraCoalescing},
	{sysKuraRESP, sysRedisAlways},
	{sysKuraRESP, sysRedisDefault},
}

// peerRatios pairs the rows as peerPairs says, for every layout, level, client count,
// pipeline depth, workload and distribution both ran; a workload the peer cannot run (E on Redis) is listed with the
// reason and no figures.
func peerRatios(rows []PeerRow) []PeerRatio {
	type cell struct {
		layout, cl        string
		clients, pipeline int
		workload, dist    string
	}
	cellOf := func(r PeerRow) cell {
		return cell{r.Layout, r.Consistency, r.Clients, r.Pipeline, r.Workload, r.Distribution}
	}
	var cells []cell
	for _, r := range rows {
		if c := cellOf(r); !slices.Contains(cells, c) {
			cells = append(cells, c)
		}
	}
	find := func(system string, c cell) (PeerRow, bool) {
		i := slices.IndexFunc(rows, func(r PeerRow) bool {
			return r.System == system && cellOf(r) == c
		})
		if i < 0 {
			return PeerRow{}, false
		}
		return rows[i], true
	}
	ranIn := func(system, layout string) bool {
		return slices.ContainsFunc(rows, func(r PeerRow) bool { return r.System == system && r.Layout == layout })
	}
	var out []PeerRatio
	for _, pair := range peerPairs {
		for _, c := range cells {
			ratio := PeerRatio{Layout: c.layout, Kura: pair.kura, Peer: pair.peer, Consistency: c.cl, Clients: c.clients, Pipeline: c.pipeline,
				Workload: c.workload, Distribution: c.dist}
			k, okKura := find(pair.kura, c)
			p, okPeer := find(pair.peer, c)
			switch {
			case okKura && okPeer:
				ratio.OpsRatio = ratioOf(k.OpsPerS, p.OpsPerS)
				ratio.P99Ratio = ratioOf(k.LatencyMsP99, p.LatencyMsP99)
				ratio.CPURatio = ratioOf(k.CPUSPerKop, p.CPUSPerKop)
				ratio.RSSRatio = ratioOf(float64(k.PeakRSSBytes), float64(p.PeakRSSBytes))
				ratio.OpsRatioMin, ratio.OpsRatioMax = roundRatios(k.Rounds, p.Rounds, func(r PeerRound) float64 { return r.OpsPerS })
				ratio.P99RatioMin, ratio.P99RatioMax = roundRatios(k.Rounds, p.Rounds, func(r PeerRound) float64 { return r.LatencyMsP99 })
				ratio.CPURatioMin, ratio.CPURatioMax = roundRatios(k.Rounds, p.Rounds, func(r PeerRound) float64 { return r.CPUSPerKop })
				switch pair.kura {
				case sysKuraWAN:
					ratio.Note = "WAN emulated for kura only"
				case sysKuraBatching:
					ratio.Note = "kura's client batching on: no goal"
				case sysKuraWANBatching:
					ratio.Note = "WAN emulated for kura only; client batching on: no goal"
				}
				if pair.peer == sysCassandraCoalescing {
					ratio.Note = "gocql's write coalescing on: no goal"
				}
			case c.workload == "E" && strings.HasPrefix(pair.peer, "redis") && ranIn(pair.kura, c.layout) && ranIn(pair.peer, c.layout):
				ratio.Note = "n/a: Redis has no range scans"
			default:
				continue
			}
			out = append(out, ratio)
		}
	}
	// One block per layout in the table, each pair's rows together within it.
	layoutOrder := func(r PeerRatio) int {
		return slices.IndexFunc(cells, func(c cell) bool { return c.layout == r.Layout })
	}
	slices.SortStableFunc(out, func(a, b PeerRatio) int { return layoutOrder(a) - layoutOrder(b) })
	return out
}

// peerRatioRanges sums the ratios up: for each pair (kura-resp/redis-always...), the
// smallest and largest of each ratio over every layout, level, workload and distribution.
func peerRatioRanges(ratios []PeerRatio) map[string]any {
	out := map[string]any{}
	for _, pair := range peerPairs {
		ranges := map[string]any{}
		for _, column := range ratioColumns {
			var values []float64
			for _, r := range ratios {
				if r.Kura == pair.kura && r.Peer == pair.peer && column.get(r) != nil {
					values = append(values, *column.get(r))
				}
			}
			if len(values) > 0 {
				ranges[column.name+"_ratio_min"] = slices.Min(values)
				ranges[column.name+"_ratio_max"] = slices.Max(values)
			}
		}
		addGoals(ranges, ratios, pair.kura, pair.peer)
		if len(ranges) > 0 {
			out[pair.kura+"/"+pair.peer] = ranges
		}
	}
	return out
}

// ratioColumns are a PeerRatio's ratios, in the order the summary counts them.
var ratioColumns = []struct {
	name string
	get  func(PeerRatio) *float64
}{
	{"ops", func(r PeerRatio) *float64 { return r.OpsRatio }},
	{"p99", func(r PeerRatio) *float64 { return r.P99Ratio }},
	{"cpu", func(r PeerRatio) *float64 { return r.CPURatio }},
	{"rss", func(r PeerRatio) *float64 { return r.RSSRatio }},
}

// peerGoal is one target a ratio is held to: at least, or at most, bound.
type peerGoal struct {
	name    string // the ratio's column: ops, p99, cpu or rss
	value   *float64
	atLeast bool
	bound   float64
}

// met reports whether the ratio reaches the goal; a ratio not measured does not.
func (g peerGoal) met() bool {
	if g.value == nil {
		return false
	}
	if g.atLeast {
		return *g.value >= g.bound
	}
	return *g.value <= g.bound
}

// peerGoals returns the goals r is held to (docs/peers.md, "Goals"), as issue 44 states
// them. On 3 and 4 nodes against Cassandra, with kura's client batching off: 3x its
// ops/s, a third of its p99 and a quarter of its CPU per operation (memory is reported,
// not judged: it follows Cassandra's heap flag). On one node against redis-server
// syncing every write, as server CPU per operation, since on a 2-core machine the
// clients cap both servers' throughput: GETs (C) at most 1.2x its CPU, SETs (W) 1.5x, at
// every pipeline depth.
func peerGoals(r PeerRatio) []peerGoal {
	switch {
	case r.Kura == sysKura && r.Peer == sysCassandra && r.Layout != layoutOne:
		return []peerGoal{{"ops", r.OpsRatio, true, 3}, {"p99", r.P99Ratio, false, 1.0 / 3}, {"cpu", r.CPURatio, false, 0.25}}
	case r.Kura != sysKuraRESP || r.Peer != sysRedisAlways || r.Layout != layoutOne:
		return nil
	case r.Workload == "C":
		return []peerGoal{{"cpu", r.CPURatio, false, goalGetCPURatio}}
	case r.Workload == "W":
		return []peerGoal{{"cpu", r.CPURatio, false, goalSetCPURatio}}
	}
	return nil
}

// addGoals adds to summary how many of the goals of kura's ratios against peer were
// met, per column ("ops 30/30, p99 29/30, ..."), and the rows that fell short ("none"
// when none did). A pair with no goals adds nothing.
func addGoals(summary map[string]any, ratios []PeerRatio, kura, peer string) {
	met, total := map[string]int{}, map[string]int{}
	var short []string
	for _, r := range ratios {
		if r.Kura != kura || r.Peer != peer {
			continue
		}
		for _, g := range peerGoals(r) {
			total[g.name]++
			if g.met() {
				met[g.name]++
				continue
			}
			sign, value := ">", "-"
			if g.atLeast {
				sign = "<"
			}
			if g.value != nil {
				value = fmt.Sprint(*g.value)
			}
			row := fmt.Sprintf("%s %s %s c%d", r.Consistency, r.Workload, r.Distribution, r.Clients)
			if r.Pipeline > 1 {
				row += fmt.Sprintf(" p%d", r.Pipeline)
			}
			short = append(short, fmt.Sprintf("%s: %s %s %s %.3g", row, g.name, value, sign, g.bound))
		}
	}
	var counts []string
	for _, column := range ratioColumns {
		if c := column.name; total[c] > 0 {
			counts = append(counts, fmt.Sprintf("%s %d/%d", c, met[c], total[c]))
		}
	}
	if len(counts) == 0 {
		return
	}
	summary["goals_met"] = strings.Join(counts, ", ")
	summary["goals_short"] = "none"
	if len(short) > 0 {
		summary["goals_short"] = strings.Join(short, "; ")
	}
}

// ratioOf is a/b rounded to three decimals, or nil (written "-") when b is not positive
// or either figure is missing.
func ratioOf(a, b float64) *float64 {
	if b <= 0 || a <= 0 {
		return nil
	}
	r := round(a/b, 3)
	return &r
}

// peerDeployment is one system running in one layout, ready for the workloads.
type peerDeployment struct {
	startup time.Duration
	pids    []int
	clients []namedClient // the clients it is measured through, in order
	stop    func()
	// build is the system's version and settings, for the report's environment.
	build PeerBuild
}

// namedClient is a client and the name its rows carry.
type namedClient struct {
	system string
	c      peerClient
	scans  bool
	warmup time.Duration // how long its warm-up took to reach a stable throughput
}

func (d *peerDeployment) close() {
	for _, nc := range d.clients {
		nc.c.close()
	}
	if d.stop != nil {
		d.stop()
	}
}

// peerStart is one system to start in one layout.
type peerStart struct {
	name  string
	start func(ctx context.Context) (*peerDeployment, error)
	// optional systems (Redis, Cassandra) are left out with a note when they cannot start
	// or load their keys; kura's failure ends the run.
	optional bool
}

// runPeers runs the plan layout by layout: it starts every system of the layout, loads
// and warms each, then runs every row's repeats with the systems alternating, and stops
// them.
func runPeers(ctx context.Context, env Env, o peersOptions) (*Report, error) {
	scratch := o.scratch
	if scratch == "" {
		dir, err := os.MkdirTemp("", "kura-peers-")
		if err != nil {
			return nil, err
		}
		scratch = dir
		if !o.keep {
			defer os.RemoveAll(dir)
		}
	} else if err := os.MkdirAll(scratch, 0o755); err != nil {
		return nil, err
	}
	env.Progressf("scratch dir %s", scratch)

	var rows []PeerRow
	var notes []string
	plan := peersPlan(o, scratch, env, &notes)
	progress := env.StartProgress("peers", float64(plan.units))
	defer progress.Done()
	for _, steps := range plan.byLayout() {
		layoutRows, err := runLayout(ctx, env, progress, o, steps, &notes)
		if err != nil {
			return nil, err
		}
		rows = append(rows, layoutRows...)
	}
	return peersReport(rows, notes, o), nil
}

// runLayout starts, loads and warms up every system of one layout, then runs the rows
// (runAlternated) and stops the systems. An optional system that fails to start or load
// is left out with a note.
func runLayout(ctx context.Context, env Env, progress *Progress, o peersOptions, steps []peerStep, notes *[]string) ([]PeerRow, error) {
	var live []liveStep
	defer func() {
		for _, l := range live {
			l.d.close()
		}
	}()
	for _, step := range steps {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		progress.Add(0, "%s, %s: starting", step.layout, step.name)
		began := time.Now()
		d, err := step.start(ctx)
		if err == nil {
			if d.startup == 0 {
				d.startup = time.Since(began)
			}
			env.Progressf("%s, %s: up in %.1f s (processes %v)", step.layout, step.name, d.startup.Seconds(), d.pids)
			env.Environment.AddPeer(d.build)
			if err = prepareDeployment(ctx, env, progress, o, step, d); err != nil {
				d.close()
			}
		}
		if err != nil {
			if !step.optional || ctx.Err() != nil {
				return nil, fmt.Errorf("%s, %s: %w", step.layout, step.name, err)
			}
			env.Progressf("%s, %s: failed, its rows are left out: %v", step.layout, step.name, err)
			*notes = append(*notes, fmt.Sprintf("%s, %s: left out, it failed: %v", step.layout, step.name, err))
			progress.Add(float64(step.units), "")
			continue
		}
		live = append(live, liveStep{step, d})
	}
	return runAlternated(ctx, progress, o, live)
}

// liveStep is a system of the layout, started, loaded and warm.
type liveStep struct {
	step peerStep
	d    *peerDeployment
}

// peerStep is one system started in one layout and every row it runs.
type peerStep struct {
	peerStart
	layout string
	nodes  int
	levels []consistency.Level
	units  int // rows, plus one for the load
}

// peerPlan is the run: its steps in order, and the units of work they add up to.
type peerPlan struct {
	steps []peerStep
	units int
}

// byLayout groups the steps by layout, in order: the systems of a layout run together.
func (p peerPlan) byLayout() [][]peerStep {
	var groups [][]peerStep
	for i, step := range p.steps {
		if i == 0 || step.layout != p.steps[i-1].layout {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], step)
	}
	return groups
}

// peersPlan lists the steps: for each layout, kura, then Redis (one node only), then
// Cassandra, then kura with the WAN emulated (three nodes only).
func peersPlan(o peersOptions, scratch string, env Env, notes *[]string) peerPlan {
	var plan peerPlan
	// Cassandra's jars are prepared once, at the first layout that needs them; a failure
	// is remembered, so that Maven does not run again for the next layout.
	var (
		cass    *cassandraJars
		cassErr error
	)
	for _, nodes := range o.layouts {
		layout, levels := layoutOne, []consistency.Level{consistency.One}
		switch nodes {
		case 3:
			layout, levels = layoutThree, o.levels
		case 4:
			layout, levels = layoutFour, o.levels
		}
		add := func(s peerStart) {
			step := peerStep{peerStart: s, layout: layout, nodes: nodes, levels: levels}
			step.units = 1 + o.repeats*len(levels)*len(o.clients)*len(o.distributions)*len(o.workloads)*peerRowsPerCell(s.name, nodes, len(o.pipelines), len(o.batching), len(o.coalescing))
			plan.steps = append(plan.steps, step)
			plan.units += step.units
		}
		dir := filepath.Join(scratch, fmt.Sprintf("%dn", nodes))
		for _, system := range o.systems {
			switch system {
			case peerKura:
				add(peerStart{name: sysKura, start: func(ctx context.Context) (*peerDeployment, error) {
					return startKuraPeer(ctx, o, filepath.Join(dir, "kura"), nodes, false)
				}})
			case peerRedis:
				if nodes != 1 {
					*notes = append(*notes, "redis-server runs in the 1-node layout only: it has no multi-DC replication of its own")
					continue
				}
				for _, name := range []string{sysRedisAlways, sysRedisDefault} {
					add(peerStart{name: name, optional: true, start: func(ctx context.Context) (*peerDeployment, error) {
						return startRedisPeer(ctx, o, filepath.Join(dir, name), name)
					}})
				}
			case peerCassandra:
				add(peerStart{name: sysCassandra, optional: true, start: func(ctx context.Context) (*peerDeployment, error) {
					if cassErr != nil {
						return nil, cassErr
					}
					if cass == nil {
						jars, err := prepareCassandra(ctx, env, o.cache)
						if err != nil {
							cassErr = err
							return nil, err
						}
						cass = &jars
					}
					return startCassandraPeer(ctx, env, o, *cass, filepath.Join(dir, "cassandra"), nodes)
				}})
			}
		}
		if nodes == 3 && o.wan && slices.Contains(o.systems, peerKura) {
			add(peerStart{name: sysKuraWAN, start: func(ctx context.Context) (*peerDeployment, error) {
				return startKuraPeer(ctx, o, filepath.Join(dir, "kura-wan"), nodes, true)
			}})
		}
	}
	return plan
}

// peerRowsPerCell is how many rows a system runs of one workload: kura is measured
// through its Go client at each of the batching settings (kuraClients), its single node
// through its Redis port too, Cassandra through gocql at each of the coalescing settings
// (cassandraClients), and every Redis-protocol client at each of the pipelines depths.
func peerRowsPerCell(system string, nodes, pipelines, kuraClients, cassandraClients int) int {
	switch {
	case system == sysCassandra:
		return cassandraClients
	case system == sysKura && nodes == 1:
		return kuraClients + pipelines
	case system == sysKura || system == sysKuraWAN:
		return kuraClients
	case system == sysRedisAlways || system == sysRedisDefault:
		return pipelines
	}
	return 1
}

// prepareDeployment loads the keys through the deployment's first client, then warms
// every client up (warmPeer).
func prepareDeployment(ctx context.Context, env Env, progress *Progress, o peersOptions, step peerStep, d *peerDeployment) error {
	drv := driveOptions{workers: o.clients[0], pipeline: 1, duration: o.duration, ops: o.ops, opTimeout: o.opTimeout, value: o.valueBytes, seed: 1}
	loadBegan := time.Now()
	err := loadPeerKeys(ctx, d.clients[0].c, o.keys, drv, func(done int) {
		progress.Add(0, "%s, %s: loaded %d of %d keys", step.layout, step.name, done, o.keys)
	})
	if err != nil {
		return err
	}
	env.Progressf("%s, %s: %d keys loaded in %.1f s", step.layout, step.name, o.keys, time.Since(loadBegan).Seconds())
	if o.warmup > 0 {
		progress.Add(0, "%s, %s: warming up", step.layout, step.name)
		for i, nc := range d.clients {
			took, windows := warmPeer(ctx, nc.c, o.warmup, o.keys, drv)
			d.clients[i].warmup = took
			env.Progressf("%s, %s: warm after %.1f s (ops/s of the last windows %v)", step.layout, nc.system, took.Seconds(), windows)
		}
	}
	progress.Add(1, "")
	return ctx.Err()
}

// The warm-up runs workload A in windows until its throughput is stable: at least
// --warmup, then until two windows in a row differ by at most warmStableFraction, for at
// most warmRoundsMax times --warmup.
const (
	warmWindowsPerWarmup = 5
	warmStableFraction   = 0.05
	warmRoundsMax        = 3
)

// warmPeer drives c with workload A, unmeasured, until its throughput is stable; it returns
// how long that took and the last windows' ops/s.
func warmPeer(ctx context.Context, c peerClient, minimum time.Duration, keys int, drv driveOptions) (time.Duration, []float64) {
	window := drv
	window.duration, window.ops = max(minimum/warmWindowsPerWarmup, 500*time.Millisecond), 0
	uniform, _ := newKeyChooser(distUniform, keys)
	began := time.Now()
	var rates []float64
	for ctx.Err() == nil {
		rates = append(rates, drive(ctx, c, peerWorkloads[0], uniform, window).opsPerS())
		elapsed := time.Since(began)
		if elapsed >= minimum && len(rates) >= 2 {
			last, before := rates[len(rates)-1], rates[len(rates)-2]
			if before > 0 && math.Abs(last-before)/before <= warmStableFraction {
				break
			}
		}
		if elapsed >= warmRoundsMax*minimum {
			break
		}
	}
	last := rates[max(0, len(rates)-2):]
	for i := range last {
		last[i] = math.Round(last[i])
	}
	return time.Since(began), last
}

// runAlternated runs every row of the layout on every live system: for each cell (client
// count, depth, level, distribution, workload), --repeats rounds in which the systems
// take turns, each round starting one system later, so that a change in the machine's
// load falls on them alike. Each system's row is the median of its rounds, with the
// rounds' figures beside it.
func runAlternated(ctx context.Context, progress *Progress, o peersOptions, live []liveStep) ([]PeerRow, error) {
	if len(live) == 0 {
		return nil, nil
	}
	layout, levels := live[0].step.layout, live[0].step.levels
	type entry struct {
		d  *peerDeployment
		nc namedClient
	}
	var entries []entry
	for _, l := range live {
		for _, nc := range l.d.clients {
			entries = append(entries, entry{l.d, nc})
		}
	}
	// Depth 1 comes first, for every client; the other depths for the clients that
	// pipeline. Rows of one client count and depth are together, under one heading.
	depths := []int{1}
	for _, depth := range o.pipelines {
		if !slices.Contains(depths, depth) {
			depths = append(depths, depth)
		}
	}
	var rows []PeerRow
	for _, clients := range o.clients {
		for _, depth := range depths {
			for _, cl := range levels {
				for _, dist := range o.distributions {
					keys, err := newKeyChooser(dist, o.keys)
					if err != nil {
						return nil, err
					}
					for _, mix := range o.workloads {
						var cell []entry
						for _, e := range entries {
							_, pipelines := e.nc.c.(batcher)
							if runs := (pipelines && slices.Contains(o.pipelines, depth)) || (!pipelines && depth == 1); !runs {
								continue
							}
							if mix.Scan > 0 && !e.nc.scans {
								progress.Add(float64(o.repeats), "%s, %s: %s n/a", layout, e.nc.system, mix.Name)
								continue
							}
							cell = append(cell, e)
						}
						rounds := make([][]PeerRow, len(cell))
						for round := range o.repeats {
							for turn := range cell {
								i := (turn + round) % len(cell)
								e := cell[i]
								if err := e.nc.setLevel(cl); err != nil {
									return nil, err
								}
								run := driveOptions{workers: clients, pipeline: depth, duration: o.duration, ops: o.ops, opTimeout: o.opTimeout,
									value: o.valueBytes, seed: uint64(1 + round)}
								row := measurePeerRow(ctx, e.d, e.nc, mix, keys, run)
								if ctx.Err() != nil {
									return nil, ctx.Err()
								}
								rounds[i] = append(rounds[i], row)
								progress.Add(1, "%s, %s %s c%d p%d %s %s round %d of %d: %s ops/s, p99 %s ms", layout, e.nc.system, cl, clients, depth, mix.Name, dist,
									round+1, o.repeats, formatNumber("ops_per_s", row.OpsPerS, false), formatFixed(row.LatencyMsP99))
							}
						}
						for i := range cell {
							row := medianPeerRow(rounds[i])
							row.Layout, row.Consistency, row.Distribution = layout, cl.String(), dist
							row.Clients, row.Pipeline = clients, depth
							rows = append(rows, row)
						}
					}
				}
			}
		}
	}
	return rows, nil
}

// levelSetter is a client whose consistency level the run sets before each row.
type levelSetter interface {
	setLevel(cl consistency.Level) error
}

func (nc namedClient) setLevel(cl consistency.Level) error {
	if s, ok := nc.c.(levelSetter); ok {
		return s.setLevel(cl)
	}
	return nil
}

// measurePeerRow runs one workload and reads the servers' CPU time around it and their
// peak resident sets after it.
func measurePeerRow(ctx context.Context, d *peerDeployment, nc namedClient, mix workloadMix, keys keyChooser, drv driveOptions) PeerRow {
	cpuBefore, clientBefore := processesCPU(d.pids), ownCPU()
	res := drive(ctx, nc.c, mix, keys, drv)
	cpu, clientCPU := processesCPU(d.pids)-cpuBefore, ownCPU()-clientBefore
	row := PeerRow{System: nc.system, Workload: mix.Name, Ops: res.ops, Errors: res.errors,
		OpsPerS: round(res.opsPerS(), 1), LatencyMsP50: round(res.percentileMs(0.5), 3),
		LatencyMsP99: round(res.percentileMs(0.99), 3), LatencyMsP999: round(res.percentileMs(0.999), 3),
		StartS: round(d.startup.Seconds(), 3), WarmupS: round(nc.warmup.Seconds(), 1)}
	if res.firstError != nil {
		row.FirstError = res.firstError.Error()
	}
	if res.ops > 0 {
		row.CPUSPerKop = round(cpu.Seconds()*1000/float64(res.ops), 4)
		row.ClientCPUSPerKop = round(clientCPU.Seconds()*1000/float64(res.ops), 4)
	}
	for _, pid := range d.pids {
		peak, _ := residentPeakOf(strconv.Itoa(pid))
		row.PeakRSSBytesPerNode = append(row.PeakRSSBytesPerNode, peak)
		row.PeakRSSBytes = max(row.PeakRSSBytes, peak)
	}
	return row
}

// startKuraPeer runs nodes `kura server` processes (the nemesis harness's cluster, on
// 127.0.0.2, .3 and .4; 3 nodes in 2 DCs are 2+1) with their data on disk, so every
// acknowledged write is synced to a WAL, and creates the keyspace with one replica on
// each node. With wan, every node shapes its traffic to the other DC as a topology file
// says.
func startKuraPeer(ctx context.Context, o peersOptions, dir string, nodes int, wan bool) (*peerDeployment, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	began := time.Now()
	cfg := nemesis.ClusterConfig{Bin: o.bin, Nodes: nodes, DCs: min(nodes, 2), Dir: dir, GossipInterval: time.Second}
	if wan {
		path := filepath.Join(dir, "topology.yaml")
		if err := os.WriteFile(path, []byte(peersWANTopology(o.wanLatency)), 0o644); err != nil {
			return nil, err
		}
		cfg.ServerArgs = []string{"--topology", path, "--emulate-wan"}
	}
	c, err := nemesis.StartCluster(ctx, cfg)
	if err != nil {
		return nil, err
	}
	d := &peerDeployment{stop: c.Close, build: PeerBuild{Name: "kura (--bin)", Version: commandVersion(o.bin, "version"),
		Config: strings.TrimSpace("kura server defaults, gossip interval 1 s " + strings.Join(cfg.ServerArgs, " "))}}
	if err := c.CreateKeyspace(ctx, peersKeyspace, kuraReplication(nodes)); err != nil {
		d.close()
		return nil, err
	}
	d.startup = time.Since(began)
	var addrs []string
	for _, p := range c.Processes() {
		d.pids = append(d.pids, p.PID)
		addrs = append(addrs, p.Client)
	}
	for _, batching := range o.batching {
		kc, err := client.Dial(ctx, addrs, client.Options{LocalDC: "dc1", AttemptTimeout: o.opTimeout, NoBatching: !batching})
		if err != nil {
			d.close()
			return nil, fmt.Errorf("dial kura: %w", err)
		}
		system := map[[2]bool]string{{false, false}: sysKura, {false, true}: sysKuraBatching,
			{true, false}: sysKuraWAN, {true, true}: sysKuraWANBatching}[[2]bool{wan, batching}]
		d.clients = append(d.clients, namedClient{system: system, c: &kuraPeerClient{c: kc, level: consistency.One}, scans: true})
	}
	if nodes == 1 {
		// The Redis port, through the client Redis is measured with.
		d.clients = append(d.clients, namedClient{system: sysKuraRESP, c: newGoRedisClient(c.Processes()[0].RESP, slices.Max(o.clients), true)})
	}
	return d, nil
}

// peersWANTopology is the topology of the 3-node layout with the WAN emulated: the
// nemesis harness's node names and DCs, a LAN inside each DC and latency between them.
func peersWANTopology(latency time.Duration) string {
	ms := float64(latency) / float64(time.Millisecond)
	return fmt.Sprintf(`name: peers-wan
datacenters:
  - name: dc1
    latency_ms: 0.05
    bandwidth_mbps: 10000
    nodes:
      - id: n1
      - id: n2
  - name: dc2
    latency_ms: 0.05
    bandwidth_mbps: 10000
    nodes:
      - id: n3
links:
  - between: [dc1, dc2]
    latency_ms: %g
    bandwidth_mbps: 1000
`, ms)
}

// kuraPeerClient runs the operations through kura's Go client, which sends each to a
// replica of the key in the client's DC.
type kuraPeerClient struct {
	c     *client.Client
	level consistency.Level
}

// errNotFound is a read of a loaded key that found nothing: counted as an error.
var errNotFound = errors.New("a loaded key was not found")

func (k *kuraPeerClient) setLevel(cl consistency.Level) error {
	k.level = cl
	return nil
}

func (k *kuraPeerClient) read(ctx context.Context, key []byte) error {
	_, found, err := k.c.Get(ctx, peersKeyspace, key, k.level)
	if err == nil && !found {
		err = errNotFound
	}
	return err
}

func (k *kuraPeerClient) update(ctx context.Context, key, value []byte) error {
	_, err := k.c.Put(ctx, peersKeyspace, key, value, k.level)
	return err
}

func (k *kuraPeerClient) scan(ctx context.Context, start []byte, n int) error {
	_, err := k.c.Scan(ctx, peersKeyspace, start, nil, n, k.level)
	return err
}

func (k *kuraPeerClient) close() { k.c.Close() }

// goRedisClient runs the operations through go-redis, with a connection per worker;
// against kura, each connection selects the bench's keyspace first.
type goRedisClient struct{ rdb *redis.Client }

func newGoRedisClient(addr string, workers int, kura bool) *goRedisClient {
	opts := &redis.Options{Addr: addr, PoolSize: workers, Protocol: 2, DisableIdentity: true, MaxRetries: -1}
	if kura {
		opts.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
			return cn.Do(ctx, "KURA.KEYSPACE", peersKeyspace).Err()
		}
	}
	return &goRedisClient{rdb: redis.NewClient(opts)}
}

func (g *goRedisClient) read(ctx context.Context, key []byte) error {
	err := g.rdb.Get(ctx, string(key)).Err()
	if errors.Is(err, redis.Nil) {
		return errNotFound
	}
	return err
}

func (g *goRedisClient) update(ctx context.Context, key, value []byte) error {
	return g.rdb.Set(ctx, string(key), value, 0).Err()
}

func (g *goRedisClient) scan(context.Context, []byte, int) error { return errNoScan }

// batch sends ops in one go-redis pipeline: one write of every command, one read of
// every reply.
func (g *goRedisClient) batch(ctx context.Context, ops []batchOp) (failed int, first error) {
	cmds, _ := g.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, op := range ops {
			switch op.kind {
			case opRead:
				p.Get(ctx, string(op.key))
			default: // a Redis client runs no scans (namedClient.scans), so an update
				p.Set(ctx, string(op.key), op.value, 0)
			}
		}
		return nil
	})
	for _, cmd := range cmds {
		err := cmd.Err()
		if errors.Is(err, redis.Nil) {
			err = errNotFound
		}
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	return failed, first
}

func (g *goRedisClient) close() { g.rdb.Close() }

// startRedisPeer runs redis-server with its data in dir: appendfsync always (every write
// in the append-only file, fsynced, before the reply: kura's durability), or Redis's
// defaults (RDB snapshots by its save rules, no append-only file).
func startRedisPeer(ctx context.Context, o peersOptions, dir, system string) (*peerDeployment, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("%w: redis-server not found", ErrNoRedisTools)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := []string{"--dir", dir}
	if system == sysRedisAlways {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	}
	began := time.Now()
	t, err := startRedisServer(ctx, system, args...)
	if err != nil {
		return nil, err
	}
	return &peerDeployment{startup: time.Since(began), pids: []int{t.pid}, stop: t.stop, build: t.build,
		clients: []namedClient{{system: system, c: newGoRedisClient(t.addr, slices.Max(o.clients), false)}}}, nil
}

func peersScale(o peersOptions) string {
	var levels []string
	for _, cl := range o.levels {
		levels = append(levels, cl.String())
	}
	limit := fmt.Sprintf("%v per row", o.duration)
	if o.ops > 0 {
		limit = fmt.Sprintf("%v or %d operations per row", o.duration, o.ops)
	}
	pipeline := ""
	if len(o.pipelines) > 1 || o.pipelines[0] > 1 {
		pipeline = fmt.Sprintf(", Redis-protocol rows pipelining %s commands per round trip", joinInts(o.pipelines))
	}
	return fmt.Sprintf("%d keys of %d bytes loaded first, then %v of workload A unmeasured; %s closed-loop clients%s; %s; %s keys; multi-node layouts at %s; %d cores shared by servers, clients and other jobs",
		o.keys, o.valueBytes, o.warmup, joinInts(o.clients), pipeline, limit, strings.Join(o.distributions, " and "), strings.Join(levels, ", "), runtime.NumCPU())
}

// peersReport builds the report: rows, the ratios kura/peer, notes.
func peersReport(rows []PeerRow, notes []string, o peersOptions) *Report {
	notes = append(slices.Clip(notes),
		"durability: kura syncs its WAL before acknowledging; redis-always has appendonly yes, appendfsync always; redis-default is redis-server's defaults (RDB snapshots, no AOF: acknowledged writes can be lost); Cassandra has commitlog_sync: batch",
		"client batching: kura and kura-wan rows use the Go client with batching off, one call per request as gocql and go-redis send them (the like-for-like rows, on which the goals are judged); kura-batching and kura-wan-batching rows, where run, use its default: requests waiting behind a call in flight to a node go together as one GetMany or PutMany, so the servers see fewer, larger calls",
		"clients: kura through its Go client (each request to a replica in dc1) and, on one node, its Redis port through go-redis; redis-server through go-redis; Cassandra through gocql (github.com/apache/cassandra-gocql-driver/v2), token-aware; every client in this process, on the same cores as the servers",
		"cpu_s_per_kop is the server processes' user+system CPU seconds per 1,000 operations (/proc/PID/stat); peak_rss_bytes the largest node's VmHWM since it started",
		fmt.Sprintf("latency percentiles: by nearest rank over every operation that succeeded (each round trip when pipelined), from an HDR histogram (github.com/HdrHistogram/hdrhistogram-go) at %d significant digits: each is within 0.1 %% above the sorted latencies' own", hdr.SignificantDigits),
		"workload E: 95 % scans of 1-100 records, 5 % updates; kura scans in key order (with the hash partitioner every token range is read), Cassandra in token order (token(key) >= token(start)); n/a for Redis, which has no range scan; W is 100 % updates",
	)
	if slices.ContainsFunc(rows, func(r PeerRow) bool { return r.System == sysKuraWAN || r.System == sysKuraWANBatching }) {
		notes = append(notes, fmt.Sprintf("kura-wan: kura's 3-node layout with %v one-way between the DCs emulated by every node; Cassandra runs without WAN emulation", o.wanLatency))
	}
	ratios := peerRatios(rows)
	return &Report{
		Bench:     "peers",
		Scale:     peersScale(o),
		Rows:      rows,
		Reduction: ratios,
		Summary:   peerRatioRanges(ratios),
		Notes:     notes,
		Plot:      func(path string) error { return SavePanels(path, 2, peersFigures(rows)...) },
	}
}

// peersFigures draws, for each layout, ops/s and p99 per workload (and distribution,
// and level when there are several) for each system, as bars: a row of two panels per
// layout, or per layout and client count when the layout ran at several, so that each
// panel's bars are few enough to read (the full comparison with Cassandra has 30 rows
// per system).
func peersFigures(rows []PeerRow) []Figure {
	var layouts []string
	for _, r := range rows {
		if !slices.Contains(layouts, r.Layout) {
			layouts = append(layouts, r.Layout)
		}
	}
	var figures []Figure
	for _, layout := range layouts {
		var clients []int
		for _, r := range rows {
			if r.Layout == layout && !slices.Contains(clients, r.Clients) {
				clients = append(clients, r.Clients)
			}
		}
		if len(clients) == 1 {
			figures = append(figures, peersPanel(rows, layout, layout, func(PeerRow) bool { return true })...)
			continue
		}
		for _, n := range clients {
			title := fmt.Sprintf("%s, %d clients", layout, n)
			figures = append(figures, peersPanel(rows, layout, title, func(r PeerRow) bool { return r.Clients == n })...)
		}
	}
	return figures
}

// peersPanel draws the rows of layout that keep accepts: ops/s and p99, titled title.
func peersPanel(rows []PeerRow, layout, title string, keep func(PeerRow) bool) []Figure {
	rows = slices.DeleteFunc(slices.Clone(rows), func(r PeerRow) bool { return r.Layout != layout || !keep(r) })
	var categories, systems, levels []string
	for _, r := range rows {
		if !slices.Contains(levels, r.Consistency) {
			levels = append(levels, r.Consistency)
		}
	}
	category := func(r PeerRow) string {
		c := r.Workload + " " + r.Distribution[:1]
		if len(levels) > 1 {
			c += " " + initials(r.Consistency)
		}
		if r.Pipeline > 1 {
			c += fmt.Sprintf(" p%d", r.Pipeline)
		}
		return c
	}
	for _, r := range rows {
		if c := category(r); !slices.Contains(categories, c) {
			categories = append(categories, c)
		}
		if !slices.Contains(systems, r.System) {
			systems = append(systems, r.System)
		}
	}
	xLabel := "workload, key distribution (z: zipfian, u: uniform)"
	if len(levels) > 1 {
		xLabel += ", level (initials: Q is QUORUM)"
	}
	if slices.ContainsFunc(rows, func(r PeerRow) bool { return r.Pipeline > 1 }) {
		xLabel += ", pipeline depth (p16: 16 commands per round trip)"
	}
	ops := Figure{Title: title + ": throughput", XLabel: xLabel, YLabel: "throughput (ops/s)", Categories: categories}
	p99 := Figure{Title: title + ": p99 latency", XLabel: xLabel, YLabel: "p99 latency (ms)", Categories: categories}
	for _, system := range systems {
		opsSeries := Series{Name: system, Y: make([]float64, len(categories))}
		p99Series := Series{Name: system, Y: make([]float64, len(categories))}
		for _, r := range rows {
			if r.System == system {
				i := slices.Index(categories, category(r))
				opsSeries.Y[i], p99Series.Y[i] = r.OpsPerS, r.LatencyMsP99
			}
		}
		ops.Series = append(ops.Series, opsSeries)
		p99.Series = append(p99.Series, p99Series)
	}
	return []Figure{ops, p99}
}

// initials shortens a level's name for a crowded axis: QUORUM is Q, LOCAL_QUORUM LQ.
func initials(name string) string {
	var b strings.Builder
	for _, part := range strings.Split(name, "_") {
		if part != "" {
			b.WriteByte(part[0])
		}
	}
	return b.String()
}
