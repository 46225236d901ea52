package rebalance

import (
	"context"
	"errors"
	"strings"
	"testing"

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
		{name: "the same replication", keyspace: "app", replication: "dc1=2, dc2=0", want: coord.ErrInvalidArgument, says: "nothing to change"},
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
