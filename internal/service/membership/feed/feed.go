// Package feed is the membership feed of one node: it runs the gossip driver
// (internal/service/membership/driver) for the node and keeps the node's cluster directory in step with
// what gossip says (members' addresses, DCs, ring status and tokens, power tier and
// liveness, removal marks, client address), and it publishes the node's own application
// states. What other parts of the node need from gossip's news (a member's power state, a
// removal of this node, a schema digest other than this node's) goes to Observers.
//
// The node reaches its gossip only through the Feed, never through the driver, so the
// driver it runs (and replaces when the node wakes from sleep) is this package's
// business. The Feed sends through a transport.Endpoint, which the driver takes; the
// message kinds stay registered by the node, which passes gossip's messages to Handle.
package feed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/core/membership/ferry"
	"github.com/kuradb/kura/internal/core/membership/scuttlebutt"
	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/service/membership/driver"
	"github.com/kuradb/kura/internal/service/ringchange"
)

// Application states the feed gossips besides the core's own (address, DC, status).
const (
	// KeyClientAddr is the node's gRPC client address.
	KeyClientAddr = "client_addr"
	// keySchema is the catalog's digest, so that a node missing a keyspace notices.
	keySchema = "schema"
)

// protocols are the membership cores a node can run (Config.Protocol).
var protocols = map[string]membership.Protocol{
	"ferry":       ferry.Protocol,
	"scuttlebutt": scuttlebutt.Protocol,
}

// detectionFloor is the least real time one stage of a Ferry probe, or a lone
// suspicion, lasts. A round shorter than a second runs the core's clock faster than the
// wall clock (tests gossip every 50 ms: 20 times), and Ferry's 0.5 s probe timeout would
// become 25 ms: a live node stalled that long by a loaded machine (a GC pause, two cores
// shared by a dozen processes) would be convicted. At the default round it changes nothing.
const detectionFloor = 250 * time.Millisecond

// ferryAt returns Ferry running with ferryOptionsAt(interval).
func ferryAt(interval time.Duration) membership.Protocol {
	opts := ferryOptionsAt(interval)
	protocol := ferry.Protocol
	protocol.New = func(cfg membership.Config) (membership.Core, error) { return ferry.New(cfg, opts) }
	return protocol
}

// ferryOptionsAt returns Ferry's default options with the probe timeout held to
// detectionFloor, and the suspicion and remote-probe timeouts to twice that, of real
// time when a round lasts interval (0 meaning the default round).
func ferryOptionsAt(interval time.Duration) ferry.Options {
	opts := ferry.DefaultOptions
	if interval <= 0 || interval >= membership.Round {
		return opts
	}
	floor := time.Duration(float64(detectionFloor) * float64(membership.Round) / float64(interval))
	opts.ProbeTimeout = max(opts.ProbeTimeout, floor)
	opts.SuspectTimeout = max(opts.SuspectTimeout, 2*floor)
	opts.RemoteProbeTimeout = max(opts.RemoteProbeTimeout, 2*floor)
	return opts
}

// Config sets up a Feed.
type Config struct {
	// ID is this node's id.
	ID string
	// Protocol names the membership core: "ferry" (the default, for "") or
	// "scuttlebutt".
	Protocol string
	// Interval is the length of a gossip round; 0 is a second.
	Interval time.Duration
	// Seeds are the addresses of the seed nodes.
	Seeds []string
	// Named are the nodes named with addresses up front (a topology file); they serve
	// as seeds too.
	Named []cluster.Node
	// Seed, when not zero, seeds the core's random choices, each life of the node (its
	// start, each wake) drawing anew from it.
	Seed uint64
	// TierKey is the application state under which members gossip their power tier
	// (powercycle.KeyTier), which the feed mirrors into the directory: a key of the
	// power cycle's, passed in so that this package does not depend on it.
	TierKey string
	// Fresh says the node started this life with an empty data dir: the data dir is
	// born in this life's generation (cluster.Node.Born), which the node keeps and
	// gossips in every later life.
	Fresh bool
	// AppState holds the application states the node gossips from its start besides
	// those the feed derives from its directory entry (client address, ring status and
	// tokens, replaced node, power tier) and its catalog's digest.
	AppState map[string]string
	// Logger is the process's; the feed and its driver name the node in their
	// messages. nil is slog.Default().
	Logger *slog.Logger
}

// Parts are what the feed uses of the rest of its node.
type Parts struct {
	Directory Directory          // the view gossip keeps in step
	Catalog   Catalog            // whose digest a member's is compared with
	Endpoint  transport.Endpoint // what the driver sends through (TCP, or the simulator's network)
	Observers Observers          // the rest of the node's interest in gossip's news
}

// Directory is the node's view of the cluster, which the feed writes members' entries,
// liveness and removals into; *cluster.Directory is one.
type Directory interface {
	Self() cluster.Node
	Node(id string) (cluster.Node, bool)
	Nodes() []cluster.Node
	Upsert(n cluster.Node) (bool, error)
	Remove(id string, generation uint64) (bool, error)
	SetState(id string, state cluster.State) bool
	SetBorn(generation uint64) error
}

// Catalog gives the digest of the node's keyspace catalog; *schema.Catalog is one.
type Catalog interface {
	Digest() uint64
}

// Observers hear of gossip's news on the driver's goroutine, in order: each must return
// at once, and leave anything slow to a goroutine of its own.
type Observers interface {
	// Observe takes a known member's entry as gossiped, and whether gossip hears from it
	// (powercycle.Cycle.Observe).
	Observe(m membership.Member, alive bool)
	// RemovedSelf takes the news that member by removed this node
	// (ringchange.Changer.RemovedSelf).
	RemovedSelf(by string)
	// SchemaDiffers says that a live member gossips a catalog digest other than this
	// node's: its catalog is to be pulled.
	SchemaDiffers(from cluster.Node)
}

// Feed runs the node's gossip and mirrors it into the directory. Its methods are safe
// for concurrent use.
type Feed struct {
	cfg      Config
	parts    Parts
	log      *slog.Logger
	protocol membership.Protocol
	seeds    []string
	members  []transport.Peer // the stored ring's other members (driver.Config.Members)
	gen      atomic.Uint64    // the generation the node gossips under now

	driverMu sync.RWMutex
	driver   *driver.Driver // replaced when the node wakes from sleep (Rejoin)

	mu sync.Mutex
	// removing and removed are this node's own removals (kura node remove), gossiped.
	removing, removed map[string]uint64
	// removingBy holds every member's removing list: a node some member is removing is
	// treated as leaving, so its ranges stream to their new owners.
	removingBy map[string]map[string]uint64
	// heard is each member's entry as gossiped, before removals override its status.
	heard map[string]cluster.Node
}

// New validates cfg and builds the feed and its driver, gossiping the node's directory
// entry and cfg.AppState; Start runs it.
func New(cfg Config, parts Parts) (*Feed, error) {
	if cfg.ID == "" || cfg.TierKey == "" {
		return nil, errors.New("feed: id and tier key are required")
	}
	if parts.Directory == nil || parts.Catalog == nil || parts.Endpoint == nil || parts.Observers == nil {
		return nil, errors.New("feed: every part is required")
	}
	name := cfg.Protocol
	if name == "" {
		name = "ferry"
	}
	protocol, ok := protocols[name]
	if !ok {
		return nil, fmt.Errorf("membership %q: want ferry or scuttlebutt", name)
	}
	if name == "ferry" {
		protocol = ferryAt(cfg.Interval)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	f := &Feed{cfg: cfg, parts: parts, log: logger.With("node", cfg.ID), protocol: protocol,
		removing: map[string]uint64{}, removed: map[string]uint64{}, removingBy: map[string]map[string]uint64{}, heard: map[string]cluster.Node{}}
	self := parts.Directory.Self()
	appState := map[string]string{
		KeyClientAddr:        self.ClientAddr,
		keySchema:            digestString(parts.Catalog.Digest()),
		membership.KeyStatus: self.Status.String(),
		cfg.TierKey:          strconv.Itoa(self.Tier),
	}
	maps.Copy(appState, cfg.AppState)
	if len(self.Tokens) > 0 {
		appState[membership.KeyTokens] = formatTokens(self.Tokens)
	}
	if self.Replaces != "" {
		appState[ringchange.KeyReplaces] = self.Replaces
	}
	f.seeds = append([]string(nil), cfg.Seeds...)
	for _, p := range cfg.Named {
		if p.Addr != "" {
			f.seeds = append(f.seeds, p.Addr)
		}
	}
	// The members of its stored ring: a restarted node finds its cluster from them, even
	// when it was started without seeds, or its seeds are down.
	for _, other := range parts.Directory.Nodes() {
		if other.ID != self.ID && other.Addr != "" && (other.Status.OnRing() || other.Status == cluster.StatusJoining) {
			f.members = append(f.members, transport.Peer{ID: other.ID, DC: other.DC, Addr: other.Addr})
		}
	}
	generation := newGeneration()
	if cfg.Fresh {
		if err := parts.Directory.SetBorn(generation); err != nil {
			return nil, err
		}
	}
	if born := parts.Directory.Self().Born; born != 0 {
		appState[ringchange.KeyBorn] = strconv.FormatUint(born, 10)
	}
	var err error
	if f.driver, err = f.newDriver(appState, generation); err != nil {
		return nil, err
	}
	return f, nil
}

// newGeneration draws the generation of a new life of the node: milliseconds, not the
// usual seconds, so that a node restarted within the same second still comes back with
// a newer one.
func newGeneration() uint64 { return uint64(time.Now().UnixMilli()) }

// newDriver builds a membership driver that gossips appState under generation.
func (f *Feed) newDriver(appState map[string]string, generation uint64) (*driver.Driver, error) {
	f.gen.Store(generation)
	var seed uint64
	if f.cfg.Seed != 0 {
		seed = f.cfg.Seed ^ generation // each life of a simulated node draws anew
	}
	return driver.New(driver.Config{
		Protocol:   f.protocol,
		Transport:  f.parts.Endpoint,
		Seeds:      f.seeds,
		Members:    f.members,
		AppState:   appState,
		Generation: generation,
		Seed:       seed,
		Interval:   f.cfg.Interval,
		OnChange:   f.onChange,
		Logger:     f.cfg.Logger,
	})
}

// current returns the running membership driver.
func (f *Feed) current() *driver.Driver {
	f.driverMu.RLock()
	defer f.driverMu.RUnlock()
	return f.driver
}

// Start runs the gossip; the node routes gossip's messages to Handle first.
func (f *Feed) Start() { f.current().Start() }

// Handle takes one of gossip's messages (driver.Handles says which kinds are).
func (f *Feed) Handle(ctx context.Context, from transport.Peer, kind transport.Kind, payload []byte) ([]byte, error) {
	return f.current().Handle(ctx, from, kind, payload)
}

// Shutdown announces that this node goes silent, so its peers mark it down at once
// instead of by suspicion; it stays a member. Close then stops the gossip.
func (f *Feed) Shutdown(ctx context.Context) error { return f.current().Shutdown(ctx) }

// Close stops the gossip, announcing nothing.
func (f *Feed) Close() error { return f.current().Close() }

// Rejoin replaces the driver, which was shut down when the node went to sleep, by a new
// one with the same application states (set overrides some) under a newer generation:
// to its peers, a node back from sleep is a node restarted, with no stale
// failure-detector history either way.
func (f *Feed) Rejoin(set map[string]string) error {
	f.driverMu.Lock()
	defer f.driverMu.Unlock()
	appState := map[string]string{}
	if self, ok := f.driver.Member(f.cfg.ID); ok {
		maps.Copy(appState, self.AppState)
	}
	maps.Copy(appState, set)
	d, err := f.newDriver(appState, newGeneration())
	if err != nil {
		return err
	}
	f.driver.Close()
	f.driver = d
	d.Start()
	return nil
}

// Generation returns the generation the node gossips under in this life (since its
// start, or its last wake).
func (f *Feed) Generation() uint64 { return f.gen.Load() }

// Interval is the length of a gossip round.
func (f *Feed) Interval() time.Duration {
	if f.cfg.Interval > 0 {
		return f.cfg.Interval
	}
	return time.Second
}

// Protocol names the membership core the feed runs.
func (f *Feed) Protocol() string { return f.protocol.Name }

// Joined reports whether a seed or a member answered (driver.Driver.Joined).
func (f *Feed) Joined() bool { return f.current().Joined() }

// Seeds returns what each seed last answered, for operators.
func (f *Feed) Seeds() []driver.SeedStatus { return f.current().Seeds() }

// Member returns a member as gossiped, this node included.
func (f *Feed) Member(id string) (membership.Member, bool) { return f.current().Member(id) }

// Members returns every member as gossiped, this node included.
func (f *Feed) Members() []membership.Member { return f.current().Members() }

// SetAppState gossips one of the node's application states.
func (f *Feed) SetAppState(key, value string) { f.current().SetAppState(key, value) }

// SetRingStatus gossips the node's ring status and, unless tokens is empty, its tokens
// (ringchange.Gossip).
func (f *Feed) SetRingStatus(status cluster.Status, tokens []uint64) {
	if len(tokens) > 0 {
		f.current().SetAppState(membership.KeyTokens, formatTokens(tokens))
	}
	f.current().SetAppState(membership.KeyStatus, status.String())
}

// PublishDigest gossips the catalog's digest (schemasync.Digests), so that a node that
// missed a definition notices and pulls it.
func (f *Feed) PublishDigest(digest uint64) {
	f.current().SetAppState(keySchema, digestString(digest))
}

// MarkRemoving starts (on) or ends gossiping that this node removes dead
// (ringchange.KeyRemoving), and applies it to this node's directory as to any member's.
func (f *Feed) MarkRemoving(dead cluster.Node, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if on {
		f.removing[dead.ID] = dead.Generation
	} else {
		delete(f.removing, dead.ID)
	}
	f.current().SetAppState(ringchange.KeyRemoving, ringchange.FormatMarks(f.removing))
	f.applyMarksLocked(f.cfg.ID, ringchange.KeyRemoving, ringchange.FormatMarks(f.removing))
}

// MarkRemoved gossips that this node removed dead, for good (ringchange.KeyRemoved),
// and applies it to this node's directory.
func (f *Feed) MarkRemoved(dead cluster.Node) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed[dead.ID] = dead.Generation
	f.current().SetAppState(ringchange.KeyRemoved, ringchange.FormatMarks(f.removed))
	f.applyMarksLocked(f.cfg.ID, ringchange.KeyRemoved, ringchange.FormatMarks(f.removed))
}

func digestString(d uint64) string { return strconv.FormatUint(d, 16) }

// SchemaDigest returns the catalog digest a member gossips (schemasync.Digests), and
// whether it gossiped one.
func SchemaDigest(m membership.Member) (uint64, bool) {
	d, err := strconv.ParseUint(m.AppState[keySchema], 16, 64)
	return d, err == nil
}

func formatTokens(tokens []uint64) string {
	parts := make([]string, len(tokens))
	for i, t := range tokens {
		parts[i] = strconv.FormatUint(t, 10)
	}
	return strings.Join(parts, ",")
}

func parseTokens(s string) ([]uint64, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	tokens := make([]uint64, len(parts))
	for i, p := range parts {
		t, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("token %q: %w", p, err)
		}
		tokens[i] = t
	}
	return tokens, nil
}
