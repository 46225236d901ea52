package remote

import (
	"errors"
	"strings"

	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/io/clockguard"
	"github.com/kuradb/kura/internal/io/transport"
)

// wireErrors are the errors whose identity a replica's caller needs across the wire, with
// their codes in error frames (protocol version 4 on). The codes are the wire's: never
// renumber one, never reuse a retired one. A wrapping error takes the code of the first
// sentinel here that it wraps.
var wireErrors = []struct {
	code     transport.ErrorCode
	sentinel error
}{
	// A refused timestamp: the coordinator must not hint such a write.
	{1, clockguard.ErrClockOffset},
	// A scan's refusal of its size, answered as such rather than as a failed replica.
	{2, replica.ErrScanTooLarge},
	// A node's refusal to serve this one at all: unavailable rather than a timeout.
	{3, replica.ErrNotMember},
	// An answer that fits no frame; a scan under a byte bound takes it for ErrScanTooLarge.
	{4, transport.ErrFrameTooLarge},
}

// ErrorCode names err for an error frame (transport.Config.ErrorCode): the code of the
// first of wireErrors it wraps, transport.NoErrorCode for none.
func ErrorCode(err error) transport.ErrorCode {
	for _, w := range wireErrors {
		if errors.Is(err, w.sentinel) {
			return w.code
		}
	}
	return transport.NoErrorCode
}

// identify returns the sentinel of wireErrors a peer's error stands for, nil for none: by
// its code, or, when it came over a connection of protocol 3, whose error frames carry
// only text, by its text. An error frame of protocol 4 without a known code is no
// sentinel, whatever its text quotes.
func identify(remote *transport.RemoteError) error {
	if remote.Coded {
		for _, w := range wireErrors {
			if w.code == remote.Code {
				return w.sentinel
			}
		}
		return nil
	}
	for _, w := range wireErrors {
		if w.sentinel == replica.ErrNotMember {
			if notMember(remote.Msg) {
				return w.sentinel
			}
		} else if strings.Contains(remote.Msg, w.sentinel.Error()) {
			return w.sentinel
		}
	}
	return nil
}

// notMember reports whether a remote error's text is a refusal as ErrNotMember: the
// sentinel's text alone or followed by ": " and the reason, as the admission check wraps
// it. A prefix, not strings.Contains, so that a reason that merely quotes the words (a
// key, a path) is not taken for one.
func notMember(msg string) bool {
	rest, ok := strings.CutPrefix(msg, replica.ErrNotMember.Error())
	return ok && (rest == "" || strings.HasPrefix(rest, ": "))
}
