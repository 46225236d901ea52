package transport

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/io/certs"
)

// mutualTLS runs a transport's connections over TLS 1.3 with both sides' certificates
// verified against the cluster's CA, so that only nodes holding a certificate the CA
// issued can talk, and each can only be the node its certificate names:
//   - the dialer checks that the acceptor's certificate names the peer it meant to dial;
//   - the acceptor checks that the id the dialer claims in its hello is the one its
//     certificate names (acceptConn).
type mutualTLS struct {
	identity *certs.Identity
	server   *tls.Config
}

// newMutualTLS returns the TLS setup of a transport whose node is selfID, or nil (plain
// TCP) without an identity. The identity must name selfID, else every peer would refuse
// the node.
func newMutualTLS(identity *certs.Identity, selfID string) (*mutualTLS, error) {
	if identity == nil {
		return nil, nil
	}
	if identity.NodeID != selfID {
		return nil, fmt.Errorf("transport: the TLS certificate names node %q, but this node is %q", identity.NodeID, selfID)
	}
	return &mutualTLS{identity: identity, server: identity.ServerConfig(tls.RequireAndVerifyClientCert)}, nil
}

// anyNodePrefix starts the ids of the peers AnyNodeAt returns. No node can have such an
// id under TLS: certs.ValidateNodeID refuses '@'.
const anyNodePrefix = "any@"

// AnyNodeAt returns the peer to dial for whichever node listens at addr, before its id is
// known: a seed given by address, asked who it is. The id names the connection, not a
// node. Under TLS the dialer accepts the certificate of any node the cluster's CA issued,
// whichever id it names; a call to the node by its real id dials anew and checks it.
func AnyNodeAt(addr string) Peer {
	return Peer{ID: anyNodePrefix + addr, Addr: addr}
}

// dial runs the TLS handshake on a connection dialed to peerID, bounded by ctx and by
// helloTimeout. It closes nc when it fails.
func (m *mutualTLS) dial(ctx context.Context, nc net.Conn, peerID string) (net.Conn, error) {
	config := &tls.Config{
		Certificates: []tls.Certificate{m.identity.Certificate},
		RootCAs:      m.identity.CA,
		MinVersion:   tls.VersionTLS13,
	}
	if strings.HasPrefix(peerID, anyNodePrefix) {
		// crypto/tls verifies a chain only together with a server name, which the dialer
		// does not know: VerifyConnection verifies the chain alone.
		config.InsecureSkipVerify = true
		config.VerifyConnection = m.verifyAnyNode
	} else {
		// TLS's host-name check against the DNS names, then VerifyConnection's against
		// the one name a certificate's node is known by, so that a node whose
		// certificate also lists peerID as a host cannot pass for it.
		config.ServerName = peerID
		config.VerifyConnection = func(state tls.ConnectionState) error {
			named, err := certs.NodeID(state.PeerCertificates[0])
			if err != nil {
				return err
			}
			if named != peerID {
				return fmt.Errorf("dialed node %s, but the certificate names node %s", peerID, named)
			}
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, helloTimeout)
	defer cancel()
	tc := tls.Client(nc, config)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("TLS handshake: the peer hung up (does it run without TLS?): %w", err)
		}
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	// Under TLS 1.3 the acceptor verifies this node's certificate only after the
	// handshake returns here; if it refuses, the connection's first read fails with its
	// alert ("remote error: tls: ...").
	return tc, nil
}

// verifyAnyNode accepts a server certificate that chains to the cluster's CA, whichever
// node it names.
func (m *mutualTLS) verifyAnyNode(state tls.ConnectionState) error {
	intermediates := x509.NewCertPool()
	for _, cert := range state.PeerCertificates[1:] {
		intermediates.AddCert(cert)
	}
	_, err := state.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots: m.identity.CA, Intermediates: intermediates, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Errorf("tls: failed to verify certificate: %w", err)
	}
	return nil
}

// accept runs the TLS handshake on an accepted connection, bounded by helloTimeout as
// the hello is, and returns the node id the dialer's verified certificate names. The
// bound is a deadline, not a context, since a context ending as the handshake fails
// would replace the failure's reason, which the log must tell.
func (m *mutualTLS) accept(nc net.Conn) (net.Conn, string, error) {
	if err := nc.SetDeadline(time.Now().Add(helloTimeout)); err != nil {
		return nil, "", err
	}
	tc := tls.Server(nc, m.server)
	if err := tc.Handshake(); err != nil {
		var plaintext tls.RecordHeaderError
		if errors.As(err, &plaintext) && plaintext.Conn != nil {
			refusePlaintext(plaintext.Conn)
			// The host alone, so that the text is the same at each of a peer's dials,
			// and the log's rate limit (per host and text) holds them back.
			host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
			return nil, "", fmt.Errorf("plaintext connection on a TLS port from %s: this node accepts only TLS (is the peer started without --tls-cert?): %w", host, err)
		}
		return nil, "", fmt.Errorf("TLS handshake: %w", err)
	}
	if err := nc.SetDeadline(time.Time{}); err != nil {
		return nil, "", err
	}
	// RequireAndVerifyClientCert: a completed handshake has a verified client chain.
	named, err := certs.NodeID(tc.ConnectionState().PeerCertificates[0])
	if err != nil {
		return nil, "", err
	}
	return tc, named, nil
}

// plaintextRefusal is what the TLS port answers a dialer that sent no TLS handshake: a
// fatal unexpected_message alert and a close_notify, as TLS 1.2 records. A kura node
// without TLS reads its first 14 bytes as a frame header and names a peer that speaks
// TLS (foreignProtocol: "is it a TLS port?"), where the connection ending unanswered
// told it only "EOF". One alert is 7 bytes: too few for the header the dialer awaits.
var plaintextRefusal = []byte{
	21, 3, 3, 0, 2, 2, 10, // alert, TLS 1.2, 2 bytes: fatal, unexpected_message
	21, 3, 3, 0, 2, 1, 0, // alert, TLS 1.2, 2 bytes: warning, close_notify
}

// refusePlaintext answers a plaintext dialer with plaintextRefusal, then waits for it to
// hang up, discarding what it sent behind its first bytes: closing a socket with unread
// bytes resets the connection, and the reset could overtake the answer. The accept's
// deadline bounds the wait; errors are not reported, since the dialer may be gone.
func refusePlaintext(nc net.Conn) {
	if _, err := nc.Write(plaintextRefusal); err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, nc)
}

// errPeerSpeaksTLS is what a node without TLS reports of a dialer that opens with a TLS
// handshake: the operator gave certificates to some nodes only.
var errPeerSpeaksTLS = errors.New("the peer dials with TLS and this node has no certificate (start every node with --tls-cert, --tls-key and --tls-ca, or none)")

// startsTLSHandshake reports whether the next bytes on reader open a TLS handshake
// record (content type 22, major version 3). A hello never starts so: read as a frame
// header, they declare a payload of about 370 MB, and a hello's is under 200 KB.
func startsTLSHandshake(reader io.Reader) bool {
	br, ok := reader.(*bufio.Reader)
	if !ok {
		return false
	}
	head, err := br.Peek(2)
	return err == nil && head[0] == 22 && head[1] == 3
}
