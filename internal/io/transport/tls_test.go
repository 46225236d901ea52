package transport

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/io/certs"
	"github.com/kuradb/kura/internal/io/certs/certstest"
)

// trusting returns identity trusting ca's certificates instead of its own CA's: a node
// that knows the cluster's CA certificate, which is no secret, but holds a certificate of
// another CA.
func trusting(identity *certs.Identity, ca *certs.Authority) *certs.Identity {
	trusted := *identity
	trusted.CA = x509.NewCertPool()
	trusted.CA.AppendCertsFromPEM(ca.CertPEM())
	return &trusted
}

// logBuffer collects a transport's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestMutualTLS dials acceptor "a" from dialer "b" with each side's TLS identity (nil:
// plain TCP). Only nodes of one CA, each the node it dials or claims to be, talk; every
// refusal says why, on the side that refused.
func TestMutualTLS(t *testing.T) {
	ca, otherCA := certstest.NewCA(t), certstest.NewCA(t)
	tests := []struct {
		name             string
		acceptor, dialer *certs.Identity
		dialAs           string // the id the dialer believes it dials: "" is "a", "any" is AnyNodeAt
		dialerErr        string // "" when the call must succeed
		acceptorLog      string
	}{
		{name: "both certified by the cluster's CA", acceptor: certstest.Identity(t, ca, "a"), dialer: certstest.Identity(t, ca, "b")},
		{name: "dialer without a certificate", acceptor: certstest.Identity(t, ca, "a"),
			dialerErr: "the peer speaks TLS", acceptorLog: "plaintext connection on a TLS port from 127.0.0.1:"},
		{name: "acceptor without a certificate", dialer: certstest.Identity(t, ca, "b"),
			dialerErr: "TLS handshake", acceptorLog: "the peer dials with TLS and this node has no certificate"},
		{name: "dialer certified by another CA", acceptor: certstest.Identity(t, ca, "a"), dialer: trusting(certstest.Identity(t, otherCA, "b"), ca),
			dialerErr: "remote error: tls: unknown certificate authority", acceptorLog: "certificate signed by unknown authority"},
		{name: "dialer of another cluster", acceptor: certstest.Identity(t, ca, "a"), dialer: certstest.Identity(t, otherCA, "b"),
			dialerErr: "certificate signed by unknown authority"},
		{name: "acceptor certified by another CA", acceptor: certstest.Identity(t, otherCA, "a"), dialer: certstest.Identity(t, ca, "b"),
			dialerErr: "certificate signed by unknown authority"},
		{name: "seed dialed by address", acceptor: certstest.Identity(t, ca, "a"), dialer: certstest.Identity(t, ca, "b"), dialAs: "any"},
		{name: "seed dialed by address, certified by another CA", acceptor: certstest.Identity(t, otherCA, "a"), dialer: certstest.Identity(t, ca, "b"), dialAs: "any",
			dialerErr: "certificate signed by unknown authority"},
		{name: "acceptor is not the node dialed", acceptor: certstest.Identity(t, ca, "a"), dialer: certstest.Identity(t, ca, "b"), dialAs: "c",
			dialerErr: "certificate is valid for a, not c"},
		{name: "acceptor's certificate lists the dialed id as a host", acceptor: certstest.Identity(t, ca, "a", "c"), dialer: certstest.Identity(t, ca, "b"), dialAs: "c",
			dialerErr: "dialed node c, but the certificate names node a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acceptorLog := &logBuffer{}
			acceptor := startNode(t, Config{Self: Peer{ID: "a"}, TLS: tt.acceptor, Logger: slog.New(slog.NewTextHandler(acceptorLog, nil))})
			dialer := startNode(t, Config{Self: Peer{ID: "b"}, TLS: tt.dialer})
			target := acceptor.Self()
			switch tt.dialAs {
			case "":
			case "any":
				target = AnyNodeAt(acceptor.Addr())
			default:
				target.ID = tt.dialAs
			}
			got, err := dialer.Call(testContext(t), target, kindWhoami, nil)
			if tt.dialerErr == "" {
				if err != nil || !strings.HasPrefix(string(got), "b|") {
					t.Fatalf("Call = %q, %v; want the acceptor to see node b", got, err)
				}
				return
			}
			if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), tt.dialerErr) {
				t.Fatalf("Call error = %v, want ErrUnreachable saying %q", err, tt.dialerErr)
			}
			// Close waits for the accepting goroutines, so their logging is over.
			dialer.Close()
			acceptor.Close()
			if log := acceptorLog.String(); !strings.Contains(log, tt.acceptorLog) {
				t.Errorf("acceptor log %q does not say %q", log, tt.acceptorLog)
			}
		})
	}
}

// TestAcceptorRefusesAClaimTheCertificateDoesNotBack: a dialer holding node c's valid
// certificate that claims to be node b in its hello is cut off before anything it sent
// is handled, and the acceptor's log says why.
func TestAcceptorRefusesAClaimTheCertificateDoesNotBack(t *testing.T) {
	ca := certstest.NewCA(t)
	acceptorLog := &logBuffer{}
	acceptor := startNode(t, Config{Self: Peer{ID: "a"}, TLS: certstest.Identity(t, ca, "a"), Logger: slog.New(slog.NewTextHandler(acceptorLog, nil))})
	mallory := certstest.Identity(t, ca, "c")
	nc, err := tls.Dial("tcp", acceptor.Addr(), &tls.Config{
		Certificates: []tls.Certificate{mallory.Certificate}, RootCAs: mallory.CA, ServerName: "a", MinVersion: tls.VersionTLS13,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	hello := encodeFrame(frameHello, kindHello, 0, encodeHello(ProtocolVersion, Peer{ID: "b", DC: "dc1", Addr: "127.0.0.1:1"}))
	request := encodeFrame(frameOneway, kindNotify, 0, []byte("as b"))
	if _, err := nc.Write(append(hello, request...)); err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var timeout net.Error
	if n, err := io.Copy(io.Discard, nc); n != 0 || errors.As(err, &timeout) && timeout.Timeout() {
		t.Fatalf("the acceptor answered %d bytes (%v), want it to hang up", n, err)
	}
	acceptor.Close()
	select {
	case got := <-acceptor.server.notified:
		t.Errorf("the impostor's message was handled: %q from %s", got.payload, got.from.ID)
	default:
	}
	if want := "refused a peer claiming to be node b: its certificate names node c"; !strings.Contains(acceptorLog.String(), want) {
		t.Errorf("acceptor log %q does not say %q", acceptorLog.String(), want)
	}
}

func TestListenRefusesACertificateOfAnotherNode(t *testing.T) {
	_, err := Listen(Config{Self: Peer{ID: "b", Addr: "127.0.0.1:0"}, Handler: newTestServer(), TLS: certstest.Identity(t, certstest.NewCA(t), "a")})
	if err == nil || !strings.Contains(err.Error(), `the TLS certificate names node "a", but this node is "b"`) {
		t.Fatalf("Listen with node a's certificate as node b: err = %v", err)
	}
}

// TestPlaintextDialerLoggedOnce: issue 45, item 4. A node without TLS among TLS nodes
// dials them every second; each of its connections was a warning in their logs. The
// acceptor now warns once per address and minute, and the dialer, answered with TLS
// alerts, says the peer speaks TLS where it said "EOF".
func TestPlaintextDialerLoggedOnce(t *testing.T) {
	ca := certstest.NewCA(t)
	acceptorLog := &logBuffer{}
	acceptor := startNode(t, Config{Self: Peer{ID: "a"}, TLS: certstest.Identity(t, ca, "a"), Logger: slog.New(slog.NewTextHandler(acceptorLog, nil))})
	dialer := startNode(t, Config{Self: Peer{ID: "b"}})
	const dials = 3
	for range dials {
		_, err := dialer.Call(testContext(t), acceptor.Self(), kindWhoami, nil)
		if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "the peer speaks TLS and this node does not") {
			t.Fatalf("Call error = %v, want ErrUnreachable saying the peer speaks TLS", err)
		}
	}
	// Close waits for the accepting goroutines, so their logging is over.
	dialer.Close()
	acceptor.Close()
	if n := strings.Count(acceptorLog.String(), "plaintext connection on a TLS port"); n != 1 {
		t.Errorf("the acceptor warned %d times of %d plaintext connections from one address, want once:\n%s", n, dials, acceptorLog.String())
	}
}
