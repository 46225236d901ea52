// Package apiserver serves the client gRPC API (kura.v1's KV and Admin services): it turns
// each call into the coordinator's or the node's operation and its answer or error into
// the wire's, meters the data requests, redirects the clients of a node that has left
// the ring, and checks TLS and the bearer token. It sees the node only through Backend
// and the coordinator only through Coordinator, so the node wires it and nothing here
// reaches storage or the transport.
package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"time"

	"google.golang.org/grpc"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// scanResponseBytesMax bounds a scan answer to a client.
const scanResponseBytesMax = 256 << 20

// streamWorkers is how many goroutines the gRPC server keeps for running calls. By
// default it starts a goroutine per call, whose stack then grows by copying under the
// coordinator and the storage read (runtime.newstack was a fifth of a 3-node
// coordinator's CPU on point reads); a worker keeps its grown stack from one call to the
// next. Calls beyond this many at once still get a goroutine each.
const streamWorkers = 64

// Coordinator is what the KV service asks of the node's coordinator
// (*coord.Coordinator).
type Coordinator interface {
	ExpiresAt(ttlMs, atUnixMs int64) (hlc.Timestamp, error)
	Put(ctx context.Context, keyspace string, key, value []byte, expiresAt hlc.Timestamp, cl consistency.Level) (hlc.Timestamp, error)
	PutEach(ctx context.Context, keyspace string, puts []lww.Record, cl consistency.Level) []coord.PutResult
	Get(ctx context.Context, keyspace string, key []byte, cl consistency.Level) (lww.Record, bool, error)
	GetAll(ctx context.Context, keyspace string, keys [][]byte, cl consistency.Level) []coord.GetResult
	Delete(ctx context.Context, keyspace string, key []byte, cl consistency.Level) (hlc.Timestamp, error)
	Scan(ctx context.Context, keyspace string, start, end []byte, limit int, cl consistency.Level) ([]lww.Record, error)
	Update(ctx context.Context, keyspace string, key []byte, serial consistency.Level, fn coord.UpdateFunc) (coord.UpdateResult, error)
	Restore(ctx context.Context, keyspace string, rec lww.Record, cl consistency.Level) (coord.RestoreOutcome, error)
}

// Clock gives the time a CompareAndSet's TTL counts from (the node's hybrid clock).
type Clock interface {
	Now() hlc.Timestamp
}

// Backend is what the Admin service asks of the node. The node's reports (Info,
// ClusterStatus, Ring) and the records of its own storage (LocalScan) gather every part
// of the node, so the node composes them in their wire form; the operations' results
// come as this package's small structs.
type Backend interface {
	// CreateKeyspace defines a keyspace across the cluster.
	CreateKeyspace(ctx context.Context, ks *kurav1.Keyspace) error
	// TruncateKeyspace empties a keyspace and returns the truncation's time.
	TruncateKeyspace(ctx context.Context, name string) (hlc.Timestamp, error)
	// DropKeyspace removes a keyspace and returns the drop's time.
	DropKeyspace(ctx context.Context, name string) (hlc.Timestamp, error)
	// Keyspaces lists the keyspaces the node knows.
	Keyspaces() []*kurav1.Keyspace
	// Keyspace describes one keyspace, or fails with schema.ErrNoKeyspace.
	Keyspace(name string) (*kurav1.Keyspace, error)

	// Info describes the node alone (kura info).
	Info() (*kurav1.NodeInfo, error)
	// ClusterStatus describes every node the node knows (kura status).
	ClusterStatus() *kurav1.ClusterStatusResponse
	// Ring lists the ring's nodes, with a keyspace's effective ownership when named. It
	// fails with a gRPC status error where the error is not the coordinator's (no ring
	// learned yet).
	Ring(keyspace string) (*kurav1.RingResponse, error)

	// SetPower puts a node to sleep or wakes it (action "sleep" or "wake") and returns
	// its power state.
	SetPower(ctx context.Context, id, action string) (state string, err error)
	// Decommission hands the node's ranges over and leaves the ring; force does so even
	// when that leaves its DC short of a keyspace's replicas.
	Decommission(ctx context.Context, force bool) (MoveStats, error)
	// RemoveNode takes a dead node's ranges over from the other replicas; force removes
	// it even when that leaves a DC short of a keyspace's replicas.
	RemoveNode(ctx context.Context, id string, force bool) (MoveStats, error)
	// Cleanup drops the records the node no longer holds a replica of.
	Cleanup(ctx context.Context, keyspace string) (records, bytes int64, err error)
	// Repair runs anti-entropy repair from the node; the answer's Seconds is left to
	// the server.
	Repair(ctx context.Context, keyspace, dc string) (*kurav1.RepairResponse, error)
	// Rebalance moves an ordered keyspace's split keys, reporting each step.
	Rebalance(ctx context.Context, keyspace string, splits int, report func(RebalanceStep)) error
	// AlterKeyspace changes a keyspace's replication, or with settle ends a move cut
	// short, reporting each step.
	AlterKeyspace(ctx context.Context, keyspace, replication string, settle bool, report func(RebalanceStep)) error

	// Faults returns the faults injected into the node; enabled is false on a node not
	// started for fault injection.
	Faults() (spec *kurav1.Faults, enabled bool)
	// SetFaults replaces the injected faults.
	SetFaults(spec *kurav1.Faults) error
	// LocalScan reads up to limit of the node's own records of a keyspace in [start,
	// end), through no coordinator, each with the nodes that hold it.
	LocalScan(ctx context.Context, keyspace string, start, end []byte, limit int) ([]*kurav1.LocalVersion, error)

	// CreateSnapshot checkpoints the node's storage as snapshot name, keeping the named
	// keyspaces (all when none), and returns its manifest (docs/backup.md). With a cut,
	// it is part of a cluster snapshot, taken under hold (HoldWrites).
	CreateSnapshot(ctx context.Context, name string, keyspaces []string, cut hlc.Timestamp, hold string) (*kurav1.Snapshot, error)
	// HoldWrites holds the writes the node coordinates for a cluster snapshot, for at most
	// d, and returns the node's clock once the writes in flight are answered.
	HoldWrites(ctx context.Context, hold string, d time.Duration) (hlc.Timestamp, error)
	// ReleaseWrites ends the hold and reports whether it lasted until then.
	ReleaseWrites(hold string) bool
	// Snapshots lists the node's snapshots, and the directories of those cut short.
	Snapshots() (*kurav1.ListSnapshotsResponse, error)
	// DeleteSnapshot removes one of the node's snapshots.
	DeleteSnapshot(name string) error
	// ReadSnapshot calls send with pages of snapshot name's records of keyspace, in key
	// order, tombstones included, without those the snapshot does not hold.
	ReadSnapshot(ctx context.Context, name, keyspace string, send func(page []*kurav1.LocalVersion) error) error

	// RedirectTargets lists the members that serve instead of this node once it has
	// left the ring, its own DC's first.
	RedirectTargets() []*kurav1.RedirectTarget
}

// MoveStats is what a decommission or a removal moved.
type MoveStats struct {
	Gainers      []string // the nodes that took ranges over
	Ranges       int      // the ranges streamed
	Records      int64    // the records streamed
	Bytes        int64    // the bytes streamed
	CrossDCBytes int64    // of Bytes, those that crossed DCs
	Took         time.Duration
}

// RebalanceStep is one step of a rebalance and the rows each node held before and after
// it.
type RebalanceStep struct {
	Step          string
	Before, After map[string]int64
}

// Config is what a Server serves with.
type Config struct {
	// NodeID names the node in its redirects.
	NodeID string
	// Coordinator serves the KV service.
	Coordinator Coordinator
	// Backend serves the Admin service and names the redirects' targets.
	Backend Backend
	// Clock stamps the start of a CompareAndSet's TTL.
	Clock Clock
	// RequestBytesMax bounds a request message: the largest key and value and room
	// around them.
	RequestBytesMax int
	// TLS is the server's TLS configuration; nil serves plaintext.
	TLS *tls.Config
	// Token, when set, is the bearer token every call must carry.
	Token string
	// Observe reports one data request (op "put", "get", "delete", "scan" or "cas") to
	// the node's metrics and load.
	Observe func(op string, level consistency.Level, elapsed time.Duration, err error)
}

func (c Config) validate() error {
	switch {
	case c.NodeID == "":
		return errors.New("apiserver: NodeID is required")
	case c.Coordinator == nil || c.Backend == nil || c.Clock == nil:
		return errors.New("apiserver: Coordinator, Backend and Clock are required")
	case c.Observe == nil:
		return errors.New("apiserver: Observe is required")
	case c.RequestBytesMax <= 0:
		return errors.New("apiserver: RequestBytesMax must be positive")
	}
	return nil
}

// Server is the client API's gRPC server.
type Server struct {
	grpc *grpc.Server
}

// New builds the server of cfg; Serve starts serving.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	api := &service{cfg: cfg}
	// The security options come first, so that their interceptors run before the
	// metrics': a refused call is not a request.
	s := grpc.NewServer(append(security(cfg.TLS, cfg.Token),
		grpc.MaxRecvMsgSize(cfg.RequestBytesMax),
		grpc.MaxSendMsgSize(scanResponseBytesMax),
		grpc.ChainUnaryInterceptor(api.observeUnary, api.redirectLeft),
		grpc.NumStreamWorkers(streamWorkers),
		grpc.InitialWindowSize(kurav1.StreamWindowBytes),
		grpc.InitialConnWindowSize(kurav1.ConnWindowBytes),
	)...)
	kurav1.RegisterKVServer(s, api)
	kurav1.RegisterAdminServer(s, api)
	return &Server{grpc: s}, nil
}

// Serve serves l until Stop; see grpc.Server.Serve.
func (s *Server) Serve(l net.Listener) error { return s.grpc.Serve(l) }

// Stop closes the listeners and connections at once, ending the calls in flight.
func (s *Server) Stop() { s.grpc.Stop() }

// service implements the KV and Admin services.
type service struct {
	kurav1.UnimplementedKVServer
	kurav1.UnimplementedAdminServer
	cfg Config
}
