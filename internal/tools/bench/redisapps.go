package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/base/stats"
	"github.com/kuradb/kura/internal/tools/nemesis"
)

func init() {
	Register(Bench{
		Name:    "redis-apps",
		Summary: "leaderboard, sessions, queue, tags and counters through go-redis: redis-server against kura server processes",
		Setup:   setupRedisApps,
	})
}

// The targets of redis-apps (--targets), in the order each round visits them first.
const (
	appRedis       = "redis"
	appRedisAlways = "redis-always"
	appKuraOne     = "kura-1"
	appKuraThree   = "kura-3"
	// pnSuffix names the rows of kura's conflict-free counters: the same cluster, its
	// connections in KURA.COUNTERS PN.
	pnSuffix = "-pn"
)

var appTargets = []string{appRedis, appRedisAlways, appKuraOne, appKuraThree}

// appsKeyspace is the keyspace kura's targets serve the patterns from: created with the
// default partitioner (grouped), which hashes, sets and sorted sets need.
const appsKeyspace = "apps"

// redisAppsOptions are the bench's flags.
type redisAppsOptions struct {
	patterns  []appPattern
	targets   []string
	clients   int
	duration  time.Duration
	repeats   int
	items     int
	opTimeout time.Duration
	bin       string
}

func setupRedisApps(fs *flag.FlagSet) Runner {
	o := &redisAppsOptions{}
	patterns := fs.String("patterns", "leaderboard,sessions,queue,tags,counters", "application patterns to run, comma-separated")
	targets := fs.String("targets", strings.Join(appTargets, ","), "servers, comma-separated: redis (save off, no AOF), redis-always (AOF, appendfsync always), kura-1 (one kura server), kura-3 (three in two DCs, QUORUM)")
	fs.IntVar(&o.clients, "clients", 8, "concurrent clients, each with its own connection, closed loop (the queue: half push, half pop)")
	fs.DurationVar(&o.duration, "duration", 3*time.Second, "length of each run (the queue's consumers then drain what is left)")
	fs.IntVar(&o.repeats, "repeats", 3, "rounds of every pattern; the targets take turns within each round, each round starting one target later")
	fs.IntVar(&o.items, "items", 1000, "members per leaderboard, sessions, items the tags pick from, counters")
	fs.DurationVar(&o.opTimeout, "op-timeout", 10*time.Second, "give up on one command after this long (it counts as an error)")
	fs.StringVar(&o.bin, "bin", "", "the kura binary whose server subcommand runs kura's nodes (default: the kura that ran kura bench, else kura beside kura-bench or on PATH)")
	return func(ctx context.Context, env Env) (*Report, error) {
		names, err := parseChoices("--patterns", *patterns, appPatternNames())
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			o.patterns = append(o.patterns, appPatternByName(name))
		}
		if o.targets, err = parseChoices("--targets", *targets, appTargets); err != nil {
			return nil, err
		}
		if o.clients < 2 || o.duration <= 0 || o.repeats < 1 || o.items < appTopN || o.opTimeout <= 0 {
			return nil, fmt.Errorf("--clients must be at least 2 (the queue has producers and consumers), --items at least %d (the leaderboard's top), --duration, --repeats and --op-timeout positive", appTopN)
		}
		if slices.ContainsFunc(o.targets, func(t string) bool { return strings.HasPrefix(t, "redis") }) {
			if _, err := exec.LookPath("redis-server"); err != nil {
				return nil, fmt.Errorf("%w: redis-server not found", ErrNoRedisTools)
			}
		}
		if o.bin == "" && slices.ContainsFunc(o.targets, func(t string) bool { return strings.HasPrefix(t, "kura") }) {
			if env.KuraBinary == nil {
				return nil, errors.New("name the kura binary whose server subcommand runs kura's nodes: --bin")
			}
			if o.bin, err = env.KuraBinary(); err != nil {
				return nil, fmt.Errorf("find the kura binary: %w", err)
			}
		}
		return runRedisApps(ctx, env, *o)
	}
}

// appServer is one running target: its processes, measured for CPU, and how to reach it.
type appServer struct {
	name string
	// persistence says what the server does with a write before it answers.
	persistence string
	pids        []int
	// addrs are the nodes' Redis ports; the clients spread over them.
	addrs []string
	// setup is what each connection sends first (kura's keyspace and level).
	setup [][]any
	stop  func()
}

// appEntry is one row source: a server and the connection settings of its rows (kura's
// counters in PN mode are a second entry on the same server).
type appEntry struct {
	name   string
	server *appServer
	setup  [][]any
}

// runRedisApps starts every target, side by side for the whole run, then runs the
// patterns one after another (runAppPattern), and stops the targets.
func runRedisApps(ctx context.Context, env Env, o redisAppsOptions) (*Report, error) {
	dir, err := os.MkdirTemp("", "kura-bench-redis-apps-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var servers []*appServer
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for _, name := range o.targets {
		s, err := startAppServer(ctx, env, o, name, filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		servers = append(servers, s)
		env.Progressf("started %s on %s (processes %v)", name, strings.Join(s.addrs, ", "), s.pids)
	}

	units := 0
	for _, p := range o.patterns {
		units += o.repeats * len(appEntries(p, servers))
	}
	progress := env.StartProgress("redis-apps", float64(units))
	defer progress.Done()
	var rows []RedisAppsRow
	var checks []AppCheck
	for _, p := range o.patterns {
		patternRows, patternChecks, err := runAppPattern(ctx, progress, p, appEntries(p, servers), o)
		if err != nil {
			return nil, err
		}
		rows, checks = append(rows, patternRows...), append(checks, patternChecks...)
	}
	return redisAppsReport(rows, checks, o), nil
}

// runAppPattern loads the pattern's data into every entry's server, then runs its
// rounds, the entries taking turns, each round starting one entry later, so that a change
// in the machine's load falls on them alike.
func runAppPattern(ctx context.Context, progress *Progress, p appPattern, entries []appEntry, o redisAppsOptions) ([]RedisAppsRow, []AppCheck, error) {
	clients := make([]*appClient, len(entries))
	for i, e := range entries {
		clients[i] = newAppClient(e, o)
		defer clients[i].close()
		if p.load == nil {
			continue
		}
		progress.Add(0, "%s, %s: loading", p.name, e.name)
		if err := p.load(ctx, clients[i], o); err != nil {
			return nil, nil, fmt.Errorf("%s, %s: load: %w", p.name, e.name, err)
		}
	}
	var checks []AppCheck
	rounds := make([][]appRound, len(entries))
	for round := range o.repeats {
		for turn := range entries {
			i := (turn + round) % len(entries)
			r, check, err := runAppRound(ctx, p, clients[i], o, round)
			if err != nil {
				return nil, nil, fmt.Errorf("%s, %s round %d: %w", p.name, entries[i].name, round+1, err)
			}
			rounds[i] = append(rounds[i], r)
			if check != nil {
				check.Pattern, check.Target, check.Round = p.name, entries[i].name, round+1
				checks = append(checks, *check)
			}
			progress.Add(1, "%s, %s round %d of %d: %s ops/s, p99 %s ms, server CPU %s µs per op", p.name, entries[i].name, round+1, o.repeats,
				formatNumber("ops_per_s", r.OpsPerS, false), formatFixed(r.LatencyMsP99), formatFixed(r.CPUUsPerOp))
		}
	}
	rows := make([]RedisAppsRow, len(entries))
	always := slices.IndexFunc(entries, func(e appEntry) bool { return e.name == appRedisAlways })
	for i, e := range entries {
		rows[i] = medianAppRow(rounds[i])
		rows[i].Pattern, rows[i].Target, rows[i].Persistence, rows[i].Clients = p.name, e.name, e.server.persistence, o.clients
	}
	if always >= 0 {
		for i := range rows {
			rows[i].CPURatioAlways = ratioOf(rows[i].CPUUsPerOp, rows[always].CPUUsPerOp)
		}
	}
	return rows, checks, nil
}

// appEntries are the pattern's row sources: every server, and, for the counters, each
// kura server again with its connections in PN mode.
func appEntries(p appPattern, servers []*appServer) []appEntry {
	var entries []appEntry
	for _, s := range servers {
		entries = append(entries, appEntry{name: s.name, server: s, setup: s.setup})
	}
	if p.name == patternCounters {
		for _, s := range servers {
			if strings.HasPrefix(s.name, "kura") {
				entries = append(entries, appEntry{name: s.name + pnSuffix, server: s, setup: append(slices.Clone(s.setup), []any{"KURA.COUNTERS", "PN"})})
			}
		}
	}
	return entries
}

// startAppServer starts target name: redis-server with its persistence settings, or
// `kura server` processes with their data on disk under dir.
func startAppServer(ctx context.Context, env Env, o redisAppsOptions, name, dir string) (*appServer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	switch name {
	case appRedis, appRedisAlways:
		// Both without RDB snapshots, whose forked child's CPU the bench would not see.
		args := []string{"--dir", dir, "--save", "", "--appendonly", "no"}
		persistence := "save off, aof off"
		if name == appRedisAlways {
			args = []string{"--dir", dir, "--save", "", "--appendonly", "yes", "--appendfsync", "always"}
			persistence = "save off, aof always"
		}
		t, err := startRedisServer(ctx, name, args...)
		if err != nil {
			return nil, err
		}
		env.Environment.AddPeer(t.build)
		return &appServer{name: name, persistence: persistence, pids: []int{t.pid}, addrs: []string{t.addr}, stop: t.stop}, nil
	}
	nodes, level := 1, consistency.One
	if name == appKuraThree {
		nodes, level = 3, consistency.Quorum
	}
	c, err := nemesis.StartCluster(ctx, nemesis.ClusterConfig{Bin: o.bin, Nodes: nodes, DCs: min(nodes, 2), Dir: dir, GossipInterval: time.Second})
	if err != nil {
		return nil, err
	}
	if err := c.CreateKeyspace(ctx, appsKeyspace, kuraReplication(nodes)); err != nil {
		c.Close()
		return nil, err
	}
	env.Environment.AddPeer(PeerBuild{Name: "kura (--bin)", Version: commandVersion(o.bin, "version"), Config: "kura server defaults, data on disk (WAL synced before a write is acknowledged), gossip interval 1 s"})
	s := &appServer{name: name, persistence: "WAL fsync, " + level.String(), stop: c.Close,
		setup: [][]any{{"KURA.KEYSPACE", appsKeyspace}, {"KURA.CONSISTENCY", level.String()}}}
	for _, p := range c.Processes() {
		s.pids = append(s.pids, p.PID)
		s.addrs = append(s.addrs, p.RESP)
	}
	return s, nil
}

// appClient is an entry's go-redis clients, one per node (worker w talks to node w mod
// n), and its server's processes.
type appClient struct {
	name  string
	pids  []int
	nodes []*redis.Client
}

func newAppClient(e appEntry, o redisAppsOptions) *appClient {
	c := &appClient{name: e.name, pids: e.server.pids}
	for _, addr := range e.server.addrs {
		// No retries: a command sent twice would push a queue item twice. Timeouts are
		// the bench's own, longer than go-redis's 3 s, so a slow command counts as slow.
		opts := &redis.Options{Addr: addr, PoolSize: o.clients, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
			ReadTimeout: o.opTimeout, WriteTimeout: o.opTimeout}
		if len(e.setup) > 0 {
			opts.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
				for _, cmd := range e.setup {
					if err := cn.Do(ctx, cmd...).Err(); err != nil {
						return fmt.Errorf("%v: %w", cmd, err)
					}
				}
				return nil
			}
		}
		c.nodes = append(c.nodes, redis.NewClient(opts))
	}
	return c
}

// node is worker w's node.
func (c *appClient) node(w int) *redis.Client { return c.nodes[w%len(c.nodes)] }

func (c *appClient) close() {
	for _, n := range c.nodes {
		n.Close()
	}
}

// RedisAppsRow is one pattern against one target: the medians of its rounds, with the
// lowest and highest round beside the throughput and the CPU.
type RedisAppsRow struct {
	Pattern     string `json:"pattern" table:"group"`
	Target      string `json:"target"`
	Persistence string `json:"persistence"`
	Clients     int    `json:"clients" table:"-"`
	// Ops are the commands answered without error, over every round.
	Ops     int     `json:"ops" table:"-"`
	OpsPerS float64 `json:"ops_per_s"`
	// OpsPerSMin and OpsPerSMax are the slowest and fastest rounds.
	OpsPerSMin    float64 `json:"ops_per_s_min"`
	OpsPerSMax    float64 `json:"ops_per_s_max"`
	LatencyMsP50  float64 `json:"latency_ms_p50"`
	LatencyMsP99  float64 `json:"latency_ms_p99"`
	LatencyMsP999 float64 `json:"latency_ms_p999" table:"-"`
	// CPUUsPerOp is the server's processes' CPU time (user and system, every node) per
	// command answered, in microseconds.
	CPUUsPerOp    float64 `json:"cpu_us_per_op"`
	CPUUsPerOpMin float64 `json:"cpu_us_per_op_min"`
	CPUUsPerOpMax float64 `json:"cpu_us_per_op_max"`
	// CPURatioAlways is CPUUsPerOp over redis-always's in the same pattern.
	CPURatioAlways *float64 `json:"cpu_ratio_always"`
	// Errors are the commands that failed or answered what the pattern rules out (a
	// loaded session missing, a top-10 of fewer), over every round.
	Errors     int        `json:"errors"`
	FirstError string     `json:"first_error,omitempty" table:"-"`
	Rounds     []appRound `json:"rounds" table:"-"`
}

// appRound is one round of a row.
type appRound struct {
	Ops           int     `json:"ops"`
	Errors        int     `json:"errors"`
	ElapsedS      float64 `json:"elapsed_s"`
	OpsPerS       float64 `json:"ops_per_s"`
	LatencyMsP50  float64 `json:"latency_ms_p50"`
	LatencyMsP99  float64 `json:"latency_ms_p99"`
	LatencyMsP999 float64 `json:"latency_ms_p999"`
	CPUUsPerOp    float64 `json:"cpu_us_per_op"`
	FirstError    string  `json:"first_error,omitempty"`
}

// medianAppRow folds a row's rounds: medians, the lowest and highest throughput and CPU,
// the counts summed.
func medianAppRow(rounds []appRound) RedisAppsRow {
	var row RedisAppsRow
	median := func(get func(appRound) float64) (med, lowest, highest float64) {
		values := make([]float64, len(rounds))
		for i, r := range rounds {
			values[i] = get(r)
		}
		return stats.Median(values), slices.Min(values), slices.Max(values)
	}
	for _, r := range rounds {
		row.Ops += r.Ops
		row.Errors += r.Errors
		if row.FirstError == "" {
			row.FirstError = r.FirstError
		}
	}
	row.OpsPerS, row.OpsPerSMin, row.OpsPerSMax = median(func(r appRound) float64 { return r.OpsPerS })
	row.CPUUsPerOp, row.CPUUsPerOpMin, row.CPUUsPerOpMax = median(func(r appRound) float64 { return r.CPUUsPerOp })
	row.LatencyMsP50, _, _ = median(func(r appRound) float64 { return r.LatencyMsP50 })
	row.LatencyMsP99, _, _ = median(func(r appRound) float64 { return r.LatencyMsP99 })
	row.LatencyMsP999, _, _ = median(func(r appRound) float64 { return r.LatencyMsP999 })
	row.Rounds = rounds
	return row
}

// AppCheck is one round of a pattern's check that the server kept what it answered:
// the queue's exactly-once delivery, the counters' sums.
type AppCheck struct {
	Pattern string `json:"pattern" table:"group"`
	Target  string `json:"target"`
	Round   int    `json:"round"`
	// Writes are the writes answered (LPUSHes, INCRs); Unconfirmed those that failed,
	// each of which may or may not have taken effect.
	Writes      int `json:"writes"`
	Unconfirmed int `json:"unconfirmed"`
	// Found is what was read back: the items popped, the counters' growth.
	Found int `json:"found"`
	// Lost are answered writes not found (items never popped, increments not counted);
	// Duplicated what was found more than written (an item popped again or never
	// pushed, an increment counted twice).
	Lost       int  `json:"lost"`
	Duplicated int  `json:"duplicated"`
	OK         bool `json:"ok"`
}

func redisAppsReport(rows []RedisAppsRow, checks []AppCheck, o redisAppsOptions) *Report {
	var names []string
	for _, p := range o.patterns {
		names = append(names, p.name+" ("+p.commands+")")
	}
	summary := map[string]any{}
	if len(checks) > 0 {
		failed := []string{}
		for _, c := range checks {
			if !c.OK {
				failed = append(failed, fmt.Sprintf("%s, %s round %d: %d lost, %d duplicated", c.Pattern, c.Target, c.Round, c.Lost, c.Duplicated))
			}
		}
		summary["checks_passed"] = fmt.Sprintf("%d of %d runs", len(checks)-len(failed), len(checks))
		if len(failed) > 0 {
			summary["check_failures"] = strings.Join(failed, "; ")
		}
	}
	// Per kura row, its CPU per op over redis-always's, lowest and highest over the
	// patterns.
	for _, target := range []string{appKuraOne, appKuraThree, appKuraOne + pnSuffix, appKuraThree + pnSuffix} {
		var ratios []float64
		for _, r := range rows {
			if r.Target == target && r.CPURatioAlways != nil {
				ratios = append(ratios, *r.CPURatioAlways)
			}
		}
		if len(ratios) > 0 {
			summary["cpu_ratio_always."+target] = fmt.Sprintf("%.2f to %.2f", slices.Min(ratios), slices.Max(ratios))
		}
	}
	if len(summary) == 0 {
		summary = nil
	}
	return &Report{
		Bench: "redis-apps",
		Scale: fmt.Sprintf("go-redis, %d clients (one connection each, closed loop), %v per run, %d rounds alternated, %d items; patterns: %s; %d cores shared by every process",
			o.clients, o.duration, o.repeats, o.items, strings.Join(names, "; "), runtime.NumCPU()),
		Rows:      rows,
		Reduction: checks,
		Summary:   summary,
		Notes: []string{
			"targets: redis = redis-server with save \"\" and appendonly no (nothing on disk); redis-always = save \"\", appendonly yes, appendfsync always (every write in the AOF, fsynced, before the reply); kura-1 = one kura server process, data on disk, WAL synced before a write is acknowledged, level ONE; kura-3 = three kura server processes on 127.0.0.2-4 in two DCs (2+1), replication dc1=2,dc2=1, level QUORUM (SERIAL for lightweight transactions), the clients spread over the three nodes; kura-1-pn and kura-3-pn = the same servers with the connections in KURA.COUNTERS PN (conflict-free counters, no Paxos)",
			"an op is one command answered; ops_per_s the ops of a round over the time to its last answer; latencies per command (BRPOP's include its wait for an item); cpu_us_per_op the server's processes' CPU time (user+system from /proc in 10 ms ticks, every node) per op; medians of the rounds, with the slowest and fastest round's ops/s and CPU beside; cpu_ratio_always = cpu_us_per_op over redis-always's in the same pattern",
			"the checks (reduction): in the queue, every item whose LPUSH was answered must be popped exactly once (the consumers drain after the producers stop, until every pushed item is popped or no pop came for " + strconv.Itoa(int(appDrainIdle/time.Second)) + " s); in the counters, the sum of the counters (MGET) must grow by the INCRs answered, plus at most those that failed",
			"the clients run in the bench's process on the same cores as the servers: on 2 cores they cap every target's throughput, so compare CPU per op more than ops/s",
		},
	}
}
