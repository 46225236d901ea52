package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/assembly/embedded"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/io/topology"
)

func init() {
	Register(Bench{
		Name:    "redis",
		Summary: "kura's Redis front end against redis-server, both driven by redis-benchmark",
		Setup:   setupRedis,
	})
}

// redisOptions are the bench's flags.
type redisOptions struct {
	clients    []int
	requests   int
	valueBytes int
	keys       int
	pipelines  []int
}

func setupRedis(fs *flag.FlagSet) Runner {
	clients := fs.String("clients", "16,64,256", "concurrent connections of redis-benchmark; a comma-separated list runs every row at each count")
	requests := fs.Int("requests", 200000, "requests per run (one target, one operation, one pipeline depth)")
	valueBytes := fs.Int("value-bytes", 256, "size of SET's values")
	keys := fs.Int("keys", 100000, "keys the requests pick from at random")
	pipelines := fs.String("pipeline", "1,16", "comma-separated pipeline depths")
	return func(ctx context.Context, env Env) (*Report, error) {
		opts := redisOptions{requests: *requests, valueBytes: *valueBytes, keys: *keys}
		var err error
		if opts.clients, err = parseCounts("--clients", *clients); err != nil {
			return nil, err
		}
		for _, p := range strings.Split(*pipelines, ",") {
			depth, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || depth < 1 {
				return nil, fmt.Errorf("--pipeline %q: want positive integers separated by commas", *pipelines)
			}
			opts.pipelines = append(opts.pipelines, depth)
		}
		if opts.requests < 1 || opts.valueBytes < 1 || opts.keys < 1 {
			return nil, errors.New("--requests, --value-bytes and --keys must be positive")
		}
		return runRedis(ctx, env, opts)
	}
}

// RedisRow is one run of redis-benchmark against one target.
type RedisRow struct {
	Clients      int     `json:"clients" table:"group"`
	Target       string  `json:"target"`
	Op           string  `json:"op"`
	Pipeline     int     `json:"pipeline"`
	OpsPerS      float64 `json:"ops_per_s"`
	LatencyMsP50 float64 `json:"latency_ms_p50"`
	LatencyMsP99 float64 `json:"latency_ms_p99"`
	// RatioToRedis is OpsPerS over redis-server's (without persistence) for the same
	// operation, depth and client count.
	RatioToRedis float64 `json:"ratio_to_redis"`
	// ServerCPUSPerKop is the server's CPU time (user and system) per 1,000 requests:
	// redis-server's process, or, for kura, which runs in the bench's process, that
	// process's (every kura target's nodes, the idle ones' background work included).
	ServerCPUSPerKop float64 `json:"server_cpu_s_per_kop"`
}

// The targets, in the order each measurement visits them.
const (
	targetRedis       = "redis"
	targetRedisAlways = "redis-always"
	targetKuraSingle  = "kura-1"
	targetKuraDurable = "kura-1-durable"
	targetKuraCluster = "kura-3-quorum"
)

// redisOps are the operations measured, in order. SETNX and INCR are conditional: kura
// runs them as lightweight transactions (a Paxos round among the key's replicas, with
// SERIAL on the three-node cluster), redis-server as any other command.
var redisOps = []string{"SET", "GET", "SETNX", "INCR"}

// benchmarkArgs returns redis-benchmark's arguments that run op. SETNX is Redis's SET
// with NX, a command redis-benchmark has no test for, so it is given as a command: its
// keys are drawn from the same --keys as SET's, under a prefix of their own, so the first
// of a key's requests sets it and the others find it taken.
func benchmarkArgs(op string, opts redisOptions) []string {
	if op == "SETNX" {
		return []string{"SET", "nx:__rand_int__", strings.Repeat("x", opts.valueBytes), "NX"}
	}
	return []string{"-t", strings.ToLower(op)}
}

// redisTarget is a server redis-benchmark can be pointed at.
type redisTarget struct {
	name  string
	addr  string   // the node redis-benchmark talks to
	addrs []string // every node's (a cluster's), addr first
	pid   int      // redis-server's process; 0 for kura in this process
	stop  func()
	// build is redis-server's version and settings, for the report's environment; zero
	// for kura, whose build the environment already gives.
	build PeerBuild
}

// ErrNoRedisTools reports that redis-server or redis-benchmark is not installed.
var ErrNoRedisTools = errors.New("redis-server and redis-benchmark are needed (Debian: apt-get install redis-tools redis-server)")

func runRedis(ctx context.Context, env Env, opts redisOptions) (*Report, error) {
	for _, tool := range []string{"redis-server", "redis-benchmark"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%w: %s not found", ErrNoRedisTools, tool)
		}
	}
	dir, err := os.MkdirTemp("", "kura-bench-redis-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var targets []redisTarget
	defer func() {
		for _, t := range targets {
			t.stop()
		}
	}()
	for _, start := range []func(context.Context) (redisTarget, error){
		startVolatileRedis,
		func(ctx context.Context) (redisTarget, error) {
			// redis-server writes its append-only file in dir, which must exist.
			return startRedisServer(ctx, targetRedisAlways, "--dir", dir, "--appendonly", "yes", "--appendfsync", "always")
		},
		func(ctx context.Context) (redisTarget, error) {
			return startKura(ctx, targetKuraSingle, 1, consistency.One, "")
		},
		func(ctx context.Context) (redisTarget, error) {
			return startKura(ctx, targetKuraDurable, 1, consistency.One, filepath.Join(dir, targetKuraDurable))
		},
		func(ctx context.Context) (redisTarget, error) {
			return startKura(ctx, targetKuraCluster, 3, consistency.Quorum, "")
		},
	} {
		t, err := start(ctx)
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
		if t.build.Name != "" {
			env.Environment.AddPeer(t.build)
		}
		env.Progressf("started %s on %s", t.name, t.addr)
	}

	// Targets alternate within each measurement, so that a change in the machine's load
	// (other processes, CPU frequency) hits them alike. Each target's SETs come before its
	// GETs, so that GET finds the keys.
	var rows []RedisRow
	progress := env.StartProgress("redis", float64(len(opts.clients)*len(opts.pipelines)*len(redisOps)*len(targets)))
	defer progress.Done()
	for _, clients := range opts.clients {
		for _, depth := range opts.pipelines {
			for _, op := range redisOps {
				var redisOpsPerS float64
				for _, t := range targets {
					row, err := runRedisBenchmark(ctx, t, op, clients, depth, opts)
					if err != nil {
						return nil, err
					}
					if t.name == targetRedis {
						redisOpsPerS = row.OpsPerS
					}
					if redisOpsPerS > 0 {
						row.RatioToRedis = row.OpsPerS / redisOpsPerS
					}
					progress.Add(1, "%s %s c%d pipeline %d: %s ops/s, p50 %s ms, p99 %s ms, server CPU %s s per 1,000", t.name, op, clients, depth,
						formatNumber("ops_per_s", row.OpsPerS, false), formatFixed(row.LatencyMsP50), formatFixed(row.LatencyMsP99), formatFixed(row.ServerCPUSPerKop))
					rows = append(rows, row)
				}
			}
		}
	}
	return redisReport(rows, opts), nil
}

// startVolatileRedis runs redis-server without persistence, as target "redis".
func startVolatileRedis(ctx context.Context) (redisTarget, error) {
	return startRedisServer(ctx, targetRedis, "--save", "", "--appendonly", "no")
}

// startRedisServer runs redis-server as target name on a free loopback port, with the
// persistence settings given as redis-server arguments ("--save", "", "--appendonly",
// "no" for none; a --dir for any that writes files).
func startRedisServer(ctx context.Context, name string, persistence ...string) (redisTarget, error) {
	port, err := freePort()
	if err != nil {
		return redisTarget{}, err
	}
	args := append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--protected-mode", "no", "--daemonize", "no"}, persistence...)
	cmd := exec.Command("redis-server", args...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		return redisTarget{}, fmt.Errorf("start redis-server: %w", err)
	}
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := waitListening(ctx, addr); err != nil {
		stop()
		return redisTarget{}, fmt.Errorf("redis-server: %w\n%s", err, log.String())
	}
	build := PeerBuild{Name: name, Version: commandVersion("redis-server", "--version"), Config: redisConfig(persistence)}
	return redisTarget{name: name, addr: addr, addrs: []string{addr}, pid: cmd.Process.Pid, stop: stop, build: build}, nil
}

// redisConfig says how redis-server persists writes, from its persistence arguments.
func redisConfig(persistence []string) string {
	var settings []string
	for i := 0; i+1 < len(persistence); i += 2 {
		name, value := strings.TrimPrefix(persistence[i], "--"), persistence[i+1]
		if name == "dir" {
			continue
		}
		if value == "" {
			value = `""`
		}
		settings = append(settings, name+" "+value)
	}
	if !slices.ContainsFunc(settings, func(s string) bool { return strings.HasPrefix(s, "save ") }) {
		settings = append(settings, "save: redis-server's default rules")
	}
	return strings.Join(settings, ", ")
}

// commandVersion runs a program's version command and returns the first line it prints
// (on stdout or stderr, as java does), or "unknown" when it cannot run.
func commandVersion(name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if err != nil || line == "" {
		return "unknown"
	}
	return line
}

// freePort returns a loopback port nobody listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitListening waits until addr accepts connections.
func waitListening(ctx context.Context, addr string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return nc.Close()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s does not accept connections: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startKura runs an in-memory kura cluster of n nodes in one datacenter, in this process,
// with keyspace "default" at replication factor n; redis-benchmark talks to the first node
// at level cl.
func startKura(ctx context.Context, name string, n int, cl consistency.Level, dataDir string) (redisTarget, error) {
	return startKuraDCs(ctx, name, []int{n}, fmt.Sprintf("simple=%d", n), cl, dataDir)
}

// startKuraDCs runs a kura cluster in this process with nodesPerDC[i] nodes in
// datacenter dc<i+1>, no WAN emulation, keyspace "default" replicated as replication, and
// Redis connections at level cl; its data in memory, or on disk under dataDir, every
// write synced to the WAL before it is acknowledged.
func startKuraDCs(ctx context.Context, name string, nodesPerDC []int, replication string, cl consistency.Level, dataDir string) (redisTarget, error) {
	var yaml strings.Builder
	fmt.Fprintf(&yaml, "name: %s\ndatacenters:\n", name)
	for dc, n := range nodesPerDC {
		fmt.Fprintf(&yaml, "  - name: dc%d\n    latency_ms: 0\n    bandwidth_mbps: 0\n    nodes:\n", dc+1)
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&yaml, "      - id: %s-%d-%d\n", name, dc+1, i)
		}
	}
	if len(nodesPerDC) > 1 {
		yaml.WriteString("links:\n")
		for a := range nodesPerDC {
			for b := a + 1; b < len(nodesPerDC); b++ {
				fmt.Fprintf(&yaml, "  - between: [dc%d, dc%d]\n    latency_ms: 0\n    bandwidth_mbps: 0\n", a+1, b+1)
			}
		}
	}
	topo, err := topology.Parse([]byte(yaml.String()))
	if err != nil {
		return redisTarget{}, err
	}
	c, err := embedded.Start(topo, embedded.Options{DataDir: dataDir, RESP: true, Node: node.Config{RESPConsistency: cl, DefaultReplication: replication}})
	if err != nil {
		return redisTarget{}, fmt.Errorf("start %s: %w", name, err)
	}
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err = c.WaitConverged(startCtx); err != nil {
		c.Close()
		return redisTarget{}, fmt.Errorf("start %s: %w", name, err)
	}
	target := redisTarget{name: name, addr: c.Nodes[0].RESPAddr(), stop: func() { c.Close() }}
	for _, n := range c.Nodes {
		target.addrs = append(target.addrs, n.RESPAddr())
	}
	return target, nil
}

// runRedisBenchmark runs redis-benchmark for one operation against one target.
func runRedisBenchmark(ctx context.Context, t redisTarget, op string, clients, depth int, opts redisOptions) (RedisRow, error) {
	host, port, err := net.SplitHostPort(t.addr)
	if err != nil {
		return RedisRow{}, err
	}
	serverCPU := func() time.Duration {
		if t.pid == 0 {
			return ownCPU()
		}
		return processesCPU([]int{t.pid})
	}
	cmd := exec.CommandContext(ctx, "redis-benchmark", "-h", host, "-p", port,
		"-c", strconv.Itoa(clients), "-n", strconv.Itoa(opts.requests),
		"-d", strconv.Itoa(opts.valueBytes), "-r", strconv.Itoa(opts.keys),
		"-P", strconv.Itoa(depth), "--csv")
	cmd.Args = append(cmd.Args, benchmarkArgs(op, opts)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cpuBefore := serverCPU()
	if err := cmd.Run(); err != nil {
		return RedisRow{}, fmt.Errorf("redis-benchmark %s against %s: %w\n%s", op, t.name, err, stderr.String())
	}
	cpu := serverCPU() - cpuBefore
	row, err := parseBenchmarkCSV(stdout.Bytes(), op)
	if err != nil {
		return RedisRow{}, fmt.Errorf("redis-benchmark %s against %s: %w\n%s", op, t.name, err, stderr.String())
	}
	row.Target, row.Clients, row.Pipeline = t.name, clients, depth
	row.ServerCPUSPerKop = round(cpu.Seconds()*1000/float64(opts.requests), 4)
	return row, nil
}

// parseBenchmarkCSV reads the row of test op from redis-benchmark's --csv output, whose
// header names the columns ("test","rps",...,"p50_latency_ms",...,"p99_latency_ms",...).
func parseBenchmarkCSV(out []byte, op string) (RedisRow, error) {
	records, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		return RedisRow{}, fmt.Errorf("parse CSV output: %w", err)
	}
	if len(records) < 2 {
		return RedisRow{}, fmt.Errorf("CSV output has no results: %q", out)
	}
	column := map[string]int{}
	for i, name := range records[0] {
		column[name] = i
	}
	for _, record := range records[1:] {
		// A command given on the command line is named by its text: it is the only row.
		if record[column["test"]] != op && len(records) != 2 {
			continue
		}
		var row RedisRow
		fields := []struct {
			name string
			dst  *float64
		}{{"rps", &row.OpsPerS}, {"p50_latency_ms", &row.LatencyMsP50}, {"p99_latency_ms", &row.LatencyMsP99}}
		for _, f := range fields {
			i, ok := column[f.name]
			if !ok || i >= len(record) {
				return RedisRow{}, fmt.Errorf("CSV output lacks column %s", f.name)
			}
			if *f.dst, err = strconv.ParseFloat(record[i], 64); err != nil {
				return RedisRow{}, fmt.Errorf("CSV column %s: %w", f.name, err)
			}
		}
		row.Op = op
		return row, nil
	}
	return RedisRow{}, fmt.Errorf("CSV output has no row for %s", op)
}

// The goals for the single node with its data on disk (kura-1-durable) against
// redis-server syncing every write (redis-always), as server CPU per request at every
// client count and pipeline depth: throughput cannot be judged on a 2-core machine where
// redis-benchmark takes a core of its own (issue 44).
const (
	goalGetCPURatio = 1.2
	goalSetCPURatio = 1.5
)

// RedisGoal is one goal's row: kura-1-durable's server CPU per request over
// redis-always's, for one operation, client count and depth, with the throughput ratio
// beside it.
type RedisGoal struct {
	Clients  int      `json:"clients"`
	Pipeline int      `json:"pipeline"`
	Op       string   `json:"op"`
	CPURatio *float64 `json:"cpu_ratio"`
	Goal     float64  `json:"goal"`
	Met      bool     `json:"met"`
	OpsRatio *float64 `json:"ops_ratio"`
}

// redisReport builds the report; its reduction and summary judge kura-1-durable against
// redis-always.
func redisReport(rows []RedisRow, opts redisOptions) *Report {
	find := func(target, op string, clients, depth int) (RedisRow, bool) {
		for _, r := range rows {
			if r.Target == target && r.Op == op && r.Clients == clients && r.Pipeline == depth {
				return r, true
			}
		}
		return RedisRow{}, false
	}
	var goals []RedisGoal
	var short []string
	for _, clients := range opts.clients {
		for _, depth := range opts.pipelines {
			for _, op := range []string{"GET", "SET"} {
				kura, okKura := find(targetKuraDurable, op, clients, depth)
				redis, okRedis := find(targetRedisAlways, op, clients, depth)
				if !okKura || !okRedis {
					continue
				}
				g := RedisGoal{Clients: clients, Pipeline: depth, Op: op, Goal: goalSetCPURatio,
					CPURatio: ratioOf(kura.ServerCPUSPerKop, redis.ServerCPUSPerKop), OpsRatio: ratioOf(kura.OpsPerS, redis.OpsPerS)}
				if op == "GET" {
					g.Goal = goalGetCPURatio
				}
				g.Met = g.CPURatio != nil && *g.CPURatio <= g.Goal
				if !g.Met {
					short = append(short, fmt.Sprintf("%s c%d p%d: %s > %.1f", op, clients, depth, formatRatio(g.CPURatio), g.Goal))
				}
				goals = append(goals, g)
			}
		}
	}
	summary := map[string]any{}
	if len(goals) > 0 {
		summary["cpu_goals_met"] = fmt.Sprintf("%d/%d", len(goals)-len(short), len(goals))
		summary["cpu_goals_short"] = cmp.Or(strings.Join(short, "; "), "none")
	}
	return &Report{
		Bench: "redis",
		Scale: fmt.Sprintf("redis-benchmark, %s clients, %d requests per run, %d-byte values over %d random keys, pipeline %s; %d cores shared by every process",
			joinInts(opts.clients), opts.requests, opts.valueBytes, opts.keys, joinInts(opts.pipelines), runtime.NumCPU()),
		Rows:      rows,
		Reduction: goals,
		Summary:   summary,
		Notes: []string{
			"targets: redis = redis-server without persistence; redis-always = redis-server with appendonly yes, appendfsync always; kura-1 = one in-memory kura node, replication 1, level ONE; kura-1-durable = the same with its data on disk, every write synced to the WAL before it is acknowledged; kura-3-quorum = three in-memory nodes in one DC on loopback, replication 3, level QUORUM, every request through the first node",
			fmt.Sprintf("goals (issue 44): kura-1-durable's server CPU per request <= %.1fx redis-always's for GET and <= %.1fx for SET, at every client count and pipeline depth (reduction: cpu_ratio; ops_ratio beside it, no goal)", goalGetCPURatio, goalSetCPURatio),
			"server_cpu_s_per_kop: redis-server's process CPU (user+system, from /proc in 10 ms clock ticks: a run must last seconds for the figure to mean anything) per 1,000 requests; kura runs in the bench's own process, so its figure is that process's CPU, which includes the other kura targets' idle nodes (gossip, timers) while one target is measured",
			"redis-benchmark, redis-server and kura share the machine: on few cores the client's own CPU use caps both servers' throughput; ratio_to_redis compares ops/s with redis's in the same measurement",
		},
		Plot: func(path string) error { return redisFigure(rows, opts).Save(path) },
	}
}

// formatRatio prints a ratio that may be missing.
func formatRatio(r *float64) string {
	if r == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*r, 'f', 2, 64)
}

// redisFigure draws ops/s per target, grouped by operation, pipeline depth and, when
// there are several, client count.
func redisFigure(rows []RedisRow, opts redisOptions) Figure {
	category := func(op string, clients, depth int) string {
		if len(opts.clients) > 1 {
			return fmt.Sprintf("%s c%d P%d", op, clients, depth)
		}
		return fmt.Sprintf("%s P%d", op, depth)
	}
	var categories []string
	for _, clients := range opts.clients {
		for _, depth := range opts.pipelines {
			for _, op := range redisOps {
				categories = append(categories, category(op, clients, depth))
			}
		}
	}
	fig := Figure{Title: "kura vs redis-server under redis-benchmark", XLabel: "operation, pipeline depth", YLabel: "throughput (ops/s)", Categories: categories}
	for _, target := range []string{targetRedis, targetRedisAlways, targetKuraSingle, targetKuraDurable, targetKuraCluster} {
		series := Series{Name: target, Y: make([]float64, len(categories))}
		for _, r := range rows {
			if r.Target != target {
				continue
			}
			if i := slices.Index(categories, category(r.Op, r.Clients, r.Pipeline)); i >= 0 {
				series.Y[i] = r.OpsPerS
			}
		}
		fig.Series = append(fig.Series, series)
	}
	return fig
}

func joinInts(values []int) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}
