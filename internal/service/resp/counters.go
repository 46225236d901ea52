package resp

import (
	"errors"
	"math"
	"math/big"
	"strconv"

	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// Counters: INCR and its kin read the value, add, and write the sum in one lightweight
// transaction, so that no increment is lost to a concurrent one. The key's deadline stays.
// On a PN counter, and on a missing key for a connection in PN mode, they add to the
// counter's shard instead (pncounter.go).

const (
	errOverflow   = "ERR increment or decrement would overflow"
	errNotFloat   = "ERR value is not a valid float"
	errNaNOrInfty = "ERR increment would produce NaN or Infinity"
)

// incrCommand is INCR, DECR, INCRBY and DECRBY: the value after adding the step.
func incrCommand(c *conn, args [][]byte) {
	step := int64(1)
	name := string(c.lowerName)
	if name == "incrby" || name == "decrby" {
		var ok bool
		if step, ok = parseInt(args[2]); !ok {
			c.w.Error(errNotInt)
			return
		}
	}
	if name == "decr" || name == "decrby" {
		if step == math.MinInt64 {
			c.w.Error("ERR decrement would overflow")
			return
		}
		step = -step
	}
	if c.pnCounters && !c.pnIncr(args[1], step) {
		return
	}
	res, err := c.transact(args[1], counterAside(stringOnly(func(cur lww.Record, found bool) (lww.Record, bool, error) {
		var n int64
		if found {
			var ok bool
			if n, ok = parseInt(cur.Value); !ok {
				return lww.Record{}, false, redisError(errNotInt)
			}
		}
		if (step > 0 && n > math.MaxInt64-step) || (step < 0 && n < math.MinInt64-step) {
			return lww.Record{}, false, redisError(errOverflow)
		}
		return lww.Record{Value: strconv.AppendInt(nil, n+step, 10), ExpiresAt: cur.ExpiresAt}, true, nil
	})))
	if errors.Is(err, errIsCounter) {
		// The key is a PN counter, whatever this connection makes of a missing key. A key
		// retyped again meanwhile is refused rather than chased.
		if c.pnIncr(args[1], step) {
			c.w.Error("ERR the key changed between a string and a PN counter during INCR; retry")
		}
		return
	}
	if err != nil {
		c.replyTransactError(err)
		return
	}
	// The written record is the reply: the function may have run in more than one round.
	sum, _ := parseInt(res.Record.Value)
	c.w.Int(sum)
}

// counterAside is fn for a key that is not a PN counter; on one, it writes nothing and
// reports errIsCounter, for the increment to go to the counter's shard.
func counterAside(fn coord.UpdateFunc) coord.UpdateFunc {
	return func(cur lww.Record, found bool) (lww.Record, bool, error) {
		if found && cur.Type == lww.Counter {
			return lww.Record{}, false, errIsCounter
		}
		return fn(cur, found)
	}
}

// incrbyfloatCommand is INCRBYFLOAT key increment: the sum, computed and written as
// Redis computes and writes it (see longdouble.go).
func incrbyfloatCommand(c *conn, args [][]byte) {
	step, ok := parseLongDouble(args[2])
	if !ok {
		c.w.Error(errNotFloat)
		return
	}
	res, err := c.transact(args[1], stringOnly(func(cur lww.Record, found bool) (lww.Record, bool, error) {
		n := new(big.Float)
		if found {
			var ok bool
			if n, ok = parseLongDouble(cur.Value); !ok {
				return lww.Record{}, false, redisError(errNotFloat)
			}
		}
		sum, ok := addLongDouble(n, step)
		if !ok {
			return lww.Record{}, false, redisError(errNaNOrInfty)
		}
		return lww.Record{Value: formatLongDouble(sum), ExpiresAt: cur.ExpiresAt}, true, nil
	}))
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.w.Bulk(res.Record.Value)
}
