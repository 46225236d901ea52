package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/base/gcfloor"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/power"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/io/clockguard"
	"github.com/kuradb/kura/internal/io/storage"
	"github.com/kuradb/kura/internal/io/topology"
	"github.com/kuradb/kura/internal/service/ringchange"
)

// Default addresses of a node started without flags.
const (
	defaultListen     = "127.0.0.1:7100"
	defaultClientAddr = "127.0.0.1:7200"
)

// defaultGCHeapFloorMiB is the least a node's Go heap grows by between collections
// (package gcfloor): a scan-heavy node's collector ran ten times a second otherwise.
const defaultGCHeapFloorMiB = 32

// gcHeapFloorMiBMax is the largest floor accepted, 1 TiB: a larger one is a mistake,
// such as a size given in bytes.
const gcHeapFloorMiBMax = 1 << 20

// defaultSpareGoProcs is how many Go schedulers (Ps) a node runs beyond its CPUs (see
// setSpareGoProcs).
const defaultSpareGoProcs = 1

// spareGoProcsMax is the most spare schedulers accepted: more only adds threads
// competing for the same cores.
const spareGoProcsMax = 64

// setSpareGoProcs raises GOMAXPROCS by spare above what it is (by default the CPUs the
// process may use) and returns the function that sets it back. A goroutine in a system
// call keeps its P until the runtime's monitor takes it back, 20 µs or more later
// (golang/go#29734), and Pebble's WAL syncs are such calls: on 2 cores one of the two
// Ps sat in each fdatasync while writes and replies waited for a core. A spare P
// halved the p99 of the time goroutines waited to run under synced SETs and made them
// 8-28 % faster in paired runs (docs/performance-log.md). Once set, GOMAXPROCS no longer
// follows a change of the process's CPU limit while the node runs, as Go's default
// does. It does nothing when spare is 0 or the operator set GOMAXPROCS in the
// environment: their choice stands.
func setSpareGoProcs(spare int) (restore func()) {
	if spare == 0 || os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	previous := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(previous + spare)
	return func() { runtime.GOMAXPROCS(previous) }
}

func runServer(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("server", stderr)
	id := fs.String("id", "", "node id, unique in the cluster (required)")
	dc := fs.String("dc", "", "datacenter of this node (required unless the topology names the node)")
	listen := fs.String("listen", defaultListen, "node-to-node address")
	clientAddr := fs.String("client", defaultClientAddr, "gRPC client API address (empty: none)")
	respAddr := fs.String("resp", "", "Redis protocol address, e.g. 127.0.0.1:6379 (empty: none)")
	respLevel := fs.String("resp-consistency", "ONE", "consistency level of a new Redis connection (KURA.CONSISTENCY changes it)")
	respCounters := fs.String("resp-counters", "exact", "what INCR makes of a missing key on a new Redis connection: exact (a lightweight transaction) or pn (a conflict-free counter, no Paxos; KURA.COUNTERS changes it)")
	respKeyspace := fs.String("resp-keyspace", schema.DefaultKeyspace, "keyspace a new Redis connection starts in and RESET returns to (KURA.KEYSPACE switches one connection): one created with --transactions partition lets clients that never send KURA.KEYSPACE run MULTI over several keys of one hash tag (as default does in a cluster created with --default-transactions partition). It may be created after the node starts. Per node: give every node the same, or a client reconnecting through another node changes keyspace")
	respTimeout := fs.Duration("resp-timeout", 0, "close a Redis connection idle for this long, as Redis's timeout (0: never; CONFIG SET timeout changes it)")
	defaultLimits := coord.DefaultLimits()
	maxKeyBytes := fs.Int("max-key-bytes", defaultLimits.KeyBytesMax, "largest key accepted, in bytes")
	maxValueBytes := fs.Int("max-value-bytes", defaultLimits.ValueBytesMax, "largest value accepted, in bytes (with the key limit, at most 32 MiB less 64 KiB: one replica message)")
	httpAddr := fs.String("http", "", "HTTP admin address serving the web console (/), /metrics, /healthz and /status (empty: none)")
	enablePprof := fs.Bool("enable-pprof", false, "also serve the Go profiler, /debug/pprof, on the --http port")
	security := addServerSecurityFlags(fs)
	seeds := fs.String("seeds", "", "comma-separated node-to-node addresses of nodes to join through")
	dataDir := fs.String("data-dir", "", "directory for durable storage")
	inMemory := fs.Bool("in-memory", false, "keep data in memory only (lost on exit)")
	topologyArg := fs.String("topology", "", "topology file or example name: the DCs, their links, and nodes to know from the start")
	emulate := fs.Bool("emulate-wan", false, "shape traffic to other DCs by the topology's latency and bandwidth")
	membershipName := fs.String("membership", "ferry", "gossip protocol: ferry (DC-aware) or scuttlebutt (Cassandra's)")
	gossipInterval := fs.Duration("gossip-interval", time.Second, "length of a gossip round; failure detection scales with it")
	routingName := fs.String("routing", "onehop", "how replicas are found: onehop, chord, mlchord or mlchord-paper")
	replace := fs.String("replace", "", "id of a dead node whose place (tokens, data) this new node takes over")
	ringDelay := fs.Duration("ring-delay", 0, "wait after announcing a ring change before streaming, so every node has learned it (0: five gossip rounds)")
	abortJoinAfter := fs.Duration("abort-join-after", ringchange.DefaultAbortJoinAfter, "how long a joining node stays dead before the cluster aborts its join by itself, as kura node remove would (0: never; at least six ring delays)")
	streamMiBps := fs.Float64("stream-throughput", 0, "cap on the MiB per second this node pulls when it streams ranges (0: no cap)")
	compactionMiBps := fs.Float64("compaction-throughput", storage.DefaultCompactionBytesPerSecond>>20, "MiB per second the storage engine's compactions write, unless they fall behind (0: no pace; Cassandra's compaction_throughput)")
	rowCacheMiB := fs.Float64("row-cache", storage.DefaultRowCacheBytes>>20, "MiB of recently read and written records the storage engine keeps in front of Pebble (0: none); kura_storage_row_cache_reads_total shows its hits")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	repairInterval := fs.Duration("repair-interval", time.Hour, "length of one background anti-entropy repair of every keyspace, its ranges spread over it (0: none)")
	maxClockOffset := fs.Duration("max-clock-offset", clockguard.DefaultMaxOffset, "how far this node's clock may be from its peers' before it refuses to coordinate writes")
	defaultReplication := fs.String("default-replication", node.DefaultReplication, "replication of the default keyspace a new node defines (e.g. each=3, dc1=3,dc2=2; none: no default keyspace)")
	defaultTransactions := fs.String("default-transactions", node.DefaultTransactions, "where the lightweight transactions of the default keyspace a new node defines run: partition (a MULTI/EXEC may cover several keys of one hash tag) or key (one Paxos instance per key, so keys of one tag do not contend); give every node the same: where they differ, a node adopts the definition its cluster settled on, and a node that founded the cluster with another one refuses transactions in default, saying why")
	enableFaults := fs.Bool("enable-faults", false, "let the admin API inject faults into this node (kura faults, kura nemesis): test clusters only")
	powerTier := fs.Int("power-tier", 0, "power tier, fixed at the first start: 0 never sleeps, 1 may sleep (kura power; docs/power.md)")
	powerProfile := fs.String("power-profile", "s4", "sleep state whose draw and transition times model the node's energy: s4 or s1")
	noSuppression := fs.Bool("no-timeout-suppression", false, "when asleep, leave the addresses frozen instead of letting a neighbour redirect clients (the paper's \"no control\" baseline)")
	powerController := fs.Bool("power-controller", false, "let the power controller put nodes to sleep and wake them from the measured load (every node should agree)")
	powerLevels := fs.String("power-levels", "", "the consistency levels each keyspace is read and written at, keyspace=LEVEL comma-separated, * for every other keyspace (e.g. default=ONE,*=QUORUM); no node sleeps when a range would then have too few awake replicas for one of them (empty: EACH_QUORUM for every keyspace; every node should agree; docs/power.md)")
	capacity := fs.Float64("power-capacity", 1000, "requests per second one awake node serves within the latency target (for the power controller)")
	latencyTarget := fs.Duration("power-latency-target", 20*time.Millisecond, "p99 the power controller keeps requests within")
	readWorkers := fs.Int("read-workers", sched.DefaultWorkers, "reads the node serves at once, for itself and for other coordinators (its read stage; Cassandra's concurrent_reads)")
	readPolicy := fs.String("read-policy", "fifo", "how waiting reads are ordered and scans sent: fifo, res, fair, with +parallel and +ras, or O, ReS, P, ReS+P, P+RaS, A, kura (docs/scheduling.md)")
	gcHeapFloorMiB := fs.Float64("gc-heap-floor", defaultGCHeapFloorMiB, "MiB of allocation the Go heap may grow by between collections however little of it is live, at most this much more memory (0: Go's default, GOGC=100; a GOGC in the environment wins)")
	spareGoProcs := fs.Int("spare-go-procs", defaultSpareGoProcs, "Go schedulers (GOMAXPROCS) beyond the CPUs, so that one held in a WAL sync leaves no core idle (0: Go's default; a GOMAXPROCS in the environment wins)")
	emulateDisk := fs.String("emulate-disk", "", "hold a read worker for an emulated device time after each read, ACCESS+PER_KIB (e.g. 2ms+20us), and /IOKiB for IOs of that size at a shared device (--emulate-disk-shared): benches on data held in memory")
	sharedDisk := fs.Bool("emulate-disk-shared", false, "with --emulate-disk: the read workers share one emulated device, each waiting its turn in arrival order, as threads share a disk (default: a device per worker)")
	printConfig, err := parseServerFlags(fs, args)
	if err != nil {
		return err
	}
	if printConfig {
		return writeConfig(stdout, fs)
	}
	logger, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	if *id == "" {
		return fmt.Errorf("%w: --id is required", errUsage)
	}
	if (*dataDir == "") == !*inMemory {
		return fmt.Errorf("%w: give exactly one of --data-dir DIR and --in-memory", errUsage)
	}
	if *readWorkers <= 0 {
		return fmt.Errorf("%w: --read-workers must be positive", errUsage)
	}
	policy, err := sched.ParsePolicy(*readPolicy)
	if err != nil {
		return fmt.Errorf("%w: --read-policy: %v", errUsage, err)
	}
	device, err := sched.ParseDevice(*emulateDisk)
	if err != nil {
		return fmt.Errorf("%w: --emulate-disk: %v", errUsage, err)
	}
	if *sharedDisk && device == (sched.Device{}) {
		return fmt.Errorf("%w: --emulate-disk-shared needs --emulate-disk", errUsage)
	}
	cfg := node.Config{
		ID: *id, DC: *dc, Listen: *listen, ClientAddr: *clientAddr,
		ReadWorkers: *readWorkers, ReadPolicy: policy, ReadDevice: device, ReadDeviceShared: *sharedDisk,
		RESPAddr: *respAddr, HTTPAddr: *httpAddr, EnablePprof: *enablePprof,
		DataDir: *dataDir, InMemory: *inMemory, Logger: logger,
		Membership: *membershipName, GossipInterval: *gossipInterval, Routing: *routingName,
		RepairInterval: *repairInterval, MaxClockOffset: *maxClockOffset, EnableFaults: *enableFaults,
		DefaultReplication: *defaultReplication, DefaultTransactions: *defaultTransactions,
		PowerTier: *powerTier, PowerProfile: *powerProfile, NoTimeoutSuppression: *noSuppression,
		Replace: *replace, RingDelay: *ringDelay, StreamThroughput: int64(*streamMiBps * (1 << 20)),
		RESPIdleTimeout: *respTimeout, AbortJoinAfter: *abortJoinAfter,
		RESPKeyspace: *respKeyspace,
	}
	switch {
	case *abortJoinAfter < 0:
		return fmt.Errorf("%w: --abort-join-after %v is negative (0 turns it off)", errUsage, *abortJoinAfter)
	case *abortJoinAfter == 0:
		cfg.AbortJoinAfter = ringchange.NeverAbortJoin
	}
	if cfg.PowerLevels, err = power.ParseLevels(*powerLevels); err != nil {
		return fmt.Errorf("%w: --power-levels: %v", errUsage, err)
	}
	cfg.CPUTime = processCPUTime
	if *powerController {
		cfg.PowerController = &power.ControllerConfig{CapacityOpsPerSecond: *capacity, LatencyTarget: *latencyTarget}
	}
	if *defaultReplication != node.NoDefaultKeyspace {
		if _, err := ring.ParseReplication(*defaultReplication); err != nil {
			return fmt.Errorf("%w: --default-replication: %v", errUsage, err)
		}
	}
	if t := *defaultTransactions; t != schema.TransactionsKey && t != schema.TransactionsPartition {
		return fmt.Errorf("%w: --default-transactions %q: want %s or %s", errUsage, t, schema.TransactionsKey, schema.TransactionsPartition)
	}
	if *maxKeyBytes <= 0 || *maxValueBytes <= 0 {
		return fmt.Errorf("%w: --max-key-bytes and --max-value-bytes must be positive", errUsage)
	}
	cfg.Limits.KeyBytesMax, cfg.Limits.ValueBytesMax = *maxKeyBytes, *maxValueBytes
	if err := node.CheckLimits(cfg.Limits); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := schema.ValidateName(*respKeyspace); err != nil {
		return fmt.Errorf("%w: --resp-keyspace: %v", errUsage, err)
	}
	if *respTimeout < 0 {
		return fmt.Errorf("%w: --resp-timeout must not be negative", errUsage)
	}
	if *maxClockOffset <= 0 {
		return fmt.Errorf("%w: --max-clock-offset must be positive", errUsage)
	}
	if *streamMiBps < 0 {
		return fmt.Errorf("%w: --stream-throughput must not be negative", errUsage)
	}
	if *gcHeapFloorMiB < 0 || *gcHeapFloorMiB > gcHeapFloorMiBMax {
		return fmt.Errorf("%w: --gc-heap-floor must be between 0 and %d MiB", errUsage, gcHeapFloorMiBMax)
	}
	if *spareGoProcs < 0 || *spareGoProcs > spareGoProcsMax {
		return fmt.Errorf("%w: --spare-go-procs must be between 0 and %d", errUsage, spareGoProcsMax)
	}
	if cfg.CompactionThroughput, err = mibOrNone("compaction-throughput", *compactionMiBps); err != nil {
		return err
	}
	if cfg.RowCacheBytes, err = mibOrNone("row-cache", *rowCacheMiB); err != nil {
		return err
	}
	if cfg.RESPConsistency, err = consistency.Parse(*respLevel); err != nil {
		return fmt.Errorf("%w: --resp-consistency: %v", errUsage, err)
	}
	switch *respCounters {
	case "exact", "pn":
		cfg.RESPPNCounters = *respCounters == "pn"
	default:
		return fmt.Errorf("%w: --resp-counters is exact or pn, not %q", errUsage, *respCounters)
	}
	if err := security.apply(&cfg); err != nil {
		return err
	}
	if *seeds != "" {
		cfg.Seeds = strings.Split(*seeds, ",")
	}
	if *topologyArg != "" {
		topo, err := loadTopology(*topologyArg)
		if err != nil {
			return err
		}
		if err := applyTopology(&cfg, topo); err != nil {
			return err
		}
		cfg.EmulateWAN = *emulate
	} else if *emulate {
		return fmt.Errorf("%w: --emulate-wan needs --topology", errUsage)
	}
	if cfg.DC == "" {
		return fmt.Errorf("%w: --dc is required (or a --topology that names node %q)", errUsage, *id)
	}

	defer gcfloor.Set(uint64(*gcHeapFloorMiB * (1 << 20)))()
	defer setSpareGoProcs(*spareGoProcs)()
	n, err := node.Start(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "node %s (dc %s) listening on %s, client API on %s\n", n.ID(), cfg.DC, n.Addr(), n.ClientAddr())
	for _, p := range openPorts(cfg) {
		logger.Warn("serving without authentication", "flag", "--"+p.flag, "addr", p.addr, "risk", p.risk, "fix", p.fix)
	}
	if addr := n.RESPAddr(); addr != "" {
		fmt.Fprintf(stdout, "Redis protocol on %s\n", addr)
	}
	if addr := n.HTTPAddr(); addr != "" {
		fmt.Fprintf(stdout, "web console on http://%s/ (and /metrics, /healthz, /status)\n", addr)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	select {
	case sig := <-stop:
		logger.Info("stopping", "signal", sig.String())
		return n.Close()
	case err := <-n.JoinRefused():
		// The node logged it; a process left booting for ever would hide it.
		n.Close()
		return err
	}
}

// applyTopology takes the node's DC from the topology when it names the node, checks a
// given --dc against it, and makes the topology's other nodes with addresses known peers.
func applyTopology(cfg *node.Config, topo *topology.Topology) error {
	cfg.Topology = topo
	if dc, ok := topo.DCOf(cfg.ID); ok {
		// The nodes a topology file names found the cluster together; others join it.
		cfg.Founding = cfg.Replace == ""
		if cfg.DC != "" && cfg.DC != dc {
			return fmt.Errorf("%w: --dc %s, but topology %s puts node %s in %s", errUsage, cfg.DC, topo.Name, cfg.ID, dc)
		}
		cfg.DC = dc
	}
	for _, spec := range topo.Nodes() {
		if spec.ID != cfg.ID && spec.Addr != "" {
			cfg.Peers = append(cfg.Peers, cluster.Node{ID: spec.ID, DC: spec.DC, Addr: spec.Addr, ClientAddr: spec.ClientAddr})
		}
	}
	return nil
}

// mibOrNone converts the MiB of flag name to bytes for a storage option where zero
// means the default and a negative value none: 0 MiB is none (-1), a positive size at
// least one byte, a negative one a usage error.
func mibOrNone(name string, mib float64) (int64, error) {
	switch {
	case mib < 0:
		return 0, fmt.Errorf("%w: --%s must not be negative", errUsage, name)
	case mib == 0:
		return -1, nil
	}
	return max(1, int64(mib*(1<<20))), nil
}
