package coord

import (
	"errors"
	"fmt"

	"github.com/kuradb/kura/consistency"
)

// Errors callers distinguish with errors.Is.
var (
	// ErrUnavailable: not enough live replicas to meet the level; nothing was written.
	ErrUnavailable = errors.New("unavailable")
	// ErrTimeout: the level's acknowledgements did not all arrive in time; the write may
	// still have reached some replicas.
	ErrTimeout = errors.New("timeout")
	// ErrInvalidArgument: the request itself is malformed (empty or oversized key,
	// oversized value, a level that makes no sense for the operation).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrAnswerFull: the answer would pass Limits.AnswerBytesMax. A key of GetAll not
	// read, because the values read before it filled the answer (the key asked for by
	// itself is answered), or a scan refused whole (a smaller limit is answered).
	ErrAnswerFull = errors.New("answer full")
)

// UnavailableError says which level could not be met with how many live replicas.
type UnavailableError struct {
	Level    consistency.Level
	Required consistency.Requirement
	Alive    map[string]int // live replicas per datacenter
}

func (e *UnavailableError) Error() string {
	total := sumPerDC(e.Alive)
	// Says what to do next: the operator either brings replicas back or asks for less.
	return fmt.Sprintf("unavailable: %v needs %v replicas, %s alive, so no replica was asked: bring the down replicas back (kura status shows them) or use a lower consistency level",
		e.Level, e.Required, consistency.CountPerDC(total, e.Alive))
}

// sumPerDC adds up a count per DC.
func sumPerDC(perDC map[string]int) int {
	total := 0
	for _, n := range perDC {
		total += n
	}
	return total
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// TimeoutError says how far a request got before its deadline.
type TimeoutError struct {
	Level    consistency.Level
	Required consistency.Requirement
	Acked    int
	Hinted   int
	Cause    error // the last replica error seen, if any
}

func (e *TimeoutError) Error() string {
	msg := fmt.Sprintf("timeout: %v needs %v acknowledgements, %d received", e.Level, e.Required, e.Acked)
	if e.Hinted > 0 {
		msg += fmt.Sprintf(", %d hinted", e.Hinted)
	}
	if e.Cause != nil {
		msg += fmt.Sprintf(" (last replica error: %v)", e.Cause)
	}
	// What to do next: a write may have landed, so the answer is to retry, not to assume.
	return msg + "; it may have taken effect on some replicas: retry it, and look for down or slow nodes with kura status"
}

// Is makes errors.Is(err, ErrTimeout) true.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}

// ContentionError says that a lightweight transaction lost every round it tried to other
// coordinators' rounds on the key (their higher ballots, or their proposals in progress
// that it completed), backing off between them. Nothing of it was written.
type ContentionError struct {
	Level  consistency.Level
	Rounds int // rounds tried
	Lost   int // rounds lost to a higher ballot
}

func (e *ContentionError) Error() string {
	return fmt.Sprintf("timeout: %v lightweight transaction gave up after %d rounds under contention (%d lost to other coordinators' ballots)", e.Level, e.Rounds, e.Lost)
}

// Is makes errors.Is(err, ErrTimeout) true: as with a timeout, the caller may retry.
func (e *ContentionError) Is(target error) bool { return target == ErrTimeout }

// UnknownOutcomeError says that a lightweight transaction gave up while a proposal of its
// write was accepted by some replicas but not, as far as it could tell, by the quorum
// that chooses it: a later round on the key may still complete the write, or never will.
// Read the key (at a serial level) before retrying a write that must not be applied
// twice.
type UnknownOutcomeError struct {
	Level consistency.Level
	Cause error // why it gave up
}

func (e *UnknownOutcomeError) Error() string {
	return fmt.Sprintf("timeout: %v lightweight transaction outcome unknown: its write may or may not be applied (%v)", e.Level, e.Cause)
}

// Is makes errors.Is(err, ErrTimeout) true: a write whose outcome is unknown, as after a
// timeout.
func (e *UnknownOutcomeError) Is(target error) bool { return target == ErrTimeout }
