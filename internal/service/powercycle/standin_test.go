package powercycle

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/core/power"
	"github.com/kuradb/kura/internal/io/certs/certstest"
)

// standInTargets are the awake nodes the tests' stand-ins redirect to.
var standInTargets = []*kurav1.RedirectTarget{
	{Id: "b", Dc: "dc1", ClientAddr: "127.0.0.1:7002", RespAddr: "127.0.0.1:6402"},
	{Id: "c", Dc: "dc2", ClientAddr: "127.0.0.1:7003"}, // serves no Redis protocol
}

// sleepingNode stands for node a's endpoints: a gate holding its three addresses.
func sleepingNode(t *testing.T) (*power.Gate, standInAddrs) {
	t.Helper()
	g := power.NewGate()
	var addrs [3]string
	for i := range addrs {
		l, err := g.Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		addrs[i] = l.Addr().String()
	}
	return g, standInAddrs{Internode: addrs[0], Client: addrs[1], RESP: addrs[2]}
}

func standInFor(id string, addrs standInAddrs, serverTLS *tls.Config) *standIn {
	return startStandIn(standInConfig{For: id, Addrs: addrs, TLS: serverTLS, Logger: slog.New(slog.DiscardHandler),
		Targets: func() []*kurav1.RedirectTarget { return standInTargets }})
}

// askStandIn makes a gRPC call to the stand-in at addr, waiting for it to be bound, and
// checks that the call is redirected.
func askStandIn(t *testing.T, addr string, creds credentials.TransportCredentials) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds),
		// The stand-in may bind after the first attempt to connect: try again soon.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.5, MaxDelay: 50 * time.Millisecond}}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	calls := map[string]func() error{
		"KV.Get": func() error {
			_, err := kurav1.NewKVClient(conn).Get(ctx, &kurav1.GetRequest{Keyspace: "app", Key: []byte("k")}, grpc.WaitForReady(true))
			return err
		},
		"Admin.ClusterStatus": func() error {
			_, err := kurav1.NewAdminClient(conn).ClusterStatus(ctx, &kurav1.ClusterStatusRequest{}, grpc.WaitForReady(true))
			return err
		},
	}
	for name, call := range calls {
		st := status.Convert(call())
		if st.Code() != codes.Unavailable || st.Message() != "node a is asleep; try b (127.0.0.1:7002), c (127.0.0.1:7003)" {
			t.Fatalf("%s: %v, want the redirect", name, st.Err())
		}
		want := &kurav1.Redirect{NodeId: "a", Reason: "asleep", Targets: standInTargets}
		if details := st.Details(); len(details) != 1 || !proto.Equal(details[0].(proto.Message), want) {
			t.Fatalf("%s: details %v, want %v", name, details, want)
		}
	}
}

// TestStandInRedirects: on each of a sleeping node's addresses, the stand-in turns the
// request away at once: gRPC with the redirect, Redis with -ASLEEP, node-to-node by
// closing the connection; closed, it gives the addresses back.
func TestStandInRedirects(t *testing.T) {
	ca := certstest.NewCA(t)
	identity := certstest.Identity(t, ca, "c", "127.0.0.1")
	tests := []struct {
		name      string
		serverTLS *tls.Config
		clientTLS *tls.Config // nil: plaintext
	}{
		{"plaintext", nil, nil},
		{"TLS", identity.ServerConfig(tls.VerifyClientCertIfGiven), &tls.Config{RootCAs: identity.CA}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, addrs := sleepingNode(t)
			g.Release()
			s := standInFor("a", addrs, tt.serverTLS)
			defer s.Close()

			creds := insecure.NewCredentials()
			if tt.clientTLS != nil {
				creds = credentials.NewTLS(tt.clientTLS)
			}
			askStandIn(t, addrs.Client, creds)

			redis := dialStandIn(t, addrs.RESP, tt.clientTLS)
			// A command as an array, a pipeline of two inline ones, and an empty line
			// that gets no answer.
			if _, err := io.WriteString(redis, "*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\nPING\r\n\r\nGET k\r\n"); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(redis)
			for range 3 {
				if line, err := r.ReadString('\n'); err != nil || line != "-ASLEEP node a is asleep; try 127.0.0.1:6402\r\n" {
					t.Fatalf("Redis answer %q, %v", line, err)
				}
			}
			// Malformed input ends the connection.
			if _, err := io.WriteString(redis, "*x\r\n"); err != nil {
				t.Fatal(err)
			}
			if line, err := r.ReadString('\n'); !errors.Is(err, io.EOF) {
				t.Fatalf("after malformed input: %q, %v; want the connection closed", line, err)
			}

			internode := dialStandIn(t, addrs.Internode, nil)
			if _, err := internode.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
				t.Fatalf("node-to-node read: %v, want the connection closed", err)
			}

			s.Close()
			for _, addr := range []string{addrs.Internode, addrs.Client, addrs.RESP} {
				l, err := net.Listen("tcp", addr)
				if err != nil {
					t.Fatalf("after Close: %v", err)
				}
				l.Close()
			}
		})
	}
}

func dialStandIn(t *testing.T, addr string, clientTLS *tls.Config) net.Conn {
	t.Helper()
	var c net.Conn
	var err error
	if clientTLS != nil {
		c, err = tls.Dial("tcp", addr, clientTLS)
	} else {
		c, err = net.Dial("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestStandInWaitsForTheAddresses: a stand-in started while the node still holds its
// addresses binds them once the node releases them, and the node binds them again once
// the stand-in is closed; one closed before the release leaves them alone.
func TestStandInWaitsForTheAddresses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g, addrs := sleepingNode(t)

	// Were it still trying, it would take addresses from the other one, and its
	// redirect names node z.
	early := standInFor("z", addrs, nil)
	early.Close()

	s := standInFor("a", addrs, nil)
	defer s.Close()
	g.Release()
	askStandIn(t, addrs.Client, insecure.NewCredentials())
	s.Close()
	if err := g.Serve(ctx); err != nil {
		t.Fatal(err)
	}
	if mode := g.Mode(); mode != power.Serving {
		t.Fatalf("node's gate %v after Serve", mode)
	}
}
