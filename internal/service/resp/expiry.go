package resp

import (
	"fmt"
	"math"
	"time"

	"github.com/kuradb/kura/internal/core/lww"
)

// Key expiry. A deadline is part of the value's version (lww.Record.ExpiresAt), written
// by the coordinator, so every replica agrees on it. Setting one on a key that exists
// (EXPIRE and the like, PERSIST, GETEX with an option, SET KEEPTTL) rewrites the value
// in a lightweight transaction, so that a concurrent SET is never undone.

// expireTimeError is Redis's refusal of a deadline out of range for command name.
func expireTimeError(name string) string {
	return fmt.Sprintf("ERR invalid expire time in '%s' command", name)
}

// deadlineMs turns an expiry argument into a deadline in Unix milliseconds as Redis does:
// relative arguments count from now, seconds are multiplied out, and a result that does
// not fit in int64 milliseconds is refused. reply is the error to answer, or "".
func deadlineMs(arg []byte, seconds, relative bool, name string, now time.Time) (ms int64, reply string) {
	n, ok := parseInt(arg)
	if !ok {
		return 0, errNotInt
	}
	if seconds {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return 0, expireTimeError(name)
		}
		n *= 1000
	}
	if relative {
		nowMs := now.UnixMilli()
		if n > 0 && n > math.MaxInt64-nowMs { // a negative n cannot underflow: nowMs >= 0
			return 0, expireTimeError(name)
		}
		n += nowMs
	}
	return n, ""
}

// withDeadline is the next record of a transaction that gives the current value the
// deadline deadlineMs (Unix milliseconds; 0: none): a tombstone when that deadline has
// passed at now, as Redis deletes a key given a deadline in the past.
func withDeadline(deadlineMs int64, now time.Time) func(lww.Record, bool) lww.Record {
	return func(cur lww.Record, _ bool) lww.Record {
		if deadlineMs != 0 && deadlineMs <= now.UnixMilli() {
			return lww.Record{Tombstone: true}
		}
		return lww.Record{Value: cur.Value, ExpiresAt: expiryOf(deadlineMs), Type: cur.Type}
	}
}

// expireCommand is EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT key time [NX|XX|GT|LT]: 1 when
// the deadline was set (or the key deleted, for a deadline already past), 0 when the key
// is missing or the condition failed. No deadline counts as an infinite one for GT and LT.
func expireCommand(c *conn, args [][]byte) {
	name := string(c.lowerName)
	var nx, xx, gt, lt bool
	for _, option := range args[3:] {
		switch upper(option) {
		case "NX":
			nx = true
		case "XX":
			xx = true
		case "GT":
			gt = true
		case "LT":
			lt = true
		default:
			c.w.Error(fmt.Sprintf("ERR Unsupported option %s", option))
			return
		}
	}
	switch {
	case nx && (xx || gt || lt):
		c.w.Error("ERR NX and XX, GT or LT options at the same time are not compatible")
		return
	case gt && lt:
		c.w.Error("ERR GT and LT options at the same time are not compatible")
		return
	}
	now := time.Now()
	seconds := name == "expire" || name == "expireat"
	relative := name == "expire" || name == "pexpire"
	ms, reply := deadlineMs(args[2], seconds, relative, name, now)
	if reply != "" {
		c.w.Error(reply)
		return
	}
	expiresAt := expiryOf(ms)
	res, err := c.transact(args[1], writeIf(
		func(cur lww.Record, found bool) bool {
			has := cur.ExpiresAt != 0
			switch {
			case !found:
				return false
			case nx:
				return !has
			case xx:
				return has
			case gt:
				return has && expiresAt > cur.ExpiresAt
			case lt:
				return !has || expiresAt < cur.ExpiresAt
			}
			return true
		},
		withDeadline(ms, now)))
	if err == nil {
		// A deadline in the past deletes the key, a collection's elements with it.
		err = c.resetReplaced(args[1], res)
	}
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.w.Int(boolInt(res.Applied))
}

// persistCommand is PERSIST key: 1 when it removed the key's deadline, 0 when the key is
// missing or has none.
func persistCommand(c *conn, args [][]byte) {
	res, err := c.transact(args[1], writeIf(
		func(cur lww.Record, found bool) bool { return found && cur.ExpiresAt != 0 },
		withDeadline(0, time.Now())))
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.w.Int(boolInt(res.Applied))
}

// ttlCommand answers TTL, PTTL, EXPIRETIME and PEXPIRETIME: -2 for a missing key, -1 for
// one without a deadline, else the time left (rounded to the nearest second for TTL, as
// Redis does) or the deadline.
func ttlCommand(c *conn, args [][]byte) {
	name := string(c.lowerName)
	rec, found, err := c.get(args[1])
	switch {
	case err != nil:
		c.w.Error(errorReply(err))
		return
	case !found:
		c.w.Int(-2)
		return
	case rec.ExpiresAt == 0:
		c.w.Int(-1)
		return
	}
	deadline := rec.ExpiresAt.WallTime().UnixMilli()
	left := max(deadline-time.Now().UnixMilli(), 0)
	switch name {
	case "ttl":
		c.w.Int((left + 500) / 1000)
	case "pttl":
		c.w.Int(left)
	case "expiretime":
		c.w.Int(deadline / 1000)
	default: // pexpiretime
		c.w.Int(deadline)
	}
}

// setexCommand is SETEX key seconds value and PSETEX key milliseconds value: a SET with
// a relative expiry, which must be positive.
func setexCommand(c *conn, args [][]byte) {
	name := string(c.lowerName)
	n, ok := parseInt(args[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	if n <= 0 {
		c.w.Error(expireTimeError(name))
		return
	}
	ms, reply := deadlineMs(args[2], name == "setex", true, name, time.Now())
	if reply != "" {
		c.w.Error(reply)
		return
	}
	if err := c.put(args[1], args[3], expiryOf(ms)); err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.SimpleString("OK")
}

// getexCommand is GETEX key [EX s|PX ms|EXAT s|PXAT ms|PERSIST]: the value, its deadline
// set or removed in the same step; without an option, a plain read.
func getexCommand(c *conn, args [][]byte) {
	if len(args) == 2 {
		rec, found, err := c.lookup(args[1])
		c.replyGet(rec, found, err)
		return
	}
	var ms int64
	persist := false
	switch word := upper(args[2]); {
	case word == "PERSIST" && len(args) == 3:
		persist = true
	case (word == "EX" || word == "PX" || word == "EXAT" || word == "PXAT") && len(args) == 4:
		n, ok := parseInt(args[3])
		if !ok {
			c.w.Error(errNotInt)
			return
		}
		if n <= 0 {
			c.w.Error(expireTimeError("getex"))
			return
		}
		var reply string
		ms, reply = deadlineMs(args[3], word == "EX" || word == "EXAT", word == "EX" || word == "PX", "getex", time.Now())
		if reply != "" {
			c.w.Error(reply)
			return
		}
	default:
		c.w.Error(errSyntax)
		return
	}
	res, err := c.transact(args[1], stringOnly(writeIf(
		func(cur lww.Record, found bool) bool { return found && !(persist && cur.ExpiresAt == 0) },
		withDeadline(ms, time.Now()))))
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.writeValue(res.Previous, res.PreviousFound)
}
