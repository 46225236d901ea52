package client

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/assembly/node"
	"github.com/kuradb/kura/internal/io/certs/certstest"
)

// TestExplainAtNamesTheWrongPort: issue 45, item 1. A client given one of a node's other
// addresses in place of its client API's was told "the node closed the connection before
// answering: if it serves TLS, give the client its CA" whichever it was. Each of a real
// node's ports, and a TLS node's client API, is dialed as kura status dials it; the error
// must name what the port is.
func TestExplainAtNamesTheWrongPort(t *testing.T) {
	plain, err := node.Start(node.Config{ID: "a", DC: "dc1", Listen: "127.0.0.1:0", ClientAddr: "127.0.0.1:0",
		RESPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	ca := certstest.NewCA(t)
	identity := certstest.Identity(t, ca, "b", "127.0.0.1")
	secured, err := node.Start(node.Config{ID: "b", DC: "dc1", Listen: "127.0.0.1:0", ClientAddr: "127.0.0.1:0",
		InMemory: true, TLS: identity, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer secured.Close()

	withCA := Options{TLS: &tls.Config{RootCAs: identity.CA}}
	tests := []struct {
		name string
		addr string
		opts Options
		want string // what the error must say; "" when the call succeeds
	}{
		{"client API", plain.ClientAddr(), Options{}, ""},
		{"internode port", plain.Addr(), Options{}, "as a node's internode port (its --listen) does"},
		{"Redis port", plain.RESPAddr(), Options{}, "answers in the Redis protocol, as a node's Redis port (its --resp) does"},
		{"admin port", plain.HTTPAddr(), Options{}, "answers in HTTP/1, as a node's admin port (its --http) does"},
		{"TLS client API without the CA", secured.ClientAddr(), Options{}, " serves TLS: give the client its CA"},
		{"TLS internode port without the CA", secured.Addr(), Options{}, " serves TLS: give the client its CA"},
		{"plaintext client API with TLS", plain.ClientAddr(), withCA, " serves its client API without TLS"},
		{"internode port with TLS", plain.Addr(), withCA, "as a node's internode port (its --listen) does"},
		{"Redis port with TLS", plain.RESPAddr(), withCA, "as a node's Redis port (its --resp) does"},
		{"admin port with TLS", plain.HTTPAddr(), withCA, "as a node's admin port (its --http) does"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := DialNode(tt.addr, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err = kurav1.NewAdminClient(conn).ClusterStatus(ctx, &kurav1.ClusterStatusRequest{})
			err = ExplainAt(tt.addr, err)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("ClusterStatus at %s: %v", tt.addr, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), tt.addr)):
				t.Fatalf("ClusterStatus at %s: err = %v, want it to name the address and say %q", tt.addr, err, tt.want)
			}
		})
	}
}

// TestClassifyAnswer: the first bytes each kind of port answers gRPC's preface with.
func TestClassifyAnswer(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		want   speaker
	}{
		{"HTTP/2 SETTINGS", "\x00\x00\x0c\x04\x00\x00\x00\x00\x00", speakerHTTP2},
		{"Redis error", "-ERR unknown command 'PRI'", speakerRedis},
		{"Redis status", "+OK\r\n", speakerRedis},
		{"HTTP/1", "HTTP/1.1 400 Bad Request\r\n", speakerHTTP1},
		{"TLS alert", "\x15\x03\x01\x00\x02", speakerTLS},
		{"nothing", "", speakerUnknown},
		{"something else", "SSH-2.0-OpenSSH_9.6\r\n", speakerUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classifyAnswer([]byte(tt.answer)); got != tt.want {
				t.Errorf("classifyAnswer(%q) = %d, want %d", tt.answer, got, tt.want)
			}
		})
	}
}

// TestProbeOfASilentPort: a port that accepts and never answers is unknown, after the
// probe's deadline, not taken for kura's internode port, which hangs up at once.
func TestProbeOfASilentPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
		}
	}()
	if got := probe(l.Addr().String()); got != speakerUnknown {
		t.Errorf("probe of a silent port = %d, want unknown (%d)", got, speakerUnknown)
	}
}
