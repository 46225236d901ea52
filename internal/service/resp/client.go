package resp

import (
	"fmt"
	"strings"
	"time"
)

// The CLIENT command: a connection's identity and what the server knows of each open
// connection.

func clientSubcommands() []*command {
	flags := []string{"loading", "stale"}
	return []*command{
		{name: "id", arity: 2, flags: flags, usage: "ID", summary: "Return the ID of the current connection.",
			run: func(c *conn, _ [][]byte) { c.w.Int(c.id) }},
		{name: "info", arity: 2, flags: flags, usage: "INFO", summary: "Return information about the current client connection.",
			run: func(c *conn, _ [][]byte) { c.w.Text(c.s.describe(c, time.Now()) + "\n") }},
		{name: "list", arity: -2, flags: flags, usage: "LIST [TYPE (NORMAL|MASTER|REPLICA|PUBSUB)] [ID <id> [<id> ...]]",
			summary: "Return information about client connections.", run: clientListCommand},
		{name: "setname", arity: 3, flags: flags, usage: "SETNAME <name>", summary: "Assign the name <name> to the current connection.",
			run: clientSetnameCommand},
		{name: "getname", arity: 2, flags: flags, usage: "GETNAME", summary: "Return the name of the current connection.",
			run: clientGetnameCommand},
		{name: "setinfo", arity: 4, flags: flags, usage: "SETINFO <option> <value>",
			summary: "Set client meta attributes: LIB-NAME or LIB-VER.", run: clientSetinfoCommand},
		{name: "reply", arity: 3, flags: []string{"noscript", "loading", "stale"}, usage: "REPLY (ON|OFF|SKIP)",
			summary: "Control the replies sent to the current connection.", run: clientReplyCommand},
		{name: "kill", arity: -3, flags: []string{"admin", "noscript", "loading", "stale"},
			usage:   "KILL (<ip:port>|<filter> <value> [<filter> <value> ...])",
			summary: "Kill connections by address, or by the filters ID, TYPE, USER, ADDR, LADDR, SKIPME and MAXAGE.", run: clientKillCommand},
		{name: "unblock", arity: -3, flags: []string{"admin", "noscript", "loading", "stale"}, usage: "UNBLOCK <clientid> [TIMEOUT|ERROR]",
			summary: "Unblock the specified blocked client.", run: clientUnblockCommand},
		{name: "no-evict", arity: 3, flags: []string{"admin", "noscript", "loading", "stale"}, usage: "NO-EVICT (ON|OFF)",
			summary: "Protect the current connection from eviction (kura evicts none).", run: clientFlagCommand(func(c *conn) *bool { return &c.noEvict })},
		{name: "no-touch", arity: 3, flags: []string{"noscript", "loading", "stale"}, usage: "NO-TOUCH (ON|OFF)",
			summary: "Keep the current connection's reads from touching keys (kura records no access times).", run: clientFlagCommand(func(c *conn) *bool { return &c.noTouch })},
	}
}

// clientKillCommand is CLIENT KILL addr, which answers OK or refuses when no connection
// has that address, and CLIENT KILL filter value [...], which answers how many
// connections it closed: those matching every filter of ID, TYPE, USER, ADDR, LADDR and
// MAXAGE (Redis 7.4's: open for at least that many seconds), not the caller's own unless
// SKIPME no. A connection killing itself is closed after its
// reply, as in Redis; another is closed at once, its running command cancelled.
func clientKillCommand(c *conn, args [][]byte) {
	var id, maxAge int64
	var addr, laddr []byte
	skipMe, noneOfType := true, false
	filters := args[2:]
	if len(args) == 3 {
		addr, skipMe = args[2], false // the old form, which may kill the caller
		filters = nil
	}
	for i := 0; i < len(filters); i += 2 {
		if i+1 == len(filters) {
			c.w.Error(errSyntax)
			return
		}
		value := filters[i+1]
		switch upper(filters[i]) {
		case "ID":
			var ok bool
			if id, ok = parseInt(value); !ok || id < 1 {
				c.w.Error("ERR client-id should be greater than 0")
				return
			}
		case "TYPE":
			switch strings.ToLower(string(value)) {
			case "normal":
			case "master", "replica", "slave", "pubsub":
				noneOfType = true
			default:
				c.w.Error(fmt.Sprintf("ERR Unknown client type '%s'", value))
				return
			}
		case "USER":
			if string(value) != "default" {
				c.w.Error(fmt.Sprintf("ERR No such user '%s'", value))
				return
			}
		case "ADDR":
			addr = value
		case "LADDR":
			laddr = value
		case "MAXAGE":
			var ok bool
			if maxAge, ok = parseInt(value); !ok || maxAge < 0 {
				c.w.Error("ERR maxage is not an integer or out of range")
				return
			}
		case "SKIPME":
			switch upper(value) {
			case "YES":
				skipMe = true
			case "NO":
				skipMe = false
			default:
				c.w.Error(errSyntax)
				return
			}
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	killed, now := 0, time.Now()
	for _, other := range c.s.clients() {
		switch {
		case maxAge > 0 && other.ageSeconds(now) < maxAge:
			continue
		case noneOfType, id != 0 && other.id != id, other == c && skipMe,
			addr != nil && other.nc.RemoteAddr().String() != string(addr),
			laddr != nil && other.nc.LocalAddr().String() != string(laddr),
			!c.s.forget(other): // killed already, by a racing CLIENT KILL
			continue
		case other == c:
			c.quit = true
		default:
			other.cancel()
			c.s.monitors.removeConn(other)
			other.nc.Close() // its read fails, so its goroutine ends
		}
		killed++
	}
	switch {
	case len(args) > 3:
		c.w.Int(int64(killed))
	case killed == 0:
		c.w.Error("ERR No such client")
	default:
		c.w.SimpleString("OK")
	}
}

// clientReplyCommand is CLIENT REPLY ON|OFF|SKIP: OFF drops every reply from its own on
// until ON, SKIP the replies of itself and of the next command (ignored while OFF). Only
// ON is answered. The error replies dropped still count in INFO, as in Redis.
func clientReplyCommand(c *conn, args [][]byte) {
	switch upper(args[2]) {
	case "ON":
		c.repliesOff, c.skipNext = false, false
		c.w.Suppress(false) // ON itself is answered, even as the command SKIP named
		c.w.SimpleString("OK")
	case "OFF":
		c.repliesOff = true
	case "SKIP":
		c.skipNext = !c.repliesOff
	default:
		c.w.Error(errSyntax)
	}
}

// forget takes a connection being killed out of CLIENT LIST and INFO at once, as Redis
// frees it, before its goroutine ends; it reports false when the connection was gone
// already.
func (s *Server) forget(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.conns[c]
	delete(s.conns, c)
	return ok
}

const errClientName = "ERR Client names cannot contain spaces, newlines or special characters."

// validClientName accepts printable ASCII without spaces, as Redis does.
func validClientName(name []byte) bool {
	for _, b := range name {
		if b < '!' || b > '~' {
			return false
		}
	}
	return true
}

// clientSetnameCommand names the connection; an empty name removes it, as in Redis.
func clientSetnameCommand(c *conn, args [][]byte) {
	if !validClientName(args[2]) {
		c.w.Error(errClientName)
		return
	}
	c.update(func() { c.name = string(args[2]) })
	c.w.SimpleString("OK")
}

func clientGetnameCommand(c *conn, _ [][]byte) {
	if c.name == "" {
		c.w.Null()
		return
	}
	c.w.BulkString(c.name)
}

// clientSetinfoCommand records the client library's name or version (Redis 7.2's CLIENT
// SETINFO, which client libraries send on connecting).
func clientSetinfoCommand(c *conn, args [][]byte) {
	option := upper(args[2])
	if option != "LIB-NAME" && option != "LIB-VER" {
		c.w.Error(fmt.Sprintf("ERR Unrecognized option '%s'", args[2]))
		return
	}
	if !validClientName(args[3]) {
		c.w.Error(fmt.Sprintf("ERR %s cannot contain spaces, newlines or special characters.", args[2]))
		return
	}
	c.update(func() {
		if option == "LIB-NAME" {
			c.libName = string(args[3])
		} else {
			c.libVersion = string(args[3])
		}
	})
	c.w.SimpleString("OK")
}

// clientListCommand is CLIENT LIST [TYPE type] [ID id ...]. Every kura client is of type
// normal: there are no replicas, masters or subscribers.
func clientListCommand(c *conn, args [][]byte) {
	clients := c.s.clients()
	switch {
	case len(args) == 2:
	case len(args) == 4 && upper(args[2]) == "TYPE":
		switch strings.ToLower(string(args[3])) {
		case "normal":
		case "master", "replica", "slave", "pubsub":
			clients = nil
		default:
			c.w.Error(fmt.Sprintf("ERR Unknown client type '%s'", args[3]))
			return
		}
	case len(args) > 3 && upper(args[2]) == "ID":
		byID := make(map[int64]*conn, len(clients))
		for _, other := range clients {
			byID[other.id] = other
		}
		clients = nil
		for _, arg := range args[3:] {
			id, ok := parseInt(arg)
			if !ok {
				c.w.Error("ERR Invalid client ID")
				return
			}
			if other, ok := byID[id]; ok {
				clients = append(clients, other)
			}
		}
	default:
		c.w.Error(errSyntax)
		return
	}
	now := time.Now()
	var b strings.Builder
	for _, other := range clients {
		b.WriteString(c.s.describe(other, now))
		b.WriteByte('\n')
	}
	c.w.Text(b.String())
}

// describe is one connection's line of CLIENT LIST, with Redis 7's fields in Redis's
// order, then Redis 7.2's and 8's (lib-name, lib-ver, tot-net-in, tot-net-out,
// tot-cmds), then kura's own (kura-keyspace, kura-consistency). Fields for what kura
// does not have (databases, subscriptions, MULTI, reply lists) hold the value a Redis
// client without them shows. The memory fields count the connection's buffers:
// rbs the read buffer, qbuf the bytes of it holding the running command and those after
// it, argv-mem the running command's arguments, obl the replies not yet sent, tot-mem
// the read and write buffers and the arguments.
func (s *Server) describe(c *conn, now time.Time) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	fields := []any{
		"id", c.id,
		"addr", c.nc.RemoteAddr(),
		"laddr", c.nc.LocalAddr(),
		"fd", c.fd,
		"name", c.name,
		"age", int64(now.Sub(c.created).Seconds()),
		"idle", int64(now.Sub(c.lastRead).Seconds()),
		"flags", c.flags(),
		"db", 0,
		"sub", 0,
		"psub", 0,
		"ssub", 0,
		"multi", -1,
		"qbuf", c.queryBytes,
		"qbuf-free", max(readBufferBytes-c.queryBytes, 0),
		"argv-mem", c.argvBytes,
		"multi-mem", 0,
		"rbs", readBufferBytes,
		"rbp", c.queryPeak,
		"obl", c.replyBytes,
		"oll", 0,
		"omem", 0,
		"tot-mem", readBufferBytes + writeBufferBytes + c.argvBytes,
		"events", "r",
		"cmd", c.command,
		"user", "default",
		"redir", -1,
		"resp", c.resp,
		"lib-name", c.libName,
		"lib-ver", c.libVersion,
		"tot-net-in", c.io.in.Load(),
		"tot-net-out", c.io.out.Load(),
		"tot-cmds", c.commands,
		"kura-keyspace", c.keyspace,
		"kura-consistency", c.level,
	}
	var b strings.Builder
	for i := 0; i < len(fields); i += 2 {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%v", fields[i], fields[i+1])
	}
	return b.String()
}
