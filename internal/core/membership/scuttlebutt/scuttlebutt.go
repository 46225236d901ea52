// Package scuttlebutt is the baseline membership core: the gossip of
// Cassandra 0.6 measured in paper 001.
//
// Every round (one second) a node bumps its heartbeat and gossips with one
// random live endpoint; with probability unreachable/(live+1) also with one
// unreachable endpoint; and, when the live peer was not a seed (or fewer
// endpoints are live than there are seeds), with probability
// seeds/(live+unreachable) also with a seed, always when nothing is live.
// An exchange is SYN (a digest of every endpoint: generation and highest
// version) → ACK (states the initiator lacks, digests of what the receiver
// lacks) → ACK2 (those states). Failure detection is Cassandra 0.6's
// phi-accrual over heartbeat arrivals, convicting at phi > 8. Because every
// SYN lists all n endpoints and heartbeats change every second, each round
// costs O(n) bytes per node and O(n²) in total, which is what the paper fit.
package scuttlebutt

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/kuradb/kura/internal/core/membership"
)

// LeaveRounds is how many rounds a leaving node keeps gossiping its status
// "left" before it goes quiet.
const LeaveRounds = 5

// Protocol registers the core under the name "scuttlebutt".
var Protocol = membership.Protocol{
	Name:      "scuttlebutt",
	New:       func(cfg membership.Config) (membership.Core, error) { return New(cfg) },
	Unmarshal: Unmarshal,
}

// endpoint is what the node knows of one member.
type endpoint struct {
	state      membership.EndpointState
	maxVersion uint64
	alive      bool
	left       bool
	// shutdown: the member announced a shutdown; down until it restarts.
	shutdown bool
	// downSince is when the member was convicted or left, for eviction.
	downSince time.Duration
	window    membership.ArrivalWindow
}

// digest summarises the endpoint for a SYN.
func (ep *endpoint) digest() Digest {
	return Digest{ID: ep.state.ID, Generation: ep.state.Generation, MaxVersion: ep.maxVersion}
}

// Core is one node's Scuttlebutt state machine.
type Core struct {
	cfg   membership.Config
	local *membership.LocalState
	self  *endpoint
	// endpoints is sorted by ID and includes self, as Cassandra's digests
	// do; digests holds their digests in the same order, contiguously, so
	// matching a message against the table touches one compact array and
	// the endpoints only where they differ.
	endpoints  []*endpoint
	digests    []Digest
	seeds      []string
	seedSet    map[string]bool
	quarantine membership.Quarantine
	phi        membership.PhiModel
	// leaveRoundsLeft counts down after Leave; quiet once it reaches 0.
	leaving         bool
	leaveRoundsLeft int
	// stopped: the node announced a shutdown and went quiet.
	stopped bool
	// synced: EventSynced was reported; syncWith holds, until then, the
	// members whose SYN listed this node and whose ACK2 is awaited.
	synced   bool
	syncWith map[string]bool
}

// New starts a node that will join through cfg.Seeds.
func New(cfg membership.Config) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("scuttlebutt: %w", err)
	}
	if cfg.View != nil {
		// The paper's baseline always starts from its seeds.
		return nil, fmt.Errorf("scuttlebutt: %w: node %s: a starting view is not supported", membership.ErrBadConfig, cfg.ID)
	}
	c := &Core{cfg: cfg, local: membership.NewLocalState(cfg), seedSet: make(map[string]bool), phi: membership.CassandraPhi,
		syncWith: make(map[string]bool)}
	for _, s := range cfg.Seeds {
		if s != cfg.ID && !c.seedSet[s] {
			c.seeds = append(c.seeds, s)
			c.seedSet[s] = true
		}
	}
	c.self = &endpoint{alive: true}
	c.syncSelf()
	c.endpoints = []*endpoint{c.self}
	c.digests = []Digest{c.self.digest()}
	return c, nil
}

// ID is the node's identifier.
func (c *Core) ID() string { return c.cfg.ID }

// TickInterval is one round: Scuttlebutt does everything once a round.
func (c *Core) TickInterval() time.Duration { return membership.Round }

// syncSelf copies the local state into the node's own endpoint entry.
func (c *Core) syncSelf() {
	c.self.state = c.local.EndpointState
	c.self.maxVersion = c.local.MaxVersion()
	c.self.left = c.leaving
	if i, ok := c.find(c.cfg.ID); ok {
		c.digests[i] = c.self.digest()
	}
}

// quiet reports whether the node has left or shut down and stopped
// gossiping.
func (c *Core) quiet() bool { return c.stopped || (c.leaving && c.leaveRoundsLeft <= 0) }

// find returns the index of id in endpoints, or where it would go.
func (c *Core) find(id string) (int, bool) {
	i := sort.Search(len(c.digests), func(i int) bool { return c.digests[i].ID >= id })
	return i, i < len(c.digests) && c.digests[i].ID == id
}

// Tick runs one gossip round: heartbeat, up to three exchanges, status check.
func (c *Core) Tick(now time.Duration) membership.Ready {
	var r membership.Ready
	if c.quiet() {
		return r
	}
	if c.leaving {
		c.leaveRoundsLeft--
	}
	if len(c.seeds) == 0 {
		// No other seed to learn the cluster from: this node's view is the
		// cluster's.
		c.markSynced(c.self, &r)
	}
	c.local.Beat()
	c.syncSelf()

	live, unreachable := c.count()
	syn := c.syn()
	gossipedToSeed := false
	if live > 0 {
		to := c.pick(true, c.cfg.Rand.IntN(live))
		gossipedToSeed = c.seedSet[to]
		r.Messages = append(r.Messages, membership.Outbound{To: to, Msg: syn})
	}
	if unreachable > 0 && c.cfg.Rand.Float64() < float64(unreachable)/float64(live+1) {
		r.Messages = append(r.Messages, membership.Outbound{To: c.pick(false, c.cfg.Rand.IntN(unreachable)), Msg: syn})
	}
	if len(c.seeds) > 0 && (!gossipedToSeed || live < len(c.seeds)) {
		if live == 0 || c.cfg.Rand.Float64() <= float64(len(c.seeds))/float64(live+unreachable) {
			r.Messages = append(r.Messages, membership.Outbound{To: c.seeds[c.cfg.Rand.IntN(len(c.seeds))], Msg: syn})
		}
	}
	c.statusCheck(now, &r)
	return r
}

// gossipable reports whether ep is a gossip target: not self, not left.
func (c *Core) gossipable(ep *endpoint) bool { return ep != c.self && !ep.left }

// count returns how many gossip targets are live and unreachable.
func (c *Core) count() (live, unreachable int) {
	for _, ep := range c.endpoints {
		if c.gossipable(ep) {
			if ep.alive {
				live++
			} else {
				unreachable++
			}
		}
	}
	return live, unreachable
}

// pick returns the k-th live (or unreachable) gossip target in ID order;
// counting twice beats building a list of n IDs every round.
func (c *Core) pick(alive bool, k int) string {
	for _, ep := range c.endpoints {
		if c.gossipable(ep) && ep.alive == alive {
			if k == 0 {
				return ep.state.ID
			}
			k--
		}
	}
	panic("scuttlebutt: pick past the end")
}

// seek returns the index of id in endpoints (or where it would go),
// scanning forward from from: requests and states arrive sorted by ID, so a
// whole message costs one pass instead of a search per entry.
func (c *Core) seek(from int, id string) (int, bool) {
	if from > 0 && (from > len(c.digests) || c.digests[from-1].ID >= id) {
		return c.find(id)
	}
	i := from
	for i < len(c.digests) && c.digests[i].ID != id && c.digests[i].ID < id {
		i++
	}
	return i, i < len(c.digests) && c.digests[i].ID == id
}

// syn builds the digest of every endpoint.
func (c *Core) syn() *Syn {
	return &Syn{Digests: slices.Clone(c.digests)}
}

// statusCheck convicts silent endpoints and evicts long-dead ones.
func (c *Core) statusCheck(now time.Duration, r *membership.Ready) {
	removeAfter := c.cfg.RemoveAfterOrDefault()
	kept := c.endpoints[:0]
	keptDigests := c.digests[:0]
	for _, ep := range c.endpoints {
		if ep != c.self {
			if ep.alive && !ep.left && ep.window.Convicted(now, c.phi) {
				ep.alive = false
				ep.downSince = now
				r.Events = append(r.Events, membership.Event{Kind: membership.EventDead, ID: ep.state.ID, Generation: ep.state.Generation})
			}
			if (!ep.alive || ep.left) && now-ep.downSince > removeAfter {
				c.quarantine.Add(ep.state.ID, ep.state.Generation, now+removeAfter)
				r.Events = append(r.Events, membership.Event{Kind: membership.EventRemoved, ID: ep.state.ID, Generation: ep.state.Generation})
				continue
			}
		}
		kept = append(kept, ep)
		keptDigests = append(keptDigests, ep.digest())
	}
	clear(c.endpoints[len(kept):])
	c.endpoints, c.digests = kept, keptDigests
}

// Step handles one message of an exchange.
func (c *Core) Step(now time.Duration, from string, m membership.Message) membership.Ready {
	var r membership.Ready
	if c.quiet() {
		return r
	}
	switch m := m.(type) {
	case *Syn:
		ack := c.ack(m)
		if !c.synced && c.listsSelf(m) {
			c.syncWith[from] = true
		}
		r.Messages = append(r.Messages, membership.Outbound{To: from, Msg: ack})
	case *Ack:
		c.apply(now, m.States, &r)
		r.Messages = append(r.Messages, membership.Outbound{To: from, Msg: c.ack2(m)})
	case *Ack2:
		c.apply(now, m.States, &r)
		// The last leg of an exchange the sender opened with a digest of
		// every member it knows, this node among them: this node has asked
		// for what it lacked, so it knows what a member of the cluster
		// knew. (An ACK never carries that view: Cassandra answers a SYN
		// about the members it lists only, so a joining node learns the
		// cluster when others gossip to it.)
		if i, ok := c.find(from); ok && c.syncWith[from] {
			c.markSynced(c.endpoints[i], &r)
		}
	}
	return r
}

// listsSelf reports whether a SYN's digest names this node at its current
// generation: the sender learned of it through the cluster, so its view is
// the cluster's, not a fresh joiner's that knows nobody.
func (c *Core) listsSelf(syn *Syn) bool {
	i := sort.Search(len(syn.Digests), func(i int) bool { return syn.Digests[i].ID >= c.cfg.ID })
	return i < len(syn.Digests) && syn.Digests[i].ID == c.cfg.ID && syn.Digests[i].Generation == c.self.state.Generation
}

// markSynced reports EventSynced, once.
func (c *Core) markSynced(from *endpoint, r *membership.Ready) {
	if c.synced {
		return
	}
	c.synced, c.syncWith = true, nil
	r.Events = append(r.Events, membership.Event{Kind: membership.EventSynced, ID: from.state.ID, Generation: from.state.Generation})
}

// ack compares a SYN's digests with what this node knows (both sorted by
// ID) as Cassandra's examineGossiper does.
func (c *Core) ack(syn *Syn) *Ack {
	ack := &Ack{}
	i := 0
	for _, d := range syn.Digests {
		// Test == before <: both lists are mostly the same IDs in the same
		// order, and equality is the cheap comparison.
		for i < len(c.digests) && c.digests[i].ID != d.ID && c.digests[i].ID < d.ID {
			i++
		}
		if i == len(c.digests) || c.digests[i].ID != d.ID {
			ack.Requests = append(ack.Requests, Digest{ID: d.ID, Generation: d.Generation})
			continue
		}
		mine := &c.digests[i]
		switch {
		case d.Generation > mine.Generation:
			ack.Requests = append(ack.Requests, Digest{ID: d.ID, Generation: d.Generation})
		case d.Generation < mine.Generation:
			ack.States = append(ack.States, c.endpoints[i].state.Since(0))
		case d.MaxVersion > mine.MaxVersion:
			ack.Requests = append(ack.Requests, Digest{ID: d.ID, Generation: d.Generation, MaxVersion: mine.MaxVersion})
		case d.MaxVersion < mine.MaxVersion:
			ack.States = append(ack.States, c.endpoints[i].state.Since(d.MaxVersion))
		}
	}
	return ack
}

// ack2 answers the requests of an ACK.
func (c *Core) ack2(ack *Ack) *Ack2 {
	out := &Ack2{}
	i := 0
	for _, d := range ack.Requests {
		var ok bool
		if i, ok = c.seek(i, d.ID); !ok {
			continue
		}
		ep := c.endpoints[i]
		switch {
		case ep.state.Generation > d.Generation:
			out.States = append(out.States, ep.state.Since(0))
		case ep.state.Generation == d.Generation && ep.maxVersion > d.MaxVersion:
			out.States = append(out.States, ep.state.Since(d.MaxVersion))
		}
	}
	return out
}

// apply merges received states and reports what changed. States arrive
// sorted by ID, so inserts mostly land in order.
func (c *Core) apply(now time.Duration, states []membership.EndpointState, r *membership.Ready) {
	i := 0
	for _, s := range states {
		if s.ID == c.cfg.ID || c.quarantine.Blocks(s.ID, s.Generation, now) {
			continue
		}
		var ok bool
		if i, ok = c.seek(i, s.ID); !ok {
			ep := &endpoint{state: s, maxVersion: s.MaxVersion(), alive: true}
			ep.window.Report(now, c.phi)
			c.endpoints = slices.Insert(c.endpoints, i, ep)
			c.digests = slices.Insert(c.digests, i, ep.digest())
			r.Events = append(r.Events, membership.Event{Kind: membership.EventJoined, ID: s.ID, Generation: s.Generation})
			c.noteStatus(now, ep, r)
			continue
		}
		ep := c.endpoints[i]
		merged := ep.state.Merge(s)
		if !merged.Any() {
			continue
		}
		ep.maxVersion = ep.state.MaxVersion()
		c.digests[i] = ep.digest()
		if merged.Restarted {
			ep.window = membership.ArrivalWindow{}
			ep.alive, ep.left, ep.shutdown = true, false, false
			r.Events = append(r.Events, membership.Event{Kind: membership.EventRestarted, ID: s.ID, Generation: s.Generation})
		}
		ep.window.Report(now, c.phi)
		// News of a shutdown is no sign of life.
		if !ep.alive && !ep.left && !ep.shutdown && !statusIs(&ep.state, membership.StatusShutdown) {
			ep.alive = true
			r.Events = append(r.Events, membership.Event{Kind: membership.EventAlive, ID: s.ID, Generation: s.Generation})
		}
		for _, v := range merged.Changed {
			r.Events = append(r.Events, membership.Event{Kind: membership.EventStateChanged, ID: s.ID, Generation: s.Generation, Key: v.Key, Value: v.Value})
		}
		if len(merged.Changed) > 0 {
			c.noteStatus(now, ep, r)
		}
	}
}

// noteStatus marks a member that announced it left, or that it shut down.
func (c *Core) noteStatus(now time.Duration, ep *endpoint, r *membership.Ready) {
	switch {
	case statusIs(&ep.state, membership.StatusLeft) && !ep.left:
		ep.left = true
		ep.downSince = now
		r.Events = append(r.Events, membership.Event{Kind: membership.EventLeft, ID: ep.state.ID, Generation: ep.state.Generation})
	case statusIs(&ep.state, membership.StatusShutdown) && !ep.shutdown:
		ep.shutdown = true
		if ep.alive {
			ep.alive = false
			ep.downSince = now
			r.Events = append(r.Events, membership.Event{Kind: membership.EventDead, ID: ep.state.ID, Generation: ep.state.Generation})
		}
	}
}

// statusIs reports whether a state's gossiped status is want.
func statusIs(s *membership.EndpointState, want membership.Status) bool {
	status, _ := s.Value(membership.KeyStatus)
	return status == string(want)
}

// SetAppState changes one of the node's own application states.
func (c *Core) SetAppState(_ time.Duration, key, value string) membership.Ready {
	c.local.Set(key, value)
	c.syncSelf()
	return membership.Ready{}
}

// Leave sets status left; the node gossips it for LeaveRounds rounds.
func (c *Core) Leave(_ time.Duration) membership.Ready {
	if !c.leaving && !c.stopped {
		c.local.Set(membership.KeyStatus, string(membership.StatusLeft))
		c.leaving = true
		c.leaveRoundsLeft = LeaveRounds
		c.syncSelf()
	}
	return membership.Ready{}
}

// Shutdown sets status shutdown and sends the node's state at once to every
// live member, as Cassandra's shutdown message does, then goes quiet. Peers
// hold the node down until it restarts with a newer generation.
func (c *Core) Shutdown(_ time.Duration) membership.Ready {
	var r membership.Ready
	if c.leaving || c.stopped {
		return r
	}
	c.local.Set(membership.KeyStatus, string(membership.StatusShutdown))
	c.syncSelf()
	news := &Ack2{States: []membership.EndpointState{c.self.state}}
	for _, ep := range c.endpoints {
		if c.gossipable(ep) && ep.alive {
			r.Messages = append(r.Messages, membership.Outbound{To: ep.state.ID, Msg: news})
		}
	}
	c.stopped = true
	return r
}

// Members lists the known members sorted by ID.
func (c *Core) Members() []membership.Member {
	out := make([]membership.Member, len(c.endpoints))
	for i, ep := range c.endpoints {
		out[i] = ep.state.Member(ep.alive)
	}
	return out
}

// Member returns one known member.
func (c *Core) Member(id string) (membership.Member, bool) {
	i, ok := c.find(id)
	if !ok {
		return membership.Member{}, false
	}
	return c.endpoints[i].state.Member(c.endpoints[i].alive), true
}
