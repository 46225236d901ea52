package coord

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/cluster"
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

// RefusedError says that replicas refused the request because they do not count this
// node as a member of their cluster (replica.ErrNotMember: they have not heard of it, or
// know it as left or removed), so that the others could not meet the level. It is
// unavailable, not a timeout: the replicas answered at once, and waiting or retrying on
// this node cannot help, while a node they count as a member can coordinate the request.
type RefusedError struct {
	Level    consistency.Level
	Required consistency.Requirement
	Acked    int
	Refusals []error // the replicas' refusals, each naming its replica and its reason
}

// refusalsShown bounds the refusals a RefusedError's message quotes: a scan over many
// ranges may gather one per range, each saying the same.
const refusalsShown = 3

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("unavailable: %v needs %v acknowledgements, %d received", e.Level, e.Required, e.Acked)
	if e.Acked > 0 {
		msg += " (a write may have taken effect on those)"
	}
	shown := e.Refusals[:min(len(e.Refusals), refusalsShown)]
	reasons := make([]string, 0, len(shown)+1)
	for _, r := range shown {
		reasons = append(reasons, r.Error())
	}
	if more := len(e.Refusals) - len(shown); more > 0 {
		reasons = append(reasons, fmt.Sprintf("and %d more", more))
	}
	replicas := "replicas"
	if len(e.Refusals) == 1 {
		replicas = "replica"
	}
	// What to do next: the refusal is of this node, so another node is the answer.
	return msg + fmt.Sprintf(": %d %s refused this node's request (%s): send it to another node, one the replicas count as a member (kura status shows each node's status)",
		len(e.Refusals), replicas, strings.Join(reasons, "; "))
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *RefusedError) Is(target error) bool { return target == ErrUnavailable }

// LeftRingError refuses a client request, before any replica is asked, on a node that is
// no longer a member of its cluster: it left the ring (decommissioned) or was removed.
// Its peers refuse what it would send them, and it is leaving for good, so the client is
// told at once to go elsewhere rather than sent the peers' refusals.
type LeftRingError struct {
	Node   string
	Status cluster.Status // left or removed
}

func (e *LeftRingError) Error() string {
	return fmt.Sprintf("unavailable: this node has left the ring; send requests to another node (node %s is %s)", e.Node, e.Status)
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *LeftRingError) Is(target error) bool { return target == ErrUnavailable }

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
