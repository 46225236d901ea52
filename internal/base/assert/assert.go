// Package assert checks the invariants the code relies on, in the manner of
// TigerBeetle's assertions: a broken invariant is a bug in kura, not bad input, and
// stops the program at once with a message that names the invariant, before the bug
// can turn into a lost or wrong write. Input a client or peer controls never reaches an
// assertion: it gets an error.
//
// Assertions are checked in test binaries (so every unit test and the simulator check
// them) and in builds with the kuradebug tag (go build -tags kuradebug ./cmd/kura).
// Elsewhere That costs a load and a branch, plus its arguments: Go evaluates them before
// the call, and boxes those that are not pointers or small constants into interfaces on
// the heap. Guard a check that computes something, or formats large numbers on a hot
// path, with Enabled.
package assert

import (
	"fmt"
	"testing"
)

// Enabled reports whether assertions are checked: in test binaries and in builds with
// the kuradebug tag.
var Enabled = debugBuild || testing.Testing()

// That panics with the message format and args make, prefixed "assertion failed: ",
// when assertions are enabled and cond is false.
func That(cond bool, format string, args ...any) {
	if Enabled && !cond {
		fail(format, args)
	}
}

// fail panics with the message; kept apart from That so that That stays small enough
// to inline.
//
//go:noinline
func fail(format string, args []any) {
	panic("assertion failed: " + fmt.Sprintf(format, args...))
}
