package node

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/cluster"
	"github.com/kuradb/kura/membership"
	"github.com/kuradb/kura/membership/driver"
	"github.com/kuradb/kura/membership/ferry"
	"github.com/kuradb/kura/membership/scuttlebutt"
	"github.com/kuradb/kura/power"
	"github.com/kuradb/kura/powercycle"
	"github.com/kuradb/kura/ringchange"
	"github.com/kuradb/kura/transport"
)

// Application states this node gossips besides the core's own (address, DC, status).
const (
	keyClientAddr = "client_addr"
	keySchema     = "schema" // the catalog's digest, so that a node missing a keyspace notices
)

// kindSchemaPull asks a node for its whole keyspace catalog.
var kindSchemaPull = transport.RegisterKind(9, "schema_pull")

// protocols are the membership cores a node can run (--membership).
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

// gossip keeps the node's cluster directory from a membership core: members become
// directory entries (their client address and tokens travel as application states), the
// core's verdicts become liveness, and a member gossiping another schema digest is asked
// for its keyspaces.
type gossip struct {
	n *Node

	driverMu sync.RWMutex
	driver   *driver.Driver // replaced when the node wakes from sleep (restart)
	protocol membership.Protocol
	seeds    []string
	members  []transport.Peer // the stored ring's other members (driver.Config.Members)
	gen      atomic.Uint64    // the generation the node gossips under now

	mu sync.Mutex
	// removing and removed are this node's own removals (kura node remove), gossiped.
	removing, removed map[string]uint64
	// removingBy holds every member's removing list: a node some member is removing is
	// treated as leaving, so its ranges stream to their new owners.
	removingBy map[string]map[string]uint64
	// heard is each member's entry as gossiped, before removals override its status.
	heard map[string]cluster.Node
}

func newGossip(n *Node) (*gossip, error) {
	name := n.cfg.Membership
	if name == "" {
		name = "ferry"
	}
	protocol, ok := protocols[name]
	if !ok {
		return nil, fmt.Errorf("membership %q: want ferry or scuttlebutt", name)
	}
	if name == "ferry" {
		protocol = ferryAt(n.cfg.GossipInterval)
	}
	g := &gossip{n: n, removing: map[string]uint64{}, removed: map[string]uint64{}, removingBy: map[string]map[string]uint64{}, heard: map[string]cluster.Node{}}
	self := n.directory.Self()
	appState := map[string]string{
		keyClientAddr:        self.ClientAddr,
		keySchema:            digestString(n.catalog.Digest()),
		membership.KeyStatus: self.Status.String(),
		powercycle.KeyPower:  power.Active.String(),
		powercycle.KeyTier:   strconv.Itoa(self.Tier),
		keyStartedAt:         strconv.FormatInt(n.started.UnixMilli(), 10),
	}
	if len(self.Tokens) > 0 {
		appState[membership.KeyTokens] = formatTokens(self.Tokens)
	}
	if self.Replaces != "" {
		appState[ringchange.KeyReplaces] = self.Replaces
	}
	if n.fresh && !n.cfg.Founding {
		appState[ringchange.KeyNewData] = "1"
	}
	// Nodes named with addresses up front (a topology file) serve as seeds too.
	seeds := append([]string(nil), n.cfg.Seeds...)
	for _, p := range n.cfg.Peers {
		if p.Addr != "" {
			seeds = append(seeds, p.Addr)
		}
	}
	g.protocol, g.seeds = protocol, seeds
	// The members of its stored ring: a restarted node finds its cluster from them, even
	// when it was started without seeds, or its seeds are down.
	for _, other := range n.directory.Nodes() {
		if other.ID != self.ID && other.Addr != "" && (other.Status.OnRing() || other.Status == cluster.StatusJoining) {
			g.members = append(g.members, toPeer(other))
		}
	}
	var err error
	if g.driver, err = g.newDriver(appState); err != nil {
		return nil, err
	}
	return g, nil
}

// newDriver builds a membership driver that gossips appState under a new generation.
func (g *gossip) newDriver(appState map[string]string) (*driver.Driver, error) {
	generation := uint64(time.Now().UnixMilli())
	g.gen.Store(generation)
	var seed uint64
	if g.n.cfg.Seed != 0 {
		seed = g.n.cfg.Seed ^ generation // each life of a simulated node draws anew
	}
	return driver.New(driver.Config{
		Protocol:  g.protocol,
		Transport: g.n.transport,
		Seeds:     g.seeds,
		Members:   g.members,
		AppState:  appState,
		// Milliseconds, not the usual seconds: a node restarted within the same second
		// must still come back with a newer generation.
		Generation: generation,
		Seed:       seed,
		Interval:   g.n.cfg.GossipInterval,
		OnChange:   g.onChange,
		Logger:     g.n.cfg.Logger,
	})
}

// generation returns the generation the node gossips under in this life (since its
// start, or its last wake).
func (g *gossip) generation() uint64 { return g.gen.Load() }

// current returns the running membership driver.
func (g *gossip) current() *driver.Driver {
	g.driverMu.RLock()
	defer g.driverMu.RUnlock()
	return g.driver
}

// restart replaces the driver, which was shut down when the node went to sleep, by a
// new one with the same application states (set overrides some) under a newer
// generation: to its peers, a node back from sleep is a node restarted, with no stale
// failure-detector history either way.
func (g *gossip) restart(set map[string]string) error {
	g.driverMu.Lock()
	defer g.driverMu.Unlock()
	appState := map[string]string{}
	if self, ok := g.driver.Member(g.n.cfg.ID); ok {
		maps.Copy(appState, self.AppState)
	}
	maps.Copy(appState, set)
	d, err := g.newDriver(appState)
	if err != nil {
		return err
	}
	g.driver.Close()
	g.driver = d
	d.Start()
	return nil
}

// onChange mirrors one membership event into the directory. Nodes that die or leave stay
// on the ring as down: taking a node off the ring moves data and is an operator's call.
func (g *gossip) onChange(ch driver.Change) {
	m := ch.Member
	if m.ID == g.n.cfg.ID {
		return
	}
	if ch.Known {
		tokens, err := parseTokens(m.AppState[membership.KeyTokens])
		if err != nil {
			g.n.log.Warn("member gossips bad tokens", "member", m.ID, "err", err)
			return
		}
		status, err := cluster.ParseStatus(string(m.Status))
		old, known := g.n.directory.Node(m.ID)
		switch {
		case err != nil && !known:
			// A status only liveness cares about (a node shutting down), from a member
			// first heard of now: its place on the ring is unknown (it may have left),
			// so it is not recorded; a ring pull or its next start tells it.
			g.n.log.Debug("member first heard of with no ring status", "member", m.ID, "status", m.Status)
			return
		case err != nil:
			// A status only liveness cares about (a node shutting down): its place on the
			// ring does not change.
			status = old.Status
		case known && old.Status == cluster.StatusRemoved && status != cluster.StatusBooting && m.AppState[ringchange.KeyNewData] == "":
			// A removed node back with the data dir it had: it stays removed, whatever
			// it says (it learns of its removal from the gossiped marks, and stops
			// serving). Only with an empty data dir does it join again, as a new node.
			status, tokens = cluster.StatusRemoved, old.Tokens
		case status == cluster.StatusBooting && known && old.Status.OnRing():
			// A member back with an empty data dir: it lost its data. It stays on the
			// ring with its tokens, and nobody reads from it until it has rebuilt them
			// (its own ring pull then shows it so, and it starts the rebuild).
			status, tokens = cluster.StatusRebuilding, old.Tokens
		case status == cluster.StatusNormal && m.AppState[ringchange.KeyNewData] != "" && known && old.Status.OnRing() &&
			(old.Generation > 0 && m.Generation > old.Generation || m.Generation == old.Generation && old.Status == cluster.StatusRebuilding):
			// The same, from a member started without seeds, which took itself for the
			// first node of a new cluster until it hears from this one (ringchange.Changer.Join).
			status, tokens = cluster.StatusRebuilding, old.Tokens
		}
		tier, err := strconv.Atoi(cmp.Or(m.AppState[powercycle.KeyTier], "0"))
		if err != nil {
			g.n.log.Warn("member gossips a bad power tier", "member", m.ID, "err", err)
			return
		}
		g.mu.Lock()
		g.upsertLocked(cluster.Node{ID: m.ID, DC: m.DC, Addr: m.Addr, ClientAddr: m.AppState[keyClientAddr], Tokens: tokens,
			Status: status, Replaces: m.AppState[ringchange.KeyReplaces], Generation: m.Generation, Tier: tier})
		g.applyMarksLocked(m.ID, ringchange.KeyRemoving, m.AppState[ringchange.KeyRemoving])
		g.applyMarksLocked(m.ID, ringchange.KeyRemoved, m.AppState[ringchange.KeyRemoved])
		g.mu.Unlock()
	}
	alive := ch.Known && m.Alive
	if ch.Known {
		g.n.power.Observe(m, alive)
	}
	state := cluster.StateDown
	if alive {
		state = cluster.StateUp
	}
	if g.n.directory.SetState(m.ID, state) {
		g.n.log.Info("peer state", "peer", m.ID, "state", state, "event", ch.Event.Kind)
	}
	if digest := m.AppState[keySchema]; alive && digest != "" && digest != digestString(g.n.catalog.Digest()) {
		go g.pullSchema(cluster.Node{ID: m.ID, DC: m.DC, Addr: m.Addr})
	}
}

// upsertLocked records a member's gossiped entry, as leaving while a member removes it;
// g.mu is held.
func (g *gossip) upsertLocked(node cluster.Node) {
	g.heard[node.ID] = node
	if node.Status.OnRing() {
		for _, marks := range g.removingBy {
			if gen, ok := marks[node.ID]; ok && gen >= node.Generation {
				node.Status = cluster.StatusLeaving
			}
		}
	}
	if _, err := g.n.directory.Upsert(node); err != nil {
		g.n.log.Error("record a member", "member", node.ID, "err", err)
	}
}

// applyMarksLocked takes one member's removing or removed list into the directory; g.mu
// is held.
func (g *gossip) applyMarksLocked(from, key, value string) {
	marks := ringchange.ParseMarks(value)
	switch key {
	case ringchange.KeyRemoved:
		for id, gen := range marks {
			if id == g.n.cfg.ID {
				g.n.changer.RemovedSelf(from)
				continue
			}
			if _, err := g.n.directory.Remove(id, gen); err != nil {
				g.n.log.Debug("apply a removal", "node", id, "err", err)
			}
		}
	case ringchange.KeyRemoving:
		old := g.removingBy[from]
		g.removingBy[from] = marks
		for id := range old {
			if node, ok := g.heard[id]; ok {
				g.upsertLocked(node)
			}
		}
		for id := range marks {
			if node, ok := g.heard[id]; ok {
				g.upsertLocked(node)
			} else if node, ok := g.n.directory.Node(id); ok {
				g.upsertLocked(node)
			}
		}
	}
}

func (g *gossip) interval() time.Duration {
	if g.n.cfg.GossipInterval > 0 {
		return g.n.cfg.GossipInterval
	}
	return time.Second
}

// PublishDigest gossips the catalog's digest (schemasync.Digests), so that a node that
// missed a definition notices and pulls it.
func (g *gossip) PublishDigest(digest uint64) {
	g.current().SetAppState(keySchema, digestString(digest))
}

// pullSchema merges another node's keyspaces into the catalog, once this node knows
// whether it was a member before.
func (g *gossip) pullSchema(from cluster.Node) {
	select {
	case <-g.n.changer.AskedMembership():
	case <-g.n.stop:
		return
	}
	g.n.schemas.Pull(context.Background(), from)
}

func toPeer(n cluster.Node) transport.Peer {
	return transport.Peer{ID: n.ID, DC: n.DC, Addr: n.Addr}
}

func digestString(d uint64) string { return strconv.FormatUint(d, 16) }

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

// proximity ranks replicas for the coordinator: the measured round trip of recent calls,
// else twice the topology's one-way latency, else unknown (last).
type proximity struct{ n *Node }

func (p proximity) Distance(id string) time.Duration {
	if rtt, ok := p.n.transport.RTT(id); ok {
		return rtt
	}
	if topo := p.n.cfg.Topology; topo != nil {
		if peer, ok := p.n.directory.Node(id); ok {
			if link, err := topo.Link(p.n.cfg.DC, peer.DC); err == nil {
				return 2 * link.Latency
			}
		}
	}
	return time.Hour
}
