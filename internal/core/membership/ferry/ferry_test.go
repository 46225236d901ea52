package ferry

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/tools/membership/simcluster"
	"github.com/kuradb/kura/internal/tools/sim"
)

func newCore(t *testing.T, id, dc string, seeds ...string) *Core {
	t.Helper()
	c, err := New(membership.Config{ID: id, DC: dc, Generation: 1700000000, Seeds: seeds,
		Rand: rand.New(rand.NewPCG(7, uint64(len(id))))}, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// only returns the single message of r, failing otherwise.
func only(t *testing.T, r membership.Ready) membership.Outbound {
	t.Helper()
	if len(r.Messages) != 1 {
		t.Fatalf("want one message, got %d: %+v", len(r.Messages), r.Messages)
	}
	return r.Messages[0]
}

// tickRound ticks c at now until it has run a round, and returns all that
// the ticks returned: a test that steps whole rounds calls it once a round.
func tickRound(c *Core, now time.Duration) membership.Ready {
	var all membership.Ready
	for {
		rounds := c.rounds
		r := c.Tick(now)
		all.Messages = append(all.Messages, r.Messages...)
		all.Events = append(all.Events, r.Events...)
		if c.rounds != rounds || c.quiet() {
			return all
		}
	}
}

func hasEvent(r membership.Ready, kind membership.EventKind, id string) bool {
	for _, e := range r.Events {
		if e.Kind == kind && e.ID == id {
			return true
		}
	}
	return false
}

// TestClusterSeededOnlyByOthersMeets restarts a whole cluster whose nodes are each
// seeded by the others only: no node is a seed of itself, so at first none admits
// anyone. After syncPatience they admit each other and every view holds all three.
func TestClusterSeededOnlyByOthersMeets(t *testing.T) {
	cores := map[string]*Core{
		"a1": newCore(t, "a1", "a", "a2", "a3"),
		"a2": newCore(t, "a2", "a", "a1", "a3"),
		"a3": newCore(t, "a3", "a", "a1", "a2"),
	}
	var inbox []membership.Outbound
	var from []string
	deliver := func(id string, r membership.Ready) {
		for _, m := range r.Messages {
			inbox, from = append(inbox, m), append(from, id)
		}
	}
	ids := []string{"a1", "a2", "a3"}
	for round := 1; round <= 20; round++ {
		now := time.Duration(round) * time.Second
		for _, id := range ids {
			deliver(id, tickRound(cores[id], now))
		}
		for len(inbox) > 0 {
			m, sender := inbox[0], from[0]
			inbox, from = inbox[1:], from[1:]
			if c := cores[m.To]; c != nil {
				deliver(m.To, c.Step(now, sender, m.Msg))
			}
		}
	}
	for _, id := range ids {
		if members := cores[id].Members(); len(members) != 3 {
			t.Errorf("%s knows %d members after 20 rounds, want 3: %+v", id, len(members), members)
		}
	}
}

func TestJoinWelcomeAndRedirect(t *testing.T) {
	seed := newCore(t, "a1", "a", "a1")
	local := newCore(t, "a2", "a", "a1")
	join := only(t, local.Tick(time.Second))
	if join.To != "a1" || join.Msg.Kind() != "join" {
		t.Fatalf("first round of a joiner = %+v", join)
	}
	r := seed.Step(time.Second, "a2", join.Msg)
	if !hasEvent(r, membership.EventJoined, "a2") {
		t.Fatal("seed did not report a2 joined")
	}
	var welcome membership.Message
	for _, m := range r.Messages {
		if m.To == "a2" && m.Msg.Kind() == "welcome" {
			welcome = m.Msg
		}
	}
	if welcome == nil {
		t.Fatalf("no welcome in %+v", r.Messages)
	}
	local.Step(time.Second, "a1", welcome)
	if _, ok := local.Member("a1"); !ok || !local.joined {
		t.Fatal("joiner did not take the welcome")
	}

	// A joiner from DC b is sent to b's members, so the full state need
	// not cross the DC link; the first node of b is welcomed directly.
	b1 := newCore(t, "b1", "b", "a1")
	r = seed.Step(2*time.Second, "b1", only(t, b1.Tick(2*time.Second)).Msg)
	if !hasEvent(r, membership.EventJoined, "b1") {
		t.Fatal("first node of b not admitted")
	}
	b2 := newCore(t, "b2", "b", "a1")
	redirect := only(t, seed.Step(3*time.Second, "b2", only(t, b2.Tick(3*time.Second)).Msg))
	if m, ok := redirect.Msg.(*Redirect); !ok || len(m.Gateways) != 1 || m.Gateways[0].State.ID != "b1" {
		t.Fatalf("answer to a joiner of b = %+v, want a redirect to b1", redirect)
	}
	join = only(t, b2.Step(3*time.Second, "a1", redirect.Msg))
	if join.To != "b1" || join.Msg.Kind() != "join" {
		t.Fatalf("after a redirect = %+v", join)
	}
	// The redirect carried b1's state, so the joiner's driver can place it.
	if _, ok := b2.Member("b1"); !ok {
		t.Fatal("after a redirect the joiner does not know b1")
	}
}

func TestRefutesOwnDeathNotice(t *testing.T) {
	c := newCore(t, "a1", "a", "a1")
	before := c.v(c.self).maxVersion
	notice := &Push{Entries: []Delta{{State: c.v(c.self).state, DeadAt: before}}}
	c.Step(time.Second, "a2", notice)
	if c.self.dead() || c.v(c.self).maxVersion <= before {
		t.Fatalf("not refuted: version %d, deadAt notice %d", c.v(c.self).maxVersion, before)
	}
	// A notice about an older generation is no news.
	old := c.v(c.self).state
	old.Generation--
	v := c.v(c.self).maxVersion
	c.Step(2*time.Second, "a2", &Push{Entries: []Delta{{State: old, DeadAt: 1 << 40}}})
	if c.v(c.self).maxVersion != v {
		t.Fatal("refuted a notice about an older generation")
	}
}

// watchedPair is a monitor m (a1) that knows x (a2) and three more members
// of its DC, and has had heartbeats from all four every round for ten
// seconds; it returns the time of the last heartbeat.
func watchedPair(t *testing.T) (m, x *Core, last time.Duration) {
	t.Helper()
	m, x = newCore(t, "a1", "a", "a1"), newCore(t, "a2", "a", "a1")
	others := []*Core{newCore(t, "a3", "a", "a1"), newCore(t, "a4", "a", "a1"), newCore(t, "a5", "a", "a1")}
	know(m, 0, append([]*Core{x}, others...)...)
	for i := 1; i <= 10; i++ {
		last = time.Duration(i) * time.Second
		for _, c := range append([]*Core{x}, others...) {
			m.Step(last, c.ID(), &Heartbeat{Generation: c.v(c.self).state.Generation, MaxVersion: c.v(c.self).maxVersion})
		}
		tickRound(m, last)
	}
	return m, x, last
}

// keepAlive has m hear its other members every round, so that only x falls
// silent.
func keepAlive(m *Core, now time.Duration) {
	if now%time.Second != 0 {
		return
	}
	for _, id := range []string{"a3", "a4", "a5"} {
		e := m.entry(id)
		m.Step(now, id, &Heartbeat{Generation: m.v(e).state.Generation, MaxVersion: m.v(e).maxVersion})
	}
}

// receipts has the members m asked to probe for it say they got the
// request, as live members do.
func receipts(m *Core, now time.Duration, r membership.Ready) {
	for _, o := range r.Messages {
		if req, ok := o.Msg.(*ProbeReq); ok {
			m.Step(now, o.To, &IndirectAck{Target: req.Target, Seq: req.Seq})
		}
	}
}

// kindTo counts the messages of a kind in r addressed to id ("" for any).
func kindTo(r membership.Ready, kind, id string) int {
	n := 0
	for _, o := range r.Messages {
		if o.Msg.Kind() == kind && (id == "" || o.To == id) {
			n++
		}
	}
	return n
}

func TestSilentNodeIsProbedSuspectedAndConvicted(t *testing.T) {
	m, _, last := watchedPair(t)
	tick := DefaultOptions.TickInterval
	var probedAt, indirectAt, suspectedAt, deadAt time.Duration
	var notices int
	for now := last + tick; now < last+30*time.Second && deadAt == 0; now += tick {
		keepAlive(m, now)
		r := m.Tick(now)
		receipts(m, now, r)
		if kindTo(r, "probe", "a2") > 0 && probedAt == 0 {
			probedAt = now
		}
		if reqs := kindTo(r, "probe-req", ""); reqs > 0 {
			if reqs != DefaultOptions.IndirectProbes || kindTo(r, "probe", "a2") != 1 {
				t.Fatalf("indirect stage sent %d probe requests and %d probes: %+v", reqs, kindTo(r, "probe", "a2"), r.Messages)
			}
			indirectAt = now
		}
		if hasEvent(r, membership.EventSuspect, "a2") {
			suspectedAt = now
			if kindTo(r, "suspect", "") == 0 {
				t.Fatalf("suspicion not told to anyone: %+v", r.Messages)
			}
		}
		if hasEvent(r, membership.EventDead, "a2") {
			deadAt = now
			notices = kindTo(r, "push", "")
		}
	}
	// Heartbeats come every second like clockwork: phi passes 8 about 0.4 s
	// after the next one was due, then a probe stage every ProbeTimeout, and
	// SuspectTimeout with nobody confirming.
	if silence := probedAt - last; silence < 1300*time.Millisecond || silence > 1700*time.Millisecond {
		t.Fatalf("first probe after %v of silence", silence)
	}
	if indirectAt != probedAt+DefaultOptions.ProbeTimeout || suspectedAt != indirectAt+DefaultOptions.ProbeTimeout ||
		deadAt != suspectedAt+DefaultOptions.SuspectTimeout {
		t.Fatalf("probe %v, indirect %v, suspect %v, dead %v", probedAt, indirectAt, suspectedAt, deadAt)
	}
	if member, _ := m.Member("a2"); member.Alive {
		t.Fatal("convicted node still alive")
	}
	// The verdict goes at once to every other live member of the DC.
	if notices != 3 {
		t.Fatalf("verdict pushed to %d members, want 3", notices)
	}
}

func TestConfirmedSuspicionConvictsAtOnce(t *testing.T) {
	m, x, last := watchedPair(t)
	tick := DefaultOptions.TickInterval
	gen := x.v(x.self).state.Generation
	for now := last + tick; now < last+30*time.Second; now += tick {
		keepAlive(m, now)
		r := m.Tick(now)
		receipts(m, now, r)
		if hasEvent(r, membership.EventSuspect, "a2") {
			// The other monitor suspects x too: m convicts without waiting.
			w := m.watchOf("a2")
			r = m.Step(now, "a3", &Suspect{ID: "a2", Generation: gen, Seq: 99})
			if !hasEvent(r, membership.EventDead, "a2") || w.convictedAt == 0 {
				t.Fatalf("a confirmed suspicion did not convict: %+v", r)
			}
			return
		}
	}
	t.Fatal("never suspected")
}

func TestCutOffMonitorDoubtsItselfFirst(t *testing.T) {
	m, _, last := watchedPair(t)
	tick := DefaultOptions.TickInterval
	reqs := 0
	var suspectedAt time.Duration
	for now := last + tick; now < last+30*time.Second && suspectedAt == 0; now += tick {
		keepAlive(m, now) // m still hears some, but nobody answers its requests
		r := m.Tick(now)
		reqs += kindTo(r, "probe-req", "")
		if hasEvent(r, membership.EventSuspect, "a2") {
			suspectedAt = now
		}
	}
	// Probed after 1.4 s of silence; two probe cycles of 1 s doubting
	// itself, one more, and only then a suspicion.
	if reqs != 3*DefaultOptions.IndirectProbes {
		t.Fatalf("%d probe requests before suspecting, want %d", reqs, 3*DefaultOptions.IndirectProbes)
	}
	if took := suspectedAt - last; took < 4*time.Second || took > 5*time.Second {
		t.Fatalf("a monitor that reaches nobody suspected after %v, want 4-5 s", took)
	}
}

func TestSuspicionOfAHeardNodeIsContradicted(t *testing.T) {
	m, x, last := watchedPair(t)
	// m heard x at last: another monitor's suspicion is answered for x.
	r := m.Step(last+100*time.Millisecond, "a3", &Suspect{ID: "a2", Generation: x.v(x.self).state.Generation, Seq: 5})
	ack := only(t, r)
	if a, ok := ack.Msg.(*IndirectAck); !ok || ack.To != "a3" || a.Target != "a2" || a.Seq != 5 {
		t.Fatalf("answer to a suspicion of a heard node: %+v", ack)
	}
	// x itself answers a suspicion of itself.
	r = x.Step(time.Second, "a1", &Suspect{ID: "a2", Generation: x.v(x.self).state.Generation, Seq: 6})
	if a, ok := only(t, r).Msg.(*IndirectAck); !ok || a.Target != "a2" || a.Seq != 6 {
		t.Fatalf("x's answer to its own suspicion: %+v", r.Messages)
	}
}

func TestIndirectProbeSavesANodeBehindALossyLink(t *testing.T) {
	m, x, last := watchedPair(t)
	helper := newCore(t, "a3", "a", "a1")
	tick := DefaultOptions.TickInterval
	answered := false
	for now := last + tick; now < last+20*time.Second; now += tick {
		keepAlive(m, now)
		r := m.Tick(now)
		if hasEvent(r, membership.EventSuspect, "a2") || hasEvent(r, membership.EventDead, "a2") {
			t.Fatalf("at %v: suspected a node that answers through another member", now)
		}
		// The link between m and x drops everything; a3 reaches both.
		for _, o := range r.Messages {
			req, ok := o.Msg.(*ProbeReq)
			if !ok || o.To != "a3" {
				continue
			}
			got := helper.Step(now, "a1", req)
			if len(got.Messages) != 2 || got.Messages[0].To != "a1" || got.Messages[0].Msg.(*IndirectAck).Alive {
				t.Fatalf("the helper's receipt and probe: %+v", got.Messages)
			}
			probe := got.Messages[1]
			if probe.To != "a2" {
				t.Fatalf("the helper probed %s", probe.To)
			}
			ack := only(t, x.Step(now, "a3", probe.Msg))
			back := only(t, helper.Step(now, "a2", ack.Msg))
			if back.To != "a1" || back.Msg.Kind() != "indirect-ack" {
				t.Fatalf("the helper passed on %+v", back)
			}
			m.Step(now, "a3", back.Msg)
			answered = true
			if w := m.watchOf("a2"); w.stage != idle {
				t.Fatalf("the answer through a3 left the probe at stage %d", w.stage)
			}
			// x falls silent again at once (its heartbeats to m still get
			// lost): the next probe must come through a3 again.
		}
	}
	if !answered {
		t.Fatal("no probe request went to a3")
	}
}

func TestAnsweredProbeIsNoSuspicion(t *testing.T) {
	m, x, last := watchedPair(t)
	tick := DefaultOptions.TickInterval
	probed := false
	for now := last + tick; now < last+30*time.Second; now += tick {
		keepAlive(m, now)
		r := m.Tick(now)
		if hasEvent(r, membership.EventSuspect, "a2") || hasEvent(r, membership.EventDead, "a2") {
			t.Fatalf("suspected a node that answers probes at %v", now)
		}
		for _, o := range r.Messages {
			if o.To == "a2" && o.Msg.Kind() == "probe" {
				// x does not count m among its monitors (it knows nobody),
				// so m stops watching it.
				ack := only(t, x.Step(now, "a1", o.Msg))
				if a := ack.Msg.(*ProbeAck); a.Monitored {
					t.Fatal("x claims a monitor it does not have")
				}
				m.Step(now, "a2", ack.Msg)
				probed = true
			}
		}
	}
	if !probed {
		t.Fatal("never probed")
	}
	if m.watchOf("a2") != nil {
		t.Fatal("still watching a node that does not heartbeat here")
	}
}

func TestLeaveStopsMonitorsAndGoesQuiet(t *testing.T) {
	c := newCore(t, "a1", "a", "a1")
	a2 := newCore(t, "a2", "a", "a1")
	c.Step(0, "a2", &Push{Entries: []Delta{a2.delta(a2.self)}})
	tickRound(c, time.Second) // a2 becomes c's monitor
	r := c.Leave(2 * time.Second)
	stopped := false
	for _, o := range r.Messages {
		if hb, ok := o.Msg.(*Heartbeat); ok && o.To == "a2" && hb.Stop {
			stopped = true
		}
	}
	if !stopped {
		t.Fatalf("no stop heartbeat to the monitor in %+v", r.Messages)
	}
	for i := range DefaultOptions.LeaveRounds {
		tickRound(c, time.Duration(3+i)*time.Second)
	}
	if r := c.Tick(time.Hour); len(r.Messages) != 0 {
		t.Fatalf("quiet node still sends %+v", r.Messages)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  func(*Options)
	}{
		{"no gateway", func(o *Options) { o.Gateways = 0 }},
		{"no burst", func(o *Options) { o.MaxBurst = 0 }},
		{"no burst bytes", func(o *Options) { o.MaxBurstBytes = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions
			tc.bad(&opts)
			_, err := New(membership.Config{ID: "a1", DC: "a", Generation: 1, Rand: rand.New(rand.NewPCG(1, 1))}, opts)
			if !errors.Is(err, membership.ErrBadConfig) {
				t.Fatalf("err = %v, want ErrBadConfig", err)
			}
		})
	}
}

// know makes c learn the members' states, as from a push inside its DC.
func know(c *Core, now time.Duration, members ...*Core) {
	var p Push
	for _, m := range members {
		p.Entries = append(p.Entries, m.delta(m.self))
	}
	c.Step(now, c.ID(), &p)
}

func kindsAbout(r membership.Ready, id string) []membership.EventKind {
	var out []membership.EventKind
	for _, e := range r.Events {
		if e.ID == id {
			out = append(out, e.Kind)
		}
	}
	return out
}

// probesTo counts the probes in r addressed to id.
func probesTo(r membership.Ready, id string) int {
	n := 0
	for _, o := range r.Messages {
		if o.To == id && o.Msg.Kind() == "probe" {
			n++
		}
	}
	return n
}

// lonePair is a1, the gateway of DC a, which has heard from c1, alone in DC
// c, every round for ten rounds; it returns the time of the last round.
func lonePair(t *testing.T) (g, lone *Core, last time.Duration) {
	t.Helper()
	g, lone = newCore(t, "a1", "a", "a1"), newCore(t, "c1", "c", "a1")
	know(g, 0, lone)
	for i := 1; i <= 10; i++ {
		last = time.Duration(i) * time.Second
		tickRound(g, last)
		// c1's answer to a1's summary, a little later in the round.
		g.Step(last+100*time.Millisecond, "c1", &Buckets{})
	}
	return g, lone, last
}

func TestGatewayConvictsANodeAloneInItsDC(t *testing.T) {
	g, _, last := lonePair(t)
	heardAt := last + 100*time.Millisecond
	var probedAt, suspectedAt, deadAt time.Duration
	var notices int
	for now := last + time.Second; now < last+30*time.Second && deadAt == 0; now += DefaultOptions.TickInterval {
		r := g.Tick(now)
		if probesTo(r, "c1") > 0 && probedAt == 0 {
			probedAt = now
		}
		for _, k := range kindsAbout(r, "c1") {
			switch k {
			case membership.EventSuspect:
				suspectedAt = now
			case membership.EventDead:
				deadAt = now
				notices = kindTo(r, "push", "")
			}
		}
	}
	// The monitors' model: phi passes 8 about 1.4 s after the last arrival;
	// suspicion when the first round of probes goes unanswered, conviction
	// when the second does.
	if silence := probedAt - heardAt; silence < 1300*time.Millisecond || silence > 1700*time.Millisecond {
		t.Fatalf("first probe of the silent DC after %v of silence", silence)
	}
	if suspectedAt != probedAt+DefaultOptions.RemoteProbeTimeout || deadAt != probedAt+2*DefaultOptions.RemoteProbeTimeout {
		t.Fatalf("probe %v, suspect %v, dead %v", probedAt, suspectedAt, deadAt)
	}
	if m, _ := g.Member("c1"); m.Alive {
		t.Fatal("convicted lone node still alive")
	}
	if notices != 0 {
		t.Fatalf("%d notices, but g's DC has nobody else to tell", notices)
	}
	// Its DC is dark now: nothing left to watch, yet the gateway keeps
	// sending it its summary, so that it is found again when it is back.
	r := tickRound(g, deadAt+time.Second)
	if _, watching := g.remote["c"]; watching {
		t.Fatal("still watching a DC with no live member")
	}
	sent := false
	for _, o := range r.Messages {
		sent = sent || (o.To == "c1" && o.Msg.Kind() == "summary")
	}
	if !sent {
		t.Fatalf("no summary to the dark DC: %+v", r.Messages)
	}
}

func TestAnsweredDCProbeIsNoSuspicion(t *testing.T) {
	g, lone, last := lonePair(t)
	misses := 0
	for now := last + time.Second; now < last+40*time.Second; now += DefaultOptions.TickInterval {
		r := g.Tick(now)
		if k := kindsAbout(r, "c1"); len(k) > 0 {
			t.Fatalf("at %v: events about a DC that answers its probes: %v", now, k)
		}
		for _, o := range r.Messages {
			if o.To == "c1" && o.Msg.Kind() == "probe" {
				misses = g.wanMisses["c"]
				g.Step(now+100*time.Millisecond, "c1", only(t, lone.Step(now, "a1", o.Msg)).Msg)
				if g.wanMisses["c"] != misses {
					// A probe's answer shows the DC is up, not that the node
					// the summaries go to answers them.
					t.Fatal("a probe's answer reset the unanswered summaries")
				}
			}
		}
	}
	if misses == 0 {
		t.Fatal("the silent DC was never probed")
	}
}

func TestOnlyGatewaysWatchOtherDCs(t *testing.T) {
	ids := []string{"a1", "a2", "a3"}
	gws := Gateways(ids, DefaultOptions.Gateways)
	var other *Core
	cores := map[string]*Core{}
	for _, id := range ids {
		cores[id] = newCore(t, id, "a", "a1")
		if !slices.Contains(gws, id) {
			other = cores[id]
		}
	}
	lone := newCore(t, "c1", "c", "a1")
	know(other, 0, cores["a1"], cores["a2"], cores["a3"], lone)
	for now := time.Second; now < time.Minute; now += DefaultOptions.TickInterval {
		r := other.Tick(now)
		if probesTo(r, "c1") > 0 || len(kindsAbout(r, "c1")) > 0 {
			t.Fatalf("a node that is not a gateway watched another DC: %+v", r)
		}
		// Its DC's other members, silent otherwise, answer its probes, so it
		// stays a node that is not a gateway.
		for _, o := range r.Messages {
			if p, ok := o.Msg.(*Probe); ok {
				other.Step(now, o.To, &ProbeAck{Seq: p.Seq, Monitored: true})
			}
		}
	}
	if len(other.remote) != 0 {
		t.Fatalf("non-gateway watches %v", other.remote)
	}
}

func TestAnotherDCsVerdictGoesToTheMember(t *testing.T) {
	a1, a2, a3, b1 := newCore(t, "a1", "a", "a1"), newCore(t, "a2", "a", "a1"), newCore(t, "a3", "a", "a1"), newCore(t, "b1", "b", "a1")
	know(a1, 0, a2, a3, b1)
	notice := &Push{Entries: []Delta{{State: a2.v(a2.self).state, DeadAt: a2.v(a2.self).maxVersion}}}

	// From b1 (another DC, which could only have found a's whole DC
	// silent): a1 keeps a2 alive and hands the notice to a2, which refutes.
	r := a1.Step(time.Second, "b1", notice)
	if m, _ := a1.Member("a2"); !m.Alive || len(kindsAbout(r, "a2")) != 0 {
		t.Fatalf("a verdict from another DC killed a live member of a1's DC: %+v, events %v", m, r.Events)
	}
	var forwarded membership.Message
	for _, o := range r.Messages {
		if o.To == "a2" && o.Msg.Kind() == "push" {
			forwarded = o.Msg
		}
	}
	if forwarded == nil {
		t.Fatalf("the notice did not go to a2: %+v", r.Messages)
	}
	before := a2.v(a2.self).maxVersion
	a2.Step(time.Second, "a1", forwarded)
	if a2.v(a2.self).maxVersion <= before {
		t.Fatal("a2 did not refute the notice handed to it")
	}

	// From a3, a member of a1's own DC (its monitor), the verdict stands.
	r = a1.Step(2*time.Second, "a3", notice)
	if m, _ := a1.Member("a2"); m.Alive || !hasEvent(r, membership.EventDead, "a2") {
		t.Fatalf("a monitor's verdict did not stand: %+v", m)
	}
}

func TestShutdownTellsItsDCAndGoesQuiet(t *testing.T) {
	byID := map[string]*Core{}
	var cores []*Core
	for _, id := range []string{"a1", "a2", "a3", "b1"} {
		byID[id] = newCore(t, id, id[:1], "a1")
		cores = append(cores, byID[id])
	}
	for _, c := range cores {
		know(c, 0, cores...)
	}
	// Fifteen rounds of heartbeats: every node of a has its monitors.
	for now := time.Second; now <= 15*time.Second; now += time.Second {
		for _, c := range cores {
			for _, o := range tickRound(c, now).Messages {
				if hb, ok := o.Msg.(*Heartbeat); ok {
					byID[o.To].Step(now, c.ID(), hb)
				}
			}
		}
	}
	// The gateway of a shuts down.
	x := byID[Gateways([]string{"a1", "a2", "a3"}, DefaultOptions.Gateways)[0]]
	var monitor *Core
	for _, c := range cores {
		if c != x && c.watchOf(x.ID()) != nil {
			monitor = c
		}
	}
	if monitor == nil {
		t.Fatalf("nobody watches %s", x.ID())
	}
	r := x.Shutdown(16 * time.Second)
	to := map[string]bool{}
	for _, o := range r.Messages {
		to[o.To] = true
		if p, ok := o.Msg.(*Push); !ok || len(p.Entries) != 1 || p.Entries[0].State.ID != x.ID() {
			t.Fatalf("shutdown sent %+v", o)
		}
	}
	// Its DC at once, and, as it was a gateway, the other DC too.
	if len(to) != 3 || !to["b1"] {
		t.Fatalf("shutdown told %v", to)
	}
	for _, c := range cores {
		if c == x {
			continue
		}
		got := c.Step(16*time.Second, x.ID(), r.Messages[0].Msg)
		if !hasEvent(got, membership.EventDead, x.ID()) {
			t.Fatalf("%s not told %s is down: %v", c.ID(), x.ID(), got.Events)
		}
		if m, _ := c.Member(x.ID()); m.Alive || m.Status != membership.StatusShutdown {
			t.Fatalf("%s sees %s as %+v", c.ID(), x.ID(), m)
		}
	}
	if r := x.Tick(17 * time.Second); len(r.Messages) != 0 {
		t.Fatalf("a shut-down node still sends %+v", r.Messages)
	}
	if r := x.Leave(17 * time.Second); len(r.Messages) != 0 {
		t.Fatal("a shut-down node announced a leave")
	}
	// Its monitor drops the watch: no probe, no suspicion, however long it
	// stays silent.
	for now := 17 * time.Second; now < time.Minute; now += DefaultOptions.TickInterval {
		r := monitor.Tick(now)
		if probesTo(r, x.ID()) > 0 || len(kindsAbout(r, x.ID())) > 0 {
			t.Fatalf("at %v %s still watches the shut-down %s: %+v", now, monitor.ID(), x.ID(), r)
		}
	}
}

func TestSynced(t *testing.T) {
	// Alone: synced in the first round.
	alone := newCore(t, "a1", "a", "a1")
	if k := kindsAbout(alone.Tick(time.Second), "a1"); len(k) != 1 || k[0] != membership.EventSynced {
		t.Fatalf("lone seed's first round: %v", k)
	}
	if k := kindsAbout(alone.Tick(2*time.Second), "a1"); len(k) != 0 {
		t.Fatalf("synced twice: %v", k)
	}

	// A joiner: with the seed's Welcome.
	seed, joiner := newCore(t, "a1", "a", "a1", "b1"), newCore(t, "a2", "a", "a1")
	r := seed.Step(time.Second, "a2", only(t, joiner.Tick(time.Second)).Msg)
	if hasEvent(r, membership.EventSynced, "a2") {
		t.Fatal("admitting a joiner synced the seed")
	}
	var welcome membership.Message
	for _, o := range r.Messages {
		if o.Msg.Kind() == "welcome" {
			welcome = o.Msg
		}
	}
	if !hasEvent(joiner.Step(time.Second, "a1", welcome), membership.EventSynced, "a1") {
		t.Fatal("the Welcome did not sync the joiner")
	}

	// A seed with another seed: once a summary shows its view is a peer's.
	if hasEvent(seed.Tick(2*time.Second), membership.EventSynced, "a1") {
		t.Fatal("a seed with another seed synced on its own")
	}
	if hasEvent(seed.Step(3*time.Second, "a2", &Summary{Sums: []DCSum{{DC: "a"}}}), membership.EventSynced, "a2") {
		t.Fatal("synced on a summary that differs")
	}
	if hasEvent(seed.Step(3*time.Second, "a2", &Summary{Sums: []DCSum{{Count: 2}}}), membership.EventSynced, "a2") {
		t.Fatal("synced on a total that differs")
	}
	if !hasEvent(seed.Step(3*time.Second, "a2", &Summary{Sums: joiner.sums()}), membership.EventSynced, "a2") {
		t.Fatal("a matching summary did not sync the seed")
	}
	// The same with the round's summary, which carries one total.
	seed2 := newCore(t, "a1", "a", "a1", "b1")
	seed2.Step(time.Second, "a2", &Join{State: joiner.v(joiner.self).state})
	if !hasEvent(seed2.Step(3*time.Second, "a2", &Summary{Sums: joiner.total()}), membership.EventSynced, "a2") {
		t.Fatal("a matching total did not sync the seed")
	}
}

func TestLostSeedFollowsRedirects(t *testing.T) {
	b1 := newCore(t, "b1", "b", "a1", "b1")
	b2 := newCore(t, "b2", "b", "a1")
	redirect := &Redirect{Gateways: []Delta{b2.delta(b2.self)}}
	b1.Tick(time.Second) // its first round; a seed counts as joined
	if r := b1.Step(2*time.Second, "a1", redirect); len(r.Messages) != 0 {
		t.Fatalf("a seed just started followed a redirect: %+v", r.Messages)
	}
	r := b1.Step(time.Second+syncPatience, "a1", redirect)
	if join := only(t, r); join.To != "b2" || join.Msg.Kind() != "join" {
		t.Fatalf("a seed lost for %v answered a redirect with %+v", syncPatience, join)
	}
}

// detectBound is what docs/gossip.md promises for a node that stops, inside
// its DC or across: every live node holds it dead within 5 s of the crash.
// Inside a DC the monitors convict at most 3.7 s after it (phi passes 8
// about 1.4 s after the last heartbeat, a tick, two probe stages of 0.5 s,
// and at most 1 s waiting for a confirmation); across DCs the gateways at
// most about 4.5 s after it (the answers to their summaries stop a WAN
// round trip later, then two rounds of probes 1 s apart). The notice then
// reaches every node within a LAN and a WAN hop.
const detectBound = 5 * time.Second

// downTimes runs a cluster until every running node holds each victim down
// or the bound has passed twice over, and returns, per victim, how long
// after now the last observer took.
func downTimes(t *testing.T, c *simcluster.Cluster, seen map[string]map[string]time.Duration, victims []string) map[string]time.Duration {
	t.Helper()
	start := c.Sim().Now()
	for _, v := range victims {
		seen[v] = map[string]time.Duration{}
	}
	c.Sim().RunFor(2 * detectBound)
	out := map[string]time.Duration{}
	for _, v := range victims {
		for _, o := range c.Live() {
			at, ok := seen[v][o]
			if !ok {
				t.Fatalf("%s never held %s down", o, v)
			}
			out[v] = max(out[v], at-start)
		}
	}
	return out
}

// TestCrossDCDetectionWithinTheBound checks the bound of docs/gossip.md on
// several seeds: a node alone in its DC, a whole DC going dark, and, for
// comparison, a node inside a DC.
func TestCrossDCDetectionWithinTheBound(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			seen := map[string]map[string]time.Duration{}
			c, err := simcluster.New(simcluster.Config{
				Protocol: Protocol, Seed: seed, DCs: []string{"a", "b", "c"}, Seeds: []string{"a1", "b1", "c1"},
				Links: sim.UniformLinks{
					Local:  sim.LinkSpec{Latency: 100 * time.Microsecond},
					Remote: sim.LinkSpec{Latency: 50 * time.Millisecond, Jitter: 10 * time.Millisecond},
				},
				Wire: sim.TCPIPv4,
				OnEvent: func(now time.Duration, observer string, e membership.Event) {
					if e.Kind == membership.EventSuspect || e.Kind == membership.EventDead {
						if seen[e.ID] == nil {
							t.Fatalf("at %v %s suspects %s, which runs", now, observer, e.ID)
						}
						if _, ok := seen[e.ID][observer]; !ok && e.Kind == membership.EventDead {
							seen[e.ID][observer] = now
						}
					}
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"a1", "a2", "a3", "a4", "a5", "a6", "b1", "b2", "b3", "b4", "b5", "b6", "c1"} {
				if err := c.Start(id, id[:1]); err != nil {
					t.Fatal(err)
				}
			}
			if _, ok := c.RunUntilConverged(time.Minute); !ok {
				t.Fatal(c.Disagreement())
			}
			// A minute of health, with phases spread by the seed.
			c.Sim().RunFor(time.Minute + time.Duration(seed)*137*time.Millisecond)

			check := func(what string, victims ...string) {
				for _, v := range victims {
					if err := c.Crash(v); err != nil {
						t.Fatal(err)
					}
				}
				for v, took := range downTimes(t, c, seen, victims) {
					t.Logf("%s: %s down everywhere after %v", what, v, took)
					if took > detectBound {
						t.Errorf("%s: %s held down by all only after %v, bound %v", what, v, took, detectBound)
					}
				}
				if _, ok := c.RunUntilConverged(time.Second); !ok {
					t.Fatalf("%s: %s", what, c.Disagreement())
				}
			}
			check("inside a DC", "a4")
			check("alone in its DC", "c1")
			check("a DC dark", "b1", "b2", "b3", "b4", "b5", "b6")
		})
	}
}

// TestEntryIsSmallAndHoldsNoPointer keeps an entry small and free of pointers: a
// simulated cluster holds one per node per member, so each byte costs n²
// (100 MB at 10,000 nodes), and a pointer would have the garbage collector
// scan them all. A new field may well be worth it (or may belong in the
// shared version); this says what it costs.
func TestEntryIsSmallAndHoldsNoPointer(t *testing.T) {
	if size := unsafe.Sizeof(entry{}); size > 24 {
		t.Errorf("entry is %d bytes, over 24", size)
	}
	typ := reflect.TypeFor[entry]()
	for i := range typ.NumField() {
		switch f := typ.Field(i); f.Type.Kind() {
		case reflect.Bool, reflect.Int8, reflect.Int64, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		default:
			t.Errorf("entry.%s is a %s, which may hold a pointer", f.Name, f.Type)
		}
	}
}

// TestNoSuspicionUnderLoss runs ten minutes of two DCs of 30 nodes with 2 %
// of the messages lost on every link, twice the loss the bench tries: a
// lost heartbeat costs a probe, a lost probe or answer costs three members
// asked to probe, and nothing short of the node's death makes it suspect.
func TestNoSuspicionUnderLoss(t *testing.T) {
	var suspicions []string
	c, err := simcluster.New(simcluster.Config{
		Protocol: Protocol, Seed: 3, DCs: []string{"a", "b"}, Seeds: []string{"a1", "b1"},
		Links: sim.UniformLinks{
			Local:  sim.LinkSpec{Latency: 100 * time.Microsecond, Loss: 0.02},
			Remote: sim.LinkSpec{Latency: 50 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.02},
		},
		Wire: sim.TCPIPv4,
		OnEvent: func(now time.Duration, observer string, e membership.Event) {
			if e.Kind == membership.EventSuspect || e.Kind == membership.EventDead {
				suspicions = append(suspicions, fmt.Sprintf("%v: %s %s %s", now, observer, e.Kind, e.ID))
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 30; i++ {
		for _, dc := range []string{"a", "b"} {
			if err := c.Start(fmt.Sprintf("%s%d", dc, i), dc); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.Sim().RunFor(10 * time.Minute)
	if len(suspicions) > 0 {
		t.Fatalf("%d false suspicions, first %v", len(suspicions), suspicions[:min(len(suspicions), 5)])
	}
	if d := c.Disagreement(); d != "" {
		t.Fatal(d)
	}
}

func TestTotalThatDiffersIsAnsweredPerDC(t *testing.T) {
	a1, a2, b1 := newCore(t, "a1", "a", "a1"), newCore(t, "a2", "a", "a1"), newCore(t, "b1", "b", "a1")
	know(a1, 0, a2, b1)
	know(a2, 0, a1)
	// a2 does not know b1: its total differs from a1's.
	r := a1.Step(time.Second, "a2", &Summary{Sums: a2.total()})
	reply, ok := only(t, r).Msg.(*Summary)
	if !ok || len(reply.Sums) != 2 || reply.Sums[0].DC != "a" || reply.Sums[1].DC != "b" {
		t.Fatalf("a total that differs answered with %+v", r.Messages)
	}
	// a2 compares per DC and narrows down the DC it lacks.
	buckets, ok := only(t, a2.Step(time.Second, "a1", reply)).Msg.(*Buckets)
	if !ok || len(buckets.DCs) != 1 || buckets.DCs[0].DC != "b" {
		t.Fatalf("per-DC sums answered with %+v", buckets)
	}
	// Equal totals need no answer, unless one is asked for.
	know(a2, 0, b1)
	if r := a1.Step(2*time.Second, "a2", &Summary{Sums: a2.total()}); len(r.Messages) != 0 {
		t.Fatalf("an equal total answered with %+v", r.Messages)
	}
	if m := only(t, a1.Step(2*time.Second, "a2", &Summary{Sums: a2.total(), Reply: true})).Msg.(*Buckets); len(m.DCs) != 0 {
		t.Fatalf("an equal total with Reply answered with %+v", m)
	}
}

func TestVerdictFromAnotherDCIsAnnouncedAtOnce(t *testing.T) {
	a1, a2 := newCore(t, "a1", "a", "a1"), newCore(t, "a2", "a", "a1")
	b1, b2, b3 := newCore(t, "b1", "b", "a1"), newCore(t, "b2", "b", "a1"), newCore(t, "b3", "b", "a1")
	know(b1, 0, a1, a2, b2, b3)
	notice := &Push{Entries: []Delta{{State: a2.v(a2.self).state, DeadAt: a2.v(a2.self).maxVersion}}}
	r := b1.Step(time.Second, "a1", notice)
	if !hasEvent(r, membership.EventDead, "a2") {
		t.Fatalf("the ferried verdict was not taken: %v", r.Events)
	}
	to := map[string]bool{}
	for _, o := range r.Messages {
		if p, ok := o.Msg.(*Push); ok && len(p.Entries) == 1 && p.Entries[0].State.ID == "a2" && len(p.Entries[0].State.App) == 0 {
			to[o.To] = true
		}
	}
	if len(to) != 2 || !to["b2"] || !to["b3"] {
		t.Fatalf("the verdict went to %v, want b2 and b3 (a notice without app states): %+v", to, r.Messages)
	}
	// The same verdict again is no news: nothing more to announce.
	if r := b1.Step(time.Second, "a1", notice); kindTo(r, "push", "") != 0 {
		t.Fatalf("an old verdict announced again: %+v", r.Messages)
	}
	// A member of b that gets the notice from b1 takes it; a gateway of b
	// echoes it to the DC (a member that lost b1's notice gets this one),
	// any other member announces nothing.
	gws := Gateways([]string{"b1", "b2", "b3"}, DefaultOptions.Gateways)
	for _, c := range []*Core{b2, b3} {
		know(c, 0, a1, a2, b1, b2, b3)
		var announced membership.Message
		for _, o := range r.Messages {
			if o.To == c.ID() {
				announced = o.Msg
			}
		}
		got := c.Step(time.Second, "b1", announced)
		want := 0
		if slices.Contains(gws, c.ID()) {
			want = 2
		}
		if !hasEvent(got, membership.EventDead, "a2") || kindTo(got, "push", "") != want {
			t.Fatalf("%s (gateways %v) given the notice: %+v, want %d pushes", c.ID(), gws, got, want)
		}
	}
}

// TestRemovedEntryStillPushedAsItWas removes a member whose last change is
// still being pushed, and has its next generation join at once: the push
// goes on with the removed entry as it was, beside the new one, as when
// every entry was an allocation of its own; and a core's own table reuses
// the versions its entries leave.
func TestRemovedEntryStillPushedAsItWas(t *testing.T) {
	c, err := New(membership.Config{ID: "a1", DC: "a", Generation: 1700000000, Seeds: []string{"a1"},
		RemoveAfter: 10 * time.Second, Rand: rand.New(rand.NewPCG(7, 2))}, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	x := newCore(t, "a4", "a", "a1")
	xs := x.v(x.self).state
	c.Step(0, "a4", &Push{Entries: []Delta{{State: xs}}})
	c.Step(time.Second, "a2", &Push{Entries: []Delta{{State: xs, DeadAt: xs.MaxVersion()}}})
	now := time.Second
	for ; now < 10*time.Second; now += time.Second {
		tickRound(c, now)
	}
	// A later verdict changes the entry, which is pushed again.
	c.Step(now, "a2", &Push{Entries: []Delta{{State: xs, DeadAt: xs.MaxVersion() + 1}}})
	r := tickRound(c, now+2*time.Second)
	if !hasEvent(r, membership.EventRemoved, "a4") {
		t.Fatal("a4 not removed")
	}
	x2, err := New(membership.Config{ID: "a4", DC: "a", Generation: 1700000100, Seeds: []string{"a1"},
		Rand: rand.New(rand.NewPCG(7, 3))}, DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	c.Step(now+2*time.Second, "a4", &Push{Entries: []Delta{x2.delta(x2.self)}})
	var generations []uint64
	for _, e := range c.hot {
		if d := c.delta(e); d.State.ID == "a4" {
			generations = append(generations, d.State.Generation)
			if d.State.Generation == xs.Generation && d.DeadAt != xs.MaxVersion()+1 {
				t.Fatalf("the removed entry is pushed with deadAt %d, want %d", d.DeadAt, xs.MaxVersion()+1)
			}
		}
	}
	if !slices.Equal(generations, []uint64{xs.Generation, 1700000100}) {
		t.Fatalf("a4 pushed at generations %v, want the removed one and the new one", generations)
	}
	if got, ok := c.Member("a4"); !ok || got.Generation != 1700000100 {
		t.Fatalf("a4 is %+v (known %v), want its new generation", got, ok)
	}
	for i := range 3 {
		tickRound(c, now+time.Duration(3+i)*time.Second)
	}
	used := len(c.table.versions) - len(c.table.free) - 1
	if used != c.known {
		t.Fatalf("own table holds %d versions for %d entries", used, c.known)
	}
}

func TestHintsChangeNothing(t *testing.T) {
	// The simulator's cores share a table, and their digests and deltas name
	// members and versions by number in it (see hint). Sent through the
	// encoding, which drops the hints, the same run must make the same
	// messages and events: joins in batches, loss, a crash, a restart.
	run := func(encode bool) []string {
		var log []string
		c, err := simcluster.New(simcluster.Config{
			Protocol: Protocol, Seed: 3, DCs: []string{"a", "b", "c"}, Seeds: []string{"a0", "b0", "c0"},
			Links: sim.UniformLinks{Local: sim.LinkSpec{Latency: 100 * time.Microsecond, Loss: 0.01},
				Remote: sim.LinkSpec{Latency: 30 * time.Millisecond, Loss: 0.01}},
			Wire: sim.TCPIPv4, CheckEncoding: encode,
			OnEvent: func(now time.Duration, observer string, e membership.Event) {
				log = append(log, fmt.Sprintf("%v %s %v %s %d", now, observer, e.Kind, e.ID, e.Generation))
			},
			Trace: func(tr sim.Trace) {
				log = append(log, fmt.Sprintf("%v %v %s>%s %s %d", tr.At, tr.Kind, tr.Env.From, tr.Env.To, tr.Env.Kind, tr.Env.Msg.WireSize()))
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		for batch := range 3 {
			for i := range 20 {
				dc := string(rune('a' + i%3))
				if err := c.Start(fmt.Sprintf("%s%d", dc, batch*7+i/3), dc); err != nil {
					t.Fatal(err)
				}
			}
			c.Sim().RunFor(3 * time.Second)
		}
		if err := c.Crash("b8"); err != nil {
			t.Fatal(err)
		}
		c.Sim().RunFor(10 * time.Second)
		if err := c.Start("b8", "b"); err != nil {
			t.Fatal(err)
		}
		c.Sim().RunFor(10 * time.Second)
		if err := c.Err(); err != nil {
			t.Fatal(err)
		}
		return log
	}
	hinted, decoded := run(false), run(true)
	if len(hinted) < 1000 {
		t.Fatalf("only %d lines of trace", len(hinted))
	}
	for i := range min(len(hinted), len(decoded)) {
		if hinted[i] != decoded[i] {
			t.Fatalf("line %d: with hints %q, decoded %q", i, hinted[i], decoded[i])
		}
	}
	if len(hinted) != len(decoded) {
		t.Fatalf("%d lines with hints, %d decoded", len(hinted), len(decoded))
	}
}

// TestFirstHeardOfReported has a core first hear of a member as it is now, live or not:
// each is reported, so that a restarted node, which holds the member as its stored ring
// had it, learns that it left or died meanwhile (explorer seed 5235: a restarted node
// never learned that a node decommissioned while it was away had left, and held its
// ranges on it).
func TestFirstHeardOfReported(t *testing.T) {
	const now = time.Second
	tests := []struct {
		name  string
		delta func(x *Core) Delta
		want  []membership.EventKind
	}{
		{"live", func(x *Core) Delta { return x.delta(x.self) },
			[]membership.EventKind{membership.EventJoined}},
		{"convicted", func(x *Core) Delta {
			s := x.v(x.self).state
			return Delta{State: s, DeadAt: s.MaxVersion()}
		}, []membership.EventKind{membership.EventJoined, membership.EventDead}},
		{"left", func(x *Core) Delta {
			x.Leave(now)
			return x.delta(x.self)
		}, []membership.EventKind{membership.EventJoined, membership.EventLeft}},
		{"shut down", func(x *Core) Delta {
			x.Shutdown(now)
			return x.delta(x.self)
		}, []membership.EventKind{membership.EventJoined, membership.EventDead}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCore(t, "a1", "a", "a1")
			x := newCore(t, "a2", "a", "a1")
			r := c.Step(now, "a3", &Push{Entries: []Delta{tt.delta(x)}})
			var got []membership.EventKind
			for _, e := range r.Events {
				if e.ID == "a2" {
					got = append(got, e.Kind)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("events of a2 = %v, want %v", got, tt.want)
			}
			m, ok := c.Member("a2")
			if wantAlive := tt.name == "live"; !ok || m.Alive != wantAlive {
				t.Fatalf("a2 is %+v (known %v), want alive %v", m, ok, wantAlive)
			}
		})
	}
}

// announced lists, by recipient, the members each Push in r carries.
func announced(r membership.Ready) map[string][]string {
	out := map[string][]string{}
	for _, o := range r.Messages {
		if p, ok := o.Msg.(*Push); ok {
			for _, d := range p.Entries {
				out[o.To] = append(out[o.To], d.State.ID)
			}
		}
	}
	return out
}

// admit has seed admit new members of DC a, a<from> to a<to-1>, one Join
// each, and returns their IDs.
func admit(t *testing.T, seed *Core, now time.Duration, from, to int) []string {
	t.Helper()
	var ids []string
	for i := from; i < to; i++ {
		j := newCore(t, fmt.Sprintf("a%d", i), "a", seed.ID())
		seed.Step(now, j.ID(), only(t, j.Tick(now)).Msg)
		ids = append(ids, j.ID())
	}
	return ids
}

// TestJoinBurstIsAnnounced has a seed admit a batch of joiners: at its next
// tick it announces them all, in one Push, to every live member of its DC
// (the joiners among them), and not again. A node of another DC that hears
// of them from across announces them in its own DC; a member told by an
// announcement announces nothing.
func TestJoinBurstIsAnnounced(t *testing.T) {
	a1, a2, a3 := newCore(t, "a1", "a", "a1"), newCore(t, "a2", "a", "a1"), newCore(t, "a3", "a", "a1")
	know(a1, 0, a2, a3)
	tick := DefaultOptions.TickInterval
	joiners := admit(t, a1, time.Second, 4, 10)
	got := announced(a1.Tick(time.Second + tick))
	want := map[string][]string{}
	for _, id := range append([]string{"a2", "a3"}, joiners...) {
		want[id] = joiners
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the seed's tick after the joins pushed %v, want %v", got, want)
	}
	if got := announced(a1.Tick(time.Second + 2*tick)); len(got) != 0 {
		t.Fatalf("the next tick pushed %v again", got)
	}

	b1, b2 := newCore(t, "b1", "b", "a1"), newCore(t, "b2", "b", "a1")
	know(b1, 0, a1, b2)
	know(b2, 0, a1, b1)
	e := a1.entry("a4")
	b1.Step(time.Second, "a1", &Push{Entries: []Delta{a1.delta(e)}})
	r := b1.Tick(time.Second + tick)
	if got := announced(r); !reflect.DeepEqual(got, map[string][]string{"b2": {"a4"}}) {
		t.Fatalf("b1, told of a4 from across, pushed %v, want a4 to b2", got)
	}
	var push membership.Message
	for _, o := range r.Messages {
		if o.To == "b2" && o.Msg.Kind() == "push" {
			push = o.Msg
		}
	}
	b2.Step(time.Second, "b1", push)
	if _, ok := b2.Member("a4"); !ok {
		t.Fatal("b2 did not take the announcement")
	}
	if got := announced(b2.Tick(time.Second + tick)); len(got) != 0 {
		t.Fatalf("b2, told by b1, pushed %v", got)
	}
}

// TestJoinBurstIsBounded admits more joiners than the burst queue holds:
// each tick announces MaxBurst of them, oldest first, up to 4×MaxBurst in
// all; the rest is left to the rumours and anti-entropy.
func TestJoinBurstIsBounded(t *testing.T) {
	opts := DefaultOptions
	opts.MaxBurst = 2
	seed, err := New(membership.Config{ID: "a1", DC: "a", Generation: 1700000000, Seeds: []string{"a1"},
		Rand: rand.New(rand.NewPCG(7, 2))}, opts)
	if err != nil {
		t.Fatal(err)
	}
	joiners := admit(t, seed, time.Second, 2, 13)
	var perTick []int
	var all []string
	for i := 1; i <= 6; i++ {
		got := announced(seed.Tick(time.Second + time.Duration(i)*opts.TickInterval))
		perTick = append(perTick, len(got["a2"]))
		all = append(all, got["a2"]...)
	}
	if !slices.Equal(perTick, []int{2, 2, 2, 2, 0, 0}) || !slices.Equal(all, joiners[:8]) {
		t.Fatalf("ticks announced %v: %v, want 2 a tick of the first 8 of %v", perTick, all, joiners)
	}
}

// TestJoinBurstKeepsToItsBytes: a tick's burst stops before its Push, times
// the members it goes to, passes MaxBurstBytes; the members held back go at
// the next ticks, oldest first, and one goes each tick even when alone it
// passes the cap.
func TestJoinBurstKeepsToItsBytes(t *testing.T) {
	for _, tt := range []struct {
		name    string
		entries int // how many deltas the cap holds, to every receiver
		want    []int
	}{
		{"three a tick", 3, []int{3, 3, 2, 0}},
		{"one even when it passes the cap alone", 0, []int{1, 1, 1, 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := DefaultOptions
			seed, err := New(membership.Config{ID: "a1", DC: "a", Generation: 1700000000, Seeds: []string{"a1"},
				Rand: rand.New(rand.NewPCG(7, 2))}, opts)
			if err != nil {
				t.Fatal(err)
			}
			joiners := admit(t, seed, time.Second, 2, 10) // 8 joiners, each a receiver too
			d := seed.delta(seed.entry(joiners[0]))
			seed.opts.MaxBurstBytes = tt.entries * deltaCodec.size(&d) * len(joiners)
			if tt.entries == 0 {
				seed.opts.MaxBurstBytes = 1
			}
			var perTick []int
			var all []string
			for i := 1; i <= len(tt.want); i++ {
				got := announced(seed.Tick(time.Second + time.Duration(i)*opts.TickInterval))
				perTick = append(perTick, len(got["a2"]))
				all = append(all, got["a2"]...)
			}
			if !slices.Equal(perTick, tt.want) || !slices.Equal(all, joiners[:len(all)]) {
				t.Fatalf("ticks announced %v: %v, want %v of %v, oldest first", perTick, all, tt.want, joiners)
			}
		})
	}
}
