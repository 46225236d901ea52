package nemesis

import (
	"errors"
	"strconv"

	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// The counters' operations as the simulator's clients run them on a coordinator
// (internal/tools/sim/explore, internal/tools/sim/lifecycle), recorded for checkCounters.

// Increment is INCR's transaction (a coord.UpdateFunc): the counter plus one, absent
// counting as 0.
func Increment(cur lww.Record, found bool) (lww.Record, bool, error) {
	n := 0
	if found {
		var err error
		if n, err = strconv.Atoi(string(cur.Value)); err != nil {
			return lww.Record{}, false, err
		}
	}
	return lww.Record{Value: []byte(strconv.Itoa(n + 1))}, true, nil
}

// IncrementDone is the event that ends the increment invoke from what the coordinator
// answered: ok with the value it wrote; indeterminate when the coordinator says its
// outcome is unknown; failed on any other error, which the coordinator returns only
// when no proposal of the transaction can be chosen.
func IncrementDone(invoke Event, res coord.UpdateResult, err error) Event {
	e := Event{Type: TypeOK, Op: invoke.Op, Client: invoke.Client, Node: invoke.Node, F: invoke.F, Key: invoke.Key}
	var unknown *coord.UnknownOutcomeError
	switch {
	case errors.As(err, &unknown):
		e.Type, e.Error = TypeInfo, err.Error()
	case err != nil:
		e.Type, e.Error = TypeFail, err.Error()
	case !res.Applied:
		e.Type, e.Error = TypeFail, "not applied"
	default:
		e.Value, e.Timestamp = string(res.Record.Value), uint64(res.Record.Timestamp)
	}
	return e
}
