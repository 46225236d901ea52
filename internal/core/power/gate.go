// The gate: a node's network endpoints (its listeners and the connections it accepted
// or dialed), switched together so that a sleeping node really stops serving. Released,
// the node gives its addresses up, for a neighbour's stand-in to bind and answer with a
// redirect (the paper's timeout suppression); frozen, it behaves as a stopped process or
// a powered-off machine does to its clients (their requests hang), which is what a
// client meets when no one stands in: the baseline the redirect is measured against.

package power

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Mode is what a gate lets through.
type Mode uint8

// The modes of a gate.
const (
	// Serving: listeners accept and connections carry data, as if there were no gate.
	Serving Mode = iota
	// Released: every listener's socket is closed, so its address is free for another
	// listener, and every connection is closed. Accept waits.
	Released
	// Frozen: listeners stay bound but accept nothing (the kernel still completes
	// handshakes into the backlog, so a client connects and then waits), and connections
	// hold what they read and what they would write, as a stopped process does.
	Frozen
)

// String names the mode: "serving", "released" or "frozen".
func (m Mode) String() string {
	switch m {
	case Serving:
		return "serving"
	case Released:
		return "released"
	case Frozen:
		return "frozen"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// rebindInterval is how often Serve tries again to bind an address another listener
// still holds: the stand-in gives it up within a few milliseconds of being told to.
const rebindInterval = 20 * time.Millisecond

// Gate switches the listeners it made and the connections it wraps between the modes.
// It starts Serving. Release, Freeze and Serve are meant to be called by one goroutine
// (the node's power lifecycle); Accept, Read, Write and Close may run concurrently with
// them and with each other.
type Gate struct {
	mu sync.Mutex
	// mode is the Mode, changed under mu and read without it: every read and write of
	// every connection asks for it, and a lock they all shared was contended.
	mode atomic.Uint32
	// changed is closed, and replaced, at every change of mode: what waits for a mode
	// waits on it.
	changed   chan struct{}
	listeners map[*listener]struct{}
	conns     map[*conn]struct{}
}

// NewGate returns a serving gate with no endpoints.
func NewGate() *Gate {
	return &Gate{changed: make(chan struct{}), listeners: map[*listener]struct{}{}, conns: map[*conn]struct{}{}}
}

// Mode returns the gate's mode.
func (g *Gate) Mode() Mode {
	return Mode(g.mode.Load())
}

// setMode changes the mode and wakes whatever waits for one. The caller holds g.mu.
func (g *Gate) setMode(m Mode) {
	g.mode.Store(uint32(m))
	close(g.changed)
	g.changed = make(chan struct{})
}

// await waits until ok holds for the mode or done is closed, and returns the mode then
// and whether ok held.
func (g *Gate) await(ok func(Mode) bool, done <-chan struct{}) (Mode, bool) {
	if m := g.Mode(); ok(m) {
		return m, true
	}
	for {
		g.mu.Lock()
		m, changed := g.Mode(), g.changed
		g.mu.Unlock()
		if ok(m) {
			return m, true
		}
		select {
		case <-changed:
		case <-done:
			return m, false
		}
	}
}

// Listen listens on addr (TCP) through the gate. The listener's address is the one
// resolved by this first bind (":0" picks a port once), and every later bind is on it.
// A gate that is not serving keeps the new listener's socket as its mode says: closed
// at once when released (the bind only resolved the address), bound when frozen.
func (g *Gate) Listen(addr string) (net.Listener, error) {
	sock, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	l := &listener{g: g, addr: sock.Addr(), sock: sock, done: make(chan struct{})}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.Mode() == Released {
		sock.Close()
		l.sock = nil
	}
	g.listeners[l] = struct{}{}
	return l, nil
}

// Conn wraps a connection the node dialed itself, so that it is closed on Release and
// held on Freeze with the ones its listeners accepted. On a released gate it is kept: a
// sleeping node dials nobody but, as it wakes, the stand-in that must give its
// addresses back before the gate can serve again.
func (g *Gate) Conn(c net.Conn) net.Conn {
	gc := &conn{Conn: c, g: g, done: make(chan struct{})}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.conns[gc] = struct{}{}
	return gc
}

// Release closes the socket of every listener, freeing its address, and every
// connection, whose peers see it closed at once. Accept keeps waiting, for Serve, so the
// servers using the listeners do not stop.
func (g *Gate) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unbind()
	for c := range g.conns {
		c.close()
	}
	clear(g.conns)
	g.setMode(Released)
}

// Freeze stops accepting and holds the data of every connection, with the addresses
// still bound, as a stopped process does: a client connects, sends, and waits. From
// Released the addresses stay unbound until Serve.
func (g *Gate) Freeze() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setMode(Frozen)
}

// Serve goes back to serving. After Release it binds every listener again on its
// address, trying every 20 ms while another listener still holds one (the stand-in
// giving it up), until ctx ends; it then returns ctx's error, the gate left in its mode
// with every address it had bound given up again. After Freeze it lets connections and
// Accept go on.
func (g *Gate) Serve(ctx context.Context) error {
	retry := time.NewTicker(rebindInterval)
	defer retry.Stop()
	for {
		err := g.rebind()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			g.mu.Lock()
			defer g.mu.Unlock()
			g.unbind()
			return fmt.Errorf("power: serve: %w (binding again: %v)", ctx.Err(), err)
		case <-retry.C:
		}
	}
}

// rebind binds the listeners without a socket and, when all have one, serves; else it
// returns why one could not bind, keeping those it bound for the next try.
func (g *Gate) rebind() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var errs []error
	for l := range g.listeners {
		if l.sock != nil {
			continue
		}
		// Binding under the lock is a single quick system call, and keeps a listener
		// from being closed between its bind and its record.
		sock, err := net.Listen("tcp", l.addr.String())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		l.sock = sock
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	g.setMode(Serving)
	return nil
}

// unbind closes the sockets of the listeners. The caller holds g.mu.
func (g *Gate) unbind() {
	for l := range g.listeners {
		if l.sock != nil {
			l.sock.Close()
			l.sock = nil
		}
	}
}

// listener is a gated net.Listener.
type listener struct {
	g    *Gate
	addr net.Addr
	// sock is the socket, nil while the gate is released; guarded by g.mu.
	sock net.Listener
	// done is closed by Close; closed records it under g.mu.
	done   chan struct{}
	closed bool
}

// Accept returns the next connection while the gate serves, and waits while it does not.
// A connection the socket hands over after the gate froze is held until it serves again.
func (l *listener) Accept() (net.Conn, error) {
	for {
		if _, ok := l.g.await(func(m Mode) bool { return m == Serving }, l.done); !ok {
			return nil, l.closedError()
		}
		l.g.mu.Lock()
		sock, closed := l.sock, l.closed
		l.g.mu.Unlock()
		switch {
		case closed:
			return nil, l.closedError()
		case sock == nil:
			continue // released between the wait and the lock: wait again
		}
		nc, err := sock.Accept()
		if err != nil {
			l.g.mu.Lock()
			replaced := l.sock != sock || l.closed
			l.g.mu.Unlock()
			if replaced {
				continue // Release or Close closed the socket: wait, or report the close
			}
			return nil, err
		}
		c := l.g.Conn(nc).(*conn)
		// A connection accepted just before a Freeze waits here; one accepted just before
		// a Release was closed by it and is dropped.
		if _, ok := l.g.await(func(m Mode) bool { return m != Frozen }, l.done); !ok {
			c.Close()
			return nil, l.closedError()
		}
		if c.isClosed() {
			continue
		}
		return c, nil
	}
}

// closedError is what Accept returns once the listener is closed.
func (l *listener) closedError() error {
	return &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
}

// Close closes the listener for good, in any mode: Accept returns net.ErrClosed.
func (l *listener) Close() error {
	l.g.mu.Lock()
	defer l.g.mu.Unlock()
	if l.closed {
		return l.closedError()
	}
	l.closed = true
	close(l.done)
	delete(l.g.listeners, l)
	if l.sock == nil {
		return nil
	}
	err := l.sock.Close()
	l.sock = nil
	return err
}

// Addr returns the address the listener resolved at its first bind.
func (l *listener) Addr() net.Addr { return l.addr }

// conn is a gated net.Conn.
type conn struct {
	net.Conn
	g         *Gate
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Read reads from the connection, holding what it read while the gate is frozen.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if werr := c.awaitThaw("read"); werr != nil {
		return 0, werr
	}
	return n, err
}

// Write waits while the gate is frozen, then writes.
func (c *conn) Write(p []byte) (int, error) {
	if err := c.awaitThaw("write"); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// SyscallConn returns the socket under the connection, for callers that only look at
// it: the Redis port peeks at it to notice a client hanging up during a long walk, and
// shows its descriptor in CLIENT LIST. Reads and writes must go through Read and Write,
// which the gate holds while frozen.
func (c *conn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("power: a %T has no socket to give", c.Conn)
	}
	return sc.SyscallConn()
}

// awaitThaw waits while the gate is frozen, and says when the connection was closed
// meanwhile (by Close, or by a Release).
func (c *conn) awaitThaw(op string) error {
	c.g.await(func(m Mode) bool { return m != Frozen }, c.done)
	if c.isClosed() {
		return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: net.ErrClosed}
	}
	return nil
}

// Close closes the connection, in any mode.
func (c *conn) Close() error {
	c.g.mu.Lock()
	delete(c.g.conns, c)
	c.g.mu.Unlock()
	return c.close()
}

// close closes the socket and wakes the reads and writes waiting on it.
func (c *conn) close() error {
	c.closeOnce.Do(func() {
		close(c.done)
		c.closeErr = c.Conn.Close()
	})
	return c.closeErr
}

func (c *conn) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}
