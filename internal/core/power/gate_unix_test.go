//go:build unix

package power

import (
	"net"
	"syscall"
	"testing"
)

// TestGatedConnGivesItsSocket: a connection the gate accepted gives the socket under it,
// so that a server can peek at it (the Redis port's hang-up watch) and show its
// descriptor, and that socket is the accepted one: its local address is the listener's.
func TestGatedConnGivesItsSocket(t *testing.T) {
	l, e := listen(t, NewGate())
	dial(t, l.Addr().String())
	server := <-e.conns
	sc, ok := server.(syscall.Conn)
	if !ok {
		t.Fatalf("a gated connection (%T) gives no socket", server)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var local syscall.Sockaddr
	if err := raw.Control(func(fd uintptr) { local, err = syscall.Getsockname(int(fd)) }); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	in4, ok := local.(*syscall.SockaddrInet4)
	if want := l.Addr().(*net.TCPAddr).Port; !ok || in4.Port != want {
		t.Fatalf("the socket is bound to %#v, want port %d", local, want)
	}
}
