package rebalance

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
)

// TestAlterRefusesWhatItCannotMoveSafely: each refusal of a change of replication says
// why, and comes before the move touches anything (the unused parts fail the test if it
// does). The cluster: a, b, c in dc1 and x in dc2, up and normal, unless the case says.
func TestAlterRefusesWhatItCannotMoveSafely(t *testing.T) {
	for _, tc := range []struct {
		name        string
		cfg         Config
		change      func(*view) // of the cluster
		keyspace    string
		replication string
		want        error
		says        string
	}{
		{name: "no such keyspace", keyspace: "nothing", replication: "dc1=3", want: schema.ErrNoKeyspace},
		{name: "erasure-coded", keyspace: "coded", replication: "simple=2", want: coord.ErrInvalidArgument, says: "erasure-coded"},
		{name: "a DHT", cfg: Config{DHT: "chord"}, keyspace: "app", replication: "dc1=3", want: coord.ErrInvalidArgument, says: "onehop"},
		{name: "an unknown datacenter", keyspace: "app", replication: "dc1=2,dc3=1", want: coord.ErrInvalidArgument,
			says: `names datacenter "dc3", which has no normal node; the cluster has dc1, dc2`},
		{name: "more replicas than nodes", keyspace: "app", replication: "dc1=2,dc2=2", want: coord.ErrInvalidArgument,
			says: "asks for 2 replicas in dc2, which has 1 normal nodes"},
		{name: "more replicas than nodes, simple", keyspace: "app", replication: "simple=5", want: coord.ErrInvalidArgument,
			says: "asks for 5 replicas; the ring has 4 normal nodes"},
		{name: "more replicas than nodes in some DC, each", keyspace: "app", replication: "each=2", want: coord.ErrInvalidArgument,
			says: "asks for 2 replicas in dc2, which has 1 normal nodes"},
		{name: "no replica left", keyspace: "app", replication: "dc1=0,dc2=0", want: coord.ErrInvalidArgument, says: "no replica anywhere"},
		{name: "bad syntax", keyspace: "app", replication: "dc1", want: coord.ErrInvalidArgument, says: "replication"},
		{name: "already moving", keyspace: "moving", replication: "dc1=3", want: coord.ErrInvalidArgument, says: "is moving"},
		{name: "a node down", change: func(v *view) { v.Up["b"] = false }, keyspace: "app", replication: "dc1=3",
			want: coord.ErrUnavailable, says: "node b is down"},
		{name: "a ring change", change: func(v *view) {
			v.Members = append(v.Members, cluster.Node{ID: "d", DC: "dc1", Status: cluster.StatusJoining})
			v.Up["d"] = true
		}, keyspace: "app", replication: "dc1=3", says: "node d is joining"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newAlterer(t, tc.cfg, tc.change)
			err := r.Alter(context.Background(), tc.keyspace, tc.replication, func(p Progress) { t.Fatalf("reported %q", p.Step) })
			if err == nil || tc.want != nil && !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want %v saying %q", err, tc.want, tc.says)
			}
		})
	}
}

// TestAlterAnnounced: a change of replication waits for every member to announce that
// it follows one; those that do not (an older build, or one gossip has not told of)
// are named, sorted.
func TestAlterAnnounced(t *testing.T) {
	this := map[string]string{KeyAlter: "1", "protocol": "9"}
	for _, tc := range []struct {
		name    string
		members map[string]map[string]string
		says    string // "" when allowed
	}{
		{name: "every member announces", members: map[string]map[string]string{"a": this, "b": this}},
		{name: "an older build", members: map[string]map[string]string{"a": this, "b": {"protocol": "9"}}, says: "node b does not announce"},
		{name: "one gossip has not told of", members: map[string]map[string]string{"a": this, "c": nil, "b": {KeyAlter: "1"}}, says: "node c does not announce"},
		{name: "several, sorted", members: map[string]map[string]string{"n2": {}, "a": this, "n10": {KeyAlter: "0"}}, says: "nodes n10, n2 do not announce"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := AlterAnnounced(tc.members)
			switch {
			case tc.says == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.says != "" && (!errors.Is(err, coord.ErrUnavailable) || !strings.Contains(err.Error(), tc.says)):
				t.Fatalf("got %v, want unavailable saying %q", err, tc.says)
			}
		})
	}
}

// TestAlterToTheSameReplicationSucceeds: asking for the replication a keyspace has is
// no change, so it succeeds at once, even with a node down or a ring change under way,
// and publishes nothing; a script that alters can run again.
func TestAlterToTheSameReplicationSucceeds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*view)
	}{
		{name: "all up"},
		{name: "a node down", change: func(v *view) { v.Up["b"] = false }},
		{name: "a ring change", change: func(v *view) {
			v.Members = append(v.Members, cluster.Node{ID: "d", DC: "dc1", Status: cluster.StatusJoining})
			v.Up["d"] = true
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newAlterer(t, Config{}, tc.change)
			var steps []string
			if err := r.Alter(context.Background(), "app", "dc1=2, dc2=0", func(p Progress) { steps = append(steps, p.Step) }); err != nil {
				t.Fatalf("refused: %v", err)
			}
			if len(steps) != 1 || !strings.Contains(steps[0], "nothing to change") {
				t.Fatalf("reported %q, want one step saying nothing to change", steps)
			}
			if ks, _ := r.catalog.Get("app"); ks.Timestamp != 7 || ks.Moving || ks.Replication != "dc1=2" {
				t.Fatalf("the keyspace changed: %+v", ks)
			}
		})
	}
}

// TestSettleRefusesAKeyspaceNotMoving: settling is for a move cut short.
func TestSettleRefusesAKeyspaceNotMoving(t *testing.T) {
	r := newAlterer(t, Config{}, nil)
	err := r.Settle(context.Background(), "app", func(p Progress) { t.Fatalf("reported %q", p.Step) })
	if !errors.Is(err, coord.ErrInvalidArgument) || !strings.Contains(err.Error(), "nothing to settle") {
		t.Fatalf("got %v, want a refusal saying nothing to settle", err)
	}
}

// newAlterer is node a's, of a, b, c in dc1 and x in dc2, all up and normal before
// change, whose catalog holds app (dc1=2), moving (an alter under way) and coded.
func newAlterer(t *testing.T, cfg Config, change func(*view)) *Rebalancer {
	t.Helper()
	v := view{Up: map[string]bool{}}
	for _, n := range []cluster.Node{{ID: "a", DC: "dc1"}, {ID: "b", DC: "dc1"}, {ID: "c", DC: "dc1"}, {ID: "x", DC: "dc2"}} {
		n.Status = cluster.StatusNormal
		v.Members = append(v.Members, n)
		v.Up[n.ID] = true
	}
	if change != nil {
		change(&v)
	}
	return rebalancerOver(t, cfg, v, []schema.Keyspace{
		{Name: "app", Replication: "dc1=2", Timestamp: 7},
		{Name: "moving", Replication: "dc1=2", Timestamp: 7, Moving: true, NextReplication: "dc1=3"},
		{Name: "coded", Erasure: schema.Erasure{M: 2, K: 1}, Timestamp: 7},
	})
}

// changingView is a cluster view that changes while a move runs.
type changingView struct {
	mu sync.Mutex
	v  view
}

func (c *changingView) Nodes() []cluster.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.v.Nodes())
}

func (c *changingView) Node(id string) (cluster.Node, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v.Node(id)
}

func (c *changingView) State(id string) cluster.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v.State(id)
}

func (c *changingView) Alive(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v.Alive(id)
}

// set gives node id status, adding it up in dc1 if the view lacks it.
func (c *changingView) set(id string, status cluster.Status) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.v.Members, func(n cluster.Node) bool { return n.ID == id })
	if i < 0 {
		c.v.Members = append(c.v.Members, cluster.Node{ID: id, DC: "dc1"})
		c.v.Up[id] = true
		i = len(c.v.Members) - 1
	}
	c.v.Members[i].Status = status
}

// hookPublisher calls published with each definition this node announces.
type hookPublisher struct{ published func(schema.Keyspace) }

func (p hookPublisher) Publish(_ context.Context, ks schema.Keyspace) error {
	p.published(ks)
	return nil
}

// tickingClock stamps each definition later than the last.
type tickingClock struct {
	mu   sync.Mutex
	last hlc.Timestamp
}

func (c *tickingClock) Stamp() (hlc.Timestamp, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last += 10
	return c.last, nil
}

func (c *tickingClock) Now() hlc.Timestamp { return 1 }

// emptyPeers answers every step with nothing: no rows, nothing dropped.
type emptyPeers struct{}

func (emptyPeers) Step(context.Context, cluster.Node, []byte) ([]byte, error) {
	return proto.Marshal(&kurav1.RebalanceStepResponse{})
}

// TestAlterGivesWayToARingChange: a node that starts joining after the alter checked
// the ring, and before the alter announced its move, is seen a ring delay later: the
// alter copies nothing, settles back on the replication it started from, and fails,
// unavailable, saying what to do next: wait for the join, or, when no ring change is in
// progress by the time it has settled (the other gave way too), just run it again.
func TestAlterGivesWayToARingChange(t *testing.T) {
	for _, tc := range []struct {
		name string
		// settled is what becomes of the join once the alter settled back.
		settled cluster.Status
		says    string
	}{
		{"the join goes on", cluster.StatusJoining, "run it again once the change completes: invalid ring change: node d is joining"},
		{"the join gave way too", cluster.StatusBooting, "that change is no longer in progress (it completed, or gave way too): run it again (when this move looked: invalid ring change: node d is joining"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newAlterer(t, Config{}, nil)
				v := &changingView{v: r.view.(view)}
				r.view = v
				r.publisher = hookPublisher{published: func(ks schema.Keyspace) {
					if ks.Moving {
						v.set("d", cluster.StatusJoining)
					} else {
						v.set("d", tc.settled)
					}
				}}
				r.clock, r.peers, r.placement = &tickingClock{last: 7}, emptyPeers{}, thirdsRing{}
				r.store = &listStore{unused: unused{t}}
				var steps []string
				err := r.Alter(context.Background(), "app", "dc1=3", func(p Progress) { steps = append(steps, p.Step) })
				if !errors.Is(err, coord.ErrUnavailable) || !strings.Contains(err.Error(), tc.says) {
					t.Errorf("got %v, want unavailable saying %q", err, tc.says)
				}
				ks, err := r.catalog.Get("app")
				if err != nil {
					t.Fatal(err)
				}
				if ks.Moving || ks.Replication != "dc1=2" {
					t.Errorf("app after the alter: replication %s, moving %v; want dc1=2, not moving", ks.Replication, ks.Moving)
				}
				if !slices.ContainsFunc(steps, func(s string) bool { return strings.HasPrefix(s, "settled") }) {
					t.Errorf("steps %q: none settled", steps)
				}
			})
		})
	}
}
