// Package powercycle runs one node's side of paper 003's power cycle (docs/power.md):
// its own sleep and wake (draining, offloading its writes to holders, going quiet,
// taking the offloaded writes back), the stand-ins it runs on the addresses of sleeping
// neighbours so that their clients move on at once, every node's modelled energy, and
// the cluster's power controller on the node in charge of it.
//
// The rules it applies (states, energy model, coverage, the controller's decisions, the
// gate over the node's listeners) are package power's, which does no I/O. This package
// adds the goroutines, timers and calls to other nodes, and sees the rest of its node
// only through small interfaces (Parts): the directory, the gossip, the calls to peers,
// the hints it keeps for others, the repair, the ring and the keyspaces. Its messages'
// kinds stay registered by the node, which passes their payloads to HandlePower and
// HandleHintsFlush.
package powercycle

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/base/ctxtime"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/core/power"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
)

// Application states of the power cycle, gossiped besides the ring's.
const (
	// KeyPower is the node's power state; a member that gossips none is active.
	KeyPower = "power"
	// KeyTier is the node's power tier: 0 never sleeps.
	KeyTier = "power_tier"
	// KeyRESPAddr is the node's Redis address, which its stand-in takes over.
	KeyRESPAddr = "resp_addr"
	// KeyWakeAddr is the node's HTTP admin address, which stays up while it sleeps and
	// through which it is woken.
	KeyWakeAddr = "wake_addr"
	// KeyLevels is the node's declaration of the levels each keyspace is used at
	// (Config.Levels, as power.Levels.String writes it), which every node's sleep rule
	// takes together with its own.
	KeyLevels = "power_levels"

	keyHolders = "offload" // the nodes keeping its writes while it sleeps, comma-separated
	keyStandIn = "standin" // the node answering on its addresses while it sleeps; empty: none
)

// holdersMax is how many offload holders a sleeping node names: one more than the
// largest replication factor in use is always outside a replica set (a holder that is a
// replica of the key would count one node twice); four covers RF 3.
const holdersMax = 4

// Config sets up a Cycle.
type Config struct {
	// ID is this node's id.
	ID string
	// Profile names the sleep state whose draw and transition times model the energy
	// (power.ProfileByName); "" is s4.
	Profile string
	// NoTimeoutSuppression runs the paper's "no control" baseline: a sleeping node names
	// no stand-in and freezes its listeners and connections instead of releasing them,
	// so its clients wait for their timeouts.
	NoTimeoutSuppression bool
	// Controller, when set, runs the cluster's power controller (ControlPower) and has
	// the node publish its load (PublishLoad); its Profile is replaced by this node's.
	Controller *power.ControllerConfig
	// Levels declares the consistency levels each keyspace is read and written at: no
	// node sleeps when a range would then have too few awake replicas for one of them
	// (MaySleep). The node gossips it under KeyLevels; nil declares nothing, which takes
	// power.DefaultLevel for every keyspace.
	Levels power.Levels
	// CPUTime, when set, returns the CPU time this node has used so far, from which
	// MeterCPU measures its utilization every LoadWindow; nil: none measured (the node
	// draws its profile's idle watts while awake, unless SetUtilization is called).
	CPUTime func() time.Duration
	// Cores is how many processors CPUTime is measured against: a utilization of 1 keeps
	// them all busy.
	Cores float64
	// FrontEndTLS is the server TLS of the client and Redis ports, nil without TLS: a
	// stand-in serves a sleeping node's ports as this node serves its own.
	FrontEndTLS *tls.Config
	// ClientAddrKey is the application state under which members gossip their gRPC
	// client address, which a stand-in binds for a sleeping one.
	ClientAddrKey string
	// Logger names the node already; nil is slog.Default().
	Logger *slog.Logger
}

// Parts are what the cycle uses of the rest of its node, each an interface the node
// adapts.
type Parts struct {
	Directory Directory // who is where, in which state and power state
	Gossip    Gossip    // the power states this node gossips and learns
	Peers     Peers     // the power cycle's requests to other nodes
	Hints     Hints     // the writes this node keeps for a waking one
	Repairer  Repairer  // for a waking node whose holder is gone
	Ring      Ring      // which ranges would lose their last awake replica
	Keyspaces Keyspaces // which keyspaces that rule applies to
	FrontEnds FrontEnds // this node's Redis address, for redirects to it
}

// Directory is the node's view of the cluster, in which the cycle records every node's
// power entry as it learns it; *cluster.Directory is one.
type Directory interface {
	Self() cluster.Node
	Node(id string) (cluster.Node, bool)
	Nodes() []cluster.Node
	State(id string) cluster.State
	Power(id string) cluster.Power
	SetPower(id string, p cluster.Power) bool
}

// Gossip is the node's membership: the application states it gossips and reads, and the
// leaving and rejoining of a sleep.
type Gossip interface {
	SetAppState(key, value string)
	Member(id string) (membership.Member, bool)
	Members() []membership.Member
	// Shutdown announces that this node goes silent, so its peers mark it down at once;
	// Close then stops its gossip.
	Shutdown(ctx context.Context) error
	Close()
	// Rejoin starts gossiping again, as a restarted member (a newer generation), with
	// the application states it had, set overriding some.
	Rejoin(set map[string]string) error
	// Interval is a gossip round.
	Interval() time.Duration
	// RingDelay is how long a change takes to reach every node's view.
	RingDelay() time.Duration
}

// Peers makes the cycle's calls to other nodes, each with a payload of this package's
// (the node binds the message kinds; the callee's node hands the payload to
// HandlePower or HandleHintsFlush).
type Peers interface {
	AskPower(ctx context.Context, to cluster.Node, payload []byte) error
	AskHintsFlush(ctx context.Context, to cluster.Node, payload []byte) error
}

// Hints delivers the hints this node keeps for another, the writes offloaded to it
// included; *coord.Coordinator is one.
type Hints interface {
	FlushHints(ctx context.Context, target string) (delivered int, err error)
}

// Repairer repairs every keyspace of this node from the other replicas: what a waking
// node does in place of a holder it cannot reach.
type Repairer interface {
	// RepairAll returns the records it sent and the ranges left short of a replica
	// (down or asleep), which were repaired from the replicas that answered.
	RepairAll(ctx context.Context) (recordsSent, rangesShort int, err error)
}

// Ring gives the current token ring; *placement.Ring is one.
type Ring interface {
	Ring() (*ring.Ring, error)
}

// Keyspaces lists the keyspaces defined; *schema.Catalog is one.
type Keyspaces interface {
	List() []schema.Keyspace
}

// FrontEnds gives this node's own Redis address, "" when it serves none.
type FrontEnds interface {
	RESPAddr() string
}

// Cycle is this node's side of paper 003: its own sleep and wake, the stand-ins it runs
// for sleeping neighbours, and every node's modelled energy.
type Cycle struct {
	cfg     Config
	parts   Parts
	log     *slog.Logger
	gate    *power.Gate
	profile power.Profile

	// transition serialises Sleep and Wake.
	transition sync.Mutex

	mu       sync.Mutex
	state    power.State
	holders  []string
	quiet    bool                    // asleep: the loops skip their work
	meters   map[string]*power.Meter // every node's energy, from the states it gossips
	standIns map[string]*standIn     // the sleeping nodes this node answers for
	// released holds, per sleeping node, the generation whose addresses this node gave
	// back when it woke: the stand-in does not take them again until a newer sleep.
	released map[string]uint64
	// standingFor holds the generation of each sleeping node this node stands in for.
	standingFor map[string]uint64
	// entered is when each node entered its power state, as this node learned it.
	entered map[string]time.Time

	cpu        cpuMeter          // the last reading of Config.CPUTime
	served     atomic.Uint64     // requests served (Served)
	load       loadMeter         // the client requests this node coordinates
	controller *power.Controller // nil unless Config.Controller
	// healing holds the sleepers the controller is waking for ranges short of their
	// levels, which count as awake until the wake ends (heal).
	healing map[string]bool
	// postWake asks a sleeping node to wake through its HTTP admin address (postWakeHTTP;
	// the tests' world has no HTTP ports).
	postWake func(ctx context.Context, id, addr string) error
}

// New builds a node's power cycle, active, with its gate serving; it fails on an
// unknown profile or a controller configuration power.NewController refuses.
func New(cfg Config, parts Parts) (*Cycle, error) {
	profile, err := power.ProfileByName(cmp.Or(cfg.Profile, "s4"))
	if err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := &Cycle{cfg: cfg, parts: parts, log: cfg.Logger, gate: power.NewGate(), profile: profile, meters: map[string]*power.Meter{},
		standIns: map[string]*standIn{}, released: map[string]uint64{}, standingFor: map[string]uint64{}, entered: map[string]time.Time{},
		healing: map[string]bool{}, postWake: postWakeHTTP}
	p.meters[cfg.ID] = power.NewMeter(profile, time.Now())
	if cfg.Controller != nil {
		c := *cfg.Controller
		c.Profile = profile
		if p.controller, err = power.NewController(c); err != nil {
			return nil, fmt.Errorf("power controller: %w", err)
		}
	}
	return p, nil
}

// Gate is what releases or freezes this node's listeners and connections while it
// sleeps: the node listens through it (its transport, its client and Redis ports).
func (p *Cycle) Gate() *power.Gate { return p.gate }

// since returns when a node entered its power state, as this node learned it.
func (p *Cycle) since(id string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.entered[id]
}

// record notes a node's power state in its meter, and when it changed; p.mu is held.
func (p *Cycle) recordLocked(id string, state power.State, now time.Time) {
	meter := p.meters[id]
	if meter == nil {
		meter = power.NewMeter(p.profile, now)
		p.meters[id] = meter
	}
	if meter.State() != state || p.entered[id].IsZero() {
		p.entered[id] = now
	}
	meter.Set(now, state)
}

// State returns this node's power state.
func (p *Cycle) State() power.State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// Quiet reports whether the node sleeps, so its loops skip their work.
func (p *Cycle) Quiet() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.quiet
}

// set moves this node to state, naming holders, and records it in the directory, the
// gossip and the meter.
func (p *Cycle) set(state power.State, holders []string, standIn string) {
	p.mu.Lock()
	p.state, p.holders = state, holders
	p.recordLocked(p.cfg.ID, state, time.Now())
	p.mu.Unlock()
	p.parts.Directory.SetPower(p.cfg.ID, cluster.Power{State: state, Holders: holders})
	g := p.parts.Gossip
	g.SetAppState(keyHolders, strings.Join(holders, ","))
	g.SetAppState(keyStandIn, standIn)
	g.SetAppState(KeyPower, state.String())
	p.log.Info("power state", "state", state, "holders", holders)
}

// Energy returns a node's modelled draw at a moment and the energy it used from when
// this node first heard of it until then, transition times applied (package power's
// profile); a node never heard of draws nothing.
func (p *Cycle) Energy(id string, at time.Time) (watts, joules float64) {
	m := p.meter(id)
	if m == nil {
		return 0, 0
	}
	return m.Watts(at), m.Joules(at)
}

// meter returns one node's meter, nil for a node never heard of.
func (p *Cycle) meter(id string) *power.Meter {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.meters[id]
}

// Sleep puts this node to sleep (paper 003, Fig. 2). It names the awake nodes that keep
// its writes (holders) and the one that answers on its addresses (the stand-in, unless
// the node runs without timeout suppression), and drains: coordinators stop reading
// from it but still write to it, for a ring delay, so every coordinator learns. Then it
// checks again that no range loses its last awake replica (another node may have
// started to drain meanwhile: the higher id gives way), announces that it sleeps, and
// goes quiet: its loops stop, it leaves gossip, and it releases (or, without
// suppression, freezes) its listeners and connections. It returns once asleep.
func (p *Cycle) Sleep(ctx context.Context) error {
	if err := p.enterSleep(ctx); err != nil {
		return err
	}
	p.goQuiet()
	return nil
}

// sleepAnswering is Sleep for a node asked by another (HandlePower): it answers once it
// has announced that it sleeps, and goes quiet a gossip round later, so the answer
// leaves before the connection it travels on is closed.
func (p *Cycle) sleepAnswering(ctx context.Context) error {
	if err := p.enterSleep(ctx); err != nil {
		return err
	}
	time.AfterFunc(p.parts.Gossip.Interval(), p.goQuiet)
	return nil
}

// enterSleep runs Sleep up to going quiet: the node is then asleep to the cluster.
func (p *Cycle) enterSleep(ctx context.Context) error {
	p.transition.Lock()
	defer p.transition.Unlock()
	if state := p.State(); state != power.Active {
		return fmt.Errorf("node %s is %v, not active", p.cfg.ID, state)
	}
	if err := p.MaySleep(p.cfg.ID); err != nil {
		return err
	}
	holders := p.chooseHolders()
	if len(holders) == 0 {
		return fmt.Errorf("node %s may not sleep: no awake node can keep its writes", p.cfg.ID)
	}
	standIn := holders[0]
	if p.cfg.NoTimeoutSuppression {
		standIn = ""
	}
	p.set(power.Draining, holders, standIn)
	giveUp := func(err error) error {
		p.set(power.Active, nil, "")
		return err
	}
	if !ctxtime.Sleep(ctx, p.parts.Gossip.RingDelay()) {
		return giveUp(ctx.Err())
	}
	if err := p.MaySleep(p.cfg.ID); err != nil {
		return giveUp(fmt.Errorf("gave up draining: %w", err))
	}
	p.set(power.Asleep, holders, standIn)
	// Two rounds carry "asleep" to every member before the node goes silent, so no
	// coordinator takes its silence for a failure.
	if !ctxtime.Sleep(ctx, 2*p.parts.Gossip.Interval()) {
		return giveUp(ctx.Err())
	}
	return nil
}

// goQuiet stops the node's work: its loops, its gossip (announced, so peers mark it down
// at once) and its network endpoints. A node woken meanwhile stays awake.
func (p *Cycle) goQuiet() {
	p.transition.Lock()
	defer p.transition.Unlock()
	p.mu.Lock()
	if p.state != power.Asleep || p.quiet {
		p.mu.Unlock()
		return
	}
	p.quiet = true
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	if err := p.parts.Gossip.Shutdown(ctx); err != nil {
		p.log.Debug("announce sleep", "err", err)
	}
	cancel()
	p.parts.Gossip.Close()
	if p.cfg.NoTimeoutSuppression {
		p.gate.Freeze()
	} else {
		p.gate.Release()
	}
	p.log.Info("asleep", "suppression", !p.cfg.NoTimeoutSuppression)
}

// Wake brings this node back (paper 003, Fig. 3): the stand-in gives its addresses back,
// it listens again, rejoins gossip as waking (writes reach it and count; it serves no
// reads), waits a ring delay so no coordinator offloads for it any more, and has its
// holders deliver what they kept. A holder that cannot be reached may have kept writes
// nobody else delivers, so the node then repairs its ranges from the other replicas
// before it turns active. It returns once active.
func (p *Cycle) Wake(ctx context.Context) error {
	p.transition.Lock()
	defer p.transition.Unlock()
	p.mu.Lock()
	state, holders := p.state, p.holders
	p.mu.Unlock()
	if state != power.Asleep {
		return fmt.Errorf("node %s is %v, not asleep", p.cfg.ID, state)
	}
	p.mu.Lock()
	p.recordLocked(p.cfg.ID, power.Waking, time.Now())
	p.mu.Unlock()
	if len(holders) > 0 && !p.cfg.NoTimeoutSuppression {
		if err := p.askPower(ctx, holders[0], "release"); err != nil {
			p.log.Warn("stand-in did not release the addresses", "stand_in", holders[0], "err", err)
		}
	}
	if err := p.gate.Serve(ctx); err != nil {
		return fmt.Errorf("listen again: %w", err)
	}
	self := p.parts.Directory.Self()
	if err := p.parts.Gossip.Rejoin(map[string]string{membership.KeyStatus: self.Status.String(), KeyPower: power.Waking.String()}); err != nil {
		return fmt.Errorf("rejoin gossip: %w", err)
	}
	p.mu.Lock()
	p.quiet = false
	p.mu.Unlock()
	p.set(power.Waking, holders, "")
	if !ctxtime.Sleep(ctx, p.parts.Gossip.RingDelay()) {
		return ctx.Err()
	}
	for {
		err := p.takeOffloaded(ctx, holders)
		if err == nil {
			break
		}
		p.log.Warn("taking offloaded writes; retrying", "err", err)
		if !ctxtime.Sleep(ctx, p.parts.Gossip.Interval()) {
			return ctx.Err()
		}
	}
	p.set(power.Active, nil, "")
	return nil
}

// takeOffloaded has every holder deliver the writes it kept for this node. A holder that
// does not answer is replaced by a repair of every keyspace from the other replicas:
// every write the level acknowledged through that holder is on enough of them.
func (p *Cycle) takeOffloaded(ctx context.Context, holders []string) error {
	var missing []string
	for _, id := range holders {
		peer, ok := p.parts.Directory.Node(id)
		if !ok {
			continue
		}
		callCtx, cancel := context.WithTimeout(ctx, time.Minute)
		err := p.parts.Peers.AskHintsFlush(callCtx, peer, []byte(p.cfg.ID))
		cancel()
		if err != nil {
			p.log.Warn("holder did not deliver the offloaded writes", "holder", id, "err", err)
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	sent, short, err := p.parts.Repairer.RepairAll(ctx)
	if err != nil {
		return fmt.Errorf("holders %v unreachable, and the repair instead failed: %w", missing, err)
	}
	// Ranges with a replica down or asleep count as failed, yet were repaired from the
	// replicas that answered, which is what this node needs.
	p.log.Info("repaired instead of unreachable holders", "holders", missing, "records_sent", sent, "ranges_short_of_a_replica", short)
	return nil
}

// MaySleep reports why node id may not sleep now, or nil: it must be a normal member of
// power tier 1 or above, keep no writes for a sleeping node, and leave every range of
// every replicated keyspace with as many awake replicas as each level the keyspace is
// used at needs (power.ShortOfAwake, the levels of every member's declaration,
// Config.Levels). The nodes asleep, down or otherwise not serving reads count as not
// awake, and so do those draining with a lower id (of two nodes draining at once, the
// higher id gives way). A refusal by the rule is a *power.SleepRefused.
func (p *Cycle) MaySleep(id string) error {
	dir := p.parts.Directory
	self, ok := dir.Node(id)
	switch {
	case !ok:
		return fmt.Errorf("unknown node %q", id)
	case self.Tier == 0:
		return fmt.Errorf("node %s is of power tier 0, which never sleeps (--power-tier)", self.ID)
	case self.Status != cluster.StatusNormal:
		return fmt.Errorf("node %s is %v on the ring; only a normal member sleeps", self.ID, self.Status)
	}
	for _, other := range dir.Nodes() {
		pw := dir.Power(other.ID)
		if other.ID == self.ID || pw.State == power.Active || pw.State == power.Waking {
			continue
		}
		if slices.Contains(pw.Holders, self.ID) {
			return fmt.Errorf("node %s keeps the writes of %s, which is %v", self.ID, other.ID, pw.State)
		}
	}
	awake := func(other string) bool {
		if pw := dir.Power(other); pw.State == power.Draining && other > self.ID {
			return true // it gives way to this node when it checks again
		}
		return dir.State(other).Readable()
	}
	r, demands, err := p.demands()
	if err != nil {
		return err
	}
	for _, d := range demands {
		if short := power.ShortOfAwake(d.Sets, d.Levels, self.ID, awake); len(short) > 0 {
			first := short[0]
			first.Keyspace, first.Range = d.keyspace, r.Ranges()[first.Index]
			return &power.SleepRefused{Node: self.ID, Shortfall: first, ShortRanges: len(short), Ranges: len(d.Sets)}
		}
	}
	return nil
}

// keyspaceDemand is one keyspace's ranges and the levels it is used at.
type keyspaceDemand struct {
	keyspace string
	power.Demand
}

// demands returns the current ring and, for every replicated keyspace, its replica sets
// on it and the levels every member's declaration together uses it at: what the level
// rule checks. Erasure-coded keyspaces are left out: their chunks are read from any K of
// M holders.
func (p *Cycle) demands() (*ring.Ring, []keyspaceDemand, error) {
	r, err := p.parts.Ring.Ring()
	if err != nil {
		return nil, nil, err
	}
	decls := p.levelDeclarations()
	var out []keyspaceDemand
	for _, ks := range p.parts.Keyspaces.List() {
		if ks.Erasure.Enabled() {
			continue
		}
		out = append(out, keyspaceDemand{ks.Name, power.Demand{Sets: r.Placement(ks.Strategy()).Sets(), Levels: power.LevelsFor(decls, ks.Name)}})
	}
	return r, out, nil
}

// levelDeclarations returns the levels this node declares (Config.Levels) and those every
// other member of the ring gossips; a member that gossips none (not heard from yet)
// declares nothing, which takes power.DefaultLevel for every keyspace.
func (p *Cycle) levelDeclarations() []power.Levels {
	decls := []power.Levels{p.cfg.Levels}
	for _, n := range p.parts.Directory.Nodes() {
		if n.ID == p.cfg.ID || !n.Status.OnRing() {
			continue
		}
		m, _ := p.parts.Gossip.Member(n.ID)
		levels, err := power.ParseLevels(m.AppState[KeyLevels])
		if err != nil {
			p.log.Warn("member gossips a bad level declaration; taking the default", "member", n.ID, "err", err)
			levels = nil
		}
		decls = append(decls, levels)
	}
	return decls
}

// chooseHolders names the nodes that keep this node's writes while it sleeps: awake
// normal members, those that never sleep first (tier 0), then this node's DC before
// others (an offloaded write stays in the DC), then by id.
func (p *Cycle) chooseHolders() []string {
	dir := p.parts.Directory
	self := dir.Self()
	var candidates []cluster.Node
	for _, other := range dir.Nodes() {
		if other.ID != self.ID && dir.State(other.ID) == cluster.StateUp && dir.Power(other.ID).State == power.Active {
			candidates = append(candidates, other)
		}
	}
	rank := func(c cluster.Node) (int, int) {
		far := 0
		if c.DC != self.DC {
			far = 1
		}
		return min(c.Tier, 1), far
	}
	slices.SortFunc(candidates, func(a, b cluster.Node) int {
		ta, fa := rank(a)
		tb, fb := rank(b)
		return cmp.Or(cmp.Compare(ta, tb), cmp.Compare(fa, fb), cmp.Compare(a.ID, b.ID))
	})
	var holders []string
	for _, c := range candidates[:min(len(candidates), holdersMax)] {
		holders = append(holders, c.ID)
	}
	return holders
}

// askPower asks another node for a power transition.
func (p *Cycle) askPower(ctx context.Context, id, action string) error {
	peer, ok := p.parts.Directory.Node(id)
	if !ok {
		return fmt.Errorf("unknown node %q", id)
	}
	return p.parts.Peers.AskPower(ctx, peer, []byte(action))
}

// HandlePower serves a power request from node from (Peers.AskPower's payload): "sleep"
// (kura power sleep, forwarded to the node itself), answered once the node is asleep to
// the cluster, or "release" (a waking node asks its stand-in for its addresses).
func (p *Cycle) HandlePower(ctx context.Context, from string, payload []byte) ([]byte, error) {
	switch action := string(payload); action {
	case "sleep":
		return nil, p.sleepAnswering(ctx)
	case "release":
		p.release(from)
		return nil, nil
	default:
		return nil, fmt.Errorf("unknown power action %q from %s", action, from)
	}
}

// HandleHintsFlush serves a waking node's request (Peers.AskHintsFlush's payload) to
// deliver now every hint this node holds for it, the writes offloaded to it included.
func (p *Cycle) HandleHintsFlush(ctx context.Context, from string, payload []byte) ([]byte, error) {
	if target := string(payload); target != from {
		return nil, fmt.Errorf("%s asks for the hints of %s: a node takes only its own", from, target)
	}
	delivered, err := p.parts.Hints.FlushHints(ctx, from)
	if delivered > 0 {
		p.log.Info("delivered offloaded writes", "to", from, "writes", delivered)
	}
	return nil, err
}

// SetPower drives a power transition of any node by hand (kura power): "sleep" runs on
// the node itself; "wake" reaches a sleeping node through its HTTP admin port, which
// stays up while it sleeps, as a machine's management controller does.
func (p *Cycle) SetPower(ctx context.Context, id, action string) (power.State, error) {
	if _, ok := p.parts.Directory.Node(id); !ok {
		return 0, fmt.Errorf("unknown node %q", id)
	}
	switch {
	case action != "sleep" && action != "wake":
		return 0, fmt.Errorf("power action %q: want sleep or wake", action)
	case id == p.cfg.ID && action == "sleep":
		err := p.Sleep(ctx)
		return p.State(), err
	case id == p.cfg.ID:
		return p.State(), fmt.Errorf("node %s is %v: it answered, so it is awake", id, p.State())
	case action == "sleep":
		// The node answers once it has announced that it sleeps; this node's directory
		// may not have heard the announcement yet, and would say draining.
		if err := p.askPower(ctx, id, "sleep"); err != nil {
			return p.parts.Directory.Power(id).State, err
		}
		return power.Asleep, nil
	}
	member, _ := p.parts.Gossip.Member(id)
	addr := member.AppState[KeyWakeAddr]
	if addr == "" {
		return 0, fmt.Errorf("node %s serves no HTTP admin port (--http), through which it is woken", id)
	}
	if err := p.postWake(ctx, id, addr); err != nil {
		return 0, err
	}
	return power.Active, nil
}

// postWakeHTTP wakes node id through its HTTP admin address: POST /power/wake, which
// returns once the node is active.
func postWakeHTTP(ctx context.Context, id, addr string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/power/wake", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("wake %s through %s: %w", id, addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("wake %s through %s: %s", id, addr, resp.Status)
	}
	return nil
}

// ServeWake serves POST /power/wake on the HTTP admin port.
func (p *Cycle) ServeWake(w http.ResponseWriter, r *http.Request) {
	if err := p.Wake(r.Context()); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	fmt.Fprintln(w, "active")
}

// Observe takes a member's gossiped power state: into the directory and the member's
// meter, and, when this node is its stand-in, onto its released addresses. alive says
// whether gossip hears from it.
func (p *Cycle) Observe(m membership.Member, alive bool) {
	state, err := power.ParseState(cmp.Or(m.AppState[KeyPower], power.Active.String()))
	if err != nil {
		p.log.Warn("member gossips a bad power state", "member", m.ID, "err", err)
		return
	}
	var holders []string
	if h := m.AppState[keyHolders]; h != "" {
		holders = strings.Split(h, ",")
	}
	p.parts.Directory.SetPower(m.ID, cluster.Power{State: state, Holders: holders})
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.recordLocked(m.ID, state, now)
	p.observeUtilizationLocked(m, now)
	standing := p.standIns[m.ID]
	wanted := state == power.Asleep && !alive && m.AppState[keyStandIn] == p.cfg.ID && m.Generation > p.released[m.ID]
	switch {
	case wanted && standing == nil && !p.quiet:
		p.standIns[m.ID] = startStandIn(standInConfig{
			For:     m.ID,
			Addrs:   standInAddrs{Internode: m.Addr, Client: m.AppState[p.cfg.ClientAddrKey], RESP: m.AppState[KeyRESPAddr]},
			Targets: func() []*kurav1.RedirectTarget { return p.RedirectTargets(m.ID) },
			TLS:     p.cfg.FrontEndTLS,
			Logger:  p.log,
		})
		p.standingFor[m.ID] = m.Generation
		p.log.Info("standing in for a sleeping node", "node", m.ID)
	case !wanted && standing != nil:
		delete(p.standIns, m.ID)
		go standing.Close()
	}
}

// release gives a waking node its addresses back.
func (p *Cycle) release(id string) {
	p.mu.Lock()
	s := p.standIns[id]
	delete(p.standIns, id)
	if s != nil {
		p.released[id] = p.standingFor[id]
	}
	p.mu.Unlock()
	if s != nil {
		s.Close()
		p.log.Info("released a waking node's addresses", "node", id)
	}
}

// Close stops every stand-in this node runs.
func (p *Cycle) Close() {
	p.mu.Lock()
	standIns := p.standIns
	p.standIns = map[string]*standIn{}
	p.mu.Unlock()
	for _, s := range standIns {
		s.Close()
	}
}

// RedirectTargets lists the awake nodes to send node from's clients to (a sleeping
// node's, from its stand-in; this node's, once it left the ring): those of its DC first.
func (p *Cycle) RedirectTargets(from string) []*kurav1.RedirectTarget {
	dir := p.parts.Directory
	dc := ""
	if node, ok := dir.Node(from); ok {
		dc = node.DC
	}
	var targets []*kurav1.RedirectTarget
	for _, other := range dir.Nodes() {
		if dir.State(other.ID) != cluster.StateUp || other.ClientAddr == "" {
			continue
		}
		t := &kurav1.RedirectTarget{Id: other.ID, Dc: other.DC, ClientAddr: other.ClientAddr}
		if member, ok := p.parts.Gossip.Member(other.ID); ok {
			t.RespAddr = member.AppState[KeyRESPAddr]
		}
		if other.ID == p.cfg.ID {
			t.RespAddr = p.parts.FrontEnds.RESPAddr()
		}
		targets = append(targets, t)
	}
	slices.SortStableFunc(targets, func(a, b *kurav1.RedirectTarget) int {
		return cmp.Compare(boolRank(a.Dc != dc), boolRank(b.Dc != dc))
	})
	return targets
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
