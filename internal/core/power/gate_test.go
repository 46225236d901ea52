package power

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// echo serves a listener as a test server: it echoes what each connection sends.
type echo struct {
	conns   chan net.Conn // the connections Accept returned, server side
	ended   chan error    // the error that ended each connection's echo
	stopped chan error    // the error that ended the accept loop
}

func serveEcho(l net.Listener) *echo {
	e := &echo{conns: make(chan net.Conn, 16), ended: make(chan error, 16), stopped: make(chan error, 1)}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				e.stopped <- err
				return
			}
			e.conns <- c
			go func() {
				buf := make([]byte, 64)
				for {
					n, err := c.Read(buf)
					if err == nil {
						_, err = c.Write(buf[:n])
					}
					if err != nil {
						e.ended <- err
						return
					}
				}
			}()
		}
	}()
	return e
}

// ask sends msg and reads the echo.
func ask(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	answer(t, c, msg)
}

// answer reads len(want) bytes and checks them.
func answer(t *testing.T, c net.Conn, want string) {
	t.Helper()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
		t.Fatalf("read %q, %v; want %q", got, err, want)
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func listen(t *testing.T, g *Gate) (net.Listener, *echo) {
	t.Helper()
	l, err := g.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, serveEcho(l)
}

func wantMode(t *testing.T, g *Gate, want Mode) {
	t.Helper()
	if got := g.Mode(); got != want {
		t.Fatalf("mode %v, want %v", got, want)
	}
}

// TestGateReleaseAndServe: released, the address is free and every connection closed,
// while the server's accept loop waits; served again, the same loop accepts on the same
// address.
func TestGateReleaseAndServe(t *testing.T) {
	ctx := testContext(t)
	g := NewGate()
	l, e := listen(t, g)
	addr := l.Addr().String()
	client := dial(t, addr)
	ask(t, client, "before")

	// A connection the node dialed itself, to a peer.
	peer, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	dialed := g.Conn(dial(t, peer.Addr().String()))
	defer dialed.Close()
	peerSide, err := peer.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peerSide.Close()

	g.Release()
	wantMode(t, g, Released)
	for name, c := range map[string]net.Conn{"client": client, "peer": peerSide} {
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("%s read after Release: %v, want EOF", name, err)
		}
	}
	if c, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dial after Release: %v, want connection refused", err)
	}
	// A connection dialed while released (a waking node asking its stand-in for its
	// addresses) works, and is closed by the next Release.
	late := g.Conn(dial(t, peer.Addr().String()))
	lateSide, err := peer.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer lateSide.Close()
	if _, err := late.Write([]byte("x")); err != nil {
		t.Fatalf("write on a connection dialed while released: %v", err)
	}
	if _, err := lateSide.Read(make([]byte, 1)); err != nil {
		t.Fatalf("peer read of a connection dialed while released: %v", err)
	}
	g.Release()
	if _, err := lateSide.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("peer read after the next Release: %v, want EOF", err)
	}

	// Another listener (the stand-in) takes the address; Serve cannot bind it until
	// that one lets it go, and a Serve whose context ends leaves the gate released.
	standIn, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on the released address: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := g.Serve(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve while the address is held, context cancelled: %v", err)
	}
	wantMode(t, g, Released)
	served := make(chan error, 1)
	go func() { served <- g.Serve(ctx) }()
	standIn.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	wantMode(t, g, Serving)
	ask(t, dial(t, addr), "after")

	select {
	case err := <-e.stopped:
		t.Fatalf("the accept loop stopped: %v", err)
	default:
	}
	l.Close()
	if err := <-e.stopped; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
	}
}

// TestGateFreeze: frozen, a client connects and sends but gets no answer, on a new
// connection as on an old one; served again, both get their answers.
func TestGateFreeze(t *testing.T) {
	ctx := testContext(t)
	g := NewGate()
	l, _ := listen(t, g)
	old := dial(t, l.Addr().String())
	ask(t, old, "warm")

	g.Freeze()
	wantMode(t, g, Frozen)
	fresh := dial(t, l.Addr().String())
	for _, c := range []net.Conn{old, fresh} {
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		// The answer cannot come while the gate is frozen, so the deadline is no bet on
		// timing: the read fails however long it waits.
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read while frozen: %v, want a timeout", err)
		}
		c.SetReadDeadline(time.Time{})
	}

	if err := g.Serve(ctx); err != nil {
		t.Fatal(err)
	}
	wantMode(t, g, Serving)
	for _, c := range []net.Conn{old, fresh} {
		answer(t, c, "ping")
	}
}

// TestGateCloseWhileNotServing: a listener and a connection close at once whatever the
// mode, waking what waits on them.
func TestGateCloseWhileNotServing(t *testing.T) {
	tests := []struct {
		name  string
		enter func(*Gate)
	}{
		{"released", (*Gate).Release},
		{"frozen", (*Gate).Freeze},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewGate()
			l, e := listen(t, g)
			client := dial(t, l.Addr().String())
			ask(t, client, "hello")
			server := <-e.conns

			tt.enter(g)
			// Frozen, the server's read holds these bytes; released, the write fails or
			// goes nowhere.
			client.Write([]byte("held"))
			server.Close()
			if err := <-e.ended; !errors.Is(err, net.ErrClosed) {
				t.Fatalf("echo ended with %v, want net.ErrClosed", err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if err := <-e.stopped; !errors.Is(err, net.ErrClosed) {
				t.Fatalf("Accept after Close: %v, want net.ErrClosed", err)
			}
		})
	}
}

func TestModeString(t *testing.T) {
	tests := []struct {
		mode Mode
		want string
	}{
		{Serving, "serving"},
		{Released, "released"},
		{Frozen, "frozen"},
		{Mode(9), "mode(9)"},
	}
	for _, tt := range tests {
		if got := tt.mode.String(); got != tt.want {
			t.Errorf("Mode(%d).String() = %q, want %q", tt.mode, got, tt.want)
		}
	}
}
