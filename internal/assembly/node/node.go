// Package node wires one kura node together: storage, transport, cluster directory,
// keyspace catalog, coordinator, the gRPC client API, and the background loops that keep
// them going (gossip membership, hint replay, tombstone collection, anti-entropy repair).
package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/time/rate"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/base/workers"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/paxos"
	"github.com/kuradb/kura/internal/core/power"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/routing/chord"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/antientropy"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/data/hints"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica/local"
	"github.com/kuradb/kura/internal/data/replica/remote"
	"github.com/kuradb/kura/internal/data/routing"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/data/stream"
	"github.com/kuradb/kura/internal/io/certs"
	"github.com/kuradb/kura/internal/io/clockguard"
	"github.com/kuradb/kura/internal/io/cluster/ringstore"
	"github.com/kuradb/kura/internal/io/faults"
	"github.com/kuradb/kura/internal/io/storage"
	"github.com/kuradb/kura/internal/io/topology"
	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/service/apiserver"
	"github.com/kuradb/kura/internal/service/membership/driver"
	"github.com/kuradb/kura/internal/service/membership/feed"
	"github.com/kuradb/kura/internal/service/metrics"
	"github.com/kuradb/kura/internal/service/powercycle"
	"github.com/kuradb/kura/internal/service/rebalance"
	"github.com/kuradb/kura/internal/service/ringchange"
	"github.com/kuradb/kura/internal/service/schemasync"
)

// Config configures one node.
type Config struct {
	ID         string
	DC         string
	Listen     string   // node-to-node address; "127.0.0.1:0" picks a port
	ClientAddr string   // gRPC client API address; empty serves none
	Seeds      []string // node-to-node addresses of nodes to join through
	// Tokens places the node on the ring by hand (e.g. ring.EvenTokens for experiments);
	// empty derives Vnodes tokens from the id.
	Tokens []uint64
	// Peers are nodes known in advance (from a topology file or an in-process cluster),
	// with their addresses; they serve as seeds too, and gossip finds the rest.
	Peers []cluster.Node

	// Membership names the gossip protocol that keeps the cluster view: "ferry"
	// (default; kura's DC-aware protocol) or "scuttlebutt" (Cassandra's).
	Membership string
	// GossipInterval is the length of a gossip round; default 1 s. Every timeout of the
	// protocol (failure detection included) scales with it, so tests shorten it.
	GossipInterval time.Duration

	DataDir  string // on-disk storage; ignored when InMemory
	InMemory bool
	// FS, when set, is the filesystem DataDir lives on (storage.Options.FS): the
	// simulator gives each node a strict in-memory one that a crash rolls back to what
	// was synced.
	FS vfs.FS

	// Network, when set, puts the node on the network between nodes instead of
	// transport.Listen: the simulator's network (internal/tools/sim/simnet) runs a whole cluster in
	// virtual time.
	Network transport.Listener
	// Seed, when not zero, seeds the node's random choices (its gossip's), so that a
	// simulated cluster runs the same way from the same seed.
	Seed uint64

	// Topology, when set with EmulateWAN, shapes every message to a peer in another DC by
	// the topology's latency and bandwidth (see transport).
	Topology   *topology.Topology
	EmulateWAN bool
	// Stats, when set, collects this node's transport counters (shared by in-process
	// clusters so one object counts the whole cluster).
	Stats *transport.Stats

	// RESPAddr serves the Redis protocol (package resp) on this address; empty serves none.
	RESPAddr string
	// RESPPassword, when set, is the password Redis clients must give with AUTH or HELLO.
	RESPPassword string
	// RESPConsistency is the consistency level of a new Redis connection; default ONE.
	RESPConsistency consistency.Level
	// RESPPNCounters makes INCR and its kin create conflict-free (PN) counters on a new
	// Redis connection, as KURA.COUNTERS PN does; false: exact ones.
	RESPPNCounters bool
	// RESPIdleTimeout closes a Redis connection whose client sends nothing for that long
	// (Redis's timeout; CONFIG SET timeout changes it); 0 never does.
	RESPIdleTimeout time.Duration
	// RESPKeyspace is the keyspace a new Redis connection starts in, and RESET returns
	// to; default schema.DefaultKeyspace. It need not exist yet: commands on it are
	// refused with its name until it is created. It should be the same on every node.
	RESPKeyspace string
	// HTTPAddr serves the web console (/), /metrics, /healthz and /status on this address;
	// empty serves none.
	HTTPAddr string
	// EnablePprof also serves the Go profiler, /debug/pprof, on HTTPAddr. It is off by
	// default: a profile shows the node's code paths and memory to whoever reaches the port.
	EnablePprof bool
	// HTTPToken, when set, is the token every request to HTTPAddr must carry, but GET
	// /healthz and POST /power/wake: as a bearer token or a Basic password.
	HTTPToken string

	// TLS, when set, is the node's certificate and the cluster's CA (docs/security.md):
	// node-to-node connections then run over mutual TLS, and the gRPC and Redis ports
	// serve TLS. It must name ID.
	TLS *certs.Identity
	// AuthToken, when set, is the bearer token every gRPC call must carry.
	AuthToken string

	// Routing picks how the coordinator finds a key's replicas: "onehop" (default: the
	// full ring view), or a DHT: "chord", "mlchord" (kura's ML-Chord) or "mlchord-paper"
	// (the paper's rule as printed).
	Routing string
	// DHTRequestTimeout bounds a DHT hop's acknowledgement; it must exceed the longest
	// round trip between DCs. Default 1 s.
	DHTRequestTimeout time.Duration

	// Founding marks a node of a new cluster whose members are all given up front (an
	// in-process cluster): it owns its ranges at once and never streams. Other new nodes
	// join: they learn the ring from a seed and, when the cluster holds data, stream the
	// ranges they gain before they serve reads.
	Founding bool
	// Replace names a dead node whose tokens this new node takes over; it streams the
	// dead node's ranges from the other replicas, then the dead node leaves the ring.
	Replace string
	// RingDelay is how long a node waits after announcing a ring change before it streams,
	// so every coordinator has learned the change; default five gossip rounds.
	RingDelay time.Duration
	// AbortJoinAfter is how long a joining node stays dead before the node it named its
	// join's arbiter aborts the join (ringchange.Changer.ArbitrateJoins); 0 means
	// ringchange.DefaultAbortJoinAfter, ringchange.NeverAbortJoin never.
	AbortJoinAfter time.Duration
	// StreamThroughput caps the bytes per second a node pulls when it streams; 0 is
	// unthrottled.
	StreamThroughput int64
	// CompactionThroughput paces the bytes per second the storage engine's compactions
	// write (storage.Options.CompactionBytesPerSecond): zero means the engine's default,
	// a negative pace none.
	CompactionThroughput int64
	// RowCacheBytes sizes the storage engine's row cache (storage.Options.RowCacheBytes):
	// zero means the engine's default, a negative size none.
	RowCacheBytes int64
	// StorageBlockBytes sizes the storage engine's data blocks (storage.Options.
	// BlockBytes): zero means the engine's default.
	StorageBlockBytes int
	// StorageMemTableBytes sizes the storage engine's memtables (storage.Options.
	// MemTableBytes): zero means the engine's default.
	StorageMemTableBytes int
	// RepairInterval is how long one background anti-entropy repair of every keyspace
	// takes: the node walks its ranges slowly, spread over the interval, then starts
	// again. 0 runs none (repairs then run only when asked, with kura repair).
	RepairInterval time.Duration

	// MaxClockOffset bounds how far this node's clock may be from its peers' before it
	// refuses to coordinate writes, and how far ahead of the cluster's clock a timestamp
	// it stores may be; default clockguard.DefaultMaxOffset (500 ms).
	MaxClockOffset time.Duration
	// EnableFaults lets the admin API inject faults into this node (partitions, loss,
	// delay, clock offset; see package faults): for test clusters only.
	EnableFaults bool

	// DefaultReplication is the replication of the default keyspace a node defines at
	// its first start (schema.DefaultKeyspace), so clients that name no keyspace work on
	// a fresh cluster: default "each=3" (three replicas in every DC, all of a smaller
	// DC's nodes); NoDefaultKeyspace defines none. It should be the same on every node;
	// a node that joins adopts the cluster's settled definition (DefaultTransactions).
	DefaultReplication string
	// DefaultTransactions is where the lightweight transactions of the default keyspace
	// a node defines run (schema.Keyspace.Transactions): "partition" (the default,
	// DefaultTransactions: a transaction may cover several keys of one hash tag, as
	// Redis's MULTI/EXEC does) or "key" (one Paxos instance per key). It should be the
	// same on every node; a node runs no transaction in the keyspace until its
	// definition is settled, and a node that joins adopts the cluster's settled one,
	// whatever its own setting (docs/lwt.md, "The switch, per keyspace").
	DefaultTransactions string

	// PowerTier is the node's power tier (paper 003; docs/power.md): 0, the default,
	// never sleeps; 1 and above may. The ring keeps one replica of every range on tier 0.
	// It is fixed at the node's first start, as its tokens are.
	PowerTier int
	// PowerProfile names the sleep state whose draw and transition times model the
	// node's energy: "s4" (hibernation, the default) or "s1".
	PowerProfile string
	// NoTimeoutSuppression runs the paper's "no control" baseline: a sleeping node's
	// addresses are not taken over by a stand-in that redirects its clients at once; it
	// freezes instead, as a stopped process does, and clients with a stale view wait for
	// their timeout.
	NoTimeoutSuppression bool
	// PowerController, when set, lets the cluster's power controller put nodes to sleep
	// and wake them from the measured load (power.ControllerConfig); the controller runs
	// on one node at a time.
	PowerController *power.ControllerConfig
	// PowerLevels declares the consistency levels each keyspace is read and written at
	// (power.Levels; --power-levels): no node sleeps while a range of a keyspace would
	// then have too few awake replicas for one of them. Nil: power.DefaultLevel.
	PowerLevels power.Levels
	// CPUTime, when set, returns the CPU time this node has used so far (the process's,
	// for a node alone in its process): the node measures its utilization from it every
	// few seconds, and its modelled energy follows (docs/power.md). Nil: the node draws
	// its profile's idle watts while awake, unless SetUtilization is called.
	CPUTime func() time.Duration

	// ReadWorkers bounds the reads the node serves at once, for itself and for other
	// coordinators (its read stage, Cassandra's concurrent_reads); 0 means
	// sched.DefaultWorkers. ReadPolicy orders the reads waiting for a worker and says
	// whether scans are sent in parallel (docs/scheduling.md); the zero value is FIFO
	// with sequential scans. ReadDevice, when set, holds a worker for an emulated
	// storage device's time after each read (benches on data that sits in memory);
	// ReadDeviceShared makes the workers share one such device, in arrival order.
	ReadWorkers      int
	ReadPolicy       sched.Policy
	ReadDevice       sched.Device
	ReadDeviceShared bool

	// Limits bound a request's key and value (and a scan's length); zero fields take
	// coord.DefaultLimits. A key and a value at their limits must fit a replica message
	// (see CheckLimits): values up to just under 32 MiB.
	Limits         coord.Limits
	Vnodes         int
	ReplicaTimeout time.Duration
	Logger         *slog.Logger
}

// DefaultReplication is Config.DefaultReplication's default; NoDefaultKeyspace, given
// instead, defines no default keyspace.
const (
	DefaultReplication = "each=3"
	NoDefaultKeyspace  = "none"
	// DefaultTransactions is Config.DefaultTransactions's default.
	DefaultTransactions = schema.TransactionsPartition
)

// Node is one running kura node.
type Node struct {
	cfg       Config
	log       *slog.Logger
	engine    *storage.Engine
	clock     *hlc.Clock
	guard     *clockguard.Guard
	faults    *faults.Injector // nil unless Config.EnableFaults
	directory *cluster.Directory
	catalog   *schema.Catalog
	transport transport.Endpoint
	ring      *placement.Ring
	local     *local.Local
	hints     *hints.Store
	stage     *sched.Stage // the read stage every read of local data passes through
	rows      rowCounts    // rows per node and ordered keyspace, as gossiped
	// storedBudget spaces publishStored's counts; touched by its loop alone.
	storedBudget walkBudget
	power        *powercycle.Cycle
	replicas     *remote.Server
	coord        *coord.Coordinator
	hold         writeHold // a cluster snapshot's hold of the writes it coordinates
	feed         *feed.Feed
	dht          *dhtRuntime // nil with onehop routing
	streamer     *stream.Streamer
	fresh        bool // started with no ring of its own: a new node
	// changer runs the ring's life cycle: join, rebuild, decommission, removal.
	changer  *ringchange.Changer
	started  time.Time
	repairer *antientropy.Repairer
	schemas  *schemasync.Syncer    // keyspace definitions to and from the other nodes
	balancer *rebalance.Rebalancer // this node's rebalances, and the steps of others'

	grpcServer   *apiserver.Server
	grpcListener net.Listener
	metrics      *metrics.Registry
	frontEnds    frontEnds // the Redis and HTTP servers

	stop  chan struct{}
	ready chan struct{} // closed once open has built every part the handler uses
	wg    sync.WaitGroup

	// joinRefused receives why the node will never join the ring (JoinRefused).
	joinRefused chan error
}

// Start opens the node's storage, starts listening and joins the cluster.
func Start(cfg Config) (*Node, error) {
	if cfg.ID == "" || cfg.DC == "" {
		return nil, errors.New("node: id and dc are required")
	}
	if err := CheckLimits(cfg.Limits); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	n := &Node{cfg: cfg, log: cfg.Logger.With("node", cfg.ID), started: time.Now(), stop: make(chan struct{}), ready: make(chan struct{}),
		joinRefused: make(chan error, 1)}
	if err := n.open(); err != nil {
		n.Close()
		return nil, err
	}
	n.feed.Start()
	n.wg.Add(3)
	go func() {
		defer n.wg.Done()
		ctx, cancel := n.stopContext()
		defer cancel()
		if err := n.changer.Join(ctx); err != nil {
			n.joinRefused <- err
		}
	}()
	go n.loop(time.Second, n.replayHints)
	n.wg.Add(1)
	go n.loop(n.feed.Interval(), n.pingClocks) // once a gossip round
	n.wg.Add(1)
	go n.loop(n.feed.Interval(), n.changer.ForgetDeadBooting)
	n.wg.Add(1)
	go n.loop(n.feed.Interval(), n.changer.ArbitrateJoins)
	go n.loop(time.Hour, n.collectGarbage)
	n.wg.Add(1)
	go n.loop(rowsInterval, n.publishRows)
	n.wg.Add(1)
	go n.loopFrom(loadPhase(n.cfg.ID), loadInterval, n.publishStored)
	n.wg.Add(1)
	go n.dropTruncatedLoop()
	n.wg.Add(1)
	go n.settleDefaultLoop()
	if n.dht != nil {
		n.wg.Add(1)
		go n.loop(dhtTick, n.dht.tick)
	}
	if n.cfg.RepairInterval > 0 {
		n.wg.Add(1)
		go n.loop(n.cfg.RepairInterval, n.repairPass)
	}
	if n.power.Controlled() {
		// Every node of a controlled cluster publishes its load; the controller runs on
		// one of them. Without a controller, nobody reads the load: no gossip for it.
		n.wg.Add(2)
		go n.loop(powercycle.LoadWindow, n.power.PublishLoad)
		go n.loop(time.Second, n.power.ControlPower)
	}
	if n.cfg.CPUTime != nil {
		n.wg.Add(1)
		go n.loop(powercycle.LoadWindow, n.power.MeterCPU)
	}
	return n, nil
}

func (n *Node) open() error {
	var err error
	n.engine, err = storage.Open(storage.Options{Dir: n.cfg.DataDir, InMemory: n.cfg.InMemory, FS: n.cfg.FS, Logger: n.log, CompactionBytesPerSecond: n.cfg.CompactionThroughput,
		RowCacheBytes: n.cfg.RowCacheBytes, BlockBytes: n.cfg.StorageBlockBytes,
		MemTableBytes: n.cfg.StorageMemTableBytes})
	if err != nil {
		return fmt.Errorf("open storage: %w", err)
	}
	wall := time.Now
	if n.cfg.EnableFaults {
		// Seeded by the id, so each node of a test cluster drops its own frames.
		id := fnv.New64a()
		id.Write([]byte(n.cfg.ID))
		n.faults = faults.New(id.Sum64())
		wall = n.faults.Now
	}
	n.clock = hlc.NewClock(wall)
	n.guard = clockguard.New(clockguard.Config{
		Clock: n.clock, Wall: wall, MaxOffset: n.cfg.MaxClockOffset, Logger: n.log,
		Others: func() int { return len(n.reachablePeers()) },
		Measure: func() {
			ctx, cancel := n.stopContext()
			defer cancel()
			n.pingClocks(ctx)
		},
	})
	n.catalog, err = schema.Open(n.engine)
	if err != nil {
		return err
	}
	if n.cfg.DefaultReplication != NoDefaultKeyspace {
		transactions := cmp.Or(n.cfg.DefaultTransactions, DefaultTransactions)
		// This build runs element records on their collection's instance; settling
		// keeps that only when every member does (schema.SettleOwn).
		proposal := schema.Keyspace{Replication: cmp.Or(n.cfg.DefaultReplication, DefaultReplication), Transactions: transactions,
			CollectionInstances: transactions == schema.TransactionsPartition}
		if err := n.catalog.EnsureDefault(proposal); err != nil {
			return err
		}
	}
	if n.power, err = newPowerCycle(n); err != nil {
		return err
	}
	var links transport.LinkModel
	if n.cfg.EmulateWAN && n.cfg.Topology != nil {
		links = knownLinks{n.cfg.Topology}
	}
	tcfg := transport.Config{
		Self:    transport.Peer{ID: n.cfg.ID, DC: n.cfg.DC, Addr: n.cfg.Listen},
		Handler: transport.HandlerFunc(n.handle),
		Links:   links,
		Stats:   n.cfg.Stats,
		Logger:  n.cfg.Logger, // the transport names the node itself
		Wall:    wall,
		Clocks:  memberClocks{n},
		TLS:     n.cfg.TLS,
		Gate:    n.power.Gate(),
		// Protocol 4 on: the replica protocol's errors keep their identity on the wire.
		ErrorCode:      remote.ErrorCode,
		ClusterVersion: n.ClusterProtocolVersion,
	}
	if n.faults != nil {
		tcfg.Faults = n.faults
	}
	listen := n.cfg.Network
	if listen == nil {
		listen = transport.ListenEndpoint
	}
	n.transport, err = listen(tcfg)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	self := cluster.Node{ID: n.cfg.ID, DC: n.cfg.DC, Addr: n.transport.Addr(), Tokens: n.cfg.Tokens, Tier: n.cfg.PowerTier}
	if n.cfg.ClientAddr != "" {
		n.grpcListener, err = n.power.Gate().Listen(n.cfg.ClientAddr)
		if err != nil {
			return fmt.Errorf("listen for clients: %w", err)
		}
		self.ClientAddr = n.grpcListener.Addr().String()
	}
	store := ringstore.New(n.engine)
	stored, err := store.Nodes()
	if err != nil {
		return fmt.Errorf("load ring: %w", err)
	}
	n.fresh = len(stored) == 0
	switch {
	case n.cfg.Founding:
	case n.fresh && n.cfg.Replace == "" && !n.hasSeeds():
		// The first node of a new cluster owns the whole ring.
	case n.fresh:
		self.Status = cluster.StatusBooting
		self.Replaces = n.cfg.Replace
	}
	if n.directory, err = cluster.Open(self, store); err != nil {
		return err
	}
	if st := n.directory.Self().Status; st == cluster.StatusLeft || st == cluster.StatusRemoved {
		return fmt.Errorf("this node %s the ring; start it with an empty data dir to join again", map[cluster.Status]string{cluster.StatusLeft: "was decommissioned and left", cluster.StatusRemoved: "was removed from"}[st])
	}
	for _, p := range n.cfg.Peers {
		if _, err := n.directory.Upsert(p); err != nil {
			return err
		}
	}
	if n.cfg.Founding || !n.hasSeeds() {
		// Its own ring is the whole ring: trust it before Start returns, not in the
		// background, so the first request already has one.
		n.directory.SetTrusted()
	}
	if err := n.settleAtStart(); err != nil {
		return err
	}
	if n.feed, err = newFeed(n); err != nil {
		return err
	}
	if n.changer, err = n.newChanger(); err != nil {
		return err
	}
	if n.schemas, err = n.newSchemaSyncer(); err != nil {
		return err
	}
	if n.fresh && n.cfg.Founding {
		n.changer.CheckLostData()
	}
	var place placement.Placement
	if n.cfg.Routing != "" && n.cfg.Routing != "onehop" {
		protocol, err := chord.ParseProtocol(n.cfg.Routing)
		if err != nil {
			return fmt.Errorf("routing: %w (want onehop, chord, mlchord or mlchord-paper)", err)
		}
		if n.dht, err = newDHTRuntime(n, protocol); err != nil {
			return err
		}
		// Scans read ranges from the directory's ring: with one token per node at the
		// DHT's own positions it is the DHT's ring.
		n.ring = placement.NewRing(n.directory, 1)
		place = placement.NewDHT(n.dht.dht, n.directory, n.ring)
	} else {
		n.ring = placement.NewRing(n.directory, n.cfg.Vnodes)
		place = n.ring
	}
	dp, err := AssembleDataPath(DataPathConfig{ID: n.cfg.ID, Reads: sched.Config{Workers: n.cfg.ReadWorkers, Policy: n.cfg.ReadPolicy, Device: n.cfg.ReadDevice, SharedDevice: n.cfg.ReadDeviceShared},
		Limits: n.cfg.Limits, ReplicaTimeout: n.cfg.ReplicaTimeout, Logger: n.log}, DataPathParts{
		Engine:    n.engine,
		Keyspaces: n.catalog,
		View:      n.directory,
		Placement: place,
		Network:   n.transport,
		Clock:     n.guard,
		Proximity: proximity{n},
		Rows:      &n.rows,
		Workers:   workers.New(n.stop, coordWorkersIdleMax),
		// Typed records wait for every node to read them (internal/assembly/node/protocol.go).
		TypedRecords: n.RecordTypeRead,
	})
	if err != nil {
		return err
	}
	n.hints, n.stage, n.local, n.replicas, n.coord, n.repairer = dp.Hints, dp.Stage, dp.Local, dp.Server, dp.Coordinator, dp.Repairer
	var limiter *rate.Limiter
	if n.cfg.StreamThroughput > 0 {
		limiter = rate.NewLimiter(rate.Limit(n.cfg.StreamThroughput), int(max(n.cfg.StreamThroughput/10, 1<<20)))
	}
	n.streamer = stream.New(stream.Config{View: n.directory, Keyspaces: n.catalog, Moves: n.ring, Replicas: dp.Replicas,
		Proximity: proximity{n}, Limiter: limiter, Logger: n.log})
	if n.balancer, err = n.newRebalancer(dp.Replicas); err != nil {
		return err
	}
	close(n.ready)
	n.metrics = n.newMetrics()
	if n.grpcListener != nil {
		api, err := apiserver.New(apiserver.Config{
			NodeID:          n.cfg.ID,
			Coordinator:     n.coord,
			Backend:         apiBackend{n},
			Clock:           n.clock,
			RequestBytesMax: n.coord.Limits().ValueBytesMax + n.coord.Limits().KeyBytesMax + requestOverheadBytes,
			TLS:             n.clientTLS(),
			Token:           n.cfg.AuthToken,
			Observe:         n.observe,
		})
		if err != nil {
			return err
		}
		n.grpcServer = api
		go func() {
			if err := n.grpcServer.Serve(n.grpcListener); err != nil {
				n.log.Error("client API stopped", "err", err)
			}
		}()
	}
	return n.startFrontEnds()
}

// ID returns the node's id.
func (n *Node) ID() string { return n.cfg.ID }

// Addr returns the node-to-node address.
func (n *Node) Addr() string { return n.transport.Addr() }

// ClientAddr returns the gRPC client API address, or "" when the node serves none.
func (n *Node) ClientAddr() string { return n.directory.Self().ClientAddr }

// Self returns the node as the cluster knows it.
func (n *Node) Self() cluster.Node { return n.directory.Self() }

// View returns the node's cluster directory.
func (n *Node) View() cluster.View { return n.directory }

// Coordinator returns the node's coordinator, for in-process callers.
func (n *Node) Coordinator() *coord.Coordinator { return n.coord }

// Ring returns the token ring of the nodes this node knows.
func (n *Node) Ring() (*ring.Ring, error) { return n.ring.Ring() }

// StoredBytes returns how many records this node stores for keyspace and their bytes.
func (n *Node) StoredBytes(keyspace string) (records int, total int64, err error) {
	return n.local.StoredBytes(keyspace)
}

// Peek reads this node's own copy of key, through no coordinator: what the simulator's
// checks compare between replicas.
func (n *Node) Peek(ctx context.Context, keyspace string, key []byte) (lww.Record, bool, error) {
	return n.local.Get(ctx, keyspace, key)
}

// PaxosState returns this node's own acceptor state of a Paxos instance (a key's or a
// partition's): what the simulator's checks read to tell which instances ran.
func (n *Node) PaxosState(keyspace string, in paxos.Instance) (paxos.State, error) {
	return n.local.PaxosState(keyspace, in)
}

// Replicas returns the ids of the nodes that hold key of keyspace on this node's ring,
// pending ones included.
func (n *Node) Replicas(ctx context.Context, keyspace string, key []byte) ([]string, error) {
	ks, err := n.catalog.Get(keyspace)
	if err != nil {
		return nil, err
	}
	members, err := n.ring.Replicas(ctx, ks, key, nil)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.ID
	}
	return ids, nil
}

// StreamProgress returns the running counts of what this node has streamed (the ranges it
// gained when it joined or took over a leaving node's ranges), as ClusterStatus reports
// them; in-process callers (benches) read it without the client API.
func (n *Node) StreamProgress() *stream.Progress { return n.streamer.Progress() }

// Stats returns the node's transport counters.
func (n *Node) Stats() *transport.Stats { return n.transport.Stats() }

// Close stops the node: the client API, the loops, the transport, then storage.
func (n *Node) Close() error {
	select {
	case <-n.stop:
		return nil
	default:
		close(n.stop)
	}
	if n.grpcServer != nil {
		n.grpcServer.Stop()
	}
	if n.grpcListener != nil {
		// Stop closes only a listener its Serve has taken, as the front ends' servers
		// do (frontEnds.close).
		n.grpcListener.Close()
	}
	n.frontEnds.close()
	n.wg.Wait()
	if n.coord != nil {
		n.coord.Close() // the writes' copies and hints land before transport and storage close
	}
	if n.power != nil {
		n.power.Close()
	}
	if n.feed != nil && !n.power.Quiet() {
		// Announce the shutdown so peers mark this node down at once instead of by
		// suspicion seconds later; it stays on the ring (no Leave). A node that left
		// announces nothing: its status would replace "left" in gossip, and a node
		// that had not heard of it yet would take it for a member.
		if st := n.directory.Self().Status; st != cluster.StatusLeft && st != cluster.StatusRemoved {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if err := n.feed.Shutdown(ctx); err != nil {
				n.log.Debug("announce shutdown", "err", err)
			}
			cancel()
		}
		n.feed.Close()
	}
	if n.dht != nil {
		n.dht.dht.Leave() // successor and predecessor learn at once, not by timeout
	}
	var errs []error
	if n.transport != nil {
		errs = append(errs, n.transport.Close())
	}
	if n.stage != nil {
		n.stage.Close()
	}
	if n.engine != nil {
		errs = append(errs, n.engine.Close())
	}
	return errors.Join(errs...)
}

// stopContext returns a context that ends when the node stops.
func (n *Node) stopContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-n.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx, cancel
}

// loop runs fn at once, then every interval until the node stops.
func (n *Node) loop(interval time.Duration, fn func(context.Context)) {
	n.loopFrom(interval, interval, fn)
}

// loopFrom runs fn at once, again after first, then every interval from there until
// the node stops.
func (n *Node) loopFrom(first, interval time.Duration, fn func(context.Context)) {
	defer n.wg.Done()
	ctx, cancel := n.stopContext()
	defer cancel()
	ticker := time.NewTicker(first)
	defer ticker.Stop()
	for started := false; ; {
		if !n.power.Quiet() {
			fn(ctx)
		}
		select {
		case <-ticker.C:
			if !started {
				ticker.Reset(interval)
				started = true
			}
		case <-n.stop:
			return
		}
	}
}

func (n *Node) replayHints(ctx context.Context) {
	if delivered, err := n.coord.ReplayHints(ctx); err != nil {
		n.log.Warn("replay hints", "err", err)
	} else if delivered > 0 {
		n.log.Info("replayed hints", "delivered", delivered)
	}
}

// collectGarbage runs the storage's collection on the clock reads compare expiry with.
func (n *Node) collectGarbage(context.Context) {
	if collected, err := n.engine.CollectGarbage(n.guard.Now().WallTime(), n.catalog.Truncations()); err != nil {
		n.log.Warn("collect garbage", "err", err)
	} else if collected != (storage.Collected{}) {
		n.log.Info("collected garbage", "expired", collected.Expired, "removed", collected.Removed)
	}
}

// handle dispatches a message from another node.
func (n *Node) handle(ctx context.Context, from transport.Peer, kind transport.Kind, payload []byte) ([]byte, error) {
	// The transport listens before the coordinator exists; early messages wait for it.
	select {
	case <-n.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := n.admit(from, kind); err != nil {
		return nil, err
	}
	n.power.ObserveServed()
	switch {
	case remote.Handles(kind):
		return n.replicas.Handle(ctx, from, kind, payload)
	case driver.Handles(kind):
		return n.feed.Handle(ctx, from, kind, payload)
	case kind == transport.KindSchemaPull:
		return n.schemas.HandlePull()
	case kind == transport.KindSchema:
		return nil, n.schemas.HandleUpdate(payload)
	case kind == transport.KindStreamGains:
		return n.changer.HandleStreamGains(ctx, payload)
	case kind == transport.KindRebalance:
		return n.balancer.HandleStep(ctx, payload)
	case kind == transport.KindRingPull:
		return n.changer.HandleRingPull()
	case kind == transport.KindHintsFlush:
		return n.power.HandleHintsFlush(ctx, from.ID, payload)
	case kind == transport.KindPower:
		return n.power.HandlePower(ctx, from.ID, payload)
	case kind == transport.KindClockPing:
		return nil, nil // the answer's wall-clock stamp is the point
	case kind == transport.KindChord && n.dht != nil:
		return nil, n.dht.handle(payload)
	}
	return nil, fmt.Errorf("unknown message kind %v from %s", kind, from.ID)
}

// knownLinks emulates the topology's links to peers of known DCs; messages to a seed
// whose DC is not known yet travel unshaped.
type knownLinks struct{ topology *topology.Topology }

func (k knownLinks) Link(fromDC, toDC string) (topology.LinkSpec, error) {
	if toDC == "" {
		return topology.LinkSpec{}, nil
	}
	return k.topology.Link(fromDC, toDC)
}

// Router returns the DHT router when the node routes with chord or mlchord, else nil.
func (n *Node) Router() *routing.DHT {
	if n.dht == nil {
		return nil
	}
	return n.dht.dht
}

// coordWorkersIdleMax bounds the coordinator's idle workers (coord.Parts.Workers): as
// many as the replica requests and pipelined reads in flight at once under load, few
// enough that their kept stacks stay a small part of the node's memory.
const coordWorkersIdleMax = 64
