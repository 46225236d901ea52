package resp

import (
	"crypto/subtle"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/coord"
)

// command is one command of the table.
type command struct {
	name string // lower case, as COMMAND lists it
	// arity counts the name: n means exactly n arguments, -n at least n (Redis's rule).
	arity int
	// flags, firstKey, lastKey and keyStep are what COMMAND reports, for client libraries
	// that route by key.
	flags                      []string
	firstKey, lastKey, keyStep int
	// beforeAuth marks the commands a client may send before authenticating.
	beforeAuth bool
	run        func(c *conn, args [][]byte)
}

// commandTable returns every command by lower-case name.
func commandTable() map[string]*command {
	readKey := []string{"readonly", "fast"}
	writeKey := []string{"write"}
	admin := []string{"fast", "loading", "stale"}
	table := []*command{
		{name: "ping", arity: -1, flags: admin, run: pingCommand},
		{name: "echo", arity: 2, flags: admin, run: echoCommand},
		{name: "hello", arity: -1, flags: admin, beforeAuth: true, run: helloCommand},
		{name: "auth", arity: -2, flags: admin, beforeAuth: true, run: authCommand},
		{name: "client", arity: -2, flags: admin, run: clientCommand},
		{name: "select", arity: 2, flags: admin, run: selectCommand},
		{name: "command", arity: -1, flags: admin, run: commandCommand},
		{name: "config", arity: -2, flags: admin, run: configCommand},
		{name: "info", arity: -1, flags: admin, run: infoCommand},
		{name: "quit", arity: -1, flags: admin, beforeAuth: true, run: quitCommand},
		{name: "dbsize", arity: 1, flags: []string{"readonly"}, run: dbsizeCommand},
		{name: "get", arity: 2, flags: readKey, firstKey: 1, lastKey: 1, keyStep: 1, run: getCommand},
		{name: "set", arity: -3, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: setCommand},
		{name: "getdel", arity: 2, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: getdelCommand},
		{name: "del", arity: -2, flags: writeKey, firstKey: 1, lastKey: -1, keyStep: 1, run: delCommand},
		{name: "exists", arity: -2, flags: readKey, firstKey: 1, lastKey: -1, keyStep: 1, run: existsCommand},
		{name: "mget", arity: -2, flags: readKey, firstKey: 1, lastKey: -1, keyStep: 1, run: mgetCommand},
		{name: "mset", arity: -3, flags: writeKey, firstKey: 1, lastKey: -1, keyStep: 2, run: msetCommand},
		{name: "expire", arity: -3, flags: writeKey, firstKey: 1, lastKey: 1, keyStep: 1, run: expireCommand},
		{name: "ttl", arity: 2, flags: readKey, firstKey: 1, lastKey: 1, keyStep: 1, run: ttlCommand},
		{name: "pttl", arity: 2, flags: readKey, firstKey: 1, lastKey: 1, keyStep: 1, run: ttlCommand},
		{name: "scan", arity: -2, flags: []string{"readonly"}, run: scanCommand},
		{name: "keys", arity: 2, flags: []string{"readonly"}, run: keysCommand},
		{name: "kura.consistency", arity: -1, flags: admin, run: consistencyCommand},
		{name: "kura.keyspace", arity: -1, flags: admin, run: keyspaceCommand},
		{name: "kura.range", arity: 4, flags: []string{"readonly"}, run: rangeCommand},
	}
	byName := make(map[string]*command, len(table))
	for _, cmd := range table {
		byName[cmd.name] = cmd
	}
	return byName
}

// execute runs one command and writes its reply.
func (c *conn) execute(args [][]byte) {
	c.lowerName = appendLower(c.lowerName[:0], args[0])
	cmd, ok := c.s.commands[string(c.lowerName)]
	switch {
	case !ok:
		c.w.Error(unknownCommand(args))
	case !c.authenticated && !cmd.beforeAuth:
		c.w.Error("NOAUTH Authentication required.")
	case cmd.arity > 0 && len(args) != cmd.arity, cmd.arity < 0 && len(args) < -cmd.arity:
		c.w.Error(fmt.Sprintf("ERR wrong number of arguments for '%s' command", cmd.name))
	default:
		cmd.run(c, args)
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

// unknownCommand words the error as Redis does, quoting the first arguments.
func unknownCommand(args [][]byte) string {
	var msg strings.Builder
	fmt.Fprintf(&msg, "ERR unknown command '%.128s', with args beginning with: ", args[0])
	for _, a := range args[1:] {
		if msg.Len() > 256 {
			break
		}
		fmt.Fprintf(&msg, "'%.128s' ", a)
	}
	return msg.String()
}

// Replies shared by several commands.
const (
	errSyntax   = "ERR syntax error"
	errNotInt   = "ERR value is not an integer or out of range"
	errNoExpiry = "ERR kura does not support key expiry yet"
)

// errorReply words a backend error by its class (coord.Classify), with a code clients can
// tell apart: UNAVAILABLE when too few replicas are alive for the level, TIMEOUT when they
// did not answer in time; ERR otherwise.
func errorReply(err error) string {
	switch coord.Classify(err) {
	case coord.ClassUnavailable:
		return "UNAVAILABLE " + err.Error()
	case coord.ClassTimeout:
		return "TIMEOUT " + err.Error()
	case coord.ClassNoKeyspace:
		return "ERR " + err.Error() + ": create it (kura keyspace create) or choose another with KURA.KEYSPACE"
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
func helloCommand(c *conn, args [][]byte) {
	version := c.w.Version()
	i := 1
	if len(args) > 1 {
		v, err := strconv.Atoi(string(args[1]))
		if err != nil {
			c.w.Error("ERR Protocol version is not an integer or out of range")
			return
		}
		if v != 2 && v != 3 {
			c.w.Error("NOPROTO unsupported protocol version")
			return
		}
		version, i = v, 2
	}
	name, rename := c.name, false
	for ; i < len(args); i++ {
		switch option := upper(args[i]); {
		case option == "AUTH" && i+2 < len(args):
			if msg := c.s.checkPassword(args[i+1], args[i+2], true); msg != "" {
				c.w.Error(msg)
				return
			}
			c.authenticated = true
			i += 2
		case option == "SETNAME" && i+1 < len(args):
			if !validClientName(args[i+1]) {
				c.w.Error(errClientName)
				return
			}
			name, rename = string(args[i+1]), true
			i++
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	if !c.authenticated {
		c.w.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if rename {
		c.name = name
	}
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
	switch len(args) {
	case 2:
	case 3:
		user, password = args[1], args[2]
	default:
		c.w.Error(errSyntax)
		return
	}
	if msg := c.s.checkPassword(user, password, false); msg != "" {
		c.w.Error(msg)
		return
	}
	c.authenticated = true
	c.w.SimpleString("OK")
}

// checkPassword returns the error reply for a failed authentication, or "" on success.
// Without a configured password AUTH is an error, as in Redis, but HELLO's AUTH succeeds.
func (s *Server) checkPassword(user, password []byte, fromHello bool) string {
	if s.cfg.Password == "" {
		if fromHello {
			return ""
		}
		return "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	}
	userOK := string(user) == "default"
	passwordOK := subtle.ConstantTimeCompare(password, []byte(s.cfg.Password)) == 1
	if !userOK || !passwordOK {
		return "WRONGPASS invalid username-password pair or user is disabled."
	}
	return ""
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

// clientCommand serves CLIENT SETNAME, GETNAME, ID, INFO and SETINFO.
func clientCommand(c *conn, args [][]byte) {
	sub := upper(args[1])
	switch {
	case sub == "SETNAME" && len(args) == 3:
		if !validClientName(args[2]) {
			c.w.Error(errClientName)
			return
		}
		c.name = string(args[2])
		c.w.SimpleString("OK")
	case sub == "GETNAME" && len(args) == 2:
		if c.name == "" {
			c.w.Null()
			return
		}
		c.w.BulkString(c.name)
	case sub == "ID" && len(args) == 2:
		c.w.Int(c.id)
	case sub == "INFO" && len(args) == 2:
		c.w.BulkString(fmt.Sprintf("id=%d addr=%s laddr=%s name=%s db=0 resp=%d lib-name=%s lib-ver=%s kura-keyspace=%s kura-consistency=%s\n",
			c.id, c.nc.RemoteAddr(), c.nc.LocalAddr(), c.name, c.w.Version(), c.libName, c.libVersion, c.keyspace, c.level))
	case sub == "SETINFO" && len(args) == 4:
		switch upper(args[2]) {
		case "LIB-NAME":
			c.libName = string(args[3])
		case "LIB-VER":
			c.libVersion = string(args[3])
		default:
			c.w.Error(fmt.Sprintf("ERR Unrecognized option '%s'", args[2]))
			return
		}
		c.w.SimpleString("OK")
	default:
		c.w.Error(fmt.Sprintf("ERR unknown subcommand or wrong number of arguments for '%.64s'. Try CLIENT HELP.", args[1]))
	}
}

// selectCommand accepts database 0 only: kura's namespaces are keyspaces.
func selectCommand(c *conn, args [][]byte) {
	db, err := strconv.Atoi(string(args[1]))
	switch {
	case err != nil:
		c.w.Error(errNotInt)
	case db != 0:
		c.w.Error("ERR DB index is out of range (kura serves database 0 only; KURA.KEYSPACE switches keyspaces)")
	default:
		c.w.SimpleString("OK")
	}
}

// commandCommand describes the commands: COMMAND, COMMAND COUNT, COMMAND INFO name...,
// COMMAND LIST, and COMMAND DOCS (empty: clients fall back to their own help).
func commandCommand(c *conn, args [][]byte) {
	if len(args) == 1 {
		names := c.s.commandNames()
		c.w.ArrayHeader(len(names))
		for _, name := range names {
			c.writeCommandInfo(c.s.commands[name])
		}
		return
	}
	switch upper(args[1]) {
	case "COUNT":
		c.w.Int(int64(len(c.s.commands)))
	case "LIST":
		c.w.BulkStrings(c.s.commandNames())
	case "INFO":
		c.w.ArrayHeader(len(args) - 2)
		for _, name := range args[2:] {
			if cmd, ok := c.s.commands[string(appendLower(nil, name))]; ok {
				c.writeCommandInfo(cmd)
			} else {
				c.w.Null()
			}
		}
	case "DOCS":
		c.w.MapHeader(0)
	default:
		c.w.Error(fmt.Sprintf("ERR unknown subcommand '%.64s'. Try COMMAND HELP.", args[1]))
	}
}

func (s *Server) commandNames() []string {
	names := make([]string, 0, len(s.commands))
	for name := range s.commands {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// writeCommandInfo writes Redis 7's ten-field command description.
func (c *conn) writeCommandInfo(cmd *command) {
	c.w.ArrayHeader(10)
	c.w.BulkString(cmd.name)
	c.w.Int(int64(cmd.arity))
	c.w.ArrayHeader(len(cmd.flags))
	for _, f := range cmd.flags {
		c.w.SimpleString(f)
	}
	c.w.Int(int64(cmd.firstKey))
	c.w.Int(int64(cmd.lastKey))
	c.w.Int(int64(cmd.keyStep))
	for range 4 { // ACL categories, tips, key specifications, subcommands
		c.w.ArrayHeader(0)
	}
}

// configCommand answers CONFIG GET for the few parameters with a meaning in kura (tools
// such as redis-benchmark ask for save and appendonly); kura is configured by flags, so
// CONFIG SET and the rest are refused.
func configCommand(c *conn, args [][]byte) {
	if upper(args[1]) != "GET" || len(args) < 3 {
		c.w.Error(fmt.Sprintf("ERR kura does not support CONFIG %.64s: nodes are configured by their command line", args[1]))
		return
	}
	appendonly := "no"
	if c.s.cfg.Backend.Info().Durable {
		appendonly = "yes" // every acknowledged write is synced to the write-ahead log
	}
	params := [][2]string{{"appendonly", appendonly}, {"databases", "1"}, {"save", ""}}
	var matched [][2]string
	for _, p := range params {
		for _, pattern := range args[2:] {
			if matchGlob(appendLower(nil, pattern), []byte(p[0])) {
				matched = append(matched, p)
				break
			}
		}
	}
	c.w.MapHeader(len(matched))
	for _, p := range matched {
		c.w.BulkString(p[0])
		c.w.BulkString(p[1])
	}
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
		c.level = level
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
		c.keyspace = ks.Name
		c.w.SimpleString("OK")
	default:
		c.w.Error("ERR wrong number of arguments for 'kura.keyspace' command")
	}
}
