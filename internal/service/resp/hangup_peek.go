//go:build linux || darwin || freebsd

package resp

import (
	"errors"
	"syscall"
)

// peerGone waits until the socket is readable, peeks at it without taking any byte, and
// reports whether the client hung up (end of file, or an error such as a reset). It
// reports false when the client sent bytes, or when the wait ended for a read deadline
// or a closed socket.
func peerGone(raw syscall.RawConn) bool {
	var gone bool
	var b [1]byte
	err := raw.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EINTR):
			return false // nothing yet: wait until the socket is readable
		case err != nil, n == 0:
			gone = true
		}
		return true
	})
	return gone && err == nil
}
