// Package resp is kura's Redis front end: it speaks RESP2 and RESP3 (the Redis
// serialization protocol) so that redis-cli, redis-benchmark and Redis client libraries
// can read and write a kura cluster. Each connection has its own consistency level and
// keyspace (KURA.CONSISTENCY, KURA.KEYSPACE); every read and write goes through the
// node's coordinator, so a node answers for the whole cluster.
package resp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/base/lograte"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
)

// Backend is what the front end serves from: the node's coordinator for data, the node
// for keyspaces and INFO.
type Backend interface {
	// Get, Put, Delete and Scan are the coordinator's operations (coord.Coordinator).
	Get(ctx context.Context, keyspace string, key []byte, cl consistency.Level) (lww.Record, bool, error)
	Put(ctx context.Context, keyspace string, key, value []byte, expiresAt hlc.Timestamp, cl consistency.Level) (hlc.Timestamp, error)
	// GetAll is Get of each key, one result each; it may read them together.
	GetAll(ctx context.Context, keyspace string, keys [][]byte, cl consistency.Level) []coord.GetResult
	// PutAll is Put of each record's key, value and expiry in order, one error each; it
	// may share one sync among them where that keeps their order for every reader.
	PutAll(ctx context.Context, keyspace string, puts []lww.Record, cl consistency.Level) []error
	Delete(ctx context.Context, keyspace string, key []byte, cl consistency.Level) (hlc.Timestamp, error)
	Scan(ctx context.Context, keyspace string, start, end []byte, limit int, cl consistency.Level) ([]lww.Record, error)
	// Update is the coordinator's lightweight transaction: a linearizable
	// read-modify-write of one key at SERIAL or LOCAL_SERIAL (coord.Coordinator).
	Update(ctx context.Context, keyspace string, key []byte, serial consistency.Level, fn coord.UpdateFunc) (coord.UpdateResult, error)
	// UpdateBatch is the coordinator's lightweight transaction over several keys of one
	// partition (coord.Coordinator): EXEC.
	UpdateBatch(ctx context.Context, keyspace string, keys, collections [][]byte, serial consistency.Level, fn coord.BatchFunc) (coord.BatchResult, error)
	// ReadCollection, ReadElements, WriteCollection and ResetCollection are the
	// coordinator's operations on Redis collections (coord.Coordinator,
	// docs/redis-types.md): a key's header and elements, read whole or a few elements,
	// written under one timestamp, and the reset point a delete or retype moves.
	ReadCollection(ctx context.Context, keyspace string, key []byte, cl consistency.Level) (coord.Collection, error)
	ReadElements(ctx context.Context, keyspace string, key []byte, elemKeys [][]byte, cl consistency.Level) (coord.Collection, []coord.GetResult, error)
	WriteCollection(ctx context.Context, keyspace string, key []byte, w coord.CollectionWrite, cl consistency.Level) (hlc.Timestamp, error)
	ResetCollection(ctx context.Context, keyspace string, key []byte, at hlc.Timestamp, cl consistency.Level) error
	// ReadPrefixes reads a key's header and the element records under each prefix: a
	// set's adds of a few members (coord.Coordinator).
	ReadPrefixes(ctx context.Context, keyspace string, key []byte, prefixes [][]byte, cl consistency.Level) (coord.Collection, error)
	// HasMembers reports whether a collection whose header is live holds a live member,
	// reading up to its first one (coord.Coordinator): an emptied one reads as absent.
	HasMembers(ctx context.Context, keyspace string, key []byte, typ lww.Type, cl consistency.Level) (bool, error)
	// ReadCounter and WriteCounter are the coordinator's operations on PN counters
	// (coord.Coordinator, internal/core/collection/counter).
	ReadCounter(ctx context.Context, keyspace string, key []byte, cl consistency.Level) (coord.CounterRead, error)
	WriteCounter(ctx context.Context, keyspace string, key []byte, w coord.CounterWrite, cl consistency.Level) (hlc.Timestamp, error)
	// Truncate removes every value of a keyspace written until now (FLUSHDB): one
	// timestamp spread to every node (node.Node.Truncate).
	Truncate(ctx context.Context, keyspace string) (hlc.Timestamp, error)
	// ScanKeys and CountKeys walk a keyspace's live keys by position (coord.Coordinator):
	// SCAN, KEYS, DBSIZE and INFO's keyspace line.
	ScanKeys(ctx context.Context, keyspace string, cursor uint64, count int, cl consistency.Level) (keys [][]byte, next uint64, err error)
	CountKeys(ctx context.Context, keyspace string) (coord.KeyCount, error)
	// Keyspace returns a keyspace's definition, or an error wrapping schema.ErrNoKeyspace.
	Keyspace(name string) (schema.Keyspace, error)
	// Info returns the node's facts for INFO; it may be costly (it counts hints).
	Info() Info
}

// Info is what INFO reports about the node and its cluster.
type Info struct {
	NodeID       string
	DC           string
	Nodes        []NodeState // every known node, this one included
	Keyspaces    []schema.Keyspace
	HintsPending int
	// InterDCBytes counts bytes sent between datacenters by the transport this node uses
	// (an in-process cluster shares one count).
	InterDCBytes uint64
	// Durable is true when acknowledged writes are on disk, false for an in-memory node.
	Durable bool
}

// NodeState is one cluster member as this node sees it.
type NodeState struct {
	ID    string
	DC    string
	Addr  string
	Alive bool
}

// Config configures a Server.
type Config struct {
	Backend Backend
	// Limits are the coordinator's: they bound bulk strings (the largest of a key and a
	// value) and SCAN's COUNT.
	Limits coord.Limits
	// Password, when set, must be given with AUTH or HELLO before any other command.
	Password string
	// IdleTimeout closes a connection whose client sends nothing for that long; 0 never
	// does. It is Redis's timeout, which CONFIG SET timeout changes at run time.
	IdleTimeout time.Duration
	// DefaultLevel is a new connection's consistency level; default ONE.
	DefaultLevel consistency.Level
	// DefaultKeyspace is a new connection's keyspace; default "default".
	DefaultKeyspace string
	// Observe, when set, is told of every read and write the front end makes, for
	// metrics; op is "get", "put", "delete" or "scan".
	Observe func(op string, cl consistency.Level, elapsed time.Duration, err error)
	// Logger receives accept errors, and connection errors at debug level; nil discards them.
	Logger *slog.Logger
	// NodeID names this node in the shards of its PN counters (pncounter.go).
	NodeID string
	// PNCounters makes INCR and its kin create conflict-free counters by default
	// (KURA.COUNTERS PN) rather than exact ones, on every new connection.
	PNCounters bool
}

// Server serves RESP connections.
type Server struct {
	cfg      Config
	limits   ReadLimits
	commands map[string]*command
	// collectionCommands are the collection commands a transaction runs (txcollection.go).
	collectionCommands map[string]bool
	started            time.Time
	runID              string // random, new at each start, as Redis's run_id
	nextID             atomic.Int64
	// idleTimeoutNs is Config.IdleTimeout, as CONFIG SET timeout last set it.
	idleTimeoutNs atomic.Int64
	stats         stats
	// ctx is the parent of every connection's context; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc

	// warnings rate-limits the warning of plaintext clients on a TLS port: a client
	// without TLS that retries would fill the log.
	warnings *lograte.Limiter

	// getCommand and setCommand are the commands' entries, whose counters a pipeline's
	// batch of GETs and SETs adds to without looking them up.
	getCommand, setCommand *command

	// hashListpack holds CONFIG's hash-max-listpack-entries and -value, as last set.
	hashListpack [2]atomic.Int64
	// setIntsetEntries holds CONFIG's set-max-intset-entries, as last set.
	setIntsetEntries atomic.Int64
	// zsetListpack holds CONFIG's zset-max-listpack-entries and -value, as last set.
	zsetListpack [2]atomic.Int64

	// monitors are the connections that ran MONITOR.
	monitors monitors

	// counters holds this process's shards of PN counters.
	counters *pnCounters
	// lists is what the list commands share: their positions' stamp, blocked clients.
	lists *listState

	mu        sync.Mutex
	listeners map[net.Listener]bool
	conns     map[*conn]bool
	closed    bool
	wg        sync.WaitGroup
}

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("resp: server closed")

// argsMax bounds the arguments of one command, as Redis does.
const argsMax = 1 << 20

// NewServer returns a server; call Serve to accept connections.
func NewServer(cfg Config) *Server {
	defaults := coord.DefaultLimits()
	if cfg.Limits.KeyBytesMax <= 0 {
		cfg.Limits.KeyBytesMax = defaults.KeyBytesMax
	}
	if cfg.Limits.ValueBytesMax <= 0 {
		cfg.Limits.ValueBytesMax = defaults.ValueBytesMax
	}
	if cfg.Limits.ScanLimitMax <= 0 {
		cfg.Limits.ScanLimitMax = defaults.ScanLimitMax
	}
	if cfg.DefaultLevel == 0 {
		cfg.DefaultLevel = consistency.One
	}
	if cfg.DefaultKeyspace == "" {
		cfg.DefaultKeyspace = "default"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	bulkMax := max(cfg.Limits.KeyBytesMax, cfg.Limits.ValueBytesMax)
	ctx, cancel := context.WithCancel(context.Background())
	runID := make([]byte, 20)
	rand.Read(runID)
	s := &Server{
		cfg: cfg,
		limits: ReadLimits{
			BulkBytesMax: bulkMax,
			// Room for a few of the largest values, or many small ones, in one command.
			CommandBytesMax: max(4*bulkMax, 64<<20),
			ArgsMax:         argsMax,
		},
		commands:           commandTable(),
		collectionCommands: collectionCommands(),
		started:            time.Now(),
		runID:              hex.EncodeToString(runID),
		ctx:                ctx,
		cancel:             cancel,
		listeners:          map[net.Listener]bool{},
		conns:              map[*conn]bool{},
		warnings:           lograte.New(lograte.DefaultInterval),
		counters:           newPNCounters(cfg.NodeID),
		lists:              newListState(),
	}
	s.getCommand, s.setCommand = s.commands["get"], s.commands["set"]
	s.idleTimeoutNs.Store(int64(max(cfg.IdleTimeout, 0)))
	s.hashListpack[0].Store(128) // Redis 7's defaults
	s.hashListpack[1].Store(64)
	s.setIntsetEntries.Store(512)
	s.zsetListpack[0].Store(128)
	s.zsetListpack[1].Store(64)
	return s
}

// Serve accepts connections on l until Close, serving each on its own goroutine. A failed
// accept (out of file descriptors, say) is retried with a growing pause, as net/http does,
// so that the node serves again once the cause is gone.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners[l] = true
	s.mu.Unlock()
	var pause time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			s.cfg.Logger.Error("resp: accept failed; retrying", "err", err, "pause", pause)
			time.Sleep(pause)
			continue
		}
		pause = 0
		c := s.newConn(nc)
		if !s.track(c) {
			nc.Close()
			return ErrServerClosed
		}
		s.stats.connectionsReceived.Add(1)
		go s.serveConn(c)
	}
}

// track registers a connection, unless the server is closing.
func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = true
	s.wg.Add(1)
	return true
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// connectedClients counts the open connections, for INFO.
func (s *Server) connectedClients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// clients returns the open connections in the order they were accepted, for CLIENT LIST.
func (s *Server) clients() []*conn {
	s.mu.Lock()
	all := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		all = append(all, c)
	}
	s.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	return all
}

// IdleTimeout returns how long a connection may stay silent before the server closes it;
// 0 is forever.
func (s *Server) IdleTimeout() time.Duration { return time.Duration(s.idleTimeoutNs.Load()) }

// SetIdleTimeout changes the idle timeout (CONFIG SET timeout), for the connections
// already open too: each waiting read looks the timeout up again.
func (s *Server) SetIdleTimeout(timeout time.Duration) {
	s.idleTimeoutNs.Store(int64(max(timeout, 0)))
	for _, c := range s.clients() {
		c.io.wake()
	}
}

// stats are INFO's counters since the start or the last CONFIG RESETSTAT.
type stats struct {
	connectionsReceived atomic.Int64
	commandsProcessed   atomic.Int64
	netInputBytes       atomic.Int64
	netOutputBytes      atomic.Int64
	keyspaceHits        atomic.Int64
	keyspaceMisses      atomic.Int64
	errorReplies        atomic.Int64
}

// reset zeroes the counters (CONFIG RESETSTAT).
func (st *stats) reset() {
	for _, counter := range []*atomic.Int64{&st.connectionsReceived, &st.commandsProcessed, &st.netInputBytes,
		&st.netOutputBytes, &st.keyspaceHits, &st.keyspaceMisses, &st.errorReplies} {
		counter.Store(0)
	}
}

// Close stops accepting, closes every connection, and waits for their goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	var errs []error
	for l := range s.listeners {
		errs = append(errs, l.Close())
	}
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return errors.Join(errs...)
}
