package client

import (
	"context"
	"crypto/tls"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/certs/certstest"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/embedded"
	"github.com/kuradb/kura/node"
	"github.com/kuradb/kura/topology"
)

func TestRoutesToLocalReplicaAndFailsOver(t *testing.T) {
	topo, err := topology.Example("two-dc-6")
	if err != nil {
		t.Fatal(err)
	}
	c, err := embedded.Start(topo, embedded.Options{ClientAPI: true, Node: node.Config{
		GossipInterval: 50 * time.Millisecond,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.WaitConverged(ctx); err != nil {
		t.Fatal(err)
	}
	cl, err := Dial(ctx, []string{c.Nodes[0].ClientAddr()}, Options{LocalDC: "dc2"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.CreateKeyspace(ctx, "app", "dc1=1,dc2=1", ""); err != nil {
		t.Fatal(err)
	}

	key := []byte("routed")
	ks := cl.keyspaces["app"]
	var localReplica string
	for _, m := range ks.Strategy().Replicas(cl.ring, ks.Partition().Token(key)) {
		if m.DC == "dc2" {
			localReplica = m.ID
		}
	}
	route := cl.route("app", key)
	if got := c.Node(localReplica).ClientAddr(); route[0] != got {
		t.Fatalf("first choice %s, want the dc2 replica %s at %s", route[0], localReplica, got)
	}
	// ALL, so that the dc1 replica holds the value too before the dc2 one dies: at ONE the
	// write to dc1 could still be in flight when the Get below reads there.
	if _, err := cl.Put(ctx, "app", key, []byte("v"), consistency.All); err != nil {
		t.Fatal(err)
	}

	// The preferred node dies: the client moves on to the next node.
	if err := c.Stop(localReplica); err != nil {
		t.Fatal(err)
	}
	v, found, err := cl.Get(ctx, "app", key, consistency.One)
	if err != nil || !found || string(v.Value) != "v" {
		t.Fatalf("Get after the preferred node died = %q, %v, %v", v.Value, found, err)
	}
}

// TestTLSAndToken: a client with the cluster's CA and the token works with a node that
// serves TLS and requires a token; one lacking either is turned away, saying why.
func TestTLSAndToken(t *testing.T) {
	ca := certstest.NewCA(t)
	identity := certstest.Identity(t, ca, "a", "127.0.0.1")
	n, err := node.Start(node.Config{ID: "a", DC: "dc1", Listen: "127.0.0.1:0", ClientAddr: "127.0.0.1:0", InMemory: true,
		TLS: identity, AuthToken: "s3cret", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	trusting := &tls.Config{RootCAs: identity.CA}
	tests := []struct {
		name string
		opts Options
		want string // "" when Dial must succeed
	}{
		{"TLS and token", Options{TLS: trusting, Token: "s3cret"}, ""},
		{"no TLS", Options{Token: "s3cret"}, "Unavailable"},
		{"TLS without the CA", Options{TLS: &tls.Config{}, Token: "s3cret"}, "certificate signed by unknown authority"},
		{"no token", Options{TLS: trusting}, "this node requires a token"},
		{"wrong token", Options{TLS: trusting, Token: "guess"}, "the authorization token is wrong"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cl, err := Dial(ctx, []string{n.ClientAddr()}, tt.opts)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Dial: err = %v, want it to say %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if err := cl.CreateKeyspace(ctx, "app", "simple=1", ""); err != nil {
				t.Fatal(err)
			}
			if _, err := cl.Put(ctx, "app", []byte("k"), []byte("v"), consistency.One); err != nil {
				t.Fatal(err)
			}
			if v, found, err := cl.Get(ctx, "app", []byte("k"), consistency.One); err != nil || !found || string(v.Value) != "v" {
				t.Fatalf("Get = %q, %t, %v", v.Value, found, err)
			}
		})
	}
}
