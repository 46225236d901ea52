package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/io/topology"
)

// *topology.Topology is the LinkModel nodes are built with.
var _ LinkModel = (*topology.Topology)(nil)

var (
	kindEcho   = RegisterKind(200, "test_echo")
	kindWhoami = RegisterKind(201, "test_whoami")
	kindFail   = RegisterKind(202, "test_fail")
	kindBlock  = RegisterKind(203, "test_block")
	kindNotify = RegisterKind(204, "test_notify")
	kindDouble = RegisterKind(205, "test_double")
)

// testServer is the handler of the transports under test: echo, doubling, who-is-calling, an error,
// a call that blocks until released, and one-way notifications onto a channel.
type testServer struct {
	blocked  chan struct{} // receives one value when a blocking call has started
	release  chan struct{} // closed to let blocking calls return
	notified chan notification
}

type notification struct {
	from    Peer
	payload []byte
}

func newTestServer() *testServer {
	return &testServer{
		blocked:  make(chan struct{}, 100),
		release:  make(chan struct{}),
		notified: make(chan notification, 100),
	}
}

func (s *testServer) Handle(ctx context.Context, from Peer, kind Kind, payload []byte) ([]byte, error) {
	switch kind {
	case kindEcho:
		return payload, nil
	case kindWhoami:
		return fmt.Appendf(nil, "%s|%s|%s", from.ID, from.DC, from.Addr), nil
	case kindDouble:
		return bytes.Repeat(payload, 2), nil
	case kindFail:
		return nil, fmt.Errorf("no such key %q", payload)
	case kindBlock:
		s.blocked <- struct{}{}
		select {
		case <-s.release:
			return []byte("released"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case kindNotify:
		s.notified <- notification{from, payload}
		return nil, nil
	}
	return nil, fmt.Errorf("unexpected kind %v", kind)
}

// node is a transport under test with its handler.
type node struct {
	*Transport
	server *testServer
}

// startNode listens on a free loopback port; cfg.Self.ID names the node and cfg.Self.Addr,
// when set, pins the address. Without cfg.Logger the node logs to the test's output.
func startNode(t *testing.T, cfg Config) *node {
	t.Helper()
	return startNodeSpeaking(t, cfg, OldestPeerVersion, ProtocolVersion)
}

// startNodeSpeaking is startNode for a node of the protocol versions from oldest to
// version.
func startNodeSpeaking(t *testing.T, cfg Config, oldest, version uint16) *node {
	t.Helper()
	server := newTestServer()
	if cfg.Self.Addr == "" {
		cfg.Self.Addr = "127.0.0.1:0"
	}
	cfg.Handler = server
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	tr, err := listen(cfg, oldest, version)
	if err != nil {
		t.Fatalf("Listen(%+v): %v", cfg.Self, err)
	}
	t.Cleanup(func() {
		close(server.release)
		tr.Close()
	})
	return &node{Transport: tr, server: server}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestListenConfigErrors(t *testing.T) {
	handler := newTestServer()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no id", Config{Self: Peer{Addr: "127.0.0.1:0"}, Handler: handler}, "Self.ID is empty"},
		{"no address", Config{Self: Peer{ID: "n"}, Handler: handler}, "Self.Addr is empty"},
		{"no handler", Config{Self: Peer{ID: "n", Addr: "127.0.0.1:0"}}, "Handler is nil"},
		{"negative frame limit", Config{Self: Peer{ID: "n", Addr: "127.0.0.1:0"}, Handler: handler, MaxFrameBytes: -1}, "MaxFrameBytes -1"},
		{"frame limit below a header", Config{Self: Peer{ID: "n", Addr: "127.0.0.1:0"}, Handler: handler, MaxFrameBytes: 10}, "MaxFrameBytes 10"},
		{"bad address", Config{Self: Peer{ID: "n", Addr: "127.0.0.1:99999"}, Handler: handler}, "listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := Listen(tt.cfg)
			if err == nil {
				tr.Close()
				t.Fatalf("Listen succeeded, want error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Listen error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestCall(t *testing.T) {
	server := startNode(t, Config{Self: Peer{ID: "server", DC: "b"}})
	client := startNode(t, Config{Self: Peer{ID: "client", DC: "a"}})
	if strings.HasSuffix(server.Addr(), ":0") || server.Self().Addr != server.Addr() {
		t.Fatalf("Addr() = %q, Self().Addr = %q: want the real port", server.Addr(), server.Self().Addr)
	}
	tests := []struct {
		name    string
		kind    Kind
		payload []byte
		want    []byte
	}{
		{"empty echo", kindEcho, nil, []byte{}},
		{"small echo", kindEcho, []byte("hello"), []byte("hello")},
		{"large echo", kindEcho, bytes.Repeat([]byte("0123456789"), 100_000), bytes.Repeat([]byte("0123456789"), 100_000)},
		{"handler sees the caller", kindWhoami, nil, []byte("client|a|" + client.Addr())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := client.Call(testContext(t), server.Self(), tt.kind, tt.payload)
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("Call returned %d bytes %.40q, want %d bytes %.40q", len(got), got, len(tt.want), tt.want)
			}
		})
	}
}

func TestConcurrentCallsShareOneConnection(t *testing.T) {
	server := startNode(t, Config{Self: Peer{ID: "server", DC: "b"}})
	client := startNode(t, Config{Self: Peer{ID: "client", DC: "a"}})
	ctx := testContext(t)
	const calls = 200
	errs := make(chan error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			want := fmt.Appendf(nil, "call %d", i)
			got, err := client.Call(ctx, server.Self(), kindEcho, want)
			if err == nil && !bytes.Equal(got, want) {
				err = fmt.Errorf("call %d got %q", i, got)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := client.Stats().Snapshot()[Flow{"a", "b", kindHello}].Messages; got != 1 {
		t.Errorf("client sent %d hellos, want 1: the calls did not share one connection", got)
	}
	server.mu.Lock()
	accepted := len(server.accepted)
	server.mu.Unlock()
	if accepted != 1 {
		t.Errorf("server has %d connections, want 1", accepted)
	}
}

func TestRemoteError(t *testing.T) {
	server := startNode(t, Config{Self: Peer{ID: "server"}})
	client := startNode(t, Config{Self: Peer{ID: "client"}})
	_, err := client.Call(testContext(t), server.Self(), kindFail, []byte("k1"))
	var remote *RemoteError
	if !errors.As(err, &remote) {
		t.Fatalf("Call error = %v, want *RemoteError", err)
	}
	if remote.Msg != `no such key "k1"` {
		t.Errorf("RemoteError.Msg = %q", remote.Msg)
	}
}

func TestSend(t *testing.T) {
	server := startNode(t, Config{Self: Peer{ID: "server", DC: "b"}})
	client := startNode(t, Config{Self: Peer{ID: "client", DC: "a"}})
	payload := []byte("gossip")
	if err := client.Send(testContext(t), server.Self(), kindNotify, payload); err != nil {
		t.Fatalf("Send: %v", err)
	}
	payload[0] = 'X' // the transport must have copied it
	select {
	case got := <-server.server.notified:
		if got.from != client.Self() || string(got.payload) != "gossip" {
			t.Errorf("handler got %q from %+v, want %q from %+v", got.payload, got.from, "gossip", client.Self())
		}
	case <-testContext(t).Done():
		t.Fatal("one-way message never arrived")
	}
}

// closedAddr returns a loopback address nobody listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := listener.Addr().String()
	listener.Close()
	return addr
}

func TestUnreachable(t *testing.T) {
	t.Run("nobody listening", func(t *testing.T) {
		client := startNode(t, Config{Self: Peer{ID: "client"}})
		start := time.Now()
		_, err := client.Call(testContext(t), Peer{ID: "ghost", Addr: closedAddr(t)}, kindEcho, nil)
		if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "ghost") {
			t.Errorf("Call error = %v, want ErrUnreachable naming the peer", err)
		}
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Errorf("failing took %v: it waited for the deadline", elapsed)
		}
		if err := client.Send(testContext(t), Peer{ID: "ghost", Addr: closedAddr(t)}, kindNotify, nil); !errors.Is(err, ErrUnreachable) {
			t.Errorf("Send error = %v, want ErrUnreachable", err)
		}
	})
	t.Run("peer dies during a call", func(t *testing.T) {
		server := startNode(t, Config{Self: Peer{ID: "server"}})
		client := startNode(t, Config{Self: Peer{ID: "client"}})
		errc := make(chan error, 1)
		start := time.Now()
		go func() {
			_, err := client.Call(testContext(t), server.Self(), kindBlock, nil)
			errc <- err
		}()
		<-server.server.blocked
		server.Close()
		err := <-errc
		if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "server") {
			t.Errorf("Call error = %v, want ErrUnreachable naming the peer", err)
		}
		if elapsed := time.Since(start); elapsed > 5*time.Second {
			t.Errorf("failing took %v: it waited for the deadline", elapsed)
		}
	})
}

// lineCounter is a log destination that counts the lines containing a string.
type lineCounter struct {
	substr string
	mu     sync.Mutex
	n      int
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n += strings.Count(string(p), c.substr)
	return len(p), nil
}

func (c *lineCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// speaking is the range of protocol versions a node of a test speaks.
type speaking struct{ oldest, newest uint16 }

// Nodes of the versions around this build's: one of the previous version speaks only it,
// as the installed build of that version does; this build speaks it and its own.
var (
	v2Only    = speaking{ProtocolVersion - 2, ProtocolVersion - 2}
	v3Only    = speaking{OldestPeerVersion, OldestPeerVersion}
	thisBuild = speaking{OldestPeerVersion, ProtocolVersion}
	v5        = speaking{ProtocolVersion, ProtocolVersion + 1}
	v5Only    = speaking{ProtocolVersion + 1, ProtocolVersion + 1}
)

func TestProtocolVersionNegotiated(t *testing.T) {
	tests := []struct {
		name           string
		client, server speaking
		want           uint16 // the version both ends of the connection speak
		serverRefusals int    // hellos the server refused on the way
	}{
		{"previous-version dialer, this acceptor", v3Only, thisBuild, OldestPeerVersion, 0},
		{"this dialer, previous-version acceptor: dials again", thisBuild, v3Only, OldestPeerVersion, 1},
		{"same version", thisBuild, thisBuild, ProtocolVersion, 0},
		{"next-version dialer, this acceptor: dials again", v5, thisBuild, ProtocolVersion, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			serverLog := &lineCounter{substr: "speaks protocol"}
			server := startNodeSpeaking(t, Config{Self: Peer{ID: "server"}, Logger: slog.New(slog.NewTextHandler(serverLog, nil))}, tt.server.oldest, tt.server.newest)
			client := startNodeSpeaking(t, Config{Self: Peer{ID: "client"}}, tt.client.oldest, tt.client.newest)
			// The first call already gets through: the dial waited for the answer to its
			// hello before sending it.
			for _, msg := range []string{"first", "second"} {
				if got, err := client.Call(testContext(t), server.Self(), kindEcho, []byte(msg)); err != nil || string(got) != msg {
					t.Fatalf("Call(%q) = %q, %v", msg, got, err)
				}
			}
			if got := dialedVersion(client.Transport, "server"); got != tt.want {
				t.Errorf("client's connection speaks %d, want %d", got, tt.want)
			}
			if got := acceptedVersions(server.Transport); len(got) != 1 || got[0] != tt.want {
				t.Errorf("server's connections speak %v, want [%d]", got, tt.want)
			}
			client.Close()
			server.Close()
			if got := serverLog.count(); got != tt.serverRefusals {
				t.Errorf("server logged %d refusals, want %d", got, tt.serverRefusals)
			}
		})
	}
}

// dialedVersion is the version of tr's connection to peer; 0 without one.
func dialedVersion(tr *Transport, peer string) uint16 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if entry := tr.dialed[peer]; entry != nil && entry.conn != nil {
		return entry.conn.version
	}
	return 0
}

// acceptedVersions are the versions of the connections peers dialed to tr.
func acceptedVersions(tr *Transport) []uint16 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var versions []uint16
	for c := range tr.accepted {
		versions = append(versions, c.version)
	}
	return versions
}

func TestProtocolVersionRefused(t *testing.T) {
	tests := []struct {
		name           string
		client, server speaking
	}{
		{"next-version-only dialer", v5Only, thisBuild},
		{"dialer two versions back", v2Only, thisBuild},
		{"acceptor of the next version only", thisBuild, v5Only},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			serverLog := &lineCounter{substr: "speaks protocol"}
			server := startNodeSpeaking(t, Config{Self: Peer{ID: "server"}, Logger: slog.New(slog.NewTextHandler(serverLog, nil))}, tt.server.oldest, tt.server.newest)
			client := startNodeSpeaking(t, Config{Self: Peer{ID: "client"}}, tt.client.oldest, tt.client.newest)
			want := VersionError{Peer: "server", PeerVersion: tt.server.newest, Version: tt.client.newest}
			const calls = 2 // each dials afresh and is refused afresh
			for range calls {
				_, err := client.Call(testContext(t), server.Self(), kindNotify, []byte("unheard"))
				var versionErr *VersionError
				if !errors.As(err, &versionErr) || *versionErr != want || !errors.Is(err, ErrUnreachable) {
					t.Fatalf("Call error = %v, want ErrUnreachable and %+v", err, want)
				}
				if msg := fmt.Sprintf("transport: peer server speaks protocol %d, this node speaks %d", tt.server.newest, tt.client.newest); !strings.Contains(err.Error(), msg) {
					t.Errorf("Call error = %q, want it to say %q", err, msg)
				}
			}
			// Close waits for the accepting goroutines, so their logging is over.
			client.Close()
			server.Close()
			if got := serverLog.count(); got != calls {
				t.Errorf("server logged %d refusals, want one per connection: %d", got, calls)
			}
			select {
			case got := <-server.server.notified:
				t.Errorf("the refused dialer's request was handled: %q", got.payload)
			default:
			}
		})
	}
}

// TestClusterVersionSkipsTheWait: once the cluster's version is this build's, a dial
// sends its call behind the hello without waiting for the acceptance; an acceptor of the
// previous version then refuses it, and the call fails as a dial to an unreachable node
// does. The next dial to that peer waits for the answer again, and gets through. On a
// busy machine the refusal may close the new connection before the caller has taken it
// (connTo then dials again, waiting this time): the call then gets through in the older
// version (which only a refusal leads to), never lost or answered twice.
func TestClusterVersionSkipsTheWait(t *testing.T) {
	server := startNodeSpeaking(t, Config{Self: Peer{ID: "server"}}, v3Only.oldest, v3Only.newest)
	clusterVersion := uint16(ProtocolVersion) // gossip has not told of the server's version yet
	client := startNode(t, Config{Self: Peer{ID: "client"}, ClusterVersion: func() uint16 { return clusterVersion }})
	got, err := client.Call(testContext(t), server.Self(), kindEcho, []byte("sent at once"))
	var versionErr *VersionError
	if err == nil && string(got) != "sent at once" {
		t.Fatalf("Call sent behind the hello = %q, want its own echo", got)
	}
	if err != nil && (!errors.As(err, &versionErr) || !errors.Is(err, ErrUnreachable)) {
		t.Fatalf("Call sent behind the hello to a node of version %d: %v, want ErrUnreachable and a *VersionError", OldestPeerVersion, err)
	}
	if err == nil && dialedVersion(client.Transport, "server") != OldestPeerVersion {
		t.Fatalf("Call sent behind the hello got through without a refusal, in version %d", dialedVersion(client.Transport, "server"))
	}
	if got, err := client.Call(testContext(t), server.Self(), kindEcho, []byte("after")); err != nil || string(got) != "after" {
		t.Fatalf("Call after the refusal = %q, %v; want it through in version %d", got, err, OldestPeerVersion)
	}
	if got := dialedVersion(client.Transport, "server"); got != OldestPeerVersion {
		t.Errorf("client's connection speaks %d, want %d", got, OldestPeerVersion)
	}
}

func TestPeerRestart(t *testing.T) {
	server := startNode(t, Config{Self: Peer{ID: "server"}})
	client := startNode(t, Config{Self: Peer{ID: "client"}})
	addr := server.Addr()
	ctx := testContext(t)
	if _, err := client.Call(ctx, server.Self(), kindEcho, []byte("before")); err != nil {
		t.Fatalf("Call before restart: %v", err)
	}
	server.Close()
	if _, err := client.Call(ctx, server.Self(), kindEcho, []byte("down")); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("Call while down: %v, want ErrUnreachable", err)
	}
	restarted := startNode(t, Config{Self: Peer{ID: "server", Addr: addr}})
	got, err := client.Call(ctx, restarted.Self(), kindEcho, []byte("after"))
	if err != nil || string(got) != "after" {
		t.Fatalf("Call after restart = %q, %v", got, err)
	}
}

func TestDeadline(t *testing.T) {
	server := startNode(t, Config{Self: Peer{ID: "server"}})
	client := startNode(t, Config{Self: Peer{ID: "client"}})
	const timeout = 50 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	_, err := client.Call(ctx, server.Self(), kindBlock, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call error = %v, want context.DeadlineExceeded", err)
	}
	if elapsed := time.Since(start); elapsed < timeout {
		t.Errorf("Call returned after %v, before its %v deadline", elapsed, timeout)
	}
	// The connection survives an abandoned call and forgets it.
	if got, err := client.Call(testContext(t), server.Self(), kindEcho, []byte("still up")); err != nil || string(got) != "still up" {
		t.Errorf("Call after a deadline = %q, %v", got, err)
	}
	c, err := client.connTo(testContext(t), server.Self())
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	pending := len(c.pending)
	c.mu.Unlock()
	if pending != 0 {
		t.Errorf("%d calls still pending, want 0", pending)
	}
}

func TestClose(t *testing.T) {
	server := startNode(t, Config{Self: Peer{ID: "server"}})
	client := startNode(t, Config{Self: Peer{ID: "client"}})
	errc := make(chan error, 1)
	go func() {
		_, err := client.Call(testContext(t), server.Self(), kindBlock, nil)
		errc <- err
	}()
	<-server.server.blocked
	if err := client.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Errorf("pending Call error = %v, want ErrClosed", err)
	}
	if _, err := client.Call(testContext(t), server.Self(), kindEcho, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after Close = %v, want ErrClosed", err)
	}
	if err := client.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestCloseDropsSilentDialers: a dialer that never sends its hello does not hold Close
// for the hello's timeout.
func TestCloseDropsSilentDialers(t *testing.T) {
	server, err := Listen(Config{Self: Peer{ID: "server", Addr: "127.0.0.1:0"}, Handler: HandlerFunc(func(context.Context, Peer, Kind, []byte) ([]byte, error) { return nil, nil })})
	if err != nil {
		t.Fatal(err)
	}
	silent, err := net.Dial("tcp", server.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	for greeting := 0; greeting == 0; time.Sleep(time.Millisecond) {
		server.mu.Lock()
		greeting = len(server.greeting)
		server.mu.Unlock()
	}
	closed := make(chan error, 1)
	go func() { closed <- server.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(helloTimeout / 2):
		t.Fatalf("Close still waiting after %v for a dialer that never said hello", helloTimeout/2)
	}
}

func TestFrameTooLarge(t *testing.T) {
	const limit = 1024
	big := make([]byte, limit)
	t.Run("sender refuses", func(t *testing.T) {
		server := startNode(t, Config{Self: Peer{ID: "server"}})
		client := startNode(t, Config{Self: Peer{ID: "client"}, MaxFrameBytes: limit})
		if _, err := client.Call(testContext(t), server.Self(), kindEcho, big); !errors.Is(err, ErrFrameTooLarge) {
			t.Errorf("Call error = %v, want ErrFrameTooLarge", err)
		}
		if err := client.Send(testContext(t), server.Self(), kindNotify, big); !errors.Is(err, ErrFrameTooLarge) {
			t.Errorf("Send error = %v, want ErrFrameTooLarge", err)
		}
		if total := client.Stats().Total(); total != (Counter{}) {
			t.Errorf("sent %+v, want nothing", total)
		}
		// The echo's response must fit too, with its wall-clock stamp.
		fits := big[:limit-frameHeaderBytes-stampBytes]
		if got, err := client.Call(testContext(t), server.Self(), kindEcho, fits); err != nil || len(got) != len(fits) {
			t.Errorf("Call at the limit = %d bytes, %v", len(got), err)
		}
	})
	t.Run("receiver disconnects", func(t *testing.T) {
		server := startNode(t, Config{Self: Peer{ID: "server"}, MaxFrameBytes: limit})
		client := startNode(t, Config{Self: Peer{ID: "client"}})
		if _, err := client.Call(testContext(t), server.Self(), kindEcho, big); !errors.Is(err, ErrUnreachable) {
			t.Errorf("Call error = %v, want ErrUnreachable", err)
		}
		if got, err := client.Call(testContext(t), server.Self(), kindEcho, []byte("small")); err != nil || string(got) != "small" {
			t.Errorf("small Call afterwards = %q, %v", got, err)
		}
	})
	t.Run("response too large", func(t *testing.T) {
		server := startNode(t, Config{Self: Peer{ID: "server"}, MaxFrameBytes: limit})
		client := startNode(t, Config{Self: Peer{ID: "client"}})
		_, err := client.Call(testContext(t), server.Self(), kindDouble, big[:limit/2+1])
		var remote *RemoteError
		if !errors.As(err, &remote) || !strings.Contains(remote.Msg, "frame too large") {
			t.Errorf("Call error = %v, want a RemoteError saying the frame is too large", err)
		}
	})
}

func TestAccounting(t *testing.T) {
	const calls, requestBytes, sendBytes = 5, 100, 10
	tests := []struct {
		name               string
		clientDC, serverDC string
		sharedStats        bool
	}{
		{"between DCs", "a", "b", false},
		{"inside a DC", "a", "a", false},
		{"shared counters", "a", "b", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var clientStats, serverStats *Stats
			if tt.sharedStats {
				clientStats = NewStats()
				serverStats = clientStats
			}
			server := startNode(t, Config{Self: Peer{ID: "server", DC: tt.serverDC}, Stats: serverStats})
			client := startNode(t, Config{Self: Peer{ID: "client", DC: tt.clientDC}, Stats: clientStats})
			ctx := testContext(t)
			// The one-way message goes first: the calls behind it on the same connection
			// guarantee it has been written, and so counted, when they return.
			if err := client.Send(ctx, server.Self(), kindNotify, make([]byte, sendBytes)); err != nil {
				t.Fatalf("Send: %v", err)
			}
			for range calls {
				if _, err := client.Call(ctx, server.Self(), kindDouble, make([]byte, requestBytes)); err != nil {
					t.Fatalf("Call: %v", err)
				}
			}
			up := map[Flow]Counter{
				{tt.clientDC, tt.serverDC, kindHello}:  {1, frameHeaderBytes + uint64(len(encodeHello(ProtocolVersion, client.Self())))},
				{tt.clientDC, tt.serverDC, kindNotify}: {1, frameHeaderBytes + sendBytes},
				{tt.clientDC, tt.serverDC, kindDouble}: {calls, calls * (frameHeaderBytes + requestBytes)},
			}
			down := map[Flow]Counter{
				{tt.serverDC, tt.clientDC, kindHello}:  {1, frameHeaderBytes + uint64(len(encodeAcceptance(ProtocolVersion)))},
				{tt.serverDC, tt.clientDC, kindDouble}: {calls, calls * (frameHeaderBytes + stampBytes + 2*requestBytes)},
			}
			if tt.sharedStats {
				for flow, counter := range down {
					up[flow] = counter
				}
				down = up
			}
			if got := client.Stats().Snapshot(); !reflect.DeepEqual(got, up) {
				t.Errorf("client counted %v, want %v", got, up)
			}
			if got := server.Stats().Snapshot(); !reflect.DeepEqual(got, down) {
				t.Errorf("server counted %v, want %v", got, down)
			}
			var wantInterDC, wantTotal uint64
			for _, counter := range up {
				wantTotal += counter.Bytes
			}
			if tt.clientDC != tt.serverDC {
				wantInterDC = wantTotal
			}
			if got := client.Stats().InterDCBytes(); got != wantInterDC {
				t.Errorf("InterDCBytes() = %d, want %d", got, wantInterDC)
			}
			if got := client.Stats().Total().Bytes; got != wantTotal {
				t.Errorf("Total().Bytes = %d, want %d", got, wantTotal)
			}
		})
	}
}

// twoDCs is a topology of DCs a and b with the given path between them and none inside.
func twoDCs(link topology.Link) *topology.Topology {
	link.Between = [2]string{"a", "b"}
	return &topology.Topology{
		Datacenters: []topology.Datacenter{{Name: "a"}, {Name: "b"}},
		Links:       []topology.Link{link},
	}
}

func TestWANLatency(t *testing.T) {
	const oneWay = 30 * time.Millisecond
	links := twoDCs(topology.Link{LatencyMs: 30})
	server := startNode(t, Config{Self: Peer{ID: "server", DC: "b"}, Links: links})
	client := startNode(t, Config{Self: Peer{ID: "client", DC: "a"}, Links: links})
	ctx := testContext(t)

	start := time.Now()
	if _, err := client.Call(ctx, server.Self(), kindEcho, []byte("x")); err != nil {
		t.Fatalf("Call: %v", err)
	}
	if elapsed := time.Since(start); elapsed < 2*oneWay || elapsed > 20*oneWay {
		t.Errorf("one call took %v, want at least the %v round trip", elapsed, 2*oneWay)
	}

	const concurrent = 20
	elapsed := make(chan time.Duration, concurrent)
	start = time.Now()
	var wg sync.WaitGroup
	for range concurrent {
		wg.Go(func() {
			callStart := time.Now()
			if _, err := client.Call(ctx, server.Self(), kindEcho, []byte("x")); err != nil {
				t.Errorf("Call: %v", err)
			}
			elapsed <- time.Since(callStart)
		})
	}
	wg.Wait()
	close(elapsed)
	for e := range elapsed {
		if e < 2*oneWay {
			t.Errorf("a concurrent call took %v, less than the %v round trip", e, 2*oneWay)
		}
	}
	// Serialised, 20 calls would take 20 round trips; pipelined, about one.
	if total := time.Since(start); total > 10*2*oneWay {
		t.Errorf("%d concurrent calls took %v: latency is not pipelined", concurrent, total)
	}
}

func TestRTTTracksCalls(t *testing.T) {
	links := twoDCs(topology.Link{LatencyMs: 10})
	server := startNode(t, Config{Self: Peer{ID: "server", DC: "b"}, Links: links})
	client := startNode(t, Config{Self: Peer{ID: "client", DC: "a"}, Links: links})
	if _, ok := client.RTT("server"); ok {
		t.Fatal("RTT known before any call")
	}
	for range 3 {
		if _, err := client.Call(testContext(t), server.Self(), kindEcho, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	rtt, ok := client.RTT("server")
	if !ok || rtt < 20*time.Millisecond || rtt > 200*time.Millisecond {
		t.Fatalf("RTT = %v, %v; want about the emulated 20 ms round trip", rtt, ok)
	}
	// Every call folds its round trip in: once the peer is known, at no allocation.
	if allocs := testing.AllocsPerRun(100, func() { client.observeRTT("server", rtt) }); allocs != 0 {
		t.Errorf("observing a known peer's round trip allocates %v times", allocs)
	}
}

func TestWANBandwidthSharedByConnections(t *testing.T) {
	const bandwidthBps, payloadBytes = 100e3, 2500
	links := twoDCs(topology.Link{BandwidthMbps: bandwidthBps / 1e6})
	client := startNode(t, Config{Self: Peer{ID: "client", DC: "a"}, Links: links})
	servers := []*node{
		startNode(t, Config{Self: Peer{ID: "server-1", DC: "b"}, Links: links}),
		startNode(t, Config{Self: Peer{ID: "server-2", DC: "b"}, Links: links}),
	}
	ctx := testContext(t)
	start := time.Now()
	var wg sync.WaitGroup
	for _, server := range servers {
		wg.Go(func() {
			if _, err := client.Call(ctx, server.Self(), kindWhoami, make([]byte, payloadBytes)); err != nil {
				t.Errorf("Call: %v", err)
			}
		})
	}
	wg.Wait()
	// Both requests cross the one a->b link, one after the other.
	serialised := time.Duration(float64(2*(frameHeaderBytes+payloadBytes)*8) / bandwidthBps * float64(time.Second))
	if elapsed := time.Since(start); elapsed < serialised || elapsed > 10*serialised {
		t.Errorf("two %d-byte requests over %v bps took %v, want at least %v", payloadBytes, bandwidthBps, elapsed, serialised)
	}
}

// lossyLinks drops every droppable frame: a loss rate a topology file cannot state.
type lossyLinks struct{}

func (lossyLinks) Link(fromDC, toDC string) (topology.LinkSpec, error) {
	return topology.LinkSpec{Loss: 1}, nil
}

func TestWANLoss(t *testing.T) {
	server := startNode(t, Config{Self: Peer{ID: "server", DC: "b"}})
	client := startNode(t, Config{Self: Peer{ID: "client", DC: "a"}, Links: lossyLinks{}})
	if err := client.Send(testContext(t), server.Self(), kindNotify, []byte("lost")); err != nil {
		t.Errorf("Send: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := client.Call(ctx, server.Self(), kindEcho, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Call over a lossy link: %v, want context.DeadlineExceeded", err)
	}
	// The hello went through (the connection stands); the request and message did not.
	want := map[Flow]Counter{{"a", "b", kindHello}: {1, frameHeaderBytes + uint64(len(encodeHello(ProtocolVersion, client.Self())))}}
	if got := client.Stats().Snapshot(); !reflect.DeepEqual(got, want) {
		t.Errorf("client counted %v, want only the hello %v", got, want)
	}
	select {
	case got := <-server.server.notified:
		t.Errorf("a dropped message arrived: %q", got.payload)
	default:
	}
}

func TestWANUnknownDC(t *testing.T) {
	links := twoDCs(topology.Link{LatencyMs: 1})
	t.Run("caller does not know the peer's DC", func(t *testing.T) {
		server := startNode(t, Config{Self: Peer{ID: "server", DC: "c"}})
		client := startNode(t, Config{Self: Peer{ID: "client", DC: "a"}, Links: links})
		_, err := client.Call(testContext(t), server.Self(), kindEcho, nil)
		if !errors.Is(err, topology.ErrUnknownDC) {
			t.Errorf("Call error = %v, want topology.ErrUnknownDC", err)
		}
	})
	t.Run("callee does not know the caller's DC", func(t *testing.T) {
		server := startNode(t, Config{Self: Peer{ID: "server", DC: "a"}, Links: links})
		client := startNode(t, Config{Self: Peer{ID: "client", DC: "c"}})
		_, err := client.Call(testContext(t), server.Self(), kindEcho, nil)
		if !errors.Is(err, ErrUnreachable) {
			t.Errorf("Call error = %v, want ErrUnreachable", err)
		}
	})
}

func TestNoEmulationWithoutFigures(t *testing.T) {
	client := startNode(t, Config{Self: Peer{ID: "client", DC: "a"}, Links: twoDCs(topology.Link{LatencyMs: 5})})
	tests := []struct {
		dc       string
		emulated bool
	}{
		{"a", false}, // a DC's own path has all figures 0
		{"b", true},
	}
	for _, tt := range tests {
		link, err := client.linkTo(tt.dc)
		if err != nil || (link != nil) != tt.emulated {
			t.Errorf("linkTo(%s) = %+v, %v; want emulated %v", tt.dc, link, err, tt.emulated)
		}
	}
}

// BenchmarkCall measures a round trip over loopback with no emulation, the cost every
// in-process experiment pays per message.
func BenchmarkCall(b *testing.B) {
	handler := HandlerFunc(func(_ context.Context, _ Peer, _ Kind, payload []byte) ([]byte, error) {
		return payload, nil
	})
	var transports []*Transport
	for _, id := range []string{"server", "client"} {
		tr, err := Listen(Config{Self: Peer{ID: id, Addr: "127.0.0.1:0"}, Handler: handler})
		if err != nil {
			b.Fatal(err)
		}
		defer tr.Close()
		transports = append(transports, tr)
	}
	server, client := transports[0], transports[1]
	payload := make([]byte, 1024)
	ctx := context.Background()
	b.SetBytes(int64(len(payload)))
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := client.Call(ctx, server.Self(), kindEcho, payload); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestErrorCodes: an error frame carries the code the answering side's Config.ErrorCode
// names on a connection of protocol 4, and only the text on one of protocol 3, whichever
// end speaks only that.
func TestErrorCodes(t *testing.T) {
	const codeNoKey ErrorCode = 7
	msg := `no such key "k"`
	namer := func(err error) ErrorCode {
		if err.Error() == msg {
			return codeNoKey
		}
		return NoErrorCode
	}
	tests := []struct {
		name           string
		client, server speaking
		want           RemoteError
	}{
		{"protocol 4", thisBuild, thisBuild, RemoteError{Code: codeNoKey, Coded: true, Msg: msg}},
		{"dialer of protocol 3", v3Only, thisBuild, RemoteError{Msg: msg}},
		{"acceptor of protocol 3", thisBuild, v3Only, RemoteError{Msg: msg}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := startNodeSpeaking(t, Config{Self: Peer{ID: "server"}, ErrorCode: namer}, tt.server.oldest, tt.server.newest)
			client := startNodeSpeaking(t, Config{Self: Peer{ID: "client"}}, tt.client.oldest, tt.client.newest)
			_, err := client.Call(testContext(t), server.Self(), kindFail, []byte("k"))
			var remote *RemoteError
			if !errors.As(err, &remote) || *remote != tt.want {
				t.Fatalf("Call error = %#v, want %#v", err, tt.want)
			}
			// An error the namer does not know travels without a code.
			_, err = client.Call(testContext(t), server.Self(), kindFail, []byte("other"))
			if !errors.As(err, &remote) || remote.Code != NoErrorCode || remote.Coded != tt.want.Coded {
				t.Errorf("unnamed error = %#v, want no code (Coded %v)", err, tt.want.Coded)
			}
		})
	}
}

// TestDialWaitsForTheAcceptance: a dial whose hello gets no answer (a peer that accepted
// the socket and stalls) sends nothing behind it and ends with the caller's context,
// leaving no connection behind for the next call to find.
func TestDialWaitsForTheAcceptance(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	received := make(chan []byte, 1)
	go func() {
		nc, err := silent.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		// Everything the dialer sends until it hangs up.
		sent, _ := io.ReadAll(nc)
		received <- sent
	}()
	client := startNode(t, Config{Self: Peer{ID: "client"}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = client.Call(ctx, Peer{ID: "stalled", Addr: silent.Addr().String()}, kindEcho, []byte("held back"))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer to the hello") {
		t.Fatalf("Call to a peer that never answers the hello: %v, want the context's deadline", err)
	}
	if got, want := <-received, encodeFrame(frameHello, kindHello, 0, encodeHello(ProtocolVersion, client.Self())); !bytes.Equal(got, want) {
		t.Errorf("the dialer sent %q, want its hello alone", got)
	}
	if got := dialedVersion(client.Transport, "stalled"); got != 0 {
		t.Errorf("a connection of version %d to the stalled peer is left", got)
	}
}

// TestSendQueueBoundedWhenPeerStopsReading stands in for a peer cut off without a reset:
// it accepts the connection and never reads. The kernel's buffers fill, then the send
// queue, and from there on frames are refused at once (a call as unreachable) while the
// queue stays within its bound, however long the sender keeps trying.
func TestSendQueueBoundedWhenPeerStopsReading(t *testing.T) {
	const queueBytesMax = 1 << 20
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		nc, err := silent.Accept()
		if err == nil {
			accepted <- nc
		}
	}()
	defer func() {
		select {
		case nc := <-accepted:
			nc.Close()
		default:
		}
	}()
	warnings := &lineCounter{substr: "does not drain"}
	// Every node of the cluster speaks this build's protocol, so the dial does not wait
	// for an acceptance the silent peer would never send.
	client := startNode(t, Config{
		Self:              Peer{ID: "client"},
		SendQueueBytesMax: queueBytesMax,
		ClusterVersion:    func() uint16 { return ProtocolVersion },
		Logger:            slog.New(slog.NewTextHandler(warnings, nil)),
	})
	peer := Peer{ID: "cut-off", Addr: silent.Addr().String()}
	payload := make([]byte, 64<<10)
	// Loopback's socket buffers hold a few MiB at most; 1 GiB of sends must meet the bound.
	refused := 0
	for range 1 << 14 {
		err := client.Send(testContext(t), peer, kindNotify, payload)
		if errors.Is(err, ErrSendQueueFull) {
			refused++
			if refused == 100 {
				break
			}
			continue
		}
		if err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	if refused < 100 {
		t.Fatalf("1 GiB sent to a peer that reads nothing and no frame was refused")
	}
	c, err := client.connTo(testContext(t), peer)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	queued := c.queuedBytes
	c.mu.Unlock()
	if queued > queueBytesMax {
		t.Errorf("%d bytes queued, bound %d", queued, queueBytesMax)
	}
	// The call's frame is larger than the whole queue, so it is refused while anything is
	// queued. Between the last refusal and the call the writer may still hand the kernel
	// more bytes (on a busy machine it ran late); should it have emptied the queue, the
	// call goes out to a peer that never answers: fill the queue again and retry.
	big := make([]byte, queueBytesMax)
	callErr := error(nil)
	for attempt := 0; attempt < 10 && !errors.Is(callErr, ErrSendQueueFull); attempt++ {
		for {
			err := client.Send(testContext(t), peer, kindNotify, payload)
			if errors.Is(err, ErrSendQueueFull) {
				refused++
				break
			}
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, callErr = client.Call(ctx, peer, kindEcho, big)
		cancel()
		if callErr != nil && !errors.Is(callErr, ErrSendQueueFull) && !errors.Is(callErr, context.DeadlineExceeded) {
			t.Fatalf("Call: %v", callErr)
		}
		if !errors.Is(callErr, ErrSendQueueFull) {
			t.Logf("the queue emptied before call %d went out (%v): filling it again", attempt+1, callErr)
		}
	}
	if !errors.Is(callErr, ErrSendQueueFull) || !errors.Is(callErr, ErrUnreachable) {
		t.Fatalf("Call error = %v, want ErrUnreachable and ErrSendQueueFull", callErr)
	}
	if got := client.Stats().SendQueueRefused(); got != uint64(refused)+1 {
		t.Errorf("Stats().SendQueueRefused() = %d, want %d", got, refused+1)
	}
	// One warning per spell of refusals, not per frame: the kernel taking more bytes as
	// it grows its buffers may end a spell or two early.
	if got := warnings.count(); got < 1 || got > refused/10 {
		t.Errorf("%d warnings that the peer does not drain for %d refused frames, want one per spell", got, refused)
	}
}
