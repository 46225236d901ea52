// Package ferry is kura's DC-aware membership core. Its design (and why its
// traffic is O(n) in total and independent of n across DC links) is in the
// membership package documentation.
package ferry

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/core/membership"
)

// Options tune Ferry; DefaultOptions is what Protocol uses.
type Options struct {
	// Gateways is how many members of each DC carry its traffic to other
	// DCs (the k lowest on the DC's ring among live members).
	Gateways int
	// Monitors is how many ring successors each node heartbeats to.
	Monitors int
	// Buckets is the number of hash buckets per DC summary.
	Buckets int
	// HotRounds is how many rounds a node pushes a change it just learned.
	HotRounds int
	// HotFanout is how many peers a node gossips with in a round while it
	// has changes to push (one otherwise).
	HotFanout int
	// MaxHot caps the changes pushed in one Summary, keeping it O(1).
	MaxHot int
	// MaxBurst caps the new members a node announces in one Push to every
	// live member of its DC (see markBurst): the joiners it admits and,
	// first of its DC to hear of them, another DC's new members. Up to four
	// times as many wait for the next ticks; beyond that a burst of joins
	// is left to the rumours and anti-entropy.
	MaxBurst int
	// MaxBurstBytes caps the bytes one tick's burst sends, summed over the
	// members it goes to (the Push's size times their number): a DC of
	// thousands restarting at once, each state a kilobyte, would otherwise
	// have its announcer send hundreds of megabytes a tick. The members the
	// cap holds back wait for the next ticks; one goes each tick whatever
	// its size.
	MaxBurstBytes int
	// TickInterval is how often the core is ticked (Core.TickInterval): the
	// rounds (heartbeats, gossip) run once per membership.Round, and the
	// failure detectors decide at every tick, so that a probe times out in
	// a fraction of a round. It must divide the round.
	TickInterval time.Duration
	// ProbeTimeout is how long a monitor waits for each stage of its probe
	// of a silent node: first a direct probe; then the direct probe again
	// and IndirectProbes members asked to probe the node too; then it
	// suspects the node.
	ProbeTimeout time.Duration
	// IndirectProbes is how many members of its DC a monitor asks to probe
	// a node that did not answer it directly (SWIM's ping-req), so that
	// one lossy link does not make a live node suspect.
	IndirectProbes int
	// SuspectTimeout is how long a monitor holds a suspicion that no other
	// monitor of the node confirms before it convicts on its own. A
	// suspicion another monitor shares convicts at once; one that another
	// monitor, still hearing the node, contradicts is dropped.
	SuspectTimeout time.Duration
	// DCProbes is how many members of another DC a gateway probes at once
	// when it has heard nothing from that DC for too long: spread over the
	// DC's ring, so that a DC whose gateways alone died still answers.
	DCProbes int
	// RemoteProbeTimeout is how long a gateway waits for any answer to its
	// probes of a silent DC (a WAN round trip and then some).
	RemoteProbeTimeout time.Duration
	// ProbeAttempts is how many unanswered rounds of DCProbes probes
	// convict a silent DC.
	ProbeAttempts int
	// LeaveRounds is how long a leaving node keeps gossiping.
	LeaveRounds int
	// Phi decides when a monitored node's (or, at a gateway, another DC's)
	// silence is worth probing.
	Phi membership.PhiModel
}

// DefaultOptions: two gateways and two monitors, heartbeats once a round,
// the detectors ticked four times a round. A node whose heartbeat is 0.4 s
// late is probed directly, then, 0.5 s later, directly again and through
// three other members; 0.5 s later still it is suspected, and convicted as
// soon as its other monitor suspects it too (or after 1 s alone). A node
// dies in about 2.5 s from its last heartbeat, and one lost message never
// convicts a live node. A silent DC is probed twice, 1 s apart, before its
// members are convicted. A burst of joins goes out at 16 MiB a tick at
// most: 64 MiB/s, half a gigabit, from its announcer.
var DefaultOptions = Options{
	Gateways:           2,
	Monitors:           2,
	Buckets:            32,
	HotRounds:          3,
	HotFanout:          3,
	MaxHot:             16,
	MaxBurst:           256,
	MaxBurstBytes:      16 << 20,
	TickInterval:       250 * time.Millisecond,
	ProbeTimeout:       500 * time.Millisecond,
	IndirectProbes:     3,
	SuspectTimeout:     time.Second,
	DCProbes:           3,
	RemoteProbeTimeout: time.Second,
	ProbeAttempts:      2,
	LeaveRounds:        5,
	// Heartbeats come like clockwork, so the deviation stays near its floor
	// and phi passes 8 about 0.4 s after a heartbeat is due: one lost
	// heartbeat costs a direct probe, not a suspicion.
	Phi: membership.PhiModel{Normal: true, MinStdDev: 75 * time.Millisecond,
		Threshold: 8, FirstInterval: time.Second, WindowSamples: 100},
}

// expectGrace is how long an entry must stay unchanged before its ring
// successors expect its heartbeats without having heard any.
const expectGrace = 10 * time.Second

// vouchWithin is how recently a monitor must have heard a node first-hand
// to contradict another monitor's suspicion of it: a round (the node
// heartbeats every round) and a probe timeout to spare. The suspecter has
// not heard the node for more than twice that.
const vouchWithin = membership.Round + 500*time.Millisecond

// selfDoubts is how many times in a row a monitor whose indirect probe got
// no receipt from any member it asked probes again, doubting its own links,
// before it suspects the node all the same: a blip of a second or two in
// its own links accuses nobody, while a node cut off for longer still holds
// the others down (its coordinators should not wait on them), though it can
// tell nobody until it is back, and then they refute it.
const selfDoubts = 2

// syncPatience is how long a seed waits to meet the cluster (see lost)
// before it follows redirects. At a cluster's start the seeds meet within a
// round or two, and stop asking each other once they have, so the wait
// never delays a start.
const syncPatience = 5 * time.Second

// Protocol registers the core under the name "ferry".
var Protocol = membership.Protocol{
	Name:      "ferry",
	New:       func(cfg membership.Config) (membership.Core, error) { return New(cfg, DefaultOptions) },
	Unmarshal: Unmarshal,
	NewShared: func() any { return NewTable() },
}

// entry is what a node knows of one member. Every node holds one per
// member, so a simulated cluster holds n² of them: what is the same on every
// node (the member's state and what derives from it) lives in the shared
// version, and an entry keeps only this node's view of it, in 24 bytes
// (TestEntryIsSmallAndHoldsNoPointer) and no pointer, so that the garbage collector
// need not scan them.
type entry struct {
	// deadAt is the highest version a monitor declared dead; the entry is
	// dead while no newer version exists (a live node refutes by bumping).
	deadAt uint64
	// changedAt is when the entry last changed here.
	changedAt time.Duration
	// ver indexes the entry's version in Core.table; 0 marks a slot of
	// entrySlots that holds no entry.
	ver uint32
	// dc indexes Core.views.
	dc uint16
	// hot counts the rounds left to push this change.
	hot   int8
	flags entryFlags
}

// entryFlags are an entry's bits: whether it is dead, left or shut down,
// derived from its version and deadAt (see Table.set) so that the scans of
// the DC views need not read the version; whether it is queued for
// forwarding or for announcing; whether it was removed while queued (see
// Core.remove).
type entryFlags uint8

const (
	flagDead entryFlags = 1 << iota
	flagLeft
	flagShutdown
	// flagForward marks an own-DC change a gateway has yet to ferry to the
	// other DCs.
	flagForward
	// flagDetached marks a removed entry that a queue still holds.
	flagDetached
	// flagBurst marks a new member queued to be announced to the DC (see
	// markBurst).
	flagBurst
)

func (e *entry) isLeft() bool   { return e.flags&flagLeft != 0 }
func (e *entry) dead() bool     { return e.flags&flagDead != 0 }
func (e *entry) live() bool     { return e.flags&(flagDead|flagLeft|flagShutdown) == 0 }
func (e *entry) shutdown() bool { return e.flags&flagShutdown != 0 }

// unreachable reports whether the member is down but still a member: convicted, or shut
// down and not yet back. Both are gossiped to now and then (gossipToTheDead): a member
// that announced its shutdown restarts under a new generation, perhaps with no seed to
// announce it to, and must be found as a convicted one is.
func (e *entry) unreachable() bool { return e.down() && !e.isLeft() }

// down reports whether the member counts as down: convicted, or shut down.
// (A member that left is gone, which the callers tell apart.)
func (e *entry) down() bool { return e.flags&(flagDead|flagShutdown) != 0 }

// entryChunk is how many entries entrySlots allocates at once.
const entryChunk = 256

// entrySlots holds a core's entries by member number, in chunks of
// entryChunk that never move, so that an *entry stays valid, and that hold
// no pointer; a slot whose ver is 0 holds no entry.
type entrySlots struct {
	chunks []*[entryChunk]entry
}

// of is the slot of member num, which must have been made (see make).
func (s *entrySlots) of(num uint32) *entry { return &s.chunks[num/entryChunk][num%entryChunk] }

// get returns the entry of member num, or nil.
func (s *entrySlots) get(num int) *entry {
	if num >= len(s.chunks)*entryChunk {
		return nil
	}
	if e := s.of(uint32(num)); e.ver != 0 {
		return e
	}
	return nil
}

// make returns the slot of member num, adding chunks to hold it.
func (s *entrySlots) make(num int) *entry {
	for num >= len(s.chunks)*entryChunk {
		s.chunks = append(s.chunks, new([entryChunk]entry))
	}
	return s.of(uint32(num))
}

// v is the version of e.
func (c *Core) v(e *entry) *version { return c.table.versions[e.ver] }

// hint names v's member in this core's table, for a delta (see hint).
func (c *Core) hint(v *version) hint { return hint{table: c.table, num: int32(v.member.num)} }

// idOf is the ID of e's member.
func (c *Core) idOf(e *entry) string { return c.v(e).state.ID }

// delta is e's whole state; its hint names the version too, so that a core sharing
// the table learns a member new to it without interning the state again.
func (c *Core) delta(e *entry) Delta {
	v := c.v(e)
	h := c.hint(v)
	h.ver = e.ver
	return Delta{State: v.state, DeadAt: e.deadAt, hint: h}
}

// notice is what announces that the member is down. A death notice leaves
// out the application states: it is enough for a node that knows the
// member (a node that does not ignores a partial delta, and learns the
// member by anti-entropy), and a few bytes whatever the member gossips (a
// real node's tokens are kilobytes). A shutdown is an application state, so
// it goes whole.
func (c *Core) notice(e *entry) Delta {
	if !e.dead() {
		return c.delta(e)
	}
	s := &c.v(e).state
	return Delta{State: membership.EndpointState{ID: s.ID, Generation: s.Generation, Heartbeat: s.Heartbeat}, DeadAt: e.deadAt,
		hint: c.hint(c.v(e))}
}

func (c *Core) digest(e *entry) Digest {
	d := c.table.digests[e.ver]
	d.Dead = e.dead()
	return d
}

// newer reports whether digest a is ahead of b: generation, then version,
// then dead over alive.
func newer(a, b Digest) bool {
	if a.Generation != b.Generation {
		return a.Generation > b.Generation
	}
	if a.MaxVersion != b.MaxVersion {
		return a.MaxVersion > b.MaxVersion
	}
	return a.Dead && !b.Dead
}

// probeStage is how far a monitor's probe of a silent node has gone.
type probeStage uint8

const (
	// idle: the node is heard from; nothing is out.
	idle probeStage = iota
	// probing: a direct probe is out.
	probing
	// indirect: the direct probe went unanswered; it is out again, and
	// IndirectProbes members were asked to probe the node too.
	indirect
	// suspected: nobody got an answer; the node is suspect until another
	// monitor confirms (or SuspectTimeout passes) or it is heard again.
	suspected
)

// watch is a monitor's record of one node that heartbeats to it, and of
// its probe of that node when it falls silent.
type watch struct {
	id string
	// slot is the slot of id's entry once the table numbers id (see
	// watchedEntry).
	slot       *entry
	generation uint64
	maxVersion uint64
	window     membership.ArrivalWindow
	// stage is how far the probe went, since when; probeSeq numbers the
	// probe, which keeps its number through every stage.
	stage    probeStage
	since    time.Duration
	probeSeq uint64
	// confirmed: another monitor of the node said it suspects it too, since
	// the node was last heard.
	confirmed bool
	// asked and receipts count the members asked to probe the node in the
	// indirect stage and those that said they got the request; doubts
	// counts the indirect stages in a row that got no receipt at all.
	asked, receipts, doubts int
	// direct is when the node was last heard first-hand (a heartbeat, or an
	// answer to this node's own probe); hearing of it through others does
	// not let this node vouch for it.
	direct    time.Duration
	hasDirect bool
	// convictedAt is the version this monitor declared dead (0: none).
	convictedAt uint64
}

// longSilence is the longest interval a detector's window learns from. A
// longer silence (two heartbeats or more lost in a row, a partition, a
// refuted verdict) is an outage, not the rhythm of the heartbeats: learnt,
// it would make the window tolerate silences of seconds for a hundred
// rounds. The window starts afresh instead, as Cassandra's ignores
// intervals over two seconds.
const longSilence = 2500 * time.Millisecond

// arrive reports an arrival to a detector's window.
func arrive(w *membership.ArrivalWindow, now time.Duration, phi membership.PhiModel) {
	if w.Silence(now) > longSilence {
		*w = membership.ArrivalWindow{}
	}
	w.Report(now, phi)
}

// heard records a sign of life from the watched node: a heartbeat, or an
// answer to a probe (direct, or through another member).
func (w *watch) heard(now time.Duration, phi membership.PhiModel) {
	arrive(&w.window, now, phi)
	w.stage = idle
	w.confirmed = false
	w.doubts = 0
}

// relay is a probe this node sends for another member (ProbeReq): the
// answer goes back to the requester under its own probe number.
type relay struct {
	seq       uint64
	target    string
	requester string
	reqSeq    uint64
	until     time.Duration
}

// dcWatch is a gateway's failure detector for another DC as a whole. Each
// round the gateway sends that DC a Summary asking for an answer: a live DC
// answers every round, as a monitored node heartbeats. The answers are
// reported to a phi-accrual window with the monitors' model (see hear), so
// the same silence that gets a node probed gets a DC probed: DCProbes of
// its members, spread over its ring, every RemoteProbeTimeout;
// ProbeAttempts such rounds of probes without any answer from any member
// convict every live member of the DC, and the gateway announces it in its
// own DC. This is what catches a node alone in its DC (nobody inside
// watches it) and a DC that goes dark at once (its monitors died with it).
type dcWatch struct {
	window membership.ArrivalWindow
	// heard: a message from the DC arrived since this node's last round.
	heard bool
	// probes counts the rounds of probes sent since the DC was last heard;
	// since is when the last went.
	probes int
	since  time.Duration
}

// hear records a message from a member of the watched DC; answer says it
// answers this node's summary or probe (see answers). The answers to its
// summary come a round trip after each of this node's rounds, like a
// heartbeat: they alone feed the window, so that its intervals stay a
// round, with no more jitter than the WAN's. The DC's own summaries come
// at the phases of its gateways' rounds and to whichever gateway of this DC
// they pick, so they feed it only while the DC is being probed, when any
// sign of life counts.
func (w *dcWatch) hear(now time.Duration, answer bool, phi membership.PhiModel) {
	if !answer && w.probes == 0 {
		return
	}
	if !w.heard {
		// One arrival per round, like one heartbeat per round.
		w.heard = true
		arrive(&w.window, now, phi)
	}
	w.probes = 0
}

// answers reports whether a message from another DC answers this node:
// the reply to its summary (Buckets, or the per-DC sums that answer a total
// that differs) or to its probe.
func answers(m membership.Message) bool {
	switch m := m.(type) {
	case *Buckets, *ProbeAck:
		return true
	case *Summary:
		return !m.Reply && !(len(m.Sums) == 1 && m.Sums[0].DC == "")
	}
	return false
}

// Core is one node's Ferry state machine.
type Core struct {
	cfg   membership.Config
	opts  Options
	local *membership.LocalState
	self  *entry
	// table numbers the members and shares their versions (see Table).
	table *Table
	// entries holds every known member, self included; known counts them.
	entries *entrySlots
	known   int
	// dcs lists the DC views sorted by name; views lists the same in the
	// order they were made, which entries index.
	dcs        []*dcView
	views      []*dcView
	quarantine membership.Quarantine
	// hot lists entries with changes still to push, oldest first; forward
	// lists own-DC changes a gateway still has to ferry.
	hot     []*entry
	forward []*entry
	// burst lists, by member number, the new members to announce to the DC
	// at the next ticks, oldest first (see markBurst).
	burst []uint32
	// down lists dead or departed entries awaiting removal.
	down []downEntry
	// watched are the nodes heartbeating to this one, sorted by ID;
	// monitors are the nodes this one heartbeats to; relays are the probes
	// this node sends for others.
	watched  []*watch
	monitors []string
	relays   []relay
	seeds    []string
	// joined: this node has the cluster's state (or is the first seed).
	joined   bool
	probeSeq uint64
	// wanMisses counts unanswered summaries per remote DC, to widen the set
	// of remote nodes tried when its gateways do not answer.
	wanMisses map[string]int
	// remote watches the other DCs, by name, while this node is a gateway.
	remote          map[string]*dcWatch
	leaving         bool
	leaveRoundsLeft int
	// stopped: the node announced a shutdown and went quiet.
	stopped bool
	// synced: EventSynced was reported.
	synced bool
	// firstTick is when the core ran its first round (ticked says it has).
	firstTick time.Duration
	ticked    bool
	// untilRound counts the ticks to the next round; rounds counts rounds.
	untilRound int
	rounds     int
	// gateway is isGateway's answer when the own DC's view had gatewayAt
	// changes (gatewayKnown: there is an answer).
	gateway, gatewayKnown bool
	gatewayAt             uint64
}

// downEntry is an entry awaiting removal, and since when it is down.
type downEntry struct {
	e     *entry
	since time.Duration
}

// New starts a node that will join through cfg.Seeds. cfg.Shared, when
// set, must be the *Table the node shares with the other cores of its
// simulated cluster.
func New(cfg membership.Config, opts Options) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("ferry: %w", err)
	}
	if opts.Gateways < 1 || opts.Monitors < 1 || opts.Buckets < 1 || opts.MaxHot < 1 || opts.MaxBurst < 1 || opts.MaxBurstBytes < 1 || opts.HotFanout < 1 || opts.DCProbes < 1 ||
		opts.HotRounds > math.MaxInt8 || opts.Buckets > math.MaxUint16+1 || opts.ProbeAttempts < 1 || opts.IndirectProbes < 0 ||
		opts.TickInterval <= 0 || opts.TickInterval > membership.Round || membership.Round%opts.TickInterval != 0 ||
		opts.ProbeTimeout <= 0 || opts.SuspectTimeout < 0 || opts.RemoteProbeTimeout <= 0 {
		return nil, fmt.Errorf("ferry: %w: options %+v", membership.ErrBadConfig, opts)
	}
	table := ownTable()
	if cfg.Shared != nil {
		t, ok := cfg.Shared.(*Table)
		if !ok {
			return nil, fmt.Errorf("ferry: %w: Shared is a %T, not a *ferry.Table", membership.ErrBadConfig, cfg.Shared)
		}
		table = t
	}
	c := &Core{
		cfg: cfg, opts: opts, local: membership.NewLocalState(cfg), table: table, entries: new(entrySlots),
		wanMisses: make(map[string]int),
		remote:    make(map[string]*dcWatch),
	}
	if len(cfg.View) > 0 {
		if err := c.load(table.savedView(cfg.View, opts.Buckets)); err != nil {
			return nil, err
		}
	}
	own := table.version(c.local.EndpointState)
	if e := c.entry(cfg.ID); e != nil {
		// The view's entry of this node gives way to its state now (a node
		// that restarts comes back with a newer generation).
		v := c.viewOf(e)
		if v.name != cfg.DC {
			return nil, fmt.Errorf("ferry: %w: view: node %s is in DC %s, not %s", membership.ErrBadConfig, cfg.ID, v.name, cfg.DC)
		}
		v.unlink(e)
		table.set(e, own, 0)
		v.link(e)
		c.self = e
	} else {
		c.self = c.insert(own, 0, 0, cfg.DC)
	}
	isSeed := false
	for _, s := range cfg.Seeds {
		if s == cfg.ID {
			isSeed = true
		} else if !slices.Contains(c.seeds, s) {
			c.seeds = append(c.seeds, s)
		}
	}
	// A seed counts as joined at once so it can admit others; it still asks
	// the other seeds to admit it until it knows them all. A node that
	// starts from a view has the cluster's state already.
	c.joined = isSeed || len(c.seeds) == 0 || len(cfg.View) > 0
	return c, nil
}

// ID is the node's identifier.
func (c *Core) ID() string { return c.cfg.ID }

// view returns the DC view for name, creating it.
func (c *Core) view(name string) *dcView {
	i := sort.Search(len(c.dcs), func(i int) bool { return c.dcs[i].name >= name })
	if i < len(c.dcs) && c.dcs[i].name == name {
		return c.dcs[i]
	}
	v := newDCView(name, c.table, c.entries, len(c.views), c.opts.Buckets)
	c.dcs = slices.Insert(c.dcs, i, v)
	c.views = append(c.views, v)
	return v
}

// viewOf is the view of e's DC.
func (c *Core) viewOf(e *entry) *dcView { return c.views[e.dc] }

// entry returns the entry of the member with this ID, or nil.
func (c *Core) entry(id string) *entry {
	m := c.table.lookup(id)
	if m == nil {
		return nil
	}
	return c.slot(m.num)
}

// entryOf returns the entry of the member with this ID and hint (see
// hint), or nil.
func (c *Core) entryOf(h hint, id string) *entry {
	num := c.table.numOf(h, id)
	if num < 0 {
		return nil
	}
	return c.slot(num)
}

// slot returns the entry of the member with this number, or nil.
func (c *Core) slot(num int) *entry { return c.entries.get(num) }

// findView returns the DC view for name if it exists.
func (c *Core) findView(name string) *dcView {
	i := sort.Search(len(c.dcs), func(i int) bool { return c.dcs[i].name >= name })
	if i < len(c.dcs) && c.dcs[i].name == name {
		return c.dcs[i]
	}
	return nil
}

// insert adds an entry for a member this node does not know, at version
// ver, to the tables.
func (c *Core) insert(ver uint32, deadAt uint64, now time.Duration, dc string) *entry {
	e := c.entries.make(c.table.versions[ver].member.num)
	e.changedAt = now
	c.table.set(e, ver, deadAt)
	v := c.view(dc)
	e.dc = uint16(v.index)
	v.add(e)
	c.known++
	return e
}

// ownDC is the node's own DC view.
func (c *Core) ownDC() *dcView { return c.viewOf(c.self) }

// quiet reports whether the node has left or shut down and stopped
// gossiping.
func (c *Core) quiet() bool { return c.stopped || (c.leaving && c.leaveRoundsLeft <= 0) }

// isGateway reports whether this node carries its DC's cross-DC traffic.
func (c *Core) isGateway() bool {
	// Every node asks at every tick, and its DC's ring seldom changes: the
	// answer holds until a change is folded into the DC's view (every
	// change of a member that can make it live or not, or move it, is).
	v := c.ownDC()
	if c.gatewayKnown && c.gatewayAt == v.changes {
		return c.gateway
	}
	c.gateway, c.gatewayAt, c.gatewayKnown = false, v.changes, true
	k := 0
	for e := range v.all() {
		if k == c.opts.Gateways {
			break
		}
		if e.live() {
			if e == c.self {
				c.gateway = true
				break
			}
			k++
		}
	}
	return c.gateway
}

// send appends a message.
func send(r *membership.Ready, to string, m membership.Message) {
	r.Messages = append(r.Messages, membership.Outbound{To: to, Msg: m})
}

// ready starts the Ready of one call. The cores of a shared table append
// their events to the table's array, kept from one call to the next: in a
// cold start every core learns every member, n² events that were otherwise
// n² slices grown and collected (see Table.events).
func (c *Core) ready() membership.Ready {
	if c.table.interned == nil {
		return membership.Ready{}
	}
	return membership.Ready{Events: c.table.events[:0]}
}

// done ends the call ready started: the table keeps the array as it grew,
// and a call with no event returns none, as a core's own table does.
func (c *Core) done(r *membership.Ready) {
	if c.table.interned != nil {
		c.table.events = r.Events[:0]
	}
	if len(r.Events) == 0 {
		r.Events = nil
	}
}

// event appends an event about e.
func (c *Core) event(r *membership.Ready, kind membership.EventKind, e *entry) {
	v := c.v(e)
	r.Events = append(r.Events, membership.Event{Kind: kind, ID: v.state.ID, Generation: v.state.Generation})
}

// TickInterval is Options.TickInterval: the core wants Tick four times a
// round by default.
func (c *Core) TickInterval() time.Duration { return c.opts.TickInterval }

// Tick runs the core's timers. Once per round (every Round/TickInterval
// ticks, the first at the first tick) it runs a round: join, heartbeats,
// failure checks (of other DCs too, at gateways), anti-entropy inside the
// DC, summaries to other DCs (gateways only), removals. At every other tick
// it only runs the failure detectors, whose probes time out between rounds.
func (c *Core) Tick(now time.Duration) (r membership.Ready) {
	r = c.ready()
	defer c.done(&r)
	if c.quiet() {
		return r
	}
	if !c.ticked {
		c.firstTick, c.ticked = now, true
	}
	c.untilRound--
	if c.untilRound > 0 {
		if c.joined {
			c.checkWatched(now, &r)
			c.watchRemoteDCs(now, &r)
		}
		c.expireRelays(now)
		c.announceBurst(&r)
		c.flush(&r)
		return r
	}
	perRound := int(membership.Round / c.opts.TickInterval)
	c.untilRound = perRound
	if c.rounds == 0 && perRound > 1 {
		// The first round comes at the first tick, so that a node joins at
		// once; the next at a random tick of the round, so that the rounds
		// of nodes started together do not fall into one tick.
		c.untilRound = 1 + c.cfg.Rand.IntN(perRound)
	}
	c.rounds++
	c.round(now, &r)
	c.expireRelays(now)
	c.announceBurst(&r)
	c.flush(&r)
	return r
}

// round runs one gossip round.
func (c *Core) round(now time.Duration, r *membership.Ready) {
	if c.leaving {
		c.leaveRoundsLeft--
	}
	if !c.joined {
		send(r, c.seeds[c.cfg.Rand.IntN(len(c.seeds))], &Join{State: c.v(c.self).state})
		return
	}
	if len(c.seeds) == 0 {
		// No other seed to learn the cluster from: this node's view is the
		// cluster's.
		c.markSynced(c.self, r)
	}
	c.joinUnknownSeeds(r)
	c.heartbeat(r)
	c.expectPredecessors(now)
	c.checkWatched(now, r)
	for _, w := range c.remote {
		w.heard = false
	}
	c.watchRemoteDCs(now, r)
	c.gossip(r)
	if c.isGateway() {
		c.wanRound(r)
	}
	c.removeLongDown(now, r)
}

// joinUnknownSeeds keeps a seed asking one other seed it has not heard of
// per round: seeds start together, and until they know each other the DCs
// they seed would never meet.
func (c *Core) joinUnknownSeeds(r *membership.Ready) {
	var unknown []string
	for _, s := range c.seeds {
		if c.entry(s) == nil {
			unknown = append(unknown, s)
		}
	}
	if len(unknown) > 0 {
		send(r, unknown[c.cfg.Rand.IntN(len(unknown))], &Join{State: c.v(c.self).state})
	}
}

// heartbeat sends a heartbeat to each monitor, and a last one with Stop to
// nodes that are no longer monitors.
func (c *Core) heartbeat(r *membership.Ready) {
	var next []string
	if !c.leaving {
		for _, e := range c.ownDC().successors(c.self, c.opts.Monitors) {
			next = append(next, c.idOf(e))
		}
	}
	hb := &Heartbeat{Generation: c.v(c.self).state.Generation, MaxVersion: c.v(c.self).maxVersion}
	for _, id := range c.monitors {
		if !slices.Contains(next, id) {
			send(r, id, &Heartbeat{Generation: hb.Generation, MaxVersion: hb.MaxVersion, Stop: true})
		}
	}
	for _, id := range next {
		send(r, id, hb)
	}
	c.monitors = next
}

// expectPredecessors watches the ring predecessors that should heartbeat
// here even before (or without) hearing from them: a node that failed
// together with all its monitors is then still caught by the next monitor
// in line once the others are declared dead. A predecessor that sends its
// heartbeats elsewhere answers the probe with Monitored false.
func (c *Core) expectPredecessors(now time.Duration) {
	for _, p := range c.ownDC().predecessors(c.self, c.opts.Monitors) {
		// While a change is fresh, views may still differ about who
		// monitors whom; only a settled predecessor is expected here.
		if c.watchOf(c.idOf(p)) == nil && now-p.changedAt > expectGrace {
			w := &watch{id: c.idOf(p), generation: c.v(p).state.Generation, maxVersion: c.v(p).maxVersion}
			w.window.Report(now, c.opts.Phi)
			c.addWatch(w)
		}
	}
}

// watchOf returns the watch of a node, or nil.
func (c *Core) watchOf(id string) *watch {
	i, ok := slices.BinarySearchFunc(c.watched, id, func(w *watch, id string) int { return strings.Compare(w.id, id) })
	if !ok {
		return nil
	}
	return c.watched[i]
}

// addWatch adds (or replaces) the watch of a node.
func (c *Core) addWatch(w *watch) {
	i, ok := slices.BinarySearchFunc(c.watched, w.id, func(w *watch, id string) int { return strings.Compare(w.id, id) })
	if ok {
		c.watched[i] = w
		return
	}
	c.watched = slices.Insert(c.watched, i, w)
}

// unwatch stops watching a node.
func (c *Core) unwatch(id string) {
	c.watched = slices.DeleteFunc(c.watched, func(w *watch) bool { return w.id == id })
}

// checkWatched runs each watch's probe (see probeStage): a node silent for
// longer than phi allows is probed directly; one that does not answer
// within ProbeTimeout is probed again, directly and through IndirectProbes
// other members; one that answers none of them within ProbeTimeout is
// suspect, and its other monitors are told. A suspicion another monitor
// shares convicts at once; one nobody confirms, after SuspectTimeout.
func (c *Core) checkWatched(now time.Duration, r *membership.Ready) {
	for i := 0; i < len(c.watched); i++ {
		w := c.watched[i]
		e := c.watchedEntry(w)
		if e == nil || c.v(e).state.Generation != w.generation || e.isLeft() || e.shutdown() {
			if e == nil || c.v(e).state.Generation > w.generation || e.isLeft() || e.shutdown() {
				c.watched = slices.Delete(c.watched, i, i+1)
				i--
			}
			continue
		}
		if w.convictedAt > 0 {
			// Declared dead, yet a newer state turned up: a refutation or a
			// change made just before dying. Probe again to tell which.
			if !e.dead() {
				w.convictedAt, w.stage = 0, idle
			}
			continue
		}
		if e.dead() {
			// Another monitor convicted it: nothing to add unless it refutes.
			w.stage = idle
			continue
		}
		switch w.stage {
		case idle:
			if !w.window.Convicted(now, c.opts.Phi) {
				continue
			}
			c.probeSeq++
			w.probeSeq, w.stage, w.since = c.probeSeq, probing, now
			send(r, w.id, &Probe{Seq: w.probeSeq})
		case probing:
			if now-w.since < c.opts.ProbeTimeout {
				continue
			}
			w.stage, w.since = indirect, now
			send(r, w.id, &Probe{Seq: w.probeSeq})
			req := &ProbeReq{Target: w.id, Seq: w.probeSeq}
			helpers := c.helpers(e, c.opts.IndirectProbes)
			for _, h := range helpers {
				send(r, c.idOf(h), req)
			}
			w.asked, w.receipts = len(helpers), 0
		case indirect:
			if now-w.since < c.opts.ProbeTimeout {
				continue
			}
			if w.asked > 0 && w.receipts == 0 && w.doubts < selfDoubts {
				// Not even the members asked to help answered: this node may
				// be the one cut off (Lifeguard's local health). It doubts
				// itself and probes again before it suspects anyone.
				w.doubts++
				w.stage, w.since = probing, now
				send(r, w.id, &Probe{Seq: w.probeSeq})
				continue
			}
			w.stage, w.since = suspected, now
			c.event(r, membership.EventSuspect, e)
			if w.confirmed {
				// Another monitor suspects it already: its verdict now.
				c.convict(now, e, w, r)
				continue
			}
			// The node's other monitors confirm or contradict; the node
			// itself, should it hear this, answers at once.
			suspect := &Suspect{ID: w.id, Generation: w.generation, Seq: w.probeSeq}
			for _, m := range c.ownDC().successors(e, c.opts.Monitors+1) {
				if m != c.self {
					send(r, c.idOf(m), suspect)
				}
			}
			send(r, w.id, suspect)
		case suspected:
			if w.confirmed || now-w.since >= c.opts.SuspectTimeout {
				c.convict(now, e, w, r)
			}
		}
	}
}

// watchedEntry is c.entry(w.id), found once: a member's number never changes
// and its slot never moves, so every tick after the first reads the slot
// straight away, not a map and the chunk list first (checkWatched runs at
// every tick for every watched node).
func (c *Core) watchedEntry(w *watch) *entry {
	if w.slot == nil {
		m := c.table.lookup(w.id)
		if m == nil {
			return nil
		}
		w.slot = c.entries.make(m.num)
	}
	if w.slot.ver == 0 {
		return nil
	}
	return w.slot
}

// helpers picks up to k live members of this DC, other than this node and
// target, to probe target for it.
func (c *Core) helpers(target *entry, k int) []*entry {
	var out []*entry
	v := c.ownDC()
	n := len(v.members)
	for tries := 0; len(out) < k && tries < 4*k+8; tries++ {
		e := v.at(c.cfg.Rand.IntN(n))
		if e != c.self && e != target && e.live() && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// expireRelays forgets the probes for others that were never answered.
func (c *Core) expireRelays(now time.Duration) {
	c.relays = slices.DeleteFunc(c.relays, func(x relay) bool { return now >= x.until })
}

// convict declares a watched node dead at the newest version known of it,
// and tells every live member of the DC at once.
func (c *Core) convict(now time.Duration, e *entry, w *watch, r *membership.Ready) {
	w.convictedAt = max(w.maxVersion, c.v(e).maxVersion)
	w.stage = idle
	c.learn(now, Delta{State: c.v(e).state, DeadAt: w.convictedAt}, false, r)
	c.announce([]*entry{e}, r)
}

// announce sends verdicts to every live member of this DC at once, in one
// Push of death notices, rather than as a rumour that takes rounds: a
// failure costs a few small messages per member, once. The DC's gateways
// get it with everyone: they echo it to the DC (see learnAll), so that a
// member that lost one notice has another at once, and ferry it across; a
// gateway of another DC that receives it announces it in its own DC the
// same way. It is still pushed as a rumour too, which repairs what every
// notice missed.
func (c *Core) announce(verdicts []*entry, r *membership.Ready) {
	if len(verdicts) == 0 {
		return
	}
	push := &Push{Entries: make([]Delta, len(verdicts))}
	for i, e := range verdicts {
		push.Entries[i] = c.notice(e)
		c.markHot(e)
		if c.viewOf(e) == c.ownDC() && c.isGateway() {
			c.markForward(e)
		}
	}
	for m := range c.ownDC().all() {
		if m != c.self && m.live() {
			send(r, c.idOf(m), push)
		}
	}
}

// watchRemoteDCs runs a gateway's watch of every other DC (see dcWatch): a
// DC silent for as long as a monitor lets a node be silent is probed, and
// convicted after ProbeAttempts rounds of probes that no member answers. A
// node that is not a gateway sends no summaries across, so it expects no
// answers and watches nothing.
func (c *Core) watchRemoteDCs(now time.Duration, r *membership.Ready) {
	if !c.isGateway() {
		clear(c.remote)
		return
	}
	for _, v := range c.dcs {
		if v == c.ownDC() {
			continue
		}
		w := c.remote[v.name]
		if !v.anyLive() {
			// Nothing left to convict; a member that comes back (a restart,
			// a refutation after a partition) starts a fresh watch.
			delete(c.remote, v.name)
			continue
		}
		if w == nil {
			// Expect the DC from now on, as a monitor expects a settled
			// predecessor, even before hearing from it. This counts as the
			// round's arrival: an answer later in the round adds no
			// interval of a fraction of a round to the window.
			w = &dcWatch{heard: true}
			w.window.Report(now, c.opts.Phi)
			c.remote[v.name] = w
			continue
		}
		if w.probes == 0 && !w.window.Convicted(now, c.opts.Phi) {
			continue
		}
		if w.probes > 0 && now-w.since < c.opts.RemoteProbeTimeout {
			continue
		}
		live := v.firstLive(len(v.members), nil)
		if w.probes >= c.opts.ProbeAttempts {
			c.convictDC(now, live, r)
			delete(c.remote, v.name)
			continue
		}
		if w.probes == 1 {
			for _, e := range live {
				c.event(r, membership.EventSuspect, e)
			}
		}
		for _, e := range spread(live, c.opts.DCProbes, w.probes) {
			// Seq 0 matches no watch of a monitor: any answer from the DC
			// clears the DC's watch, whoever sends it.
			send(r, c.idOf(e), &Probe{})
		}
		w.probes++
		w.since = now
	}
}

// spread picks up to k of members evenly over the ring, shifted by round so
// that successive rounds probe other members.
func spread(members []*entry, k, round int) []*entry {
	n := len(members)
	k = min(k, n)
	out := make([]*entry, 0, k)
	for i := range k {
		out = append(out, members[(i*n/k+round)%n])
	}
	return out
}

// convictDC declares every live member of a silent DC dead at the newest
// version known of it, and announces it in this DC. It is not ferried on:
// every other DC's gateways judge the silent DC themselves.
func (c *Core) convictDC(now time.Duration, live []*entry, r *membership.Ready) {
	for _, e := range live {
		c.learn(now, Delta{State: c.v(e).state, DeadAt: c.v(e).maxVersion}, false, r)
	}
	c.announce(live, r)
}

// originate makes a change that started here travel: pushed in this DC and
// handed straight to the DC's gateways, which ferry it to the other DCs.
func (c *Core) originate(e *entry, r *membership.Ready) {
	c.markHot(e)
	if c.isGateway() {
		c.markForward(e)
		return
	}
	for _, g := range c.ownDC().firstLive(c.opts.Gateways, c.self) {
		send(r, c.idOf(g), &Push{Entries: []Delta{c.delta(e)}})
	}
}

// markHot queues e to be pushed for HotRounds rounds. Beyond four
// summaries' worth of changes (a burst of joins) the rest is left to
// anti-entropy, so the queue never grows with n.
func (c *Core) markHot(e *entry) {
	if e.hot == 0 {
		if len(c.hot) >= 4*c.opts.MaxHot {
			return
		}
		c.hot = append(c.hot, e)
	}
	e.hot = int8(c.opts.HotRounds)
}

// markBurst queues a member new to this node, which it is the first of its
// DC to know (it admitted the member, or heard of it from another DC), to be
// announced at its next tick to every live member of its DC (see
// announceBurst). A burst of joins (a batch of nodes started together) then
// reaches the DC in a LAN hop, one Push per member per tick, where the
// rumours carry only MaxHot changes per summary and leave the rest to
// anti-entropy, whose exchanges compare whole buckets while the views
// differ. The queue holds at most 4×MaxBurst members; the rest of a larger
// burst is still pushed as rumours and repaired by anti-entropy.
func (c *Core) markBurst(e *entry) {
	if e.flags&flagBurst != 0 || len(c.burst) >= 4*c.opts.MaxBurst {
		return
	}
	e.flags |= flagBurst
	c.burst = append(c.burst, uint32(c.v(e).member.num))
}

// announceBurst sends the oldest members of the burst queue (see
// markBurst), as they are now, in one Push to every live member of this
// DC: MaxBurst of them, fewer when their bytes times the receivers would
// pass MaxBurstBytes. The DC's gateways get it with everyone and ferry
// those of their own DC across, as any change they learn; a member that
// lost the Push learns them from the rumours or anti-entropy.
func (c *Core) announceBurst(r *membership.Ready) {
	if len(c.burst) == 0 {
		return
	}
	var to []*entry
	for m := range c.ownDC().all() {
		if m != c.self && m.live() {
			to = append(to, m)
		}
	}
	push := &Push{}
	taken, bytes := 0, 0
	for _, num := range c.burst {
		if len(push.Entries) == c.opts.MaxBurst {
			break
		}
		// A member removed since it was queued (its slot emptied, or
		// filled again by its next generation, unflagged) is not news.
		e := c.slot(int(num))
		if e == nil || e.flags&flagBurst == 0 {
			taken++
			continue
		}
		d := c.delta(e)
		size := deltaCodec.size(&d)
		if len(push.Entries) > 0 && (bytes+size)*len(to) > c.opts.MaxBurstBytes {
			break
		}
		taken++
		e.flags &^= flagBurst
		push.Entries = append(push.Entries, d)
		bytes += size
	}
	c.burst = c.burst[:copy(c.burst, c.burst[taken:])]
	if len(push.Entries) == 0 {
		return
	}
	for _, m := range to {
		send(r, c.idOf(m), push)
	}
}

// markForward queues an own-DC change for the other DCs.
func (c *Core) markForward(e *entry) {
	if e.flags&flagForward == 0 {
		e.flags |= flagForward
		c.forward = append(c.forward, e)
	}
}

// gossip sends this round's summaries inside the DC: to one random live
// peer, or to HotFanout peers while there are changes to push.
func (c *Core) gossip(r *membership.Ready) {
	var hot []Delta
	kept := c.hot[:0]
	for _, e := range c.hot {
		if len(hot) < c.opts.MaxHot {
			hot = append(hot, c.delta(e))
			e.hot--
		}
		if e.hot > 0 {
			kept = append(kept, e)
		} else {
			c.dropDetached(e)
		}
	}
	clear(c.hot[len(kept):])
	c.hot = kept
	fanout := 1
	if len(hot) > 0 {
		fanout = c.opts.HotFanout
	}
	peers := c.randomPeers(c.ownDC(), fanout)
	if dead := c.gossipToTheDead(); dead != nil {
		peers = append(peers, dead)
	}
	if len(peers) == 0 {
		return
	}
	m := &Summary{Sums: c.total(), Hot: hot}
	for _, p := range peers {
		send(r, c.idOf(p), m)
	}
}

// gossipToTheDead picks, now and then, an unreachable member of the DC (convicted, or shut
// down) to send the round's summary to: a member convicted while alive on the far side of
// a partition hears of nobody and is watched by nobody once the partition heals, a member
// restarted after announcing its shutdown may have no seed to call, and inside one DC (or
// a DC cut off whole) no gateway calls on either. As in Cassandra, a round picks one with
// probability dead/(live+1), so the cost is nothing while all are up and one message a
// round at most.
func (c *Core) gossipToTheDead() *entry {
	v := c.ownDC()
	live, dead := v.live, v.unreachable
	if c.self.live() {
		live--
	}
	if c.self.unreachable() {
		dead--
	}
	if dead == 0 || c.cfg.Rand.Float64() >= float64(dead)/float64(live+1) {
		return nil
	}
	pick := c.cfg.Rand.IntN(dead)
	for e := range v.all() {
		if e != c.self && e.unreachable() {
			if pick == 0 {
				return e
			}
			pick--
		}
	}
	return nil
}

// randomPeers picks up to k distinct live members of v other than self.
func (c *Core) randomPeers(v *dcView, k int) []*entry {
	var out []*entry
	n := len(v.members)
	for tries := 0; len(out) < k && tries < 4*k+8; tries++ {
		e := v.at(c.cfg.Rand.IntN(n))
		if e != c.self && e.live() && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// total is the summary of the whole cluster as one sum with no DC name: the
// member count and the XOR of every DC's hash. It is what a round's
// summary carries (a few bytes, whatever the number of DCs); only when two
// totals differ do the two nodes compare per DC (sums).
func (c *Core) total() []DCSum {
	t := DCSum{}
	for _, v := range c.dcs {
		t.Count += uint64(len(v.members))
		t.Hash ^= v.hash
	}
	return []DCSum{t}
}

// sums is the summary of every DC this node knows.
func (c *Core) sums() []DCSum {
	out := make([]DCSum, len(c.dcs))
	for i, v := range c.dcs {
		out[i] = v.sum()
	}
	return out
}

// wanRound sends a gateway's summary to each other DC, to one of that DC's
// gateways — or, after unanswered summaries, to a widening set of its live
// members, so a DC whose gateways all failed at once is still reached.
func (c *Core) wanRound(r *membership.Ready) {
	for _, v := range c.dcs {
		if v == c.ownDC() {
			continue
		}
		if t := c.remoteTarget(v); t != nil {
			c.wanMisses[v.name]++
			send(r, c.idOf(t), &Summary{Sums: c.total(), Reply: true})
		}
	}
}

// remoteTarget picks a node of another DC to talk to. When every member
// of that DC is down here (it went dark, or a WAN partition made it look
// so) the gateways keep calling on its members all the same, so that the
// two sides find each other again once it is back.
func (c *Core) remoteTarget(v *dcView) *entry {
	width := c.opts.Gateways << min(c.wanMisses[v.name]/3, 8)
	candidates := v.firstLive(width, nil)
	if len(candidates) == 0 {
		for i := range min(width, len(v.members)) {
			candidates = append(candidates, v.at(i))
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	return candidates[c.cfg.Rand.IntN(len(candidates))]
}

// flush sends what a gateway has to ferry: one Push per other DC.
func (c *Core) flush(r *membership.Ready) {
	if len(c.forward) == 0 {
		return
	}
	var push Push
	for _, e := range c.forward {
		e.flags &^= flagForward
		push.Entries = append(push.Entries, c.delta(e))
		c.dropDetached(e)
	}
	clear(c.forward)
	c.forward = c.forward[:0]
	if !c.isGateway() {
		return
	}
	for _, v := range c.dcs {
		if v == c.ownDC() {
			continue
		}
		if t := c.remoteTarget(v); t != nil {
			send(r, c.idOf(t), &push)
		}
	}
}

// removeLongDown forgets members dead or departed for RemoveAfter.
func (c *Core) removeLongDown(now time.Duration, r *membership.Ready) {
	removeAfter := c.cfg.RemoveAfterOrDefault()
	kept := c.down[:0]
	for _, d := range c.down {
		e := d.e
		if e.live() {
			continue // came back; no longer awaiting removal
		}
		if now-d.since <= removeAfter {
			kept = append(kept, d)
			continue
		}
		c.viewOf(e).remove(e)
		c.known--
		c.unwatch(c.idOf(e))
		c.quarantine.Add(c.idOf(e), c.v(e).state.Generation, now+removeAfter)
		c.event(r, membership.EventRemoved, e)
		c.remove(e)
	}
	clear(c.down[len(kept):])
	c.down = kept
}

// remove empties the slot of a removed entry, for the member's next
// generation. An entry still queued to push or forward is what the queue
// goes on sending until it is done with it, as it would be were the entry
// its own allocation: it moves out of the slot, into one.
func (c *Core) remove(e *entry) {
	if e.hot > 0 || e.flags&flagForward != 0 {
		d := new(entry)
		*d = *e
		d.flags |= flagDetached
		for i := range c.hot {
			if c.hot[i] == e {
				c.hot[i] = d
			}
		}
		for i := range c.forward {
			if c.forward[i] == e {
				c.forward[i] = d
			}
		}
	} else {
		c.table.release(e.ver)
	}
	*e = entry{}
}

// dropDetached releases the version of a removed entry (see remove) once no
// queue holds it.
func (c *Core) dropDetached(e *entry) {
	if e.flags&flagDetached != 0 && e.hot == 0 && e.flags&flagForward == 0 {
		c.table.release(e.ver)
	}
}

// Step handles one message.
func (c *Core) Step(now time.Duration, from string, m membership.Message) (r membership.Ready) {
	r = c.ready()
	defer c.done(&r)
	if c.quiet() {
		return r
	}
	remote := false
	if e := c.entry(from); e != nil && c.viewOf(e) != c.ownDC() {
		remote = true
		// A probe's answer shows that the DC is up, not that the members
		// this node sends its summaries to answer them.
		if _, ack := m.(*ProbeAck); !ack {
			c.wanMisses[c.viewOf(e).name] = 0
		}
		if w := c.remote[c.viewOf(e).name]; w != nil {
			w.hear(now, answers(m), c.opts.Phi)
		}
	}
	switch m := m.(type) {
	case *Summary:
		c.announce(c.learnAll(now, m.Hot, remote, &r), &r)
		c.onSummary(from, m, &r)
	case *Buckets:
		if len(m.DCs) == 0 {
			// The answer to a summary that matched: this view is theirs.
			c.markSynced(c.entry(from), &r)
		}
		c.onBuckets(from, m, &r)
	case *Digests:
		c.onDigests(from, m, &r)
	case *Deltas:
		c.announce(c.learnAll(now, m.Entries, remote, &r), &r)
		if len(m.Requests) > 0 {
			if reply := c.answer(m.Requests); len(reply) > 0 {
				send(&r, from, &Deltas{Entries: reply})
			}
		}
	case *Push:
		c.announce(c.learnAll(now, m.Entries, remote, &r), &r)
	case *Heartbeat:
		c.onHeartbeat(now, from, m)
	case *Probe:
		send(&r, from, &ProbeAck{Seq: m.Seq, Monitored: slices.Contains(c.monitors, from)})
	case *ProbeAck:
		if w := c.watchOf(from); w != nil && w.stage != idle && w.probeSeq == m.Seq {
			w.heard(now, c.opts.Phi)
			w.direct, w.hasDirect = now, true
			if !m.Monitored {
				c.unwatch(from)
			}
		}
		c.relayAck(from, m.Seq, &r)
	case *ProbeReq:
		c.probeFor(now, from, m, &r)
	case *IndirectAck:
		if w := c.watchOf(m.Target); w != nil && w.stage != idle && w.probeSeq == m.Seq {
			if m.Alive {
				w.heard(now, c.opts.Phi)
			} else {
				w.receipts++
			}
		}
	case *Suspect:
		c.onSuspect(now, from, m, &r)
	case *Join:
		c.onJoin(now, from, m, &r)
	case *Welcome:
		// The full state is news to this node only: nothing to push.
		for _, d := range m.Entries {
			c.learn(now, d, false, &r)
		}
		c.joined = true
		c.markSynced(c.entry(from), &r)
	case *Redirect:
		if len(m.Gateways) > 0 && (!c.joined || c.lost(now)) {
			for _, g := range m.Gateways {
				c.learn(now, g, false, &r) // so that the driver can reach them
			}
			gw := m.Gateways[c.cfg.Rand.IntN(len(m.Gateways))]
			send(&r, gw.State.ID, &Join{State: c.v(c.self).state})
		}
	}
	c.flush(&r)
	return r
}

// onSummary compares per-DC sums and answers with the bucket hashes of the
// DCs that differ. A total (one sum with no DC name, see total) that
// differs is answered with this node's per-DC sums, which the sender
// compares in turn.
func (c *Core) onSummary(from string, m *Summary, r *membership.Ready) {
	if len(m.Sums) == 1 && m.Sums[0].DC == "" {
		switch {
		case m.Sums[0] != c.total()[0]:
			send(r, from, &Summary{Sums: c.sums()})
		case m.Reply:
			c.markSynced(c.entry(from), r)
			send(r, from, &Buckets{})
		default:
			c.markSynced(c.entry(from), r)
		}
		return
	}
	var reply Buckets
	theirs := make(map[string]DCSum, len(m.Sums))
	for _, s := range m.Sums {
		theirs[s.DC] = s
		if v := c.findView(s.DC); v == nil || v.sum() != s {
			reply.DCs = append(reply.DCs, c.bucketsOf(s.DC))
		}
	}
	for _, v := range c.dcs {
		if _, ok := theirs[v.name]; !ok && len(v.members) > 0 {
			reply.DCs = append(reply.DCs, c.bucketsOf(v.name))
		}
	}
	if len(reply.DCs) == 0 {
		// The sender's view is this node's: whatever it learned from, it
		// now knows what a member of the cluster knows.
		c.markSynced(c.entry(from), r)
	}
	if len(reply.DCs) > 0 || m.Reply {
		send(r, from, &reply)
	}
}

// lost reports whether this node is a seed that has run for syncPatience
// without meeting the cluster. A seed counts as joined from its first round
// so that it can admit others, and at a cluster's start the others come to
// it; a seed that restarts, or joins a running cluster, finds nobody coming
// (its old self is dead to them, its new self unknown) and, as long as it
// ignores redirects, no seed admits it. Once lost it follows redirects like
// any joiner, so that its DC admits it and sends it the cluster's state.
func (c *Core) lost(now time.Duration) bool {
	return !c.synced && c.ticked && now-c.firstTick >= syncPatience
}

// markSynced reports EventSynced, once: this node's view is now (at least)
// that of from, a member already in the cluster. A node that joins gets it
// with its Welcome; a seed, which admits others before it knows anyone, gets
// it once a summary shows that its view matches another member's.
func (c *Core) markSynced(from *entry, r *membership.Ready) {
	if c.synced || from == nil {
		return
	}
	c.synced = true
	c.event(r, membership.EventSynced, from)
}

// bucketsOf is the bucket hashes of a DC (all zero when unknown).
func (c *Core) bucketsOf(dc string) DCBuckets {
	if v := c.findView(dc); v != nil {
		return DCBuckets{DC: dc, Hashes: slices.Clone(v.buckets)}
	}
	return DCBuckets{DC: dc, Hashes: make([]uint64, c.opts.Buckets)}
}

// onBuckets finds the buckets that differ and sends their digests.
func (c *Core) onBuckets(from string, m *Buckets, r *membership.Ready) {
	var out Digests
	digests := 0
	for _, b := range m.DCs {
		if len(b.Hashes) != c.opts.Buckets {
			continue
		}
		v := c.findView(b.DC)
		for i, h := range b.Hashes {
			if h != v.bucketHash(i) {
				out.Buckets = append(out.Buckets, BucketRef{DC: b.DC, Index: uint64(i)})
				if v != nil {
					digests += int(v.sizes[i])
				}
			}
		}
	}
	if len(out.Buckets) == 0 {
		return
	}
	out.Entries = make([]Digest, 0, digests)
	var v *dcView
	var order, start []int32
	for _, b := range out.Buckets {
		if v == nil || v.name != b.DC {
			if v = c.findView(b.DC); v == nil {
				continue
			}
			order = nil
		}
		bucket := int(b.Index)
		if list := c.table.sharedDigests(v, bucket); list != nil {
			out.Entries = append(out.Entries, list...)
			continue
		}
		if order == nil {
			order, start = v.byBucket()
		}
		first := len(out.Entries)
		for _, i := range order[start[bucket]:start[bucket+1]] {
			out.Entries = append(out.Entries, c.digest(v.at(int(i))))
		}
		c.table.shareDigests(v, bucket, out.Entries[first:])
	}
	send(r, from, &out)
}

// onDigests compares entries bucket by bucket: sends what the other side
// lacks, requests what this side lacks. A digest whose entry it compared
// in the buckets (most of them) and found as new needs no second look.
func (c *Core) onDigests(from string, m *Digests, r *membership.Ready) {
	nums, theirs, current, shared := c.table.indexDigests(m.Entries)
	defer c.table.unindexDigests()
	var out Deltas
	// compare compares this node's entry of member num, at version ver and
	// dead or not, with the sender's digest of it; it reads the entry only
	// when the two differ.
	compare := func(num, ver uint32, dead bool) {
		at := theirs[num]
		if at == 0 {
			out.Entries = append(out.Entries, c.delta(c.entries.of(num)))
			return
		}
		d := m.Entries[at-1]
		if shared && d.hint.ver == ver && d.Dead == dead {
			// The same version of the shared table: equal, and no need
			// to read it (most digests of an exchange match).
			current[at-1] = true
			return
		}
		e := c.entries.of(num)
		mine := c.digest(e)
		switch {
		case d.Generation < mine.Generation:
			out.Entries = append(out.Entries, c.delta(e))
		case newer(mine, d):
			ev := c.v(e)
			out.Entries = append(out.Entries, Delta{State: ev.state.Since(d.MaxVersion), DeadAt: e.deadAt, hint: c.hint(ev)})
		}
		current[at-1] = !newer(d, mine)
	}
	var grouped *dcView
	var order, start []int32
	for _, b := range m.Buckets {
		v := c.findView(b.DC)
		if v == nil || b.Index >= uint64(len(v.buckets)) {
			continue
		}
		if list := c.table.sharedDigests(v, int(b.Index)); list != nil {
			// Another core sent this bucket's entries as they are here,
			// in the same order: its list tells their versions without a
			// read of this node's entries.
			for i := range list {
				compare(uint32(list[i].hint.num), list[i].hint.ver, list[i].Dead)
			}
			continue
		}
		if v != grouped {
			grouped = v
			order, start = v.byBucket()
		}
		for _, i := range order[start[b.Index]:start[b.Index+1]] {
			num := v.members[i]
			e := v.entries.of(num)
			compare(num, e.ver, e.dead())
		}
	}
	for i, d := range m.Entries {
		if current[i] {
			continue // compared above: nothing to request
		}
		var e *entry
		if nums[i] >= 0 {
			e = c.slot(int(nums[i]))
		}
		if e == nil {
			// No entry here, but a table shared with the sender numbers the
			// member all the same: its hint goes back with the request.
			out.Requests = append(out.Requests, Digest{ID: d.ID, hint: hint{table: d.hint.table, num: d.hint.num}})
		} else if newer(d, c.digest(e)) {
			out.Requests = append(out.Requests, c.digest(e))
		}
	}
	if len(out.Entries) > 0 || len(out.Requests) > 0 {
		send(r, from, &out)
	}
}

// answer builds the deltas for requests (each carries the requester's
// version of the entry, or none).
func (c *Core) answer(requests []Digest) []Delta {
	var out []Delta
	for _, d := range requests {
		e := c.entryOf(d.hint, d.ID)
		if e == nil {
			continue
		}
		if d.Generation == c.v(e).state.Generation {
			out = append(out, Delta{State: c.v(e).state.Since(d.MaxVersion), DeadAt: e.deadAt, hint: c.hint(c.v(e))})
		} else {
			out = append(out, c.delta(e))
		}
	}
	return out
}

// onHeartbeat records a heartbeat from a node that chose this one as its
// monitor.
func (c *Core) onHeartbeat(now time.Duration, from string, m *Heartbeat) {
	w := c.watchOf(from)
	if m.Stop {
		c.unwatch(from)
		return
	}
	if w == nil || m.Generation > w.generation {
		w = &watch{id: from, generation: m.Generation}
		c.addWatch(w)
	}
	if m.Generation < w.generation {
		return
	}
	w.maxVersion = max(w.maxVersion, m.MaxVersion)
	w.heard(now, c.opts.Phi)
	w.direct, w.hasDirect = now, true
	w.convictedAt = 0
}

// probeFor probes a node for a monitor that could not reach it (ProbeReq),
// and says at once that it got the request.
func (c *Core) probeFor(now time.Duration, from string, m *ProbeReq, r *membership.Ready) {
	if m.Target == c.cfg.ID {
		send(r, from, &IndirectAck{Target: m.Target, Seq: m.Seq, Alive: true})
		return
	}
	send(r, from, &IndirectAck{Target: m.Target, Seq: m.Seq})
	if len(c.relays) >= 64 {
		return // a burst of requests: the oldest still wait for their answers
	}
	c.probeSeq++
	c.relays = append(c.relays, relay{seq: c.probeSeq, target: m.Target, requester: from, reqSeq: m.Seq,
		until: now + 2*c.opts.ProbeTimeout})
	send(r, m.Target, &Probe{Seq: c.probeSeq})
}

// relayAck passes a probed node's answer on to the monitor that asked for
// the probe, if the answer is to such a probe.
func (c *Core) relayAck(from string, seq uint64, r *membership.Ready) {
	for i, x := range c.relays {
		if x.seq == seq && x.target == from {
			send(r, x.requester, &IndirectAck{Target: x.target, Seq: x.reqSeq, Alive: true})
			c.relays = slices.Delete(c.relays, i, i+1)
			return
		}
	}
}

// onSuspect handles another monitor's suspicion of a node (see Suspect): it
// confirms this node's own suspicion, or starts its probe at once; this
// node contradicts it while it still hears the node; the node itself
// answers that it is alive.
func (c *Core) onSuspect(now time.Duration, from string, m *Suspect, r *membership.Ready) {
	if m.ID == c.cfg.ID {
		if m.Generation == c.v(c.self).state.Generation {
			send(r, from, &IndirectAck{Target: m.ID, Seq: m.Seq, Alive: true})
		}
		return
	}
	w := c.watchOf(m.ID)
	e := c.entry(m.ID)
	if w == nil || e == nil || w.generation != m.Generation || c.v(e).state.Generation != m.Generation || e.dead() {
		return
	}
	switch {
	case w.stage == suspected:
		c.convict(now, e, w, r)
	case w.stage == idle && w.hasDirect && now-w.direct <= vouchWithin:
		// This monitor still hears the node itself: the sender's links to
		// it are what failed, not the node.
		send(r, from, &IndirectAck{Target: m.ID, Seq: m.Seq, Alive: true})
	case w.stage == idle:
		// It has not heard the node first-hand for a while either: probe
		// it now rather than when its own detector would, so that the
		// suspicion is confirmed (or not) within a second.
		w.confirmed = true
		c.probeSeq++
		w.probeSeq, w.stage, w.since = c.probeSeq, probing, now
		send(r, w.id, &Probe{Seq: w.probeSeq})
	default:
		w.confirmed = true
	}
}

// onJoin admits a node: its state spreads from here; it gets the full
// state, or, when it belongs to another DC whose members this node knows,
// the names of that DC's gateways.
func (c *Core) onJoin(now time.Duration, from string, m *Join, r *membership.Ready) {
	// A node not admitted yet admits nobody, unless it has waited syncPatience in vain:
	// its seeds may all be waiting to be admitted themselves (a whole cluster restarted,
	// each node seeded by the others only), and the first Welcome ends the wait for all.
	if !c.joined && !c.lost(now) || m.State.ID != from {
		return
	}
	dc, _ := m.State.Value(membership.KeyDC)
	if dc != c.cfg.DC {
		if v := c.findView(dc); v != nil {
			if gws := v.firstLive(c.opts.Gateways, c.entry(from)); len(gws) > 0 {
				redirect := &Redirect{Gateways: make([]Delta, len(gws))}
				for i, g := range gws {
					redirect.Gateways[i] = c.delta(g)
				}
				send(r, from, redirect)
				return
			}
		}
	}
	if e := c.learn(now, Delta{State: m.State}, false, r); e != nil {
		c.originate(e, r)
		c.markBurst(e)
	}
	welcome := &Welcome{Entries: make([]Delta, 0, c.known)}
	for _, v := range c.dcs {
		for e := range v.all() {
			welcome.Entries = append(welcome.Entries, c.delta(e))
		}
	}
	send(r, from, welcome)
}

// learnAll folds in a list of deltas; remote says they came from another
// DC. It returns the verdicts (members put down: convicted or shut down)
// that this node announces in its DC at once (see announce): those about
// other DCs' members that come from across, which make it the first of its
// DC to hear them (ferried by the gateways of the member's DC, or, when a
// DC went dark and another DC's gateways judged it first, in the repairs
// between gateways or a rumour); and, at a gateway, every verdict it
// learns, which it echoes to its DC: a member that lost one notice then
// has another within a LAN hop, from another sender. A member new to this
// node that comes from across is queued for announcing too (markBurst).
func (c *Core) learnAll(now time.Duration, deltas []Delta, remote bool, r *membership.Ready) []*entry {
	if len(deltas) == 0 {
		// Most summaries carry no rumour: spare them the gateway check.
		return nil
	}
	var down []*entry
	gateway := c.isGateway()
	for _, d := range deltas {
		if remote {
			d = c.screen(d, r)
		}
		before := c.entryOf(d.hint, d.State.ID)
		wasDown := before != nil && before.down()
		e := c.learn(now, d, true, r)
		if e != nil && before == nil && remote && e.live() && c.viewOf(e) != c.ownDC() {
			// A new member of another DC, heard of from across: this node
			// is the first of its DC to know it.
			c.markBurst(e)
		}
		if e == nil || !e.down() || e.isLeft() || wasDown {
			continue
		}
		if gateway || (remote && c.viewOf(e) != c.ownDC()) {
			down = append(down, e)
		}
	}
	return down
}

// screen keeps another DC's verdict from killing a live member of this
// node's own DC. Another DC convicts this DC's members only when it hears
// nothing from the whole DC (a WAN partition, seen from the other side);
// the member's own monitors, one LAN hop away, know better. The notice goes
// on to the member itself: alive, it refutes it, and the refutation tells
// the other DC it was wrong; dead, its monitors convict it anyway.
func (c *Core) screen(d Delta, r *membership.Ready) Delta {
	e := c.entryOf(d.hint, d.State.ID)
	if e == nil || e == c.self || c.viewOf(e) != c.ownDC() || !e.live() || d.State.Generation != c.v(e).state.Generation ||
		d.DeadAt < max(c.v(e).maxVersion, d.State.MaxVersion()) {
		return d
	}
	send(r, c.idOf(e), &Push{Entries: []Delta{d}})
	d.DeadAt = 0
	return d
}

// learn folds one delta into the tables and reports what changed; with
// spread it queues the change for pushing. It returns the entry when
// something changed.
func (c *Core) learn(now time.Duration, d Delta, spread bool, r *membership.Ready) *entry {
	s := d.State
	if s.ID == c.cfg.ID {
		c.refute(d, r)
		return nil
	}
	if c.quarantine.Blocks(s.ID, s.Generation, now) {
		return nil
	}
	e := c.entryOf(d.hint, s.ID)
	if e == nil {
		var dc string
		var ok bool
		if v := d.hint.version(); v != nil && d.hint.table == c.table {
			dc, ok = v.dc, v.hasDC
		} else {
			dc, ok = s.Value(membership.KeyDC)
		}
		if !ok || s.Generation == 0 {
			return nil // a partial delta for a member we do not know
		}
		if len(c.views) > math.MaxUint16 && c.findView(dc) == nil {
			return nil // more DCs than an entry can index: not a real cluster
		}
		var m *member
		if num := c.table.numOf(d.hint, s.ID); num >= 0 {
			m = c.table.byNum[num]
		} else {
			m = c.table.member(s.ID) // new to every core that shares the table
		}
		e = c.insert(c.table.versionOfDelta(m, d), d.DeadAt, now, dc)
		// A member first heard of already down or gone is news too: a restarted node
		// holds it as it was from its stored ring, and only this tells it that the
		// member left meanwhile (explorer seed 5235), as Cassandra tells its
		// subscribers of every new endpoint, dead or not.
		c.event(r, membership.EventJoined, e)
		switch {
		case e.isLeft():
			c.event(r, membership.EventLeft, e)
			c.markDown(now, e)
		case e.down():
			c.event(r, membership.EventDead, e)
			c.markDown(now, e)
		}
		if spread {
			c.changed(e)
		}
		return e
	}
	if d.hint.ver == e.ver && d.hint.table == c.table && c.table.interned != nil && d.DeadAt <= e.deadAt {
		// The very version this node holds, from a core sharing its table:
		// most of the deltas a burst of joins spreads are news to nobody by
		// the time they arrive, and need no merge to say so.
		return nil
	}
	wasDown, wasLeft := e.down(), e.isLeft()
	// Versions are shared and immutable: merge into a copy.
	state := c.v(e).state
	merged := state.Merge(s)
	deadAt := e.deadAt
	switch {
	case merged.Restarted:
		deadAt = d.DeadAt
	case s.Generation == state.Generation:
		deadAt = max(deadAt, d.DeadAt)
	}
	if !merged.Any() && deadAt == e.deadAt {
		return nil
	}
	v := c.viewOf(e)
	v.unlink(e)
	ver := e.ver
	if merged.Any() {
		ver = c.table.versionOf(c.v(e).member, state)
	}
	c.table.set(e, ver, deadAt)
	e.changedAt = now
	v.link(e)
	if merged.Restarted {
		c.event(r, membership.EventRestarted, e)
		wasDown, wasLeft = false, false
	}
	for _, a := range merged.Changed {
		if !merged.Restarted {
			r.Events = append(r.Events, membership.Event{Kind: membership.EventStateChanged, ID: s.ID, Generation: c.v(e).state.Generation, Key: a.Key, Value: a.Value})
		}
	}
	switch {
	case e.isLeft() && !wasLeft:
		c.event(r, membership.EventLeft, e)
		c.markDown(now, e)
	case e.down() && !wasDown:
		// Convicted, or shut down: either way peers must not count on it.
		c.event(r, membership.EventDead, e)
		c.markDown(now, e)
	case !e.down() && wasDown && !merged.Restarted:
		c.event(r, membership.EventAlive, e)
	}
	if spread {
		c.changed(e)
	}
	return e
}

// changed queues a changed entry for pushing and, at a gateway, for the
// other DCs when it is a member of this DC.
func (c *Core) changed(e *entry) {
	c.markHot(e)
	if c.viewOf(e) == c.ownDC() && c.isGateway() {
		c.markForward(e)
	}
}

// markDown records when an entry went down, for removal.
func (c *Core) markDown(now time.Duration, e *entry) {
	for i := range c.down {
		if c.down[i].e == e {
			c.down[i].since = now
			return
		}
	}
	c.down = append(c.down, downEntry{e: e, since: now})
}

// refute answers news of this node's own death with a newer version.
func (c *Core) refute(d Delta, r *membership.Ready) {
	if c.leaving || d.State.Generation != c.v(c.self).state.Generation || d.DeadAt < c.v(c.self).maxVersion {
		return
	}
	c.local.BeatPast(d.DeadAt)
	c.syncSelf()
	c.originate(c.self, r)
}

// syncSelf copies the local state into the node's own entry.
func (c *Core) syncSelf() {
	v := c.ownDC()
	v.unlink(c.self)
	c.table.set(c.self, c.table.versionOf(c.v(c.self).member, c.local.EndpointState), c.self.deadAt)
	v.link(c.self)
}

// SetAppState changes one of the node's own application states.
func (c *Core) SetAppState(_ time.Duration, key, value string) (r membership.Ready) {
	r = c.ready()
	defer c.done(&r)
	c.local.Set(key, value)
	c.syncSelf()
	c.originate(c.self, &r)
	c.flush(&r)
	return r
}

// Leave announces a graceful leave: status left, pushed to the gateways,
// monitors told to stop watching, gossip for LeaveRounds more rounds.
func (c *Core) Leave(_ time.Duration) (r membership.Ready) {
	r = c.ready()
	defer c.done(&r)
	if c.leaving || c.stopped {
		return r
	}
	c.leaving = true
	c.leaveRoundsLeft = c.opts.LeaveRounds
	c.local.Set(membership.KeyStatus, string(membership.StatusLeft))
	c.syncSelf()
	c.originate(c.self, &r)
	c.heartbeat(&r)
	c.flush(&r)
	return r
}

// Shutdown announces that the node is stopping and goes quiet: status
// shutdown, pushed at once to every live member of its DC (its monitors and
// gateways among them, so nobody there waits for a failure detector) and,
// when it was a gateway itself, to one node of each other DC as a gateway
// ferries a change. The node of another DC that receives it announces it in
// its DC at once, as a verdict.
// Unlike Leave it keeps the node in the cluster: peers hold it down until
// it restarts with a newer generation.
func (c *Core) Shutdown(_ time.Duration) (r membership.Ready) {
	r = c.ready()
	defer c.done(&r)
	if c.leaving || c.stopped {
		return r
	}
	wasGateway := c.isGateway()
	c.local.Set(membership.KeyStatus, string(membership.StatusShutdown))
	c.syncSelf()
	push := &Push{Entries: []Delta{c.delta(c.self)}}
	for e := range c.ownDC().all() {
		if e != c.self && e.live() {
			send(&r, c.idOf(e), push)
		}
	}
	if wasGateway {
		for _, v := range c.dcs {
			if v == c.ownDC() {
				continue
			}
			if t := c.remoteTarget(v); t != nil {
				send(&r, c.idOf(t), push)
			}
		}
	}
	c.stopped = true
	return r
}

// Members lists the known members sorted by ID.
func (c *Core) Members() []membership.Member {
	out := make([]membership.Member, 0, c.known)
	for _, chunk := range c.entries.chunks {
		for i := range chunk {
			if e := &chunk[i]; e.ver != 0 {
				out = append(out, c.v(e).state.Member(!e.dead()))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Member returns one known member.
func (c *Core) Member(id string) (membership.Member, bool) {
	e := c.entry(id)
	if e == nil {
		return membership.Member{}, false
	}
	return c.v(e).state.Member(!e.dead()), true
}
