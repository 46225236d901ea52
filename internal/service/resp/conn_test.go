package resp

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/io/certs/certstest"
)

func TestPipelinedRepliesComeInOrder(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	c := dial(t, addr)
	var batch, want strings.Builder
	for i := range 200 {
		key, value := fmt.Sprintf("k%03d", i), fmt.Sprintf("value-%d", i)
		batch.WriteString(encode("SET", key, value))
		batch.WriteString(encode("GET", key))
		fmt.Fprintf(&want, "+OK\r\n$%d\r\n%s\r\n", len(value), value)
	}
	c.send(batch.String())
	c.expect(want.String())
}

func TestMalformedInputClosesOnlyThatConnection(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		errPart string
	}{
		{"bad array length", "*abc\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"bad bulk length", "*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"bulk length with a plus sign", "*1\r\n$+4\r\nPING\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"huge declared length", "*2\r\n$3\r\nSET\r\n$999999999999\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"bulk longer than declared", "*1\r\n$1\r\nPING\r\n", "-ERR Protocol error: bulk string not terminated by CRLF\r\n"},
		{"unbalanced quotes", "ECHO \"abc\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
	}
	_, _, addr := startServer(t, Config{Limits: coord.Limits{KeyBytesMax: 1 << 10, ValueBytesMax: 1 << 20}})
	other := dial(t, addr)
	other.do("+OK\r\n", "SET", "survivor", "yes")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := dial(t, addr)
			// The header alone must be refused, as Redis refuses it: the server may not
			// wait for a body it would refuse anyway.
			bad.send(tt.input)
			if line := bad.line(); line != tt.errPart {
				t.Fatalf("reply %q, want %q", line, tt.errPart)
			}
			bad.expectClosed()
			other.do("$3\r\nyes\r\n", "GET", "survivor")
		})
	}
}

// TestOversizedCommandsAreAnsweredAndTheConnectionStays: a bulk string over the limit is
// read to its end without being kept, its command is refused with an error and not run
// (no part of an MSET is written), and the same connection goes on.
func TestOversizedCommandsAreAnsweredAndTheConnectionStays(t *testing.T) {
	// The coordinator refuses a key over its own limit (internal/assembly/node/resp_test.go checks that
	// error); the front end refuses what exceeds the larger of the two limits.
	const keyMax, valueMax = 1 << 10, 1 << 20
	_, _, addr := startServer(t, Config{Limits: coord.Limits{KeyBytesMax: keyMax, ValueBytesMax: valueMax}})
	c := dial(t, addr)
	tooLong := "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"value at the limit", cmd("SET", "k", strings.Repeat("v", valueMax)), "+OK\r\n"},
		{"value one byte over", cmd("SET", "k", strings.Repeat("w", valueMax+1)), tooLong},
		{"value four times over", cmd("SET", "k", strings.Repeat("w", 4*valueMax)), tooLong},
		{"key over the value limit", cmd("GET", strings.Repeat("k", valueMax+1)), tooLong},
		{"one value of an MSET over", cmd("MSET", "a", "1", "b", strings.Repeat("v", valueMax+1)), tooLong},
	}
	for _, tt := range tests {
		t.Log(tt.name)
		c.do(tt.want, tt.args...)
		c.do(fmt.Sprintf(":%d\r\n", valueMax), "STRLEN", "k")
		c.do(":0\r\n", "EXISTS", "a")
	}
}

// TestIdleTimeoutClosesSilentConnections: with a timeout, a connection that sends
// nothing is closed without a reply, as Redis closes it; CONFIG SET timeout reaches
// connections already waiting.
func TestIdleTimeoutClosesSilentConnections(t *testing.T) {
	_, _, addr := startServer(t, Config{IdleTimeout: 100 * time.Millisecond})
	c := dial(t, addr)
	c.do("+PONG\r\n", "PING")
	c.expectClosed()
	c = dial(t, addr)
	c.send("*1\r\n$4\r\nPI") // a command cut short waits no longer
	c.expectClosed()

	_, _, addr = startServer(t, Config{})
	idle := dial(t, addr)
	idle.do("+PONG\r\n", "PING")
	admin := dial(t, addr)
	admin.do("*2\r\n$7\r\ntimeout\r\n$1\r\n0\r\n", "CONFIG", "GET", "timeout")
	admin.do("+OK\r\n", "CONFIG", "SET", "timeout", "1")
	idle.expectClosed()
	admin.expectClosed() // idle too, while the test waited
	dial(t, addr).do("*2\r\n$7\r\ntimeout\r\n$1\r\n1\r\n", "CONFIG", "GET", "timeout")
}

func TestTruncatedFrameLeavesServerServing(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	for _, partial := range []string{"*3\r\n$3\r\nSET\r\n$1\r\nk", "*2\r\n$3\r\nGET", "*1"} {
		bad := dial(t, addr)
		bad.send(partial)
		bad.nc.Close()
	}
	dial(t, addr).do("+PONG\r\n", "PING")
}

// TestRepliesDoNotWaitForACommandCutShort: the replies to the commands before one that
// has only partly arrived are sent at once. Before, they waited for the rest of it: a
// gRPC client given the Redis port (its preface, then binary frames no line ends) got
// the preface's error replies only when its own deadline had passed.
func TestRepliesDoNotWaitForACommandCutShort(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	tests := []struct {
		name, input, want string
	}{
		{"a RESP command cut short", encode("PING") + "*2\r\n$4\r\nECHO\r\n$3\r\nab", "+PONG\r\n"},
		{"an inline command cut short", "PING\r\nECHO ab", "+PONG\r\n"},
		{"gRPC's preface and SETTINGS", http2PrefaceForTest + "\x00\x00\x06\x04\x00\x00\x00\x00\x00",
			"-ERR unknown command 'PRI', with args beginning with: '*' 'HTTP/2.0' \r\n-ERR unknown command 'SM', with args beginning with: \r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, addr)
			c.send(tt.input)
			c.expect(tt.want)
		})
	}
}

// http2PrefaceForTest is what an HTTP/2 client, gRPC among them, sends first.
const http2PrefaceForTest = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

func TestQuitRepliesThenCloses(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	c := dial(t, addr)
	c.send(encode("QUIT") + encode("PING"))
	c.expect("+OK\r\n")
	c.expectClosed()
}

func TestObserveSeesEveryOperationAtTheConnectionLevel(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	observe := func(op string, cl consistency.Level, elapsed time.Duration, err error) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, fmt.Sprintf("%s %v %v", op, cl, err != nil))
	}
	_, _, addr := startServer(t, Config{Observe: observe, DefaultLevel: consistency.Quorum})
	c := dial(t, addr)
	c.do("+OK\r\n", "SET", "k", "v")
	c.do("$1\r\nv\r\n", "GET", "k")
	c.do("+OK\r\n", "KURA.CONSISTENCY", "all")
	c.do(":1\r\n", "DEL", "k")
	c.send(encode("GET", "broken"))
	if line := c.line(); !strings.HasPrefix(line, "-UNAVAILABLE unavailable: ") {
		t.Fatalf("GET of a key without live replicas: %q, want an UNAVAILABLE error", line)
	}
	want := []string{"put QUORUM false", "get QUORUM false", "cas SERIAL false", "get ALL true"}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("observed %q, want %q", seen, want)
	}
}

// TestPanickingCommandCostsItsConnectionOnly: a command that panics (a bug) closes its
// own connection; the server and its other clients go on.
func TestPanickingCommandCostsItsConnectionOnly(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	other := dial(t, addr)
	c := dial(t, addr)
	c.send(encode("GET", "panic"))
	c.expectClosed()
	other.do("+PONG\r\n", "PING")
	dial(t, addr).do("$-1\r\n", "GET", "k")
}

// TestUnauthenticatedClientsSendOnlySmallCommands: with a password set, a client yet to
// authenticate may send at most 10 arguments and bulk strings of 16 KiB; a header past
// either is refused at once and the connection closed, as redis-server 7.0.15 with
// requirepass answered these inputs. Once authenticated, or without a password, the
// usual limits apply.
func TestUnauthenticatedClientsSendOnlySmallCommands(t *testing.T) {
	const (
		noauth          = "-NOAUTH Authentication required.\r\n"
		closed          = ""
		tooManyArgs     = "-ERR Protocol error: unauthenticated multibulk length\r\n"
		bulkTooLong     = "-ERR Protocol error: unauthenticated bulk length\r\n"
		bulkLengthWrong = "-ERR Protocol error: invalid bulk length\r\n"
	)
	auth := encode("AUTH", "s3cret")
	tests := []struct {
		name  string
		input string
		want  string
		ping  string // the reply to a PING sent after, or closed
	}{
		{"eleven arguments", "*11\r\n", tooManyArgs, closed},
		{"a hundred arguments", "*100\r\n", tooManyArgs, closed},
		{"a bulk of 16 KiB and one byte", "*1\r\n$16385\r\n", bulkTooLong, closed},
		{"a bulk of 100 MB", "*1\r\n$100000000\r\n", bulkTooLong, closed},
		{"an invalid length first", "*1\r\n$999999999999\r\n", bulkLengthWrong, closed},
		{"after a failed AUTH", encode("AUTH", "wrong") + "*100\r\n",
			"-WRONGPASS invalid username-password pair or user is disabled.\r\n" + tooManyArgs, closed},
		{"ten arguments", encode("MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e"), noauth, noauth},
		{"a bulk of 16 KiB", encode("ECHO", strings.Repeat("x", 16<<10)), noauth, noauth},
		{"eleven arguments after AUTH", auth + encode("MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5"), "+OK\r\n+OK\r\n", "+PONG\r\n"},
		{"a bulk of 16 KiB and one byte after AUTH", auth + encode("SET", "v", strings.Repeat("y", 16<<10+1)), "+OK\r\n+OK\r\n", "+PONG\r\n"},
	}
	_, _, addr := startServer(t, Config{Password: "s3cret"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, addr)
			c.send(tt.input)
			c.expect(tt.want)
			if tt.ping == closed {
				c.expectClosed()
			} else {
				c.do(tt.ping, "PING")
			}
		})
	}
	_, _, open := startServer(t, Config{})
	c := dial(t, open)
	c.do(":0\r\n", append([]string{"DEL"}, strings.Fields(strings.Repeat("k ", 99))...)...)
}

// TestPlaintextClientOnTLSPort: issue 45, item 4. redis-cli without --tls against the TLS
// port got "Server closed the connection", and the node logged nothing. It is answered
// with an error that says to connect with TLS, and the node warns once per client host.
func TestPlaintextClientOnTLSPort(t *testing.T) {
	identity := certstest.Identity(t, certstest.NewCA(t), "n1", "127.0.0.1")
	var log lockedBuffer
	s := NewServer(Config{Backend: newFakeBackend(), Logger: slog.New(slog.NewTextHandler(&log, nil))})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(tls.NewListener(l, identity.ServerConfig(tls.NoClientCert))) }()
	defer func() {
		s.Close()
		<-served
	}()

	const plaintextClients = 3
	for range plaintextClients {
		c := dial(t, l.Addr().String())
		c.send(encode("PING"))
		c.expect("-ERR Protocol error: this port speaks TLS only; connect with TLS (redis-cli --tls --cacert ca.crt)\r\n")
		c.expectClosed()
	}
	nc, err := tls.Dial("tcp", l.Addr().String(), &tls.Config{RootCAs: identity.CA, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	secure := &client{t: t, nc: nc, br: bufio.NewReader(nc)}
	secure.do("+PONG\r\n", "PING")
	nc.Close()
	s.Close()
	if n := strings.Count(log.String(), "plaintext connection on a TLS port"); n != 1 {
		t.Errorf("the node warned %d times of %d plaintext clients from one host, want once:\n%s", n, plaintextClients, log.String())
	}
}

// lockedBuffer is a log destination the connections' goroutines share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
