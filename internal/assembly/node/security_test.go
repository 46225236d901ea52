package node

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/io/certs"
	"github.com/kuradb/kura/internal/io/certs/certstest"
	"github.com/kuradb/kura/internal/io/transport"
)

// startNodeWith starts node id in dc1 with cfg's front ends and security settings and
// the test defaults; it returns Start's error rather than failing the test.
func startNodeWith(t *testing.T, id string, cfg Config, seeds ...string) (*Node, error) {
	t.Helper()
	cfg.ID, cfg.DC, cfg.Listen, cfg.Seeds, cfg.InMemory = id, "dc1", "127.0.0.1:0", seeds, true
	cfg.GossipInterval, cfg.Logger = 50*time.Millisecond, slog.New(slog.DiscardHandler)
	n, err := Start(cfg)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { n.Close() })
	return n, nil
}

func mustStartNodeWith(t *testing.T, id string, cfg Config, seeds ...string) *Node {
	t.Helper()
	n, err := startNodeWith(t, id, cfg, seeds...)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func kindNamed(t *testing.T, name string) transport.Kind {
	t.Helper()
	kind, ok := transport.KindByName(name)
	if !ok {
		t.Fatalf("no kind %q", name)
	}
	return kind
}

// TestDataPathServesMembersOnly: a node serves the data path (replica reads and writes,
// streaming, repair, ring changes, keyspace announcements) to the members its directory
// knows, not to unknown nodes or nodes that left or were removed; gossip, the DHT,
// ring_pull and schema_pull, which nodes need while they learn of each other, it serves
// to anyone.
func TestDataPathServesMembersOnly(t *testing.T) {
	a := startNode(t, "a", "dc1")
	for _, member := range []cluster.Node{
		{ID: "b", DC: "dc1", Addr: "127.0.0.1:1"},
		{ID: "gone", DC: "dc1", Addr: "127.0.0.1:2", Status: cluster.StatusLeft},
		{ID: "removed", DC: "dc1", Addr: "127.0.0.1:3", Status: cluster.StatusRemoved},
	} {
		if _, err := a.directory.Upsert(member); err != nil {
			t.Fatal(err)
		}
	}
	peers := []struct {
		id      string
		member  bool
		whyNot  string
		comment string
	}{
		{"b", true, "", "a member"},
		{"evil", false, "node a does not know node evil", "never heard of"},
		{"gone", false, "node a knows node gone as left", "decommissioned"},
		{"removed", false, "node a knows node removed as removed", "removed"},
	}
	kinds := []struct {
		kind transport.Kind
		open bool
	}{
		{kindNamed(t, "mutate"), false},
		{kindNamed(t, "read"), false},
		{kindNamed(t, "scan"), false},
		{kindNamed(t, "chunk_read"), false},
		{kindNamed(t, "stream_range"), false},
		{kindNamed(t, "tree_digest"), false},
		{transport.KindStreamGains, false},
		{transport.KindSchema, false},
		{transport.KindChord, true},
		{transport.KindGossip, true},
		{transport.KindGossipWhois, true},
		{transport.KindRingPull, true},
		{transport.KindSchemaPull, true},
	}
	for _, peer := range peers {
		for _, k := range kinds {
			t.Run(peer.id+"/"+k.kind.String(), func(t *testing.T) {
				_, err := a.handle(context.Background(), transport.Peer{ID: peer.id, DC: "dc1"}, k.kind, nil)
				refused := errors.Is(err, errNotMember)
				if want := !peer.member && !k.open; refused != want {
					t.Fatalf("%s from %s (%s): err = %v, want refused %t", k.kind, peer.id, peer.comment, err, want)
				}
				if refused && !strings.Contains(err.Error(), peer.whyNot) {
					t.Errorf("refusal %q does not say %q", err, peer.whyNot)
				}
			})
		}
	}
}

// TestUnknownPeerRefusedOverTheWire is issue 12's report: a made-up peer id on the
// node-to-node port gets the ring, which a joining node needs, but no data.
func TestUnknownPeerRefusedOverTheWire(t *testing.T) {
	a := startNode(t, "a", "dc1")
	evil, err := transport.Listen(transport.Config{Self: transport.Peer{ID: "evil", DC: "dc1", Addr: "127.0.0.1:0"},
		Handler: transport.HandlerFunc(func(context.Context, transport.Peer, transport.Kind, []byte) ([]byte, error) { return nil, nil })})
	if err != nil {
		t.Fatal(err)
	}
	defer evil.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := evil.Call(ctx, toPeer(a.Self()), transport.KindRingPull, nil); err != nil {
		t.Fatalf("ring_pull from a node that is not a member yet: %v", err)
	}
	_, err = evil.Call(ctx, toPeer(a.Self()), kindNamed(t, "read"), nil)
	var remote *transport.RemoteError
	if !errors.As(err, &remote) || !strings.Contains(remote.Msg, "does not know node evil") {
		t.Fatalf("read from an unknown node: err = %v, want a refusal naming it", err)
	}
}

// TestNodesWithCertificatesReplicate: two nodes certified by the cluster's CA join and
// replicate over mutual TLS.
func TestNodesWithCertificatesReplicate(t *testing.T) {
	ca := certstest.NewCA(t)
	a := mustStartNodeWith(t, "a", Config{TLS: certstest.Identity(t, ca, "a")})
	b := mustStartNodeWith(t, "b", Config{TLS: certstest.Identity(t, ca, "b")}, a.Addr())
	waitAllNormal(t, 2, a, b)
	createKeyspace(t, schema.Keyspace{Name: "app", Replication: "simple=2"}, a, b)
	ctx := context.Background()
	// At ALL the write is acknowledged only once b stored it, over TLS.
	if _, err := a.Coordinator().Put(ctx, "app", []byte("k"), []byte("v"), 0, consistency.All); err != nil {
		t.Fatal(err)
	}
	if rec, found, err := b.Coordinator().Get(ctx, "app", []byte("k"), consistency.All); err != nil || !found || string(rec.Value) != "v" {
		t.Fatalf("Get through b at ALL = %q, %t, %v", rec.Value, found, err)
	}
}

// TestNodeWithoutValidCertificateCannotJoinOrSend: a node with no certificate, or one
// the cluster's CA did not issue, reaches none of a TLS node's handlers, so it neither
// joins nor sends data; a node given another node's certificate does not start.
func TestNodeWithoutValidCertificateCannotJoinOrSend(t *testing.T) {
	ca, otherCA := certstest.NewCA(t), certstest.NewCA(t)
	a := mustStartNodeWith(t, "a", Config{TLS: certstest.Identity(t, ca, "a")})
	foreign := *certstest.Identity(t, otherCA, "x")
	foreign.CA = certstest.Identity(t, ca, "x").CA // it trusts the cluster's CA, whose certificate is no secret
	tests := []struct {
		name     string
		identity *certs.Identity
		startErr string
	}{
		{name: "no certificate"},
		{name: "certificate of another cluster", identity: certstest.Identity(t, otherCA, "x")},
		{name: "certificate of another CA", identity: &foreign},
		{name: "certificate of another node", identity: certstest.Identity(t, ca, "b"), startErr: `the TLS certificate names node "b", but this node is "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := startNodeWith(t, "x", Config{TLS: tt.identity}, a.Addr())
			if tt.startErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.startErr) {
					t.Fatalf("Start: err = %v, want %q", err, tt.startErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, kind := range []transport.Kind{transport.KindRingPull, kindNamed(t, "mutate")} {
				if _, err := x.transport.Call(ctx, toPeer(a.Self()), kind, nil); !errors.Is(err, transport.ErrUnreachable) {
					t.Errorf("%s from x: err = %v, want the connection refused", kind, err)
				}
			}
			// Every message x sends, its gossip included, fails the same way, so a never
			// hears of it.
			if _, known := a.View().Node("x"); known {
				t.Error("a knows node x")
			}
		})
	}
}

// TestClientAPIRequiresToken: with an auth token, every gRPC call, KV and Admin alike,
// must carry it as "authorization: Bearer <token>".
func TestClientAPIRequiresToken(t *testing.T) {
	a := mustStartNodeWith(t, "a", Config{ClientAddr: "127.0.0.1:0", AuthToken: "s3cret"})
	conn, err := grpc.NewClient(a.ClientAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	kv, admin := kurav1.NewKVClient(conn), kurav1.NewAdminClient(conn)
	tests := []struct {
		name          string
		authorization string // "" sends none
		want          codes.Code
		message       string
	}{
		{"no token", "", codes.Unauthenticated, "this node requires a token"},
		{"wrong token", "Bearer guess", codes.Unauthenticated, "the authorization token is wrong"},
		{"token without Bearer", "s3cret", codes.Unauthenticated, "the authorization token is wrong"},
		{"token", "Bearer s3cret", codes.OK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if tt.authorization != "" {
				ctx = metadata.AppendToOutgoingContext(ctx, "authorization", tt.authorization)
			}
			_, adminErr := admin.ListKeyspaces(ctx, &kurav1.ListKeyspacesRequest{})
			_, kvErr := kv.Get(ctx, &kurav1.GetRequest{Keyspace: "nope", Key: []byte("k")})
			wantKV := tt.want
			if wantKV == codes.OK {
				wantKV = codes.NotFound // past the token check: the keyspace does not exist
			}
			for _, call := range []struct {
				name string
				err  error
				want codes.Code
			}{{"Admin.ListKeyspaces", adminErr, tt.want}, {"KV.Get", kvErr, wantKV}} {
				st := status.Convert(call.err)
				if st.Code() != call.want || !strings.Contains(st.Message(), tt.message) {
					t.Errorf("%s: %v: %q; want %v saying %q", call.name, st.Code(), st.Message(), call.want, tt.message)
				}
			}
		})
	}
}

// TestRedisOverTLS: with a certificate the Redis port speaks TLS, and a client
// authenticates as Redis 6's default user (AUTH default PASSWORD).
func TestRedisOverTLS(t *testing.T) {
	ca := certstest.NewCA(t)
	identity := certstest.Identity(t, ca, "a", "127.0.0.1")
	a := mustStartNodeWith(t, "a", Config{RESPAddr: "127.0.0.1:0", RESPPassword: "s3cret", TLS: identity})
	rdb := redis.NewClient(&redis.Options{Addr: a.RESPAddr(), Username: "default", Password: "s3cret",
		TLSConfig: &tls.Config{RootCAs: identity.CA, MinVersion: tls.VersionTLS13}})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := rdb.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v", got, err)
	}
	plain := redis.NewClient(&redis.Options{Addr: a.RESPAddr(), Username: "default", Password: "s3cret", MaxRetries: -1})
	defer plain.Close()
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Fatal("a plaintext Redis client was served on the TLS port")
	}
}
