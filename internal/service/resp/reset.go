package resp

import "time"

// RESET and the connection flags CLIENT LIST shows.

// resetCommand is RESET: the connection returns to the state it had when it connected,
// as Redis 7's RESET does: no MONITOR, replies on, RESP2, no name, not authenticated if
// the node has a password, no CLIENT NO-EVICT or NO-TOUCH; and kura's own state, the
// keyspace and the consistency level, back to the node's defaults (as Redis selects
// database 0). It is answered RESET.
func resetCommand(c *conn, _ [][]byte) {
	c.stopMonitor()
	c.endTransaction()
	c.repliesOff, c.skipNext = false, false
	c.w.Suppress(false)
	c.authenticated = c.s.cfg.Password == ""
	c.w.SetVersion(2)
	c.update(func() {
		c.resp = 2
		c.name = ""
		c.keyspace = c.s.cfg.DefaultKeyspace
		c.level = c.s.cfg.DefaultLevel
		c.noEvict, c.noTouch = false, false
	})
	c.w.SimpleString("RESET")
}

// flags is CLIENT LIST's flags field, in Redis's order: O for a MONITOR connection, e
// for CLIENT NO-EVICT, T for NO-TOUCH, N for none. The caller holds c.mu.
func (c *conn) flags() string {
	var flags []byte
	if c.monitoring {
		flags = append(flags, 'O')
	}
	if c.noEvict {
		flags = append(flags, 'e')
	}
	if c.noTouch {
		flags = append(flags, 'T')
	}
	if len(flags) == 0 {
		return "N"
	}
	return string(flags)
}

// clientFlagCommand returns CLIENT NO-EVICT or NO-TOUCH ON|OFF, which set the flag that
// field points to. kura neither evicts clients nor tracks key access times, so the flags
// change only what CLIENT LIST shows, which is what Redis's do on a server that would not
// evict or read access times either.
func clientFlagCommand(field func(c *conn) *bool) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		var on bool
		switch upper(args[2]) {
		case "ON":
			on = true
		case "OFF":
		default:
			c.w.Error(errSyntax)
			return
		}
		c.update(func() { *field(c) = on })
		c.w.SimpleString("OK")
	}
}

// ageSeconds is how long c has been open, in whole seconds (CLIENT KILL MAXAGE).
func (c *conn) ageSeconds(now time.Time) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int64(now.Sub(c.created).Seconds())
}
