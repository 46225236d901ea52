// Package clockguard keeps a bad clock out of a node's data. Last-writer-wins orders
// writes by their hybrid-logical-clock timestamps, so a node whose wall clock runs ahead
// would stamp writes that beat every later write of its peers, and one running behind
// would stamp writes that lose to earlier ones. The guard measures this node's clock
// against its peers' from the wall times their frames carry, and past a bound it refuses
// to stamp writes (Stamp) or to store a timestamp too far ahead of the cluster (Admit).
//
// Each sample of a peer's clock is kept with the monotonic time it was taken, so that a
// jump of this node's wall clock after the sample (an NTP step, an operator, an injected
// fault) shows at once as a change of the offset, without waiting for new samples: the
// estimate of a peer's clock advances with the monotonic clock, which no one sets.
package clockguard

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kuradb/kura/hlc"
)

// DefaultMaxOffset is the bound of a guard configured without one: how far a node's
// clock may be from its peers', and a timestamp ahead of the cluster's clock.
const DefaultMaxOffset = 500 * time.Millisecond

// ErrClockOffset means this node's clock is too far from its peers' for it to stamp
// writes, or a timestamp is too far ahead of the cluster's time to be stored.
var ErrClockOffset = errors.New("clock offset")

// Config configures a guard.
type Config struct {
	// Clock is the node's hybrid logical clock; required.
	Clock *hlc.Clock
	// Wall reads the node's wall clock, the one Clock reads; nil means time.Now.
	Wall func() time.Time
	// Elapsed reads the node's monotonic clock, as time since an origin of its choice; nil
	// means the process's. Tests fix it, so that the offsets they check are exact however
	// slowly they run.
	Elapsed func() time.Duration
	// MaxOffset bounds how far this node's clock may be from its peers' and how far ahead
	// of the cluster a stored timestamp may be; 0 means DefaultMaxOffset.
	MaxOffset time.Duration
	// Others reports how many other nodes the node shares data with: while it is more than
	// zero and no peer's clock has been sampled, the guard cannot judge this node's clock
	// and refuses to stamp. Nil means none (a node alone).
	Others func() int
	// Measure, when set, samples some peers' clocks (the node pings them) and returns
	// when done. A stamp asked for before any peer was sampled calls it first, so the
	// first write after a start waits a round trip instead of being refused.
	Measure func()
	// Logger is told when the node starts refusing writes for its clock, and when it
	// stops; nil means slog.Default().
	Logger *slog.Logger
}

// Guard measures this node's clock offset and refuses what a bad clock would corrupt. It
// is safe for concurrent use.
type Guard struct {
	clock     *hlc.Clock
	wall      func() time.Time
	maxOffset time.Duration
	others    func() int
	measure   func()
	log       *slog.Logger
	elapsed   func() time.Duration

	// measuring holds one token: one Measure at a time. A channel, not a mutex, because
	// Measure waits on the network: a goroutine queued on a mutex held across that wait
	// would stop the simulator's virtual clock (internal/tools/sim/lifecycle), while one blocked on a
	// channel lets it run on.
	measuring chan struct{}

	mu         sync.Mutex
	samples    map[string]sample // by peer id: the latest
	byAnchor   []sample          // the samples sorted by anchor; nil once they change
	aheadMax   hlc.Timestamp     // the largest timestamp admitted
	lastRefuse string            // the last refusal, for status
	refusing   bool              // the last check refused for the offset: logged once
}

// resampleAfter is how old a peer's sample must be before a new one replaces it: every
// response carries a sample, and one a second per peer is plenty, as the guard follows
// this node's clock between samples itself.
const resampleAfter = time.Second

// sample is one measurement of a peer's clock. Its anchor is the peer's offset plus this
// node's skew (wall clock minus monotonic clock) when it was taken; the peer's offset now
// is the anchor minus the skew now. A jump of this node's wall clock moves the skew, and
// so every peer's offset at once, without a new sample; and since one skew applies to
// all, the samples sorted by anchor are sorted by offset at any time.
type sample struct {
	anchor      time.Duration
	uncertainty time.Duration
	taken       time.Duration // Guard.elapsed()
}

// New returns a guard with no samples.
func New(cfg Config) *Guard {
	if cfg.Clock == nil {
		panic("clockguard: Config.Clock is nil")
	}
	wall := cfg.Wall
	if wall == nil {
		wall = time.Now
	}
	if cfg.MaxOffset <= 0 {
		cfg.MaxOffset = DefaultMaxOffset
	}
	if cfg.Others == nil {
		cfg.Others = func() int { return 0 }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Elapsed == nil {
		start := time.Now()
		cfg.Elapsed = func() time.Duration { return time.Since(start) }
	}
	return &Guard{
		// Round(0) drops the monotonic reading: differences of wall times must show the
		// wall clock's jumps, which monotonic readings hide.
		clock: cfg.Clock, wall: func() time.Time { return wall().Round(0) }, maxOffset: cfg.MaxOffset, others: cfg.Others, measure: cfg.Measure,
		log: cfg.Logger, elapsed: cfg.Elapsed, samples: map[string]sample{}, measuring: make(chan struct{}, 1),
	}
}

// MaxOffset returns the bound the guard enforces.
func (g *Guard) MaxOffset() time.Duration { return g.maxOffset }

// Sample records that peer's wall clock read remote when this node's read local, give or
// take uncertainty (half a round trip: the transport's estimate of how long the reading
// took to arrive).
func (g *Guard) Sample(peer string, remote, local time.Time, uncertainty time.Duration) {
	// The skew is read now, not at local: the two are a moment apart, too little for the
	// wall clock to have been set in between.
	_, skew := g.now()
	taken := g.elapsed()
	g.mu.Lock()
	defer g.mu.Unlock()
	if old, ok := g.samples[peer]; ok && taken-old.taken < resampleAfter {
		return
	}
	g.samples[peer] = sample{anchor: remote.Round(0).Sub(local.Round(0)) + skew, uncertainty: uncertainty, taken: taken}
	g.byAnchor = nil
}

// now reads this node's wall clock and its skew (wall clock minus monotonic clock).
func (g *Guard) now() (wall time.Time, skew time.Duration) {
	mono := g.elapsed()
	wall = g.wall()
	return wall, time.Duration(wall.UnixNano()) - mono
}

// Forget drops a peer's sample: the peer left the cluster.
func (g *Guard) Forget(peer string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.samples, peer)
	g.byAnchor = nil
}

// PeerOffset is a peer's clock as this node measures it now.
type PeerOffset struct {
	Peer        string
	Offset      time.Duration // the peer's clock minus this node's: negative when this node is ahead
	Uncertainty time.Duration
}

// Peers returns the current offset of every sampled peer, by peer id.
func (g *Guard) Peers() []PeerOffset {
	_, skew := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]PeerOffset, 0, len(g.samples))
	for peer, s := range g.samples {
		out = append(out, PeerOffset{Peer: peer, Offset: s.anchor - skew, Uncertainty: s.uncertainty})
	}
	slices.SortFunc(out, func(a, b PeerOffset) int { return strings.Compare(a.Peer, b.Peer) })
	return out
}

// sortedLocked returns the samples sorted by anchor, sorting them once after a change:
// what every write's check reads.
func (g *Guard) sortedLocked() []sample {
	if g.byAnchor == nil {
		g.byAnchor = make([]sample, 0, len(g.samples))
		for _, s := range g.samples {
			g.byAnchor = append(g.byAnchor, s)
		}
		slices.SortFunc(g.byAnchor, func(a, b sample) int { return cmp.Compare(a.anchor, b.anchor) })
	}
	return g.byAnchor
}

// Offset returns this node's clock minus the cluster's (the median of its peers'),
// positive when this node is ahead, and how many peers it was measured against.
func (g *Guard) Offset() (offset time.Duration, peers int) {
	_, skew := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	offset, peers = g.offsetLocked(skew)
	return offset, peers
}

// offsetLocked is Offset at the given skew: minus the median peer's offset.
func (g *Guard) offsetLocked(skew time.Duration) (time.Duration, int) {
	sorted := g.sortedLocked()
	if len(sorted) == 0 {
		return 0, 0
	}
	return skew - sorted[len(sorted)/2].anchor, len(sorted)
}

// Check returns nil when this node's clock may stamp writes: a majority of its sampled
// peers are within MaxOffset of it (beyond any doubt the sampling leaves). It returns an
// error wrapping ErrClockOffset when a majority are not, or when the node has peers but
// has sampled none of them yet, since it then cannot tell.
func (g *Guard) Check() error {
	g.measureFirst()
	return g.checkNow()
}

// checkNow is Check without measuring first.
func (g *Guard) checkNow() error {
	_, skew := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	ps := g.sortedLocked()
	if len(ps) == 0 {
		if others := g.others(); others > 0 {
			return g.refuseLocked(fmt.Errorf("%w: this node has not compared its clock with any of its %d peers yet", ErrClockOffset, others))
		}
		return g.acceptLocked()
	}
	far := 0
	for _, p := range ps {
		if offset := p.anchor - skew; max(offset, -offset)-p.uncertainty > g.maxOffset {
			far++
		}
	}
	if 2*far <= len(ps) {
		return g.acceptLocked()
	}
	offset, _ := g.offsetLocked(skew)
	direction := "ahead of"
	if offset < 0 {
		direction, offset = "behind", -offset
	}
	err := g.refuseLocked(fmt.Errorf("%w: this node's clock is %v %s its peers' (%d of %d beyond the max offset %v); fix its time source",
		ErrClockOffset, offset.Round(time.Millisecond), direction, far, len(ps), g.maxOffset))
	if !g.refusing {
		g.refusing = true
		g.log.Warn("refusing to coordinate writes until the clock is fixed", "err", err)
	}
	return err
}

// measureFirst calls Measure when no peer has been sampled yet and there are peers.
func (g *Guard) measureFirst() {
	if g.measure == nil || g.sampled() || g.others() == 0 {
		return
	}
	g.measuring <- struct{}{}
	defer func() { <-g.measuring }()
	if !g.sampled() {
		g.measure()
	}
}

func (g *Guard) sampled() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.samples) > 0
}

// refuseLocked remembers err as the last refusal, for status, and returns it.
func (g *Guard) refuseLocked(err error) error {
	g.lastRefuse = err.Error()
	return err
}

// acceptLocked logs that the node coordinates writes again, when the last check refused
// them for its clock's offset (not merely for having measured no peer yet, which a
// starting node passes through within a round).
func (g *Guard) acceptLocked() error {
	if g.refusing {
		g.refusing = false
		g.log.Info("clock within the max offset of its peers again: coordinating writes", "max_offset", g.maxOffset)
	}
	return nil
}

// Stamp returns a timestamp for a write this node coordinates, or the error of Check. A
// timestamp the hybrid logical clock issues ahead of the cluster's clock (it merged a
// bad reading before the guard caught it) is refused too: no node stores it.
func (g *Guard) Stamp() (hlc.Timestamp, error) {
	if err := g.Check(); err != nil {
		return 0, err
	}
	ts := g.clock.Now()
	if err := g.Admit(ts); err != nil {
		return 0, err
	}
	return ts, nil
}

// Now returns this node's wall clock as a timestamp, to compare expiry deadlines with
// (lww.Record.Live). Unlike Stamp it never refuses and leaves the hybrid logical clock
// alone: judging whether a value expired orders no write.
func (g *Guard) Now() hlc.Timestamp { return hlc.FromTime(g.wall()) }

// clusterNowLocked estimates the cluster's wall clock now: this node's, corrected by its
// measured offset, and the uncertainty of that offset (the median peer's sample's).
func (g *Guard) clusterNowLocked() (now time.Time, uncertainty time.Duration) {
	wall, skew := g.now()
	offset, _ := g.offsetLocked(skew)
	if sorted := g.sortedLocked(); len(sorted) > 0 {
		uncertainty = sorted[len(sorted)/2].uncertainty
	}
	return wall.Add(-offset), uncertainty
}

// Admit returns an error wrapping ErrClockOffset when ts is further ahead of the
// cluster's time than MaxOffset, beyond the doubt the sampling leaves, so that no node
// stores it: a timestamp from the future would beat every write made until real time
// caught up with it. The doubt is allowed for as Check allows for it: a coordinator
// that may stamp must find its writes admitted by replicas whose samples are as
// uncertain as its own, or a replica would refuse an honest write under load (its
// samples' round trips long) and hold no copy of it.
func (g *Guard) Admit(ts hlc.Timestamp) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	clusterNow, uncertainty := g.clusterNowLocked()
	if ahead := ts.WallTime().Sub(clusterNow); ahead-uncertainty > g.maxOffset {
		return g.refuseLocked(fmt.Errorf("%w: timestamp %s is %v ahead of the cluster's clock, max offset %v",
			ErrClockOffset, ts, ahead.Round(time.Millisecond), g.maxOffset))
	}
	if ts > g.aheadMax {
		g.aheadMax = ts
	}
	return nil
}

// Observe admits a timestamp another node stamped and merges it into the node's clock
// (remote.Clock). The timestamp is judged against the cluster's clock as measured (this
// node's own before any measurement), so a node whose clock runs behind still takes its
// peers' writes, and its clock catches up with them.
// While this node's own clock is off, the timestamp is stored but not merged: the hybrid
// logical clock would stamp the merge with the bad wall time and keep it after the wall
// clock is fixed.
func (g *Guard) Observe(ts hlc.Timestamp) error {
	if err := g.Admit(ts); err != nil {
		return err
	}
	if g.checkNow() == nil {
		g.clock.Update(ts)
	}
	return nil
}

// Status is what the guard reports for `kura status` and metrics.
type Status struct {
	// Offset is this node's clock minus the cluster's; Peers how many it was measured against.
	Offset time.Duration
	Peers  int
	// OK is whether the node stamps writes now; Refusal the last reason it did not.
	OK      bool
	Refusal string
	// AheadMax is how far the largest timestamp this node stamped or admitted is ahead of
	// the cluster's clock now (0 when not ahead): data written with a future timestamp.
	AheadMax time.Duration
}

// Status reports the guard's view now.
func (g *Guard) Status() Status {
	err := g.checkNow()
	g.mu.Lock()
	defer g.mu.Unlock()
	st := Status{OK: err == nil, Refusal: g.lastRefuse}
	_, skew := g.now()
	st.Offset, st.Peers = g.offsetLocked(skew)
	clusterNow, _ := g.clusterNowLocked()
	if ahead := g.aheadMax.WallTime().Sub(clusterNow); g.aheadMax != 0 && ahead > 0 {
		st.AheadMax = ahead
	}
	return st
}
