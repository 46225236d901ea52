// Package driver runs one membership core in real time over kura's TCP
// transport: it ticks the core once per gossip interval, sends what the core
// returns as one-way transport messages, hands arriving messages to the core
// (Handle is called from the node's transport handler) and reports every
// event, with the member it concerns, through a callback the node feeds its
// cluster directory from.
//
// The cores address members by node ID. A message the core sends in answer
// to another goes to the transport.Peer that sent that one, as the transport
// named it: that reaches a joiner the core does not know yet, and a node
// that restarted on another address before its new state arrived. Any other
// message goes where the member's gossiped state (KeyAddr, KeyDC) places it;
// the gossiped address is the transport's own, the one its handshake
// carries, so both ways of placing a node agree. Seeds are given by address:
// before starting the core the driver asks each seed for its ID with a
// "gossip_whois" call, so the core's seed list holds real member IDs and a
// seed is recognised as the member it is (Ferry's seeds stop asking each
// other once they know each other; placeholder IDs would never be known).
//
// A node stopped on purpose calls Shutdown before Close: the core announces
// status shutdown to the members it knows best, and Shutdown waits (bounded
// by its context) until they have taken it, so peers hold the node down at
// once rather than suspecting it rounds later. Synced tells a starting node
// when it has learned the cluster's membership from a member of it, so that
// it does not act on a partial view of the ring.
//
// The cores measure time in rounds of one second (Round). The driver runs
// the core's clock at Round/Interval times real time, so a short Interval
// compresses every timeout of the protocol alike: tests and the real-socket
// bench run whole protocol schedules in a fraction of the time. A core
// ticked more often than once a round (TickInterval) is ticked at the same
// fraction of Interval.
package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/internal/base/lograte"
	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/io/transport"
)

// Round is the gossip round the cores' timing is written for: their failure
// detectors and timeouts count in these units (membership.Round).
const Round = membership.Round

// Handles reports whether a transport message kind belongs to the driver, for
// the node's transport handler to route it to Handle: every core message travels
// as KindGossip (its first byte names the message type), and KindGossipWhois asks
// a seed known only by address for its ID.
func Handles(kind transport.Kind) bool {
	return kind == transport.KindGossip || kind == transport.KindGossipWhois
}

// Sentinel errors.
var (
	// ErrBadConfig: the Config cannot run.
	ErrBadConfig = errors.New("driver: invalid config")
	// ErrUnknownKind: Handle got a message kind that is not the driver's.
	ErrUnknownKind = errors.New("driver: not a membership message kind")
)

// Defaults for the zero fields of Config.
const (
	DefaultSeedWait    = 10 * time.Second
	DefaultSendTimeout = 2 * time.Second
)

// Config configures a driver.
type Config struct {
	// Protocol is the core to run (scuttlebutt.Protocol, ferry.Protocol, or
	// one built with custom options such as ferry.New with other Options).
	Protocol membership.Protocol
	// Transport carries the messages (TCP, or the simulator's network); its
	// Self gives the node's ID and DC. The driver does not close it.
	Transport transport.Endpoint
	// Seed seeds the core's random source, so that a simulated cluster gossips
	// the same way from the same seed; 0 draws one.
	Seed uint64
	// Seeds are the addresses of the seed nodes; this node's own address may
	// be among them.
	Seeds []string
	// Members are the members this node knew before it stopped (its stored
	// ring), by id, DC and address. The core takes them as seeds at once,
	// without asking who they are, and this node as one too (it is a member
	// already, and may admit the others when they restart after it), so that
	// a restarted node finds its cluster from its ring, not only from Seeds:
	// with Members given, Seeds that do not answer at once are not waited for.
	Members []transport.Peer
	// AppState holds initial application states (client address, tokens...).
	AppState map[string]string
	// Generation must grow across restarts; 0 means the boot time in unix
	// seconds, as Cassandra does.
	Generation uint64
	// Interval is the real length of one gossip round; 0 means Round. The
	// core's clock runs Round/Interval times as fast as the wall clock.
	Interval time.Duration
	// RemoveAfter is how long (in real time) a dead or departed member is
	// kept; 0 means the core's default.
	RemoveAfter time.Duration
	// SeedWait is how long the driver waits for seeds that do not answer
	// before it starts the core with those that did; 0 means
	// DefaultSeedWait. A node that reaches no seed at all keeps trying.
	SeedWait time.Duration
	// SendTimeout bounds the dial of one message; 0 means DefaultSendTimeout.
	SendTimeout time.Duration
	// OnChange, if set, receives every event in order, from one goroutine.
	// It must not call Close.
	OnChange func(Change)
	// Logger receives send failures and seed resolution problems; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Change is one event of the core with the member it concerns.
type Change struct {
	Event membership.Event
	// Member is the member as the core knows it right after the event;
	// Known is false when the core no longer holds it (EventRemoved).
	Member membership.Member
	Known  bool
}

// Driver runs one core. Its methods are safe for concurrent use.
type Driver struct {
	cfg   Config
	self  transport.Peer
	scale float64 // core time per real time
	log   *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	rounds atomic.Uint64

	mu      sync.Mutex
	core    membership.Core // nil until the seeds are resolved
	started time.Time       // real time of the core's time 0
	// seeds places the resolved seeds, which the core may name before it
	// knows their state.
	seeds map[string]transport.Peer
	// seedStatus is what each seed address last answered, for operators (Seeds).
	seedStatus map[string]SeedStatus
	appState   map[string]string // states set before the core started
	running    bool
	closed     bool
	// synced is closed once the core reports EventSynced (or has no other
	// seed to learn from); syncedDone says it is.
	synced     chan struct{}
	syncedDone bool

	changesMu sync.Mutex
	changes   []Change
	changed   chan struct{}
}

// New validates cfg and builds a driver; Start runs it. Route the transport's
// KindGossip and KindGossipWhois messages to Handle before calling Start.
func New(cfg Config) (*Driver, error) {
	switch {
	case cfg.Protocol.New == nil || cfg.Protocol.Unmarshal == nil:
		return nil, fmt.Errorf("%w: no protocol", ErrBadConfig)
	case cfg.Transport == nil:
		return nil, fmt.Errorf("%w: no transport", ErrBadConfig)
	case cfg.Transport.Self().DC == "":
		return nil, fmt.Errorf("%w: transport of %s has no DC", ErrBadConfig, cfg.Transport.Self().ID)
	case cfg.Interval < 0 || cfg.RemoveAfter < 0 || cfg.SeedWait < 0 || cfg.SendTimeout < 0:
		return nil, fmt.Errorf("%w: negative duration", ErrBadConfig)
	}
	if cfg.Interval == 0 {
		cfg.Interval = Round
	}
	if cfg.SeedWait == 0 {
		cfg.SeedWait = DefaultSeedWait
	}
	if cfg.SendTimeout == 0 {
		cfg.SendTimeout = DefaultSendTimeout
	}
	if cfg.Generation == 0 {
		cfg.Generation = uint64(time.Now().Unix())
	}
	self := cfg.Transport.Self()
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	d := &Driver{
		cfg: cfg, self: self, scale: float64(Round) / float64(cfg.Interval),
		log:   log.With("node", self.ID, "protocol", cfg.Protocol.Name),
		seeds: make(map[string]transport.Peer), seedStatus: make(map[string]SeedStatus), appState: make(map[string]string),
		changed: make(chan struct{}, 1), synced: make(chan struct{}),
	}
	for k, v := range cfg.AppState {
		d.appState[k] = v
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	return d, nil
}

// Start resolves the seeds, then starts the core and ticks it (every
// Interval, or the fraction of it the core's TickInterval asks for), all in
// the background. Calls after the first, or after Close, do
// nothing.
func (d *Driver) Start() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.running {
		return
	}
	d.running = true
	d.wg.Add(2)
	go d.run()
	go d.report()
}

// Close stops the driver (the transport stays open) and waits for its
// goroutines. It announces nothing: call Shutdown first when the node stops
// on purpose and will be back, Leave (and a few rounds) when it departs for
// good.
func (d *Driver) Close() error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
	return nil
}

// Generation is the node's generation.
func (d *Driver) Generation() uint64 { return d.cfg.Generation }

// Rounds is how many gossip rounds the core has run: its ticks, in rounds.
// Under overload the ticker drops ticks rather than bursting them, so this
// may trail the clock; the real-socket bench measures traffic per round run.
func (d *Driver) Rounds() uint64 { return d.rounds.Load() }

// Members lists the members the core knows, itself included; nil before the
// core has started.
func (d *Driver) Members() []membership.Member {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.core == nil {
		return nil
	}
	return d.core.Members()
}

// Member returns one member as the core knows it.
func (d *Driver) Member(id string) (membership.Member, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.core == nil {
		return membership.Member{}, false
	}
	return d.core.Member(id)
}

// SetAppState changes one of the node's application states; it spreads with
// the next rounds (or is part of the node's state from the start when the
// core has not started yet).
func (d *Driver) SetAppState(key, value string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.core == nil {
		d.appState[key] = value
		return
	}
	d.dispatchLocked(d.core.SetAppState(d.nowLocked(), key, value), transport.Peer{})
}

// Leave announces a graceful leave; the core gossips it for a few more
// rounds, so keep the driver running that long before Close. Before the core
// has started nobody knows the node and there is nothing to announce.
func (d *Driver) Leave() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.core != nil {
		d.dispatchLocked(d.core.Leave(d.nowLocked()), transport.Peer{})
	}
}

// Shutdown announces that the node is stopping and will be back (status
// shutdown; see membership.Core): the core sends the news straight to the
// members it knows best and goes quiet. Shutdown waits until each of them
// has taken it (the messages go as calls, answered once the peer's core has
// stepped them), or until ctx ends, whose error it then returns. Peers hold
// the node down at once, not after their failure detectors' seconds, and
// keep it in the cluster until it restarts with a newer generation. Before
// the core has started nobody knows the node: Shutdown returns at once.
// Call Close afterwards.
func (d *Driver) Shutdown(ctx context.Context) error {
	d.mu.Lock()
	if d.core == nil || d.closed {
		d.mu.Unlock()
		return nil
	}
	r := d.core.Shutdown(d.nowLocked())
	d.reportLocked(r.Events)
	out := d.placeLocked(r.Messages, transport.Peer{})
	var wg sync.WaitGroup
	for _, o := range out {
		wg.Add(1)
		d.wg.Add(1)
		go func() {
			defer wg.Done()
			d.tell(ctx, o)
		}()
	}
	d.mu.Unlock()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("driver: shutdown announced, not all taken: %w", ctx.Err())
	}
}

// tell sends payloads to one peer as calls, in order, so that it returns
// once the peer has handled them; ctx and Close end it early.
func (d *Driver) tell(ctx context.Context, o outbox) {
	defer d.wg.Done()
	ctx, cancel := context.WithTimeout(ctx, d.cfg.SendTimeout)
	defer cancel()
	stop := context.AfterFunc(d.ctx, cancel)
	defer stop()
	for _, p := range o.payloads {
		if _, err := d.cfg.Transport.Call(ctx, o.to, transport.KindGossip, p); err != nil {
			d.log.Debug("shutdown notice not taken", "to", o.to.ID, "err", err)
			return
		}
	}
}

// Synced returns a channel that is closed once this node knows the
// cluster's membership as a member of it does: the core reported
// membership.EventSynced (Ferry: the Welcome of the seed or gateway that
// admitted it, or a summary equal to its own view; Scuttlebutt: a member's
// full digest and the states it lacked), or the node has no other seed to
// learn from (it is its own only seed, or no other seed was given or
// answered), in which case it is closed as soon as the core starts. A node
// that restarts or joins waits on it before it coordinates, so that it does
// not act on a partial ring.
func (d *Driver) Synced() <-chan struct{} { return d.synced }

// markSyncedLocked closes the Synced channel, once.
func (d *Driver) markSyncedLocked() {
	if !d.syncedDone {
		d.syncedDone = true
		close(d.synced)
	}
}

// Handle serves the driver's message kinds; the node's transport handler
// calls it for every kind Handles accepts.
func (d *Driver) Handle(_ context.Context, from transport.Peer, kind transport.Kind, payload []byte) ([]byte, error) {
	switch kind {
	case transport.KindGossipWhois:
		return encodePeer(d.self), nil
	case transport.KindGossip:
		m, err := d.cfg.Protocol.Unmarshal(payload)
		if err != nil {
			return nil, fmt.Errorf("driver: message from %s: %w", from.ID, err)
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.core == nil || d.closed {
			return nil, nil // not gossiping yet (or any more): as if lost
		}
		d.dispatchLocked(d.core.Step(d.nowLocked(), from.ID, m), from)
		return nil, nil
	}
	return nil, fmt.Errorf("%w: %v from %s", ErrUnknownKind, kind, from.ID)
}

// coreTime converts real time elapsed since the core started to core time.
func coreTime(elapsed time.Duration, scale float64) time.Duration {
	return time.Duration(float64(elapsed) * scale)
}

// nowLocked is the core's clock.
func (d *Driver) nowLocked() time.Duration { return coreTime(time.Since(d.started), d.scale) }

// run resolves the seeds, starts the core and ticks it until Close.
func (d *Driver) run() {
	defer d.wg.Done()
	seeds, ok := d.resolveSeeds()
	if !ok {
		return
	}
	d.mu.Lock()
	seeds = d.addMembersLocked(seeds)
	core, err := d.cfg.Protocol.New(membership.Config{
		ID: d.self.ID, DC: d.self.DC, Addr: d.self.Addr, Generation: d.cfg.Generation, Seeds: seeds,
		AppState: d.appState, Rand: d.rand(),
		RemoveAfter: coreTime(d.cfg.RemoveAfter, d.scale),
	})
	if err != nil {
		d.mu.Unlock()
		d.log.Error("membership core did not start", "err", err)
		return
	}
	d.core, d.started, d.appState = core, time.Now(), nil
	if len(d.seeds) == 0 {
		// No other seed answered or was given: nobody to learn from.
		d.markSyncedLocked()
	}
	d.mu.Unlock()

	// The core asks to be ticked every TickInterval of its time (Ferry: four
	// times a round, so that its probes time out between rounds); in real
	// time that is the same fraction of Interval.
	tick := time.Duration(float64(core.TickInterval()) / d.scale)
	perRound := max(int(Round/core.TickInterval()), 1)
	ticker := time.NewTicker(max(tick, time.Millisecond))
	defer ticker.Stop()
	for ticks := 1; ; ticks++ {
		select {
		case <-d.ctx.Done():
			return
		case <-ticker.C:
			d.mu.Lock()
			d.dispatchLocked(d.core.Tick(d.nowLocked()), transport.Peer{})
			d.mu.Unlock()
			if ticks%perRound == 0 {
				d.rounds.Add(1)
			}
		}
	}
}

// resolveSeeds asks every seed address for its ID, once per Interval, until
// all answered, or SeedWait passed and at least one did. It returns the
// seeds' IDs (this node's own when it is a seed); ok is false after Close.
func (d *Driver) resolveSeeds() (ids []string, ok bool) {
	resolved := make(map[string]transport.Peer)
	deadline := time.Now().Add(d.cfg.SeedWait)
	// A wrong seed fails the same way for as long as the node runs: its warning is
	// repeated when what the seeds answer changes, and otherwise once a minute.
	warnings := lograte.New(lograte.DefaultInterval)
	for {
		// The whois goroutines write resolved, so which seeds to ask is decided before
		// the first of them starts.
		var unresolved []string
		for _, addr := range d.cfg.Seeds {
			if _, done := resolved[addr]; !done {
				unresolved = append(unresolved, addr)
			}
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, addr := range unresolved {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, err := d.whois(addr)
				d.mu.Lock()
				d.seedStatus[addr] = SeedStatus{Addr: addr, ID: p.ID, Err: err}
				d.mu.Unlock()
				if err != nil {
					d.log.Debug("seed did not answer", "seed", addr, "err", err)
					return
				}
				mu.Lock()
				resolved[addr] = p
				mu.Unlock()
			}()
		}
		wg.Wait()
		if len(resolved) == len(d.cfg.Seeds) || len(d.cfg.Members) > 0 || (len(resolved) > 0 && time.Now().After(deadline)) {
			break
		}
		if time.Now().After(deadline) {
			// Says why, so that a wrong address (a client port, a typo) shows at once.
			errs := d.seedErrors()
			warnings.Warn(d.log, "seeds", errs, "no seed answers yet; still trying: check that --seeds names other nodes' --listen addresses",
				"seeds", d.cfg.Seeds, "errors", errs)
			deadline = time.Now().Add(d.cfg.SeedWait)
		}
		select {
		case <-d.ctx.Done():
			return nil, false
		case <-time.After(d.cfg.Interval):
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, addr := range d.cfg.Seeds {
		p, ok := resolved[addr]
		if !ok {
			d.log.Warn("starting without an unreachable seed", "seed", addr)
			continue
		}
		ids = append(ids, p.ID)
		if p.ID != d.self.ID {
			d.seeds[p.ID] = p
		}
	}
	return ids, true
}

// SeedStatus is what one seed address answered when the driver last asked it.
type SeedStatus struct {
	Addr string
	ID   string // the node that answered; empty when none did
	Err  error  // why the last attempt failed; nil once it answered
}

// Seeds returns what each seed address answered, in the order of Config.Seeds; a seed
// not asked yet has neither ID nor Err.
func (d *Driver) Seeds() []SeedStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]SeedStatus, len(d.cfg.Seeds))
	for i, addr := range d.cfg.Seeds {
		out[i] = d.seedStatus[addr]
		out[i].Addr = addr
	}
	return out
}

// seedErrors joins the last error of every seed that failed, for a log line.
func (d *Driver) seedErrors() string {
	var parts []string
	for _, s := range d.Seeds() {
		if s.Err != nil {
			parts = append(parts, s.Addr+": "+s.Err.Error())
		}
	}
	return strings.Join(parts, "; ")
}

// addMembersLocked adds Config.Members, and this node when there are any, to the
// core's seeds; d.mu is held.
func (d *Driver) addMembersLocked(seeds []string) []string {
	if len(d.cfg.Members) == 0 {
		return seeds
	}
	for _, m := range append([]transport.Peer{d.self}, d.cfg.Members...) {
		if slices.Contains(seeds, m.ID) {
			continue
		}
		seeds = append(seeds, m.ID)
		if m.ID != d.self.ID {
			d.seeds[m.ID] = m
		}
	}
	return seeds
}

// rand returns the core's random source: seeded by Config.Seed, else at random.
func (d *Driver) rand() *rand.Rand {
	if d.cfg.Seed != 0 {
		return rand.New(rand.NewPCG(d.cfg.Seed, d.cfg.Seed>>1^0x9e3779b97f4a7c15))
	}
	return rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
}

// Joined reports whether the core runs: some seed answered, or the node had none.
func (d *Driver) Joined() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.core != nil
}

// whois asks the node at addr who it is; a seed at this node's own address
// answers too, through the transport, so no address comparison is needed.
func (d *Driver) whois(addr string) (transport.Peer, error) {
	ctx, cancel := context.WithTimeout(d.ctx, d.cfg.SendTimeout)
	defer cancel()
	raw, err := d.cfg.Transport.Call(ctx, transport.AnyNodeAt(addr), transport.KindGossipWhois, nil)
	if errors.Is(err, context.DeadlineExceeded) {
		// A Redis or HTTP port accepts the connection and waits for a request that never
		// comes, as a stopped node would: say both.
		return transport.Peer{}, fmt.Errorf("%w: the address took the connection but answered nothing in %v: "+
			"is it a node's internode --listen address (a Redis or HTTP port answers nothing), and is that node running?", err, d.cfg.SendTimeout)
	}
	if err != nil {
		return transport.Peer{}, err
	}
	p, err := decodePeer(raw)
	if err != nil {
		return transport.Peer{}, fmt.Errorf("driver: whois %s: %w", addr, err)
	}
	return p, nil
}

// dispatchLocked reports a Ready's events and sends its messages: those to
// one destination in order, in a goroutine of their own, so a dial to a dead
// node delays neither the round nor the other destinations. sender is the
// peer whose message the core answers (zero for a round or a local call).
func (d *Driver) dispatchLocked(r membership.Ready, sender transport.Peer) {
	d.reportLocked(r.Events)
	if d.closed {
		return
	}
	for _, o := range d.placeLocked(r.Messages, sender) {
		d.wg.Add(1)
		go d.send(o.to, o.payloads)
	}
}

// reportLocked queues events for OnChange and notes EventSynced.
func (d *Driver) reportLocked(events []membership.Event) {
	for _, e := range events {
		if e.Kind == membership.EventSynced {
			d.markSyncedLocked()
		}
	}
	if len(events) > 0 && d.cfg.OnChange != nil {
		changes := make([]Change, len(events))
		for i, e := range events {
			m, known := d.core.Member(e.ID)
			changes[i] = Change{Event: e, Member: m, Known: known}
		}
		d.queueChanges(changes)
	}
}

// outbox is what goes to one peer, in order.
type outbox struct {
	to       transport.Peer
	payloads [][]byte
}

// placeLocked encodes messages and groups them by destination, placed on
// the network, in the order the destinations first appear.
func (d *Driver) placeLocked(messages []membership.Outbound, sender transport.Peer) []outbox {
	if len(messages) == 0 {
		return nil
	}
	var order []string
	batches := make(map[string][][]byte)
	for _, out := range messages {
		if _, seen := batches[out.To]; !seen {
			order = append(order, out.To)
		}
		batches[out.To] = append(batches[out.To], membership.Marshal(out.Msg))
	}
	var out []outbox
	for _, id := range order {
		peer, ok := sender, id == sender.ID
		if !ok {
			peer, ok = d.peerLocked(id)
		}
		if !ok {
			d.log.Debug("no address for member; message dropped", "to", id)
			continue
		}
		out = append(out, outbox{to: peer, payloads: batches[id]})
	}
	return out
}

// peerLocked places a member ID on the network: from the member's gossiped
// address and DC, else, for a seed not heard from yet, from its whois answer.
func (d *Driver) peerLocked(id string) (transport.Peer, bool) {
	if m, ok := d.core.Member(id); ok && m.Addr != "" && m.DC != "" {
		return transport.Peer{ID: id, DC: m.DC, Addr: m.Addr}, true
	}
	p, ok := d.seeds[id]
	return p, ok
}

// send sends payloads to one peer, in order.
func (d *Driver) send(to transport.Peer, payloads [][]byte) {
	defer d.wg.Done()
	ctx, cancel := context.WithTimeout(d.ctx, d.cfg.SendTimeout)
	defer cancel()
	for _, p := range payloads {
		if err := d.cfg.Transport.Send(ctx, to, transport.KindGossip, p); err != nil {
			// Gossip tolerates loss; the core's own timeouts decide what a
			// silent peer means.
			d.log.Debug("gossip not sent", "to", to.ID, "err", err)
			return
		}
	}
}

// queueChanges appends changes for the reporting goroutine.
func (d *Driver) queueChanges(changes []Change) {
	d.changesMu.Lock()
	d.changes = append(d.changes, changes...)
	d.changesMu.Unlock()
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

// report hands queued changes to OnChange, in order, until Close.
func (d *Driver) report() {
	defer d.wg.Done()
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-d.changed:
		}
		d.changesMu.Lock()
		batch := d.changes
		d.changes = nil
		d.changesMu.Unlock()
		for _, c := range batch {
			d.cfg.OnChange(c)
		}
	}
}

// encodePeer is a whois answer: ID, DC and address.
func encodePeer(p transport.Peer) []byte {
	b := membership.AppendString(nil, p.ID)
	b = membership.AppendString(b, p.DC)
	return membership.AppendString(b, p.Addr)
}

// decodePeer reads a whois answer.
func decodePeer(b []byte) (transport.Peer, error) {
	dec := membership.NewDecoder(b)
	p := transport.Peer{ID: dec.String(), DC: dec.String(), Addr: dec.String()}
	if err := dec.Finish(); err != nil {
		return transport.Peer{}, err
	}
	if p.ID == "" || p.DC == "" {
		return transport.Peer{}, fmt.Errorf("%w: whois answer without ID or DC", membership.ErrMalformed)
	}
	return p, nil
}
