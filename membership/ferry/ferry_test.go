package ferry

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kuradb/kura/membership"
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

func hasEvent(r membership.Ready, kind membership.EventKind, id string) bool {
	for _, e := range r.Events {
		if e.Kind == kind && e.ID == id {
			return true
		}
	}
	return false
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
	before := c.self.maxVersion
	notice := &Push{Entries: []Delta{{State: c.self.state, DeadAt: before}}}
	c.Step(time.Second, "a2", notice)
	if c.self.dead() || c.self.maxVersion <= before {
		t.Fatalf("not refuted: version %d, deadAt notice %d", c.self.maxVersion, before)
	}
	// A notice about an older generation is no news.
	old := c.self.state
	old.Generation--
	v := c.self.maxVersion
	c.Step(2*time.Second, "a2", &Push{Entries: []Delta{{State: old, DeadAt: 1 << 40}}})
	if c.self.maxVersion != v {
		t.Fatal("refuted a notice about an older generation")
	}
}

// watchedPair is a monitor m that knows x and has had its heartbeats for
// ten seconds; it returns the time of the last heartbeat.
func watchedPair(t *testing.T) (m, x *Core, last time.Duration) {
	m, x = newCore(t, "a1", "a", "a1"), newCore(t, "a2", "a", "a1")
	m.Step(0, "a2", &Push{Entries: []Delta{x.self.delta()}})
	for i := 1; i <= 10; i++ {
		last = time.Duration(i) * time.Second
		m.Step(last, "a2", &Heartbeat{Generation: x.self.state.Generation, MaxVersion: x.self.maxVersion})
		m.Tick(last)
	}
	return m, x, last
}

func TestSilentNodeIsProbedSuspectedAndConvicted(t *testing.T) {
	m, _, last := watchedPair(t)
	var probedAt, suspectedAt, deadAt time.Duration
	for now := last + time.Second; now < last+30*time.Second && deadAt == 0; now += time.Second {
		r := m.Tick(now)
		for _, o := range r.Messages {
			if o.To == "a2" && o.Msg.Kind() == "probe" && probedAt == 0 {
				probedAt = now
			}
		}
		if hasEvent(r, membership.EventSuspect, "a2") {
			suspectedAt = now
		}
		if hasEvent(r, membership.EventDead, "a2") {
			deadAt = now
		}
	}
	// Two seconds of pause plus a phi of 8: the first probe after about
	// four seconds of silence, suspicion one round later, death after three
	// unanswered probes.
	if probedAt-last < 3*time.Second || probedAt-last > 6*time.Second {
		t.Fatalf("first probe after %v of silence", probedAt-last)
	}
	if suspectedAt != probedAt+time.Second || deadAt != probedAt+3*time.Second {
		t.Fatalf("probe %v, suspect %v, dead %v", probedAt, suspectedAt, deadAt)
	}
	if member, _ := m.Member("a2"); member.Alive {
		t.Fatal("convicted node still alive")
	}
}

func TestAnsweredProbeIsNoSuspicion(t *testing.T) {
	m, x, last := watchedPair(t)
	for now := last + time.Second; now < last+30*time.Second; now += time.Second {
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
			}
		}
	}
	if _, watching := m.watched["a2"]; watching {
		t.Fatal("still watching a node that does not heartbeat here")
	}
}

func TestLeaveStopsMonitorsAndGoesQuiet(t *testing.T) {
	c := newCore(t, "a1", "a", "a1")
	c.Step(0, "a2", &Push{Entries: []Delta{newCore(t, "a2", "a", "a1").self.delta()}})
	c.Tick(time.Second) // a2 becomes c's monitor
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
		c.Tick(time.Duration(3+i) * time.Second)
	}
	if r := c.Tick(time.Hour); len(r.Messages) != 0 {
		t.Fatalf("quiet node still sends %+v", r.Messages)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	opts := DefaultOptions
	opts.Gateways = 0
	_, err := New(membership.Config{ID: "a1", DC: "a", Generation: 1, Rand: rand.New(rand.NewPCG(1, 1))}, opts)
	if !errors.Is(err, membership.ErrBadConfig) {
		t.Fatalf("err = %v, want ErrBadConfig", err)
	}
}
