package scuttlebutt

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/core/membership"
)

func newCore(t *testing.T, id string, seeds ...string) *Core {
	t.Helper()
	c, err := New(membership.Config{ID: id, DC: "a", Generation: 1700000000, Seeds: seeds, Rand: rand.New(rand.NewPCG(1, uint64(len(id))))})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// deliver hands every message of r addressed to one of the cores to it, and
// what that returns in turn, until nothing is left; it returns all events.
func deliver(now time.Duration, from string, r membership.Ready, cores map[string]*Core) []membership.Event {
	type envelope struct {
		from string
		out  membership.Outbound
	}
	var queue []envelope
	for _, m := range r.Messages {
		queue = append(queue, envelope{from, m})
	}
	events := r.Events
	for len(queue) > 0 {
		e := queue[0]
		queue = queue[1:]
		to := cores[e.out.To]
		if to == nil {
			continue
		}
		next := to.Step(now, e.from, e.out.Msg)
		events = append(events, next.Events...)
		for _, m := range next.Messages {
			queue = append(queue, envelope{e.out.To, m})
		}
	}
	return events
}

func kinds(events []membership.Event, id string) []membership.EventKind {
	var out []membership.EventKind
	for _, e := range events {
		if e.ID == id {
			out = append(out, e.Kind)
		}
	}
	return out
}

func TestJoinThroughSeedThreeWayExchange(t *testing.T) {
	seed, joiner := newCore(t, "s", "s"), newCore(t, "j", "s")
	cores := map[string]*Core{"s": seed, "j": joiner}
	// With nothing live, the joiner's round goes to the seed: SYN, ACK
	// (the seed requests j), ACK2 (j's state).
	r := joiner.Tick(time.Second)
	if len(r.Messages) != 1 || r.Messages[0].To != "s" || r.Messages[0].Msg.Kind() != "syn" {
		t.Fatalf("joiner's first round = %+v, want one SYN to the seed", r.Messages)
	}
	events := deliver(time.Second, "j", r, cores)
	if got := kinds(events, "j"); len(got) != 1 || got[0] != membership.EventJoined {
		t.Fatalf("seed events about j = %v, want [joined]", got)
	}
	// The seed's next round targets its only live peer, j, which learns s.
	events = deliver(2*time.Second, "s", seed.Tick(2*time.Second), cores)
	if _, ok := joiner.Member("s"); !ok {
		t.Fatalf("joiner does not know the seed after the seed's round; events %v", events)
	}
	for _, c := range []*Core{seed, joiner} {
		if n := len(c.Members()); n != 2 {
			t.Fatalf("%s knows %d members, want 2", c.ID(), n)
		}
	}
}

func TestSilentEndpointIsConvictedAfterAbout18Seconds(t *testing.T) {
	seed, joiner := newCore(t, "s", "s"), newCore(t, "j", "s")
	cores := map[string]*Core{"s": seed, "j": joiner}
	now := time.Duration(0)
	for range 30 { // thirty rounds of healthy gossip
		now += time.Second
		deliver(now, "j", joiner.Tick(now), cores)
		deliver(now, "s", seed.Tick(now), cores)
	}
	last := now
	var deadAt time.Duration
	for deadAt == 0 && now < last+60*time.Second {
		now += time.Second
		for _, e := range seed.Tick(now).Events {
			if e.Kind == membership.EventDead && e.ID == "j" {
				deadAt = now
			}
		}
	}
	// The mean interval is about one second, so phi passes 8 near 18.4 s.
	if silence := deadAt - last; silence < 17*time.Second || silence > 21*time.Second {
		t.Fatalf("convicted after %v of silence, want about 18 s", silence)
	}
	if m, _ := seed.Member("j"); m.Alive {
		t.Fatal("convicted member still alive")
	}
}

func TestLeaveGoesQuiet(t *testing.T) {
	c := newCore(t, "s", "s", "t")
	c.Leave(0)
	if m, _ := c.Member("s"); m.Status != membership.StatusLeft {
		t.Fatalf("status %q after Leave", m.Status)
	}
	for i := range LeaveRounds {
		if r := c.Tick(time.Duration(i) * time.Second); len(r.Messages) == 0 {
			t.Fatalf("round %d after Leave sent nothing; it should still announce", i)
		}
	}
	if r := c.Tick(time.Hour); len(r.Messages) != 0 {
		t.Fatalf("quiet node still sends %v", r.Messages)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := New(membership.Config{ID: "x"}); !errors.Is(err, membership.ErrBadConfig) {
		t.Fatalf("err = %v, want ErrBadConfig", err)
	}
}

// trio is a seed and two nodes that have gossiped until each knows all.
func trio(t *testing.T) (cores map[string]*Core, now time.Duration) {
	t.Helper()
	cores = map[string]*Core{"s": newCore(t, "s", "s"), "x": newCore(t, "x", "s"), "y": newCore(t, "y", "s")}
	for range 10 {
		now += time.Second
		for _, id := range []string{"s", "x", "y"} {
			deliver(now, id, cores[id].Tick(now), cores)
		}
	}
	for id, c := range cores {
		if n := len(c.Members()); n != 3 {
			t.Fatalf("%s knows %d members after ten rounds", id, n)
		}
	}
	return cores, now
}

func TestShutdownIsHeldDownUntilRestart(t *testing.T) {
	cores, now := trio(t)
	r := cores["x"].Shutdown(now)
	if len(r.Messages) != 2 {
		t.Fatalf("shutdown sent %d messages, want one to each live member", len(r.Messages))
	}
	events := deliver(now, "x", r, cores)
	if got := kinds(events, "x"); len(got) != 4 { // per observer: state-changed, dead
		t.Fatalf("events about x: %v, want state-changed and dead at each of two peers", got)
	}
	for _, id := range []string{"s", "y"} {
		if m, _ := cores[id].Member("x"); m.Alive || m.Status != membership.StatusShutdown {
			t.Fatalf("%s sees the shut-down x as %+v", id, m)
		}
	}
	if r := cores["x"].Tick(now + time.Second); len(r.Messages) != 0 {
		t.Fatalf("a shut-down node still gossips: %v", r.Messages)
	}
	if r := cores["x"].Shutdown(now + time.Second); len(r.Messages) != 0 {
		t.Fatal("a second shutdown announced again")
	}
	// Rounds of gossip between the others neither revive it nor report it
	// again.
	for range 40 {
		now += time.Second
		for _, id := range []string{"s", "y"} {
			r := cores[id].Tick(now)
			if got := kinds(deliver(now, id, r, cores), "x"); len(got) > 0 {
				t.Fatalf("at %v: events about the shut-down x: %v", now, got)
			}
		}
	}
	// A restart, with a newer generation, brings it back.
	x, err := New(membership.Config{ID: "x", DC: "a", Generation: 1700000100, Seeds: []string{"s"}, Rand: rand.New(rand.NewPCG(2, 2))})
	if err != nil {
		t.Fatal(err)
	}
	cores["x"] = x
	for range 5 {
		now += time.Second
		for _, id := range []string{"s", "x", "y"} {
			deliver(now, id, cores[id].Tick(now), cores)
		}
	}
	if m, _ := cores["s"].Member("x"); !m.Alive || m.Status != membership.StatusNormal || m.Generation != 1700000100 {
		t.Fatalf("after the restart s sees x as %+v", m)
	}
}

func TestSyncedOnceAMemberGossipedItsView(t *testing.T) {
	// A seed with no other seed is synced in its first round.
	alone := newCore(t, "s", "s")
	if got := kinds(alone.Tick(time.Second).Events, "s"); len(got) != 1 || got[0] != membership.EventSynced {
		t.Fatalf("lone seed's first round events %v, want synced", got)
	}
	if got := kinds(alone.Tick(2*time.Second).Events, "s"); len(got) != 0 {
		t.Fatalf("synced reported twice: %v", got)
	}

	// A joiner's own exchange with the seed teaches it nothing (the ACK
	// answers only for the members its SYN listed); the seed's SYN, which
	// lists the joiner, and its ACK2 do.
	seed, joiner := newCore(t, "s", "s"), newCore(t, "j", "s")
	cores := map[string]*Core{"s": seed, "j": joiner}
	seed.Tick(time.Second) // the seed's own synced event, out of the way
	r := joiner.Tick(time.Second)
	if got := kinds(deliver(time.Second, "j", r, cores), "s"); len(got) != 0 {
		t.Fatalf("joiner's own exchange gave events about s: %v", got)
	}
	// A fresh joiner's SYN does not list the seed: the seed, even unsynced,
	// would learn nothing of the cluster from it.
	if seed.listsSelf(&Syn{Digests: []Digest{{ID: "j", Generation: 1}}}) {
		t.Fatal("a digest without the node counts as listing it")
	}
	events := deliver(2*time.Second, "s", seed.Tick(2*time.Second), cores)
	var synced []membership.Event
	for _, e := range events {
		if e.Kind == membership.EventSynced {
			synced = append(synced, e)
		}
	}
	if len(synced) != 1 || synced[0].ID != "s" {
		t.Fatalf("synced events after the seed's round: %+v, want one, from s", synced)
	}
}
