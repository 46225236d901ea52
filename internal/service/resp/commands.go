package resp

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/data/coord"
)

// command is one command of the table.
type command struct {
	name string // lower case, as COMMAND lists it; "container|sub" for a subcommand
	// arity counts the name: n means exactly n arguments, -n at least n (Redis's rule).
	// A subcommand's counts the container's name and its own.
	arity int
	// flags, firstKey, lastKey and keyStep are what COMMAND reports, for client libraries
	// that route by key.
	flags                      []string
	firstKey, lastKey, keyStep int
	// beforeAuth marks the commands a client may send before authenticating.
	beforeAuth bool
	// subcommands are a container command's (CLIENT, CONFIG, COMMAND) by lower-case
	// name; its run then serves the container named alone, if its arity allows that.
	subcommands map[string]*command
	// usage and summary describe a subcommand in its container's HELP.
	usage, summary string
	// walks marks the commands that may read a large part of the key space (SCAN, KEYS,
	// DBSIZE...): they run watching for the client to hang up (see watchHangup).
	walks bool
	run   func(c *conn, args [][]byte)
	// stats are INFO commandstats' counts of this command on this server.
	stats commandStats
}

// commandTable returns every command by lower-case name.
func commandTable() map[string]*command {
	readKey := []string{"readonly", "fast"}
	writeKey := []string{"write"}
	admin := []string{"fast", "loading", "stale"}
	table := []*command{
		{name: "ping", arity: -1, flags: admin, run: pingCommand},
		{name: "echo", arity: 2, flags: admin, run: echoCommand},
		{name: "time", arity: 1, flags: admin, run: timeCommand},
		{name: "hello", arity: -1, flags: admin, beforeAuth: true, run: helloCommand},
		{name: "auth", arity: -2, flags: admin, beforeAuth: true, run: authCommand},
		{name: "client", arity: -2, subcommands: subcommands("client", clientSubcommands())},
		{name: "select", arity: 2, flags: admin, run: selectCommand},
		{name: "command", arity: -1, flags: admin, subcommands: subcommands("command", commandSubcommands()), run: commandCommand},
		{name: "config", arity: -2, subcommands: subcommands("config", configSubcommands())},
		{name: "info", arity: -1, flags: admin, run: infoCommand},
		{name: "quit", arity: -1, flags: admin, beforeAuth: true, run: quitCommand},
		{name: "monitor", arity: 1, flags: []string{"admin", "noscript", "loading", "stale"}, run: monitorCommand},
		{name: "reset", arity: 1, flags: []string{"noscript", "loading", "stale", "fast", "no_auth", "allow_busy"}, beforeAuth: true, run: resetCommand},
		{name: "dbsize", arity: 1, flags: []string{"readonly"}, walks: true, run: dbsizeCommand},
		{name: "get", arity: 2, flags: readKey, firstKey: 1, lastKey: 1, keyStep: 1, run: getCommand},
		{name: "set", arity: -3, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: setCommand},
		{name: "getdel", arity: 2, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: getdelCommand},
		{name: "strlen", arity: 2, flags: readKey, firstKey: 1, lastKey: 1, keyStep: 1, run: strlenCommand},
		{name: "getrange", arity: 4, flags: []string{"readonly"}, firstKey: 1, lastKey: 1, keyStep: 1, run: getrangeCommand},
		{name: "substr", arity: 4, flags: []string{"readonly"}, firstKey: 1, lastKey: 1, keyStep: 1, run: getrangeCommand},
		{name: "type", arity: 2, flags: readKey, firstKey: 1, lastKey: 1, keyStep: 1, run: typeCommand},
		{name: "del", arity: -2, flags: writeKey, firstKey: 1, lastKey: -1, keyStep: 1, run: delCommand},
		{name: "unlink", arity: -2, flags: []string{"write", "fast"}, firstKey: 1, lastKey: -1, keyStep: 1, run: delCommand},
		{name: "exists", arity: -2, flags: readKey, firstKey: 1, lastKey: -1, keyStep: 1, run: existsCommand},
		// TOUCH answers as EXISTS: kura keeps no access times to update.
		{name: "touch", arity: -2, flags: readKey, firstKey: 1, lastKey: -1, keyStep: 1, run: existsCommand},
		{name: "object", arity: -2, subcommands: subcommands("object", objectSubcommands())},
		{name: "memory", arity: -2, subcommands: subcommands("memory", memorySubcommands())},
		{name: "dump", arity: 2, flags: []string{"readonly"}, firstKey: 1, lastKey: 1, keyStep: 1, run: dumpCommand},
		{name: "restore", arity: -4, flags: []string{"write", "denyoom"}, firstKey: 1, lastKey: 1, keyStep: 1, run: restoreCommand},
		{name: "lcs", arity: -3, flags: []string{"readonly"}, firstKey: 1, lastKey: 2, keyStep: 1, run: lcsCommand},
		{name: "mget", arity: -2, flags: readKey, firstKey: 1, lastKey: -1, keyStep: 1, run: mgetCommand},
		{name: "mset", arity: -3, flags: writeKey, firstKey: 1, lastKey: -1, keyStep: 2, run: msetCommand},
		{name: "setnx", arity: 3, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: setnxCommand},
		{name: "setex", arity: 4, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: setexCommand},
		{name: "psetex", arity: 4, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: setexCommand},
		{name: "getset", arity: 3, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: getsetCommand},
		{name: "getex", arity: -2, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: getexCommand},
		{name: "msetnx", arity: -3, flags: writeKey, firstKey: 1, lastKey: -1, keyStep: 2, run: msetnxCommand},
		{name: "incr", arity: 2, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: incrCommand},
		{name: "decr", arity: 2, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: incrCommand},
		{name: "incrby", arity: 3, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: incrCommand},
		{name: "decrby", arity: 3, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: incrCommand},
		{name: "incrbyfloat", arity: 3, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: incrbyfloatCommand},
		{name: "getbit", arity: 3, flags: readKey, firstKey: 1, lastKey: 1, keyStep: 1, run: getbitCommand},
		{name: "setbit", arity: 4, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: setbitCommand},
		{name: "randomkey", arity: 1, flags: []string{"readonly"}, walks: true, run: randomkeyCommand},
		{name: "append", arity: 3, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: appendCommand},
		{name: "setrange", arity: 4, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: setrangeCommand},
		{name: "rename", arity: 3, flags: writeKey, firstKey: 1, lastKey: 2, keyStep: 1, run: renameCommand},
		{name: "renamenx", arity: 3, flags: writeKey, firstKey: 1, lastKey: 2, keyStep: 1, run: renameCommand},
		{name: "copy", arity: -3, flags: writeKey, firstKey: 1, lastKey: 2, keyStep: 1, run: copyCommand},
		{name: "expire", arity: -3, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: expireCommand},
		{name: "pexpire", arity: -3, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: expireCommand},
		{name: "expireat", arity: -3, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: expireCommand},
		{name: "pexpireat", arity: -3, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: expireCommand},
		{name: "persist", arity: 2, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: persistCommand},
		{name: "ttl", arity: 2, flags: readKey, firstKey: 1, lastKey: 1, keyStep: 1, run: ttlCommand},
		{name: "pttl", arity: 2, flags: readKey, firstKey: 1, lastKey: 1, keyStep: 1, run: ttlCommand},
		{name: "expiretime", arity: 2, flags: readKey, firstKey: 1, lastKey: 1, keyStep: 1, run: ttlCommand},
		{name: "pexpiretime", arity: 2, flags: readKey, firstKey: 1, lastKey: 1, keyStep: 1, run: ttlCommand},
		{name: "flushdb", arity: -1, flags: []string{"write"}, walks: true, run: flushCommand},
		{name: "flushall", arity: -1, flags: []string{"write"}, walks: true, run: flushCommand},
		{name: "scan", arity: -2, flags: []string{"readonly"}, walks: true, run: scanCommand},
		{name: "keys", arity: 2, flags: []string{"readonly"}, walks: true, run: keysCommand},
		{name: "kura.consistency", arity: -1, flags: admin, run: consistencyCommand},
		{name: "kura.keyspace", arity: -1, flags: admin, run: keyspaceCommand},
		{name: "kura.counters", arity: -1, flags: admin, run: countersCommand},
		{name: "kura.range", arity: 4, flags: []string{"readonly"}, walks: true, run: rangeCommand},
	}
	table = append(table, hashCommands()...)
	table = append(table, setCommands()...)
	table = append(table, zsetCommands()...)
	table = append(table, geoCommands()...)
	table = append(table, listCommands()...)
	table = append(table, transactionCommands()...)
	table = append(table, sortCommands()...)
	byName := make(map[string]*command, len(table))
	for _, cmd := range table {
		byName[cmd.name] = cmd
	}
	return byName
}

// subcommands names a container's subcommands "container|sub", adds HELP, and indexes
// them by their own lower-case name.
func subcommands(container string, subs []*command) map[string]*command {
	byName := make(map[string]*command, len(subs)+1)
	for _, sub := range subs {
		byName[sub.name] = sub
	}
	byName["help"] = &command{name: "help", arity: 2, flags: []string{"loading", "stale"},
		run: func(c *conn, _ [][]byte) { helpCommand(c, container, subs) }}
	for name, sub := range byName {
		sub.name = container + "|" + name
	}
	return byName
}

// helpCommand lists a container's subcommands, as Redis's HELP does.
func helpCommand(c *conn, container string, subs []*command) {
	lines := []string{strings.ToUpper(container) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"}
	for _, sub := range subs {
		lines = append(lines, sub.usage, "    "+sub.summary)
	}
	lines = append(lines, "HELP", "    Print this help.")
	c.w.ArrayHeader(len(lines))
	for _, line := range lines {
		c.w.SimpleString(line)
	}
}

// execute runs one command and writes its reply. The checks come in Redis's order: an
// unknown command or subcommand, then the number of arguments, then authentication.
func (c *conn) execute(args [][]byte) {
	c.lowerName = appendLower(c.lowerName[:0], args[0])
	cmd, ok := c.s.commands[string(c.lowerName)]
	if !ok {
		c.refuseInMulti()
		c.w.Error(unknownCommand(args))
		return
	}
	if cmd.subcommands != nil && len(args) > 1 {
		c.lowerName = appendLower(c.lowerName[:0], args[1])
		sub, ok := cmd.subcommands[string(c.lowerName)]
		if !ok {
			c.refuseInMulti()
			c.w.Error(fmt.Sprintf("ERR unknown subcommand '%s'. Try %s HELP.", clip(args[1], 128), strings.ToUpper(cmd.name)))
			return
		}
		cmd = sub
	}
	switch {
	case cmd.arity > 0 && len(args) != cmd.arity, cmd.arity < 0 && len(args) < -cmd.arity:
		cmd.stats.rejected.Add(1)
		c.refuseInMulti()
		c.w.Error(fmt.Sprintf("ERR wrong number of arguments for '%s' command", cmd.name))
	case !c.authenticated && !cmd.beforeAuth:
		cmd.stats.rejected.Add(1)
		c.refuseInMulti()
		c.w.Error("NOAUTH Authentication required.")
	case reservedKey(cmd, args) && c.collectionsServed():
		cmd.stats.rejected.Add(1)
		c.refuseInMulti()
		c.w.Error("ERR keys starting with bytes 0x00 0x01 are reserved")
	case c.multi != nil && !runsInMulti[cmd.name]:
		c.queue(cmd, args)
	default:
		c.ran(cmd.name, 1)
		errorsBefore, start := c.w.errorReplies, time.Now()
		if cmd.walks {
			c.watchHangup(func() { cmd.run(c, args) })
		} else {
			cmd.run(c, args)
		}
		cmd.stats.ran(1, time.Since(start), min(c.w.errorReplies-errorsBefore, 1))
		if c.s.monitors.active() {
			c.s.feedMonitors(c, cmd, args)
		}
	}
}

func appendLower(dst, name []byte) []byte {
	for _, b := range name {
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		dst = append(dst, b)
	}
	return dst
}

// upper returns an option word in upper case, for comparing options case-insensitively.
func upper(b []byte) string { return strings.ToUpper(string(b)) }

// unknownCommand words the error as Redis does, quoting the first arguments up to 128
// bytes of them.
func unknownCommand(args [][]byte) string {
	var quoted strings.Builder
	for _, a := range args[1:] {
		if quoted.Len() >= 128 {
			break
		}
		fmt.Fprintf(&quoted, "'%s' ", clip(a, 128-quoted.Len()))
	}
	return fmt.Sprintf("ERR unknown command '%s', with args beginning with: %s", clip(args[0], 128), quoted.String())
}

// clip returns at most the first n bytes of b, as C's "%.*s" prints them (Go's counts
// runes).
func clip(b []byte, n int) []byte { return b[:min(len(b), n)] }

// Replies shared by several commands.
const (
	errSyntax = "ERR syntax error"
	errNotInt = "ERR value is not an integer or out of range"
	// errWrongType answers a command for one type on a key of another, as Redis does.
	errWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
)

// errorReply words a backend error by its class (coord.Classify), with a code clients can
// tell apart: UNAVAILABLE when too few replicas are alive for the level, TIMEOUT when they
// did not answer in time; ERR otherwise.
func errorReply(err error) string {
	var reply redisError
	if errors.As(err, &reply) {
		return string(reply) // worded as Redis's already
	}
	switch coord.Classify(err) {
	case coord.ClassUnavailable:
		return "UNAVAILABLE " + err.Error()
	case coord.ClassTimeout:
		return "TIMEOUT " + err.Error()
	case coord.ClassNoKeyspace:
		// A connection is in a keyspace that does not exist only when it was dropped
		// after KURA.KEYSPACE, which checks, or when the node's --resp-keyspace, where
		// every connection starts, names one not created yet: say both ways out.
		return "ERR " + err.Error() + ": create it (kura keyspace create) or choose another with KURA.KEYSPACE; a new connection starts in the node's --resp-keyspace"
	}
	return "ERR " + err.Error()
}

func pingCommand(c *conn, args [][]byte) {
	switch len(args) {
	case 1:
		c.w.SimpleString("PONG")
	case 2:
		c.w.Bulk(args[1])
	default:
		c.w.Error("ERR wrong number of arguments for 'ping' command")
	}
}

func echoCommand(c *conn, args [][]byte) { c.w.Bulk(args[1]) }

func quitCommand(c *conn, _ [][]byte) {
	c.w.SimpleString("OK")
	c.quit = true
}

// redisVersion is the Redis version whose commands and replies kura follows; clients read
// it from HELLO and INFO to pick features.
const redisVersion = "7.0.0"

// helloCommand switches protocol version, optionally authenticating and naming the
// connection, and describes the server: HELLO [protover [AUTH user pass] [SETNAME name]].
// As in Redis, the options are all checked before the authentication is tried, and the
// name is set only once the client is authenticated.
func helloCommand(c *conn, args [][]byte) {
	version := c.w.Version()
	if len(args) > 1 {
		v, ok := parseInt(args[1])
		if !ok {
			c.w.Error("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			c.w.Error("NOPROTO unsupported protocol version")
			return
		}
		version = int(v)
	}
	var user, password, name []byte
	for i := 2; i < len(args); i++ {
		more := len(args) - 1 - i
		switch option := upper(args[i]); {
		case option == "AUTH" && more >= 2:
			user, password = args[i+1], args[i+2]
			i += 2
		case option == "SETNAME" && more >= 1:
			if !validClientName(args[i+1]) {
				c.w.Error(errClientName)
				return
			}
			name = args[i+1]
			i++
		default:
			c.w.Error(fmt.Sprintf("ERR Syntax error in HELLO option '%s'", args[i]))
			return
		}
	}
	if user != nil {
		if msg := c.s.checkPassword(user, password); msg != "" {
			c.w.Error(msg)
			return
		}
		c.authenticated = true
	}
	if !c.authenticated {
		c.w.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	c.update(func() {
		if name != nil {
			c.name = string(name)
		}
		c.resp = version
	})
	c.w.SetVersion(version)
	c.w.MapHeader(7)
	c.w.BulkString("server")
	c.w.BulkString("kura")
	c.w.BulkString("version")
	c.w.BulkString(redisVersion)
	c.w.BulkString("proto")
	c.w.Int(int64(version))
	c.w.BulkString("id")
	c.w.Int(c.id)
	c.w.BulkString("mode")
	c.w.BulkString("standalone")
	c.w.BulkString("role")
	c.w.BulkString("master")
	c.w.BulkString("modules")
	c.w.ArrayHeader(0)
}

// authCommand authenticates the connection: AUTH [user] password, where the only user is
// "default", as on a Redis server with requirepass.
func authCommand(c *conn, args [][]byte) {
	user, password := []byte("default"), args[1]
	switch {
	case len(args) == 2 && c.s.cfg.Password == "":
		c.w.Error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	case len(args) == 3:
		user, password = args[1], args[2]
	case len(args) > 3:
		c.w.Error(errSyntax)
		return
	}
	if msg := c.s.checkPassword(user, password); msg != "" {
		c.w.Error(msg)
		return
	}
	c.authenticated = true
	c.w.SimpleString("OK")
}

// checkPassword returns the error reply for a failed authentication, or "" on success.
// Without a configured password the default user takes any password, as Redis's
// "nopass" default user does.
func (s *Server) checkPassword(user, password []byte) string {
	userOK := string(user) == "default"
	passwordOK := s.cfg.Password == "" || subtle.ConstantTimeCompare(password, []byte(s.cfg.Password)) == 1
	if !userOK || !passwordOK {
		return "WRONGPASS invalid username-password pair or user is disabled."
	}
	return ""
}

// selectCommand accepts database 0 only: kura's namespaces are keyspaces.
func selectCommand(c *conn, args [][]byte) {
	db, ok := parseInt(args[1])
	switch {
	case !ok || db != int64(int32(db)):
		c.w.Error(errNotInt)
	case db != 0:
		c.w.Error("ERR DB index is out of range (kura serves database 0 only; KURA.KEYSPACE switches keyspaces)")
	default:
		c.w.SimpleString("OK")
	}
}

// timeCommand answers the node's clock: seconds and microseconds since the Unix epoch.
func timeCommand(c *conn, _ [][]byte) {
	now := time.Now()
	c.w.ArrayHeader(2)
	c.w.BulkString(strconv.FormatInt(now.Unix(), 10))
	c.w.BulkString(strconv.Itoa(now.Nanosecond() / 1000))
}

// commandCommand describes every command (COMMAND alone); its subcommands are COUNT,
// LIST, INFO and DOCS (empty: clients fall back to their own help).
func commandCommand(c *conn, _ [][]byte) {
	names := c.s.commandNames()
	c.w.ArrayHeader(len(names))
	for _, name := range names {
		c.writeCommandInfo(c.s.commands[name])
	}
}

func commandSubcommands() []*command {
	flags := []string{"loading", "stale"}
	return []*command{
		{name: "count", arity: 2, flags: flags, usage: "COUNT", summary: "Return the total number of commands in this server.",
			run: func(c *conn, _ [][]byte) { c.w.Int(int64(len(c.s.commands))) }},
		{name: "list", arity: -2, flags: flags, usage: "LIST [FILTERBY (MODULE <module-name>|ACLCAT <category>|PATTERN <pattern>)]",
			summary: "Return a list of all commands in this server.", run: commandListCommand},
		{name: "info", arity: -2, flags: flags, usage: "INFO [<command-name> ...]",
			summary: "Return details about multiple commands, or all commands.", run: commandInfoCommand},
		{name: "docs", arity: -2, flags: flags, usage: "DOCS [<command-name> ...]",
			summary: "Return no documentation: kura has none to give.", run: func(c *conn, _ [][]byte) { c.w.MapHeader(0) }},
		{name: "getkeys", arity: -4, flags: flags, usage: "GETKEYS <full-command>",
			summary: "Extract keys given a full Redis command.", run: func(c *conn, args [][]byte) { c.getKeys(args[2:], false) }},
		{name: "getkeysandflags", arity: -4, flags: flags, usage: "GETKEYSANDFLAGS <full-command>",
			summary: "Extract keys and access flags given a full Redis command.", run: func(c *conn, args [][]byte) { c.getKeys(args[2:], true) }},
	}
}

// commandListCommand is COMMAND LIST [FILTERBY MODULE name|ACLCAT category|PATTERN
// pattern]: the commands in name order, each container followed by its subcommands
// ("config|get"), as Redis 7 lists them. kura has no modules and reports no ACL categories, so those filters
// keep none.
func commandListCommand(c *conn, args [][]byte) {
	var names []string
	for _, cmd := range c.s.allCommands() {
		names = append(names, cmd.name)
	}
	switch {
	case len(args) == 2:
	case len(args) == 5 && upper(args[2]) == "FILTERBY" && upper(args[3]) == "PATTERN":
		var kept []string
		for _, name := range names {
			if matchGlob(appendLower(nil, args[4]), []byte(name)) {
				kept = append(kept, name)
			}
		}
		names = kept
	case len(args) == 5 && upper(args[2]) == "FILTERBY" && (upper(args[3]) == "MODULE" || upper(args[3]) == "ACLCAT"):
		names = nil
	default:
		c.w.Error(errSyntax)
		return
	}
	c.w.BulkStrings(names)
}

// commandInfoCommand is COMMAND INFO [name ...]: every command without names. A name
// may be a subcommand's, "config|get", as COMMAND LIST gives it.
func commandInfoCommand(c *conn, args [][]byte) {
	if len(args) == 2 {
		commandCommand(c, args)
		return
	}
	c.w.ArrayHeader(len(args) - 2)
	for _, name := range args[2:] {
		if cmd := c.s.lookupCommand(name); cmd != nil {
			c.writeCommandInfo(cmd)
		} else {
			c.w.Null()
		}
	}
}

// lookupCommand finds a command by its name in any case, "container|sub" for a
// subcommand; nil if there is none.
func (s *Server) lookupCommand(name []byte) *command {
	lower := string(appendLower(nil, name))
	container, sub, isSub := strings.Cut(lower, "|")
	cmd := s.commands[container]
	if cmd == nil || !isSub {
		return cmd
	}
	return cmd.subcommands[sub]
}

func (s *Server) commandNames() []string {
	names := make([]string, 0, len(s.commands))
	for name := range s.commands {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// writeCommandInfo writes Redis 7's ten-field command description, a container's
// subcommands in the last field.
func (c *conn) writeCommandInfo(cmd *command) {
	c.w.ArrayHeader(10)
	c.w.BulkString(cmd.name)
	c.w.Int(int64(cmd.arity))
	keys := redisKeySpecs[cmd.name]
	movable := keys.movable()
	c.w.ArrayHeader(len(cmd.flags) + btoi(movable))
	for _, f := range cmd.flags {
		c.w.SimpleString(f)
	}
	if movable {
		c.w.SimpleString("movablekeys")
	}
	c.w.Int(int64(cmd.firstKey))
	c.w.Int(int64(cmd.lastKey))
	c.w.Int(int64(cmd.keyStep))
	for range 2 { // ACL categories, tips
		c.w.ArrayHeader(0)
	}
	c.writeKeySpecs(keys.specs)
	subs := sortedSubcommands(cmd)
	c.w.ArrayHeader(len(subs))
	for _, sub := range subs {
		c.writeCommandInfo(sub)
	}
}

// allCommands returns the commands in name order, each container followed by its
// subcommands.
func (s *Server) allCommands() []*command {
	var all []*command
	for _, name := range s.commandNames() {
		all = append(all, s.commands[name])
		all = append(all, sortedSubcommands(s.commands[name])...)
	}
	return all
}

// sortedSubcommands returns a container's subcommands in name order; none for a command
// that is not a container.
func sortedSubcommands(cmd *command) []*command {
	subs := make([]*command, 0, len(cmd.subcommands))
	for _, sub := range cmd.subcommands {
		subs = append(subs, sub)
	}
	sort.Slice(subs, func(i, j int) bool { return subs[i].name < subs[j].name })
	return subs
}

// consistencyCommand shows or sets the connection's consistency level:
// KURA.CONSISTENCY [level].
func consistencyCommand(c *conn, args [][]byte) {
	switch len(args) {
	case 1:
		c.w.SimpleString(c.level.String())
	case 2:
		level, err := consistency.Parse(string(args[1]))
		if err != nil {
			c.w.Error("ERR " + err.Error())
			return
		}
		c.update(func() { c.level = level })
		c.w.SimpleString("OK")
	default:
		c.w.Error("ERR wrong number of arguments for 'kura.consistency' command")
	}
}

// keyspaceCommand shows or sets the connection's keyspace: KURA.KEYSPACE [name].
func keyspaceCommand(c *conn, args [][]byte) {
	switch len(args) {
	case 1:
		c.w.BulkString(c.keyspace)
	case 2:
		ks, err := c.s.cfg.Backend.Keyspace(string(args[1]))
		if err != nil {
			c.w.Error("ERR " + err.Error())
			return
		}
		c.update(func() { c.keyspace = ks.Name })
		c.w.SimpleString("OK")
	default:
		c.w.Error("ERR wrong number of arguments for 'kura.keyspace' command")
	}
}

// flushCommand is FLUSHDB and FLUSHALL [ASYNC|SYNC]: a truncation of the connection's
// keyspace, or of every keyspace, spread to every node (one timestamp each, not a delete
// per key). Both modes return once every live node has the truncation; each replica
// drops the values from its disk in the background.
func flushCommand(c *conn, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && upper(args[1]) != "ASYNC" && upper(args[1]) != "SYNC") {
		c.w.Error(errSyntax)
		return
	}
	keyspaces := []string{c.keyspace}
	if string(c.lowerName) == "flushall" {
		keyspaces = keyspaces[:0]
		for _, ks := range c.s.cfg.Backend.Info().Keyspaces {
			keyspaces = append(keyspaces, ks.Name)
		}
	}
	for _, ks := range keyspaces {
		if _, err := c.s.cfg.Backend.Truncate(c.ctx, ks); err != nil {
			c.w.Error(errorReply(err))
			return
		}
	}
	c.w.SimpleString("OK")
}
