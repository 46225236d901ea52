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
)

// UnavailableError says which level could not be met with how many live replicas.
type UnavailableError struct {
	Level    consistency.Level
	Required consistency.Requirement
	Alive    map[string]int // live replicas per datacenter
}

func (e *UnavailableError) Error() string {
	total := 0
	for _, n := range e.Alive {
		total += n
	}
	return fmt.Sprintf("unavailable: %v needs %v replicas, %d alive %v", e.Level, e.Required, total, e.Alive)
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
	return msg
}

// Is makes errors.Is(err, ErrTimeout) true.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}
