package node

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/kuradb/kura/internal/base/workers"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/antientropy"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/data/hints"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica/local"
	"github.com/kuradb/kura/internal/data/replica/remote"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/io/clockguard"
	"github.com/kuradb/kura/internal/io/storage"
)

// DataPathParts are what a node's data path is assembled over. The node passes its own
// (open); the simulator (internal/tools/sim/datapath) passes a directory it drives itself, as a perfect
// failure detector would, and its simulated network, so that both run one wiring.
type DataPathParts struct {
	// Engine holds the node's records, hints and watermarks; Keyspaces is the catalog
	// opened over it.
	Engine    *storage.Engine
	Keyspaces *schema.Catalog
	// View is the node's cluster directory, and Placement places keys on its ring.
	View      cluster.View
	Placement placement.Placement
	// Network carries the calls to the other nodes' replicas.
	Network remote.Caller
	// Clock stamps the writes the node coordinates and checks the timestamps it stores.
	Clock *clockguard.Guard
	// Proximity ranks the other replicas, nearest first.
	Proximity coord.Proximity
	// Rows estimates each node's rows, for parallel scans; nil knows none.
	Rows coord.RowEstimates
	// Workers runs the coordinator's requests to other nodes; nil starts a goroutine for
	// each.
	Workers *workers.Pool
	// TypedRecords reports whether every node reads records of a type (coord.Parts); nil:
	// never.
	TypedRecords func(lww.Type) bool
}

// DataPathConfig tunes a node's data path.
type DataPathConfig struct {
	// ID is the node's id: its own replica is called in process, not over the network.
	ID string
	// Reads configures the read stage every read of local data passes through.
	Reads          sched.Config
	Limits         coord.Limits
	ReplicaTimeout time.Duration
	Logger         *slog.Logger
}

// DataPath is a node's data path: the replica that serves its share of the data, to its
// own coordinator and (through Server) to the others', the coordinator of the requests it
// receives, and the repairer that compares its replicas with their peers'.
type DataPath struct {
	Hints  *hints.Store
	Stage  *sched.Stage
	Local  *local.Local
	Server *remote.Server
	// Replicas hands out every node's replica, this node's local one included.
	Replicas    *remote.Set
	Coordinator *coord.Coordinator
	Repairer    *antientropy.Repairer
}

// AssembleDataPath builds a node's data path over parts. It starts nothing: the caller
// puts Server behind the network's handler and closes Stage when the node stops.
func AssembleDataPath(cfg DataPathConfig, parts DataPathParts) (*DataPath, error) {
	// One hint store per engine: the coordinator's hints and the writes offloaded to this
	// node share its sequence, so no two entries get the same key.
	hinted := hints.NewStore(parts.Engine)
	stage, err := sched.NewStage(cfg.Reads)
	if err != nil {
		return nil, fmt.Errorf("read stage: %w", err)
	}
	local := local.NewLocal(parts.Engine, parts.Keyspaces, hinted, stage)
	replicas := remote.NewSet(cfg.ID, local, parts.Network)
	co := coord.New(coord.Config{Limits: cfg.Limits, ReplicaTimeout: cfg.ReplicaTimeout,
		TombstoneGrace: parts.Engine.TombstoneGrace(), Logger: cfg.Logger}, coord.Parts{
		View:      parts.View,
		Keyspaces: parts.Keyspaces,
		Placement: parts.Placement,
		Replicas:  replicas,
		Hints:     hinted,
		Clock:     parts.Clock,
		Proximity: parts.Proximity,
		Reads:     stage,
		Rows:      parts.Rows,
		Workers:   parts.Workers,
		// The simulator's data path passes none: it writes no typed record.
		TypedRecords: parts.TypedRecords,
		// The default keyspace takes none until its definition is settled.
		TransactionsReady: parts.Keyspaces.TransactionsReady,
	})
	// The repairer runs over the coordinator's placement, so that it compares the
	// replicas the coordinator writes to.
	repairer := antientropy.New(antientropy.Config{ReplicaTimeout: cfg.ReplicaTimeout, Logger: cfg.Logger}, antientropy.Parts{
		View:       parts.View,
		Keyspaces:  parts.Keyspaces,
		Placement:  parts.Placement,
		Replicas:   replicas,
		Chunks:     co,
		Watermarks: parts.Engine,
	})
	return &DataPath{
		Hints:       hinted,
		Stage:       stage,
		Local:       local,
		Server:      remote.NewServer(local, parts.Clock),
		Replicas:    replicas,
		Coordinator: co,
		Repairer:    repairer,
	}, nil
}
