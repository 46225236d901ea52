package client

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/data/placement"
)

// listing turns directory entries into a cluster status's nodes as ClusterStatus (internal/assembly/node/
// api.go) fills them in, each node alive with its client address from addrs, and the
// others dead.
func listing(nodes []cluster.Node, addrs map[string]string) []*kurav1.NodeStatus {
	out := make([]*kurav1.NodeStatus, 0, len(nodes))
	for _, n := range nodes {
		addr, alive := addrs[n.ID]
		out = append(out, &kurav1.NodeStatus{Id: n.ID, Dc: n.DC, ClientAddr: addr, Alive: alive, Tokens: n.Tokens,
			Status: n.Status.String(), Replaces: n.Replaces, PowerTier: int32(n.Tier), State: "up"})
	}
	return out
}

// tokensOf returns the tokens a replacement of id claims: those derived from id.
func tokensOf(id string) []uint64 {
	var tokens []uint64
	for _, t := range (cluster.Node{ID: id}).RingTokens(ring.DefaultVnodes) {
		tokens = append(tokens, uint64(t))
	}
	return tokens
}

// serverRing is the current ring the servers' placement builds from the same entries:
// the one whose replicas serve reads and count for writes.
func serverRing(t *testing.T, nodes []cluster.Node) *ring.Ring {
	t.Helper()
	dir := cluster.NewDirectory(nodes[0])
	for _, n := range nodes[1:] {
		if _, err := dir.Upsert(n); err != nil {
			t.Fatal(err)
		}
	}
	r, err := placement.NewRing(dir, ring.DefaultVnodes).Ring()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRingFollowsServerPlacement: the client builds its ring from every listed node but
// those off the ring, and of a dead node and its replacement (kura server --replace),
// which claim the same tokens, it keeps the one the servers' placement keeps: the dead
// node until the replacement is normal. A client that kept both failed every request
// with "ring: duplicate token" (issue 43, item 4); one that kept a removed node sent its
// requests for the removed node's ranges elsewhere than to the replicas.
func TestRingFollowsServerPlacement(t *testing.T) {
	n := func(id string, status cluster.Status) cluster.Node {
		return cluster.Node{ID: id, DC: "dc1", Status: status}
	}
	replacing := func(status cluster.Status) cluster.Node {
		return cluster.Node{ID: "n4", DC: "dc1", Status: status, Replaces: "n2", Tokens: tokensOf("n2")}
	}
	tiered := n("n3", cluster.StatusNormal)
	tiered.Tier = 1
	tests := []struct {
		name  string
		nodes []cluster.Node // n1 first: the node the client asks
		want  []string
	}{
		{"replacement joining: the dead node keeps its tokens",
			[]cluster.Node{n("n1", cluster.StatusNormal), n("n2", cluster.StatusNormal), n("n3", cluster.StatusNormal), replacing(cluster.StatusJoining)},
			[]string{"n1", "n2", "n3"}},
		{"replacement normal, the dead node not marked removed yet",
			[]cluster.Node{n("n1", cluster.StatusNormal), n("n2", cluster.StatusNormal), n("n3", cluster.StatusNormal), replacing(cluster.StatusNormal)},
			[]string{"n1", "n3", "n4"}},
		{"replacement normal, the dead node removed",
			[]cluster.Node{n("n1", cluster.StatusNormal), n("n2", cluster.StatusRemoved), n("n3", cluster.StatusNormal), replacing(cluster.StatusNormal)},
			[]string{"n1", "n3", "n4"}},
		{"removed and left nodes",
			[]cluster.Node{n("n1", cluster.StatusNormal), n("n2", cluster.StatusRemoved), n("n3", cluster.StatusNormal), n("n5", cluster.StatusLeft)},
			[]string{"n1", "n3"}},
		{"booting and joining nodes own nothing yet",
			[]cluster.Node{n("n1", cluster.StatusNormal), n("n2", cluster.StatusBooting), n("n3", cluster.StatusNormal), n("n5", cluster.StatusJoining)},
			[]string{"n1", "n3"}},
		{"leaving and rebuilding nodes still own their ranges",
			[]cluster.Node{n("n1", cluster.StatusNormal), n("n2", cluster.StatusLeaving), n("n3", cluster.StatusRebuilding)},
			[]string{"n1", "n2", "n3"}},
		{"power tiers", []cluster.Node{n("n1", cluster.StatusNormal), n("n2", cluster.StatusNormal), tiered},
			[]string{"n1", "n2", "n3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			f := startFake(t, "n1", nil)
			f.view = func() []*kurav1.NodeStatus { return listing(tt.nodes, map[string]string{"n1": f.addr}) }
			cl, err := Dial(ctx, []string{f.addr}, Options{})
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			defer cl.Close()
			if err := cl.RingError(); err != nil {
				t.Fatalf("RingError = %v, want a ring", err)
			}
			got := cl.ring.Members()
			var ids []string
			for _, m := range got {
				ids = append(ids, m.ID)
			}
			if !slices.Equal(ids, tt.want) {
				t.Fatalf("ring members %v, want %v", ids, tt.want)
			}
			if want := serverRing(t, tt.nodes).Members(); !reflect.DeepEqual(got, want) {
				t.Fatalf("the client's ring differs from the servers' placement:\nclient %s\nserver %s", describe(got), describe(want))
			}
			getValue(t, ctx, cl, "n1")
		})
	}
}

// TestRoutesWithoutARingItCannotBuild: a listing the client builds no ring from (two
// normal nodes claiming one token, which no rule of the client's resolves) leaves it
// routing to any live node, saying why in RingError, rather than failing every call; and
// a node that left, though still up, is never chosen: it would refuse the request. A
// static view without a ring is still loaded once.
func TestRoutesWithoutARingItCannotBuild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, b, gone := startFake(t, "a", nil), startFake(t, "b", nil), startFake(t, "gone", nil)
	clash := cluster.Node{ID: "b", DC: "dc1", Tokens: tokensOf("a")}
	nodes := []cluster.Node{{ID: "a", DC: "dc1"}, clash, {ID: "gone", DC: "dc1", Status: cluster.StatusLeft}}
	a.view = func() []*kurav1.NodeStatus {
		return listing(nodes, map[string]string{"a": a.addr, "b": b.addr, "gone": gone.addr})
	}
	b.view, gone.view = a.view, a.view
	cl, err := Dial(ctx, []string{a.addr}, Options{})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer cl.Close()
	if err := cl.RingError(); !errors.Is(err, ring.ErrDuplicateToken) {
		t.Fatalf("RingError = %v, want the duplicate token", err)
	}
	seen := map[string]bool{}
	for range 8 {
		item, found, err := cl.Get(ctx, "app", []byte("k"), consistency.One)
		if err != nil || !found {
			t.Fatalf("Get without a ring = %q, %t, %v", item.Value, found, err)
		}
		seen[string(item.Value)] = true
	}
	if seen["gone"] {
		t.Fatal("a Get went to the node that left")
	}
	for range 4 {
		if route := cl.route("", nil); !slices.Equal(route, []string{a.addr, b.addr, a.addr}) && !slices.Equal(route, []string{b.addr, a.addr, a.addr}) {
			t.Fatalf("route %v, want a and b in turn, then the seed a; never the node that left at %s", route, gone.addr)
		}
	}

	// A static view is loaded once, ring or no ring.
	before := len(a.statusCalls)
	static, err := Dial(ctx, []string{a.addr, b.addr}, Options{StaticNodes: true, RefreshInterval: time.Nanosecond})
	if err != nil {
		t.Fatalf("Dial with StaticNodes: %v", err)
	}
	defer static.Close()
	for range 3 {
		if _, _, err := static.Get(ctx, "app", []byte("k"), consistency.One); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(a.statusCalls) + len(b.statusCalls) - before; n != 1 {
		t.Fatalf("the static client asked for the nodes %d times, want once", n)
	}
}

// describe prints ring members without their tokens, which are too many to read.
func describe(members []ring.Member) string {
	var out []string
	for _, m := range members {
		out = append(out, fmt.Sprintf("%s(dc %s, tier %d, %d tokens, first %d)", m.ID, m.DC, m.Tier, len(m.Tokens), m.Tokens[0]))
	}
	return strings.Join(out, " ")
}
