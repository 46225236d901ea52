package scuttlebutt

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kuradb/kura/membership"
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
