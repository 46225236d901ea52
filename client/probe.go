package client

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A gRPC client that reaches a port of another protocol learns only that the HTTP/2
// preface failed ("error reading server preface: EOF", "http2: frame too large"), the
// same for a node's Redis port, its admin port, its internode port or a port that serves
// TLS. ExplainAt asks the port itself what it speaks, with the greetings below, so that
// the operator who typed the wrong one of a node's addresses is told which one it was.

// probeTimeout bounds each greeting of a probe: every listener a node runs answers one
// (or hangs up) at once, so only a port of something else takes this long.
const probeTimeout = 2 * time.Second

// http2Preface is what an HTTP/2 client, and so gRPC, sends first (RFC 9113, 3.4).
const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// speaker is what a probe found listening at an address.
type speaker int

const (
	speakerUnknown speaker = iota // no answer that says which protocol, or no connection
	speakerHTTP2                  // a gRPC server such as a node's client API
	speakerRedis                  // a RESP error or status line: a node's --resp port
	speakerHTTP1                  // an HTTP/1 status line: a node's --http admin port
	speakerTLS                    // a TLS record in answer to a TLS hello
	// speakerMute hangs up without a byte on both HTTP/2 and TLS, as kura's internode
	// port does: it waits for a node's hello frame and closes on anything else.
	speakerMute
)

// probe says what listens at addr: it sends the HTTP/2 preface and reads the answer, and
// if the port hangs up without one, it opens a TLS handshake.
func probe(addr string) speaker {
	answer, hungUp := greet(addr, func(nc net.Conn) error {
		_, err := io.WriteString(nc, http2Preface)
		return err
	})
	if !hungUp || len(answer) > 0 {
		return classifyAnswer(answer)
	}
	answer, hungUp = greet(addr, func(nc net.Conn) error {
		// InsecureSkipVerify: the probe asks only whether the port speaks TLS, and the
		// handshake's own outcome is not used.
		return tls.Client(nc, &tls.Config{InsecureSkipVerify: true}).Handshake()
	})
	switch {
	case isTLSRecord(answer):
		return speakerTLS
	case hungUp && len(answer) == 0:
		return speakerMute
	}
	return speakerUnknown
}

// greet connects to addr, runs send on the connection, and returns the first bytes the
// port answered and whether it hung up (an end of input or a reset) rather than kept
// silent until the deadline.
func greet(addr string, send func(net.Conn) error) (answer []byte, hungUp bool) {
	nc, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return nil, false
	}
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(probeTimeout)); err != nil {
		return nil, false
	}
	rec := &recordingConn{Conn: nc}
	// A TLS handshake reads the answer itself; after a plain write, read it here.
	if err := send(rec); err == nil && len(rec.head) == 0 {
		_, _ = rec.Read(make([]byte, 16))
	}
	return rec.head, rec.hungUp
}

// recordingConn keeps the first bytes read through it, and whether a read or a write
// failed with the peer hanging up.
type recordingConn struct {
	net.Conn
	head   []byte
	hungUp bool
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if len(c.head) < 16 {
		c.head = append(c.head, p[:min(n, 16-len(c.head))]...)
	}
	c.hungUp = c.hungUp || err != nil && !timedOut(err)
	return n, err
}

func (c *recordingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.hungUp = c.hungUp || err != nil && !timedOut(err)
	return n, err
}

// timedOut reports whether err is a deadline passing, not the peer's doing.
func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// classifyAnswer names the protocol of a port's answer to the HTTP/2 preface.
func classifyAnswer(answer []byte) speaker {
	switch {
	case len(answer) >= 4 && answer[3] == 0x04:
		// An HTTP/2 server's first frame is its SETTINGS (type 4).
		return speakerHTTP2
	case bytes.HasPrefix(answer, []byte("HTTP/")):
		return speakerHTTP1
	case len(answer) > 0 && (answer[0] == '-' || answer[0] == '+'):
		// A Redis server answers the preface's first line as an unknown command.
		return speakerRedis
	case isTLSRecord(answer):
		return speakerTLS
	}
	return speakerUnknown
}

// isTLSRecord reports whether b starts with a TLS handshake (22) or alert (21) record.
func isTLSRecord(b []byte) bool {
	return len(b) >= 2 && (b[0] == 22 || b[0] == 21) && b[1] == 3
}

// ExplainAt is Explain for an error of a call to the node at addr (a client API address
// the caller was given). When the connection failed because the port speaks another
// protocol, or TLS where the client spoke plaintext, it asks the port what it speaks, and
// says which of a node's addresses the operator gave instead of the client API's.
func ExplainAt(addr string, err error) error {
	if st, ok := status.FromError(err); ok && st.Code() == codes.Unavailable {
		msg := st.Message()
		plaintext := strings.Contains(msg, "error reading server preface")
		handshake := strings.Contains(msg, "authentication handshake failed") &&
			(strings.Contains(msg, "first record does not look like a TLS handshake") ||
				strings.HasSuffix(msg, "EOF\"") || strings.Contains(msg, "connection reset"))
		if plaintext || handshake {
			if e := wrongPort(addr, probe(addr), plaintext); e != nil {
				return e
			}
		}
	}
	return Explain(err)
}

// wrongPort says what the client reached at addr instead of a client API it can speak
// to, or nil when what the probe found does not explain the failure.
func wrongPort(addr string, found speaker, plaintext bool) *Error {
	const notAPI = "%s %s; kura's clients need the node's client API address (its --client)"
	var msg string
	switch {
	case found == speakerRedis:
		msg = fmt.Sprintf(notAPI, addr, "answers in the Redis protocol, as a node's Redis port (its --resp) does")
	case found == speakerHTTP1:
		msg = fmt.Sprintf(notAPI, addr, "answers in HTTP/1, as a node's admin port (its --http) does")
	case found == speakerMute:
		msg = fmt.Sprintf(notAPI, addr, "closes gRPC and TLS connections without answering, as a node's internode port (its --listen) does")
	case found == speakerTLS && plaintext:
		msg = addr + " serves TLS: give the client its CA (--tls-ca on the command line, Options.TLS in Go)"
	case found == speakerHTTP2 && !plaintext:
		msg = addr + " serves its client API without TLS: dial it without TLS (no --tls-ca on the command line, Options.TLS nil in Go)"
	default:
		return nil
	}
	return &Error{Code: codes.Unavailable, Message: msg}
}
