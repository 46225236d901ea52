package routing

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/routing/chord"
)

// dhtCluster connects DHTs by direct calls: send delivers each message at once.
type dhtCluster struct {
	dhts  map[string]*DHT
	names []string
	down  map[string]bool
	now   time.Duration
}

func newDHTCluster(t *testing.T, protocol chord.Protocol, names ...string) (*dhtCluster, []chord.Peer) {
	c := &dhtCluster{dhts: make(map[string]*DHT), down: make(map[string]bool)}
	var peers []chord.Peer
	for i, name := range names {
		p := chord.Peer{ID: chord.NodeID(name), Name: name, DC: fmt.Sprintf("dc%d", i%2)}
		n, err := chord.New(chord.Config{Self: p, Protocol: protocol, Rand: rand.New(rand.NewPCG(uint64(i), 0))})
		if err != nil {
			t.Fatal(err)
		}
		c.dhts[name] = NewDHT(n, func() time.Duration { return c.now }, c.send)
		c.names = append(c.names, name)
		peers = append(peers, p)
	}
	return c, peers
}

func (c *dhtCluster) send(envs []chord.Envelope) {
	for _, env := range envs {
		if !c.down[env.To.Name] {
			c.dhts[env.To.Name].Deliver(env.Msg)
		}
	}
}

// run ticks every live DHT every 100 ms for d.
func (c *dhtCluster) run(d time.Duration) {
	for end := c.now + d; c.now < end; {
		c.now += 100 * time.Millisecond
		for _, name := range c.names {
			if !c.down[name] {
				c.dhts[name].Tick()
			}
		}
	}
}

func TestDHTLookup(t *testing.T) {
	for _, protocol := range []chord.Protocol{chord.ProtocolChord, chord.ProtocolMLChord} {
		names := []string{"a", "b", "c", "d", "e"}
		c, peers := newDHTCluster(t, protocol, names...)
		c.dhts["a"].Join()
		for _, name := range names[1:] {
			c.dhts[name].Join(peers[0], peers[1])
		}
		c.run(10 * time.Second)
		layout, err := chord.NewLayout(peers)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"x", "y", "z", "foo_0", "foo_1"} {
			route, err := c.dhts["c"].Lookup(context.Background(), ring.Token(chord.KeyID([]byte(key))))
			if err != nil {
				t.Fatalf("%v: %v", protocol, err)
			}
			if want := layout.Owner(chord.KeyID([]byte(key))).Name; route.Owner != want {
				t.Errorf("%v: owner of %q = %s, want %s", protocol, key, route.Owner, want)
			}
		}
		// The ring's order by identifier: each node's predecessor and successor list.
		order := layout.Peers()
		for i, p := range order {
			pred, succs := c.dhts[p.Name].Neighbors()
			want := order[(i+len(order)-1)%len(order)].Name
			if pred != want || len(succs) != len(order)-1 || succs[0] != order[(i+1)%len(order)].Name {
				t.Errorf("%v: %s's neighbours: pred %s succs %v; want pred %s and the %d others from %s", protocol, p.Name, pred, succs, want, len(order)-1, order[(i+1)%len(order)].Name)
			}
		}
		if got := c.dhts["a"].Name(); got != protocol.String() {
			t.Errorf("Name() = %q, want %q", got, protocol)
		}
	}
}

func TestDHTLookupErrors(t *testing.T) {
	c, _ := newDHTCluster(t, chord.ProtocolChord, "a", "b")
	if _, err := c.dhts["a"].Lookup(context.Background(), 1); !errors.Is(err, ErrNoRing) {
		t.Errorf("before join: error %v, want ErrNoRing", err)
	}
	c.dhts["a"].Join()
	c.dhts["b"].Join(c.dhts["a"].node.Self())
	c.down["a"] = true // requests to a vanish; the lookup waits until cancelled
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	var err error
	for _, key := range []string{"k1", "k2", "k3", "k4"} {
		if _, err = c.dhts["b"].Lookup(ctx, ring.Token(chord.KeyID([]byte(key)))); err != nil {
			break
		}
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("with a dead peer: error %v, want context.DeadlineExceeded", err)
	}
	if n := len(c.dhts["b"].waiters); n != 0 {
		t.Errorf("%d waiters left behind", n)
	}
}
