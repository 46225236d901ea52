package node

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kuradb/kura/antientropy"
	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/cluster"
	"github.com/kuradb/kura/membership"
	"github.com/kuradb/kura/power"
	"github.com/kuradb/kura/transport"
)

// Application states of the power cycle (paper 003), gossiped besides the ring's.
const (
	keyPower    = "power"      // the node's power state
	keyHolders  = "offload"    // the nodes keeping its writes while it sleeps, comma-separated
	keyStandIn  = "standin"    // the node answering on its addresses while it sleeps; empty: none
	keyRESPAddr = "resp_addr"  // its Redis address, which the stand-in takes over
	keyWakeAddr = "wake_addr"  // its HTTP admin address, which stays up while it sleeps
	keyTier     = "power_tier" // its power tier: 0 never sleeps
)

// Message kinds of the power cycle.
var (
	// kindHintsFlush asks a node to deliver now every hint it holds for the caller, the
	// writes offloaded to it included: the caller is waking.
	kindHintsFlush = transport.RegisterKind(22, "hints_flush")
	// kindPower asks a node for a power transition: "sleep" (kura power sleep, forwarded
	// to the node itself) or "release" (a waking node asks its stand-in for its addresses).
	kindPower = transport.RegisterKind(23, "power")
)

// holdersMax is how many offload holders a sleeping node names: one more than the
// largest replication factor in use is always outside a replica set (a holder that is a
// replica of the key would count one node twice); four covers RF 3.
const holdersMax = 4

// powerCycle is this node's side of paper 003: its own sleep and wake, the stand-ins it
// runs for sleeping neighbours, and every node's modelled energy.
type powerCycle struct {
	n       *Node
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

	load       loadMeter         // the client requests this node coordinates
	controller *power.Controller // nil unless Config.PowerController
}

func newPowerCycle(n *Node) (*powerCycle, error) {
	profile, err := power.ProfileByName(cmp.Or(n.cfg.PowerProfile, "s4"))
	if err != nil {
		return nil, err
	}
	if n.cfg.PowerTier < 0 {
		return nil, fmt.Errorf("power tier %d: want 0 (never sleeps) or more", n.cfg.PowerTier)
	}
	p := &powerCycle{n: n, gate: power.NewGate(), profile: profile, meters: map[string]*power.Meter{},
		standIns: map[string]*standIn{}, released: map[string]uint64{}, standingFor: map[string]uint64{}, entered: map[string]time.Time{}}
	p.meters[n.cfg.ID] = power.NewMeter(profile, time.Now())
	if cfg := n.cfg.PowerController; cfg != nil {
		c := *cfg
		c.Profile = profile
		if p.controller, err = power.NewController(c); err != nil {
			return nil, fmt.Errorf("power controller: %w", err)
		}
	}
	return p, nil
}

// since returns when a node entered its power state, as this node learned it.
func (p *powerCycle) since(id string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.entered[id]
}

// record notes a node's power state in its meter, and when it changed; p.mu is held.
func (p *powerCycle) recordLocked(id string, state power.State, now time.Time) {
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
func (p *powerCycle) State() power.State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// isQuiet reports whether the node sleeps, so its loops skip their work.
func (p *powerCycle) isQuiet() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.quiet
}

// set moves this node to state, naming holders, and records it in the directory, the
// gossip and the meter.
func (p *powerCycle) set(state power.State, holders []string, standIn string) {
	p.mu.Lock()
	p.state, p.holders = state, holders
	p.recordLocked(p.n.cfg.ID, state, time.Now())
	p.mu.Unlock()
	p.n.directory.SetPower(p.n.cfg.ID, cluster.Power{State: state, Holders: holders})
	d := p.n.gossip.current()
	d.SetAppState(keyHolders, strings.Join(holders, ","))
	d.SetAppState(keyStandIn, standIn)
	d.SetAppState(keyPower, state.String())
	p.n.log.Info("power state", "state", state, "holders", holders)
}

// Power returns the node's power state.
func (n *Node) Power() power.State { return n.power.State() }

// Energy returns the node's modelled draw at a moment and the energy it used from its
// start until then, transition times applied (package power's profile).
func (n *Node) Energy(at time.Time) (watts, joules float64) {
	return n.power.energy(n.cfg.ID, at)
}

// energy reads one node's meter; a node never heard of draws nothing.
func (p *powerCycle) energy(id string, at time.Time) (watts, joules float64) {
	m := p.meter(id)
	if m == nil {
		return 0, 0
	}
	return m.Watts(at), m.Joules(at)
}

// meter returns one node's meter, nil for a node never heard of.
func (p *powerCycle) meter(id string) *power.Meter {
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
func (n *Node) Sleep(ctx context.Context) error {
	if err := n.enterSleep(ctx); err != nil {
		return err
	}
	n.power.goQuiet()
	return nil
}

// sleepAnswering is Sleep for a node asked by another (kindPower): it answers once it
// has announced that it sleeps, and goes quiet a gossip round later, so the answer
// leaves before the connection it travels on is closed.
func (n *Node) sleepAnswering(ctx context.Context) error {
	if err := n.enterSleep(ctx); err != nil {
		return err
	}
	time.AfterFunc(n.gossip.interval(), n.power.goQuiet)
	return nil
}

// enterSleep runs Sleep up to going quiet: the node is then asleep to the cluster.
func (n *Node) enterSleep(ctx context.Context) error {
	p := n.power
	p.transition.Lock()
	defer p.transition.Unlock()
	if state := p.State(); state != power.Active {
		return fmt.Errorf("node %s is %v, not active", n.cfg.ID, state)
	}
	if err := n.maySleep(n.cfg.ID); err != nil {
		return err
	}
	holders := n.chooseHolders()
	if len(holders) == 0 {
		return fmt.Errorf("node %s may not sleep: no awake node can keep its writes", n.cfg.ID)
	}
	standIn := holders[0]
	if n.cfg.NoTimeoutSuppression {
		standIn = ""
	}
	p.set(power.Draining, holders, standIn)
	giveUp := func(err error) error {
		p.set(power.Active, nil, "")
		return err
	}
	if !sleepCtx(ctx, n.ringDelay()) {
		return giveUp(ctx.Err())
	}
	if err := n.maySleep(n.cfg.ID); err != nil {
		return giveUp(fmt.Errorf("gave up draining: %w", err))
	}
	p.set(power.Asleep, holders, standIn)
	// Two rounds carry "asleep" to every member before the node goes silent, so no
	// coordinator takes its silence for a failure.
	if !sleepCtx(ctx, 2*n.gossip.interval()) {
		return giveUp(ctx.Err())
	}
	return nil
}

// goQuiet stops the node's work: its loops, its gossip (announced, so peers mark it down
// at once) and its network endpoints. A node woken meanwhile stays awake.
func (p *powerCycle) goQuiet() {
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
	if err := p.n.gossip.current().Shutdown(ctx); err != nil {
		p.n.log.Debug("announce sleep", "err", err)
	}
	cancel()
	p.n.gossip.current().Close()
	if p.n.cfg.NoTimeoutSuppression {
		p.gate.Freeze()
	} else {
		p.gate.Release()
	}
	p.n.log.Info("asleep", "suppression", !p.n.cfg.NoTimeoutSuppression)
}

// Wake brings this node back (paper 003, Fig. 3): the stand-in gives its addresses back,
// it listens again, rejoins gossip as waking (writes reach it and count; it serves no
// reads), waits a ring delay so no coordinator offloads for it any more, and has its
// holders deliver what they kept. A holder that cannot be reached may have kept writes
// nobody else delivers, so the node then repairs its ranges from the other replicas
// before it turns active. It returns once active.
func (n *Node) Wake(ctx context.Context) error {
	p := n.power
	p.transition.Lock()
	defer p.transition.Unlock()
	p.mu.Lock()
	state, holders := p.state, p.holders
	p.mu.Unlock()
	if state != power.Asleep {
		return fmt.Errorf("node %s is %v, not asleep", n.cfg.ID, state)
	}
	p.mu.Lock()
	p.recordLocked(n.cfg.ID, power.Waking, time.Now())
	p.mu.Unlock()
	if len(holders) > 0 && !n.cfg.NoTimeoutSuppression {
		if err := n.askPower(ctx, holders[0], "release"); err != nil {
			n.log.Warn("stand-in did not release the addresses", "stand_in", holders[0], "err", err)
		}
	}
	if err := p.gate.Serve(ctx); err != nil {
		return fmt.Errorf("listen again: %w", err)
	}
	self := n.directory.Self()
	if err := n.gossip.restart(map[string]string{membership.KeyStatus: self.Status.String(), keyPower: power.Waking.String()}); err != nil {
		return fmt.Errorf("rejoin gossip: %w", err)
	}
	p.mu.Lock()
	p.quiet = false
	p.mu.Unlock()
	p.set(power.Waking, holders, "")
	if !sleepCtx(ctx, n.ringDelay()) {
		return ctx.Err()
	}
	for {
		err := n.takeOffloaded(ctx, holders)
		if err == nil {
			break
		}
		n.log.Warn("taking offloaded writes; retrying", "err", err)
		if !sleepCtx(ctx, n.gossip.interval()) {
			return ctx.Err()
		}
	}
	p.set(power.Active, nil, "")
	return nil
}

// takeOffloaded has every holder deliver the writes it kept for this node. A holder that
// does not answer is replaced by a repair of every keyspace from the other replicas:
// every write the level acknowledged through that holder is on enough of them.
func (n *Node) takeOffloaded(ctx context.Context, holders []string) error {
	var missing []string
	for _, id := range holders {
		peer, ok := n.directory.Node(id)
		if !ok {
			continue
		}
		callCtx, cancel := context.WithTimeout(ctx, time.Minute)
		_, err := n.transport.Call(callCtx, toPeer(peer), kindHintsFlush, []byte(n.cfg.ID))
		cancel()
		if err != nil {
			n.log.Warn("holder did not deliver the offloaded writes", "holder", id, "err", err)
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	st, err := n.Repair(ctx, antientropy.Request{})
	if err != nil {
		return fmt.Errorf("holders %v unreachable, and the repair instead failed: %w", missing, err)
	}
	// Ranges with a replica down or asleep count as failed, yet were repaired from the
	// replicas that answered, which is what this node needs.
	n.log.Info("repaired instead of unreachable holders", "holders", missing, "records_sent", st.RecordsSent, "ranges_short_of_a_replica", st.Failed)
	return nil
}

// maySleep reports why node id may not sleep now, or nil: it must be a normal member of
// power tier 1 or above, keep no writes for a sleeping node, and leave every range of
// every replicated keyspace with an awake replica, counting the nodes asleep and those
// draining with a lower id (of two nodes draining at once, the higher id gives way).
func (n *Node) maySleep(id string) error {
	self, ok := n.directory.Node(id)
	switch {
	case !ok:
		return fmt.Errorf("unknown node %q", id)
	case self.Tier == 0:
		return fmt.Errorf("node %s is of power tier 0, which never sleeps (--power-tier)", self.ID)
	case self.Status != cluster.StatusNormal:
		return fmt.Errorf("node %s is %v on the ring; only a normal member sleeps", self.ID, self.Status)
	}
	asleep := map[string]bool{self.ID: true}
	for _, other := range n.directory.Nodes() {
		pw := n.directory.Power(other.ID)
		if other.ID == self.ID || pw.State == power.Active || pw.State == power.Waking {
			continue
		}
		if slices.Contains(pw.Holders, self.ID) {
			return fmt.Errorf("node %s keeps the writes of %s, which is %v", self.ID, other.ID, pw.State)
		}
		if pw.State == power.Asleep || (pw.State == power.Draining && other.ID < self.ID) {
			asleep[other.ID] = true
		}
	}
	r, err := n.ring.Ring()
	if err != nil {
		return err
	}
	for _, ks := range n.catalog.List() {
		if ks.Erasure.Enabled() {
			continue
		}
		cover := power.NewCoverage(power.SetsOf(r.Placement(ks.Strategy())))
		if lost := cover.Uncovered(func(id string) bool { return asleep[id] }); lost > 0 {
			return fmt.Errorf("node %s may not sleep: %d ranges of keyspace %s would have no awake replica", self.ID, lost, ks.Name)
		}
	}
	return nil
}

// chooseHolders names the nodes that keep this node's writes while it sleeps: awake
// normal members, those that never sleep first (tier 0), then this node's DC before
// others (an offloaded write stays in the DC), then by id.
func (n *Node) chooseHolders() []string {
	self := n.directory.Self()
	var candidates []cluster.Node
	for _, other := range n.directory.Nodes() {
		if other.ID != self.ID && n.directory.State(other.ID) == cluster.StateUp && n.directory.Power(other.ID).State == power.Active {
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

// askPower asks another node for a power transition (kindPower).
func (n *Node) askPower(ctx context.Context, id, action string) error {
	peer, ok := n.directory.Node(id)
	if !ok {
		return fmt.Errorf("unknown node %q", id)
	}
	_, err := n.transport.Call(ctx, toPeer(peer), kindPower, []byte(action))
	return err
}

// handlePower serves kindPower.
func (n *Node) handlePower(ctx context.Context, from transport.Peer, payload []byte) ([]byte, error) {
	switch action := string(payload); action {
	case "sleep":
		return nil, n.sleepAnswering(ctx)
	case "release":
		n.power.release(from.ID)
		return nil, nil
	default:
		return nil, fmt.Errorf("unknown power action %q from %s", action, from.ID)
	}
}

// handleHintsFlush serves kindHintsFlush: the caller is waking.
func (n *Node) handleHintsFlush(ctx context.Context, from transport.Peer, payload []byte) ([]byte, error) {
	if target := string(payload); target != from.ID {
		return nil, fmt.Errorf("%s asks for the hints of %s: a node takes only its own", from.ID, target)
	}
	delivered, err := n.coord.FlushHints(ctx, from.ID)
	if delivered > 0 {
		n.log.Info("delivered offloaded writes", "to", from.ID, "writes", delivered)
	}
	return nil, err
}

// SetPower drives a power transition of any node by hand (kura power): "sleep" runs on
// the node itself; "wake" reaches a sleeping node through its HTTP admin port, which
// stays up while it sleeps, as a machine's management controller does.
func (n *Node) SetPower(ctx context.Context, id, action string) (power.State, error) {
	if _, ok := n.directory.Node(id); !ok {
		return 0, fmt.Errorf("unknown node %q", id)
	}
	switch {
	case action != "sleep" && action != "wake":
		return 0, fmt.Errorf("power action %q: want sleep or wake", action)
	case id == n.cfg.ID && action == "sleep":
		err := n.Sleep(ctx)
		return n.Power(), err
	case id == n.cfg.ID:
		return n.Power(), fmt.Errorf("node %s is %v: it answered, so it is awake", id, n.Power())
	case action == "sleep":
		err := n.askPower(ctx, id, "sleep")
		return n.directory.Power(id).State, err
	}
	member, _ := n.gossip.current().Member(id)
	addr := member.AppState[keyWakeAddr]
	if addr == "" {
		return 0, fmt.Errorf("node %s serves no HTTP admin port (--http), through which it is woken", id)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/power/wake", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("wake %s through %s: %w", id, addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("wake %s through %s: %s", id, addr, resp.Status)
	}
	return power.Active, nil
}

// serveWake serves POST /power/wake on the HTTP admin port.
func (n *Node) serveWake(w http.ResponseWriter, r *http.Request) {
	if err := n.Wake(r.Context()); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	fmt.Fprintln(w, "active")
}

// observePower takes a member's gossiped power state: into the directory and the
// member's meter, and, when this node is its stand-in, onto its released addresses.
func (p *powerCycle) observePower(m membership.Member, alive bool) {
	state, err := power.ParseState(cmp.Or(m.AppState[keyPower], power.Active.String()))
	if err != nil {
		p.n.log.Warn("member gossips a bad power state", "member", m.ID, "err", err)
		return
	}
	var holders []string
	if h := m.AppState[keyHolders]; h != "" {
		holders = strings.Split(h, ",")
	}
	p.n.directory.SetPower(m.ID, cluster.Power{State: state, Holders: holders})
	p.mu.Lock()
	defer p.mu.Unlock()
	p.recordLocked(m.ID, state, time.Now())
	standing := p.standIns[m.ID]
	wanted := state == power.Asleep && !alive && m.AppState[keyStandIn] == p.n.cfg.ID && m.Generation > p.released[m.ID]
	switch {
	case wanted && standing == nil && !p.quiet:
		p.standIns[m.ID] = startStandIn(standInConfig{
			For:     m.ID,
			Addrs:   standInAddrs{Internode: m.Addr, Client: m.AppState[keyClientAddr], RESP: m.AppState[keyRESPAddr]},
			Targets: func() []*kurav1.RedirectTarget { return p.n.redirectTargets(m.ID) },
			TLS:     p.n.frontEndTLS(),
			Logger:  p.n.log,
		})
		p.standingFor[m.ID] = m.Generation
		p.n.log.Info("standing in for a sleeping node", "node", m.ID)
	case !wanted && standing != nil:
		delete(p.standIns, m.ID)
		go standing.Close()
	}
}

// release gives a waking node its addresses back.
func (p *powerCycle) release(id string) {
	p.mu.Lock()
	s := p.standIns[id]
	delete(p.standIns, id)
	if s != nil {
		p.released[id] = p.standingFor[id]
	}
	p.mu.Unlock()
	if s != nil {
		s.Close()
		p.n.log.Info("released a waking node's addresses", "node", id)
	}
}

// close stops every stand-in this node runs.
func (p *powerCycle) close() {
	p.mu.Lock()
	standIns := p.standIns
	p.standIns = map[string]*standIn{}
	p.mu.Unlock()
	for _, s := range standIns {
		s.Close()
	}
}

// redirectTargets lists the awake nodes a stand-in sends asleep's clients to: those of
// its DC first.
func (n *Node) redirectTargets(asleep string) []*kurav1.RedirectTarget {
	dc := ""
	if node, ok := n.directory.Node(asleep); ok {
		dc = node.DC
	}
	var targets []*kurav1.RedirectTarget
	for _, other := range n.directory.Nodes() {
		if n.directory.State(other.ID) != cluster.StateUp || other.ClientAddr == "" {
			continue
		}
		t := &kurav1.RedirectTarget{Id: other.ID, Dc: other.DC, ClientAddr: other.ClientAddr}
		if member, ok := n.gossip.current().Member(other.ID); ok {
			t.RespAddr = member.AppState[keyRESPAddr]
		}
		if other.ID == n.cfg.ID {
			t.RespAddr = n.RESPAddr()
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

// frontEndTLS is the server TLS of the client and Redis ports, nil without TLS: a
// stand-in serves a sleeping node's ports as this node serves its own.
func (n *Node) frontEndTLS() *tls.Config {
	if n.cfg.TLS == nil {
		return nil
	}
	return n.clientTLS()
}
