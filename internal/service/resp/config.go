package resp

import (
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The CONFIG command. kura is configured by its node's flags, so CONFIG GET reports the
// parameters clients and tools ask for, and CONFIG SET changes only timeout (and keeps
// the hash and set encoding thresholds, which kura has no use for). Each
// parameter's value is kura's own where kura has the setting, and otherwise the value a
// Redis server has when the feature is unused, so that a tool reads what it would expect
// (docs/redis.md lists which is which).

// configParam is one parameter of CONFIG GET.
type configParam struct {
	name string
	get  func(c *conn) string
	// set checks a value and returns how to apply it, or why it is refused (Redis's
	// words). It is nil for a parameter CONFIG SET refuses; fixed then says why, or is
	// empty where Redis refuses it too (daemonize), whose words are then Redis's alone.
	set   func(s *Server, value []byte) (apply func(), why string)
	fixed string
}

// configParams are CONFIG's parameters, in the order CONFIG GET lists them.
var configParams = []configParam{
	{name: "appendfsync", get: func(c *conn) string { return c.s.durability("always", "no") },
		fixed: "kura syncs every acknowledged write to its write-ahead log"},
	{name: "appendonly", get: func(c *conn) string { return c.s.durability("yes", "no") },
		fixed: "kura writes every acknowledged write to its write-ahead log unless the node runs --in-memory"},
	{name: "bind", get: func(c *conn) string { return c.s.listenHosts() }, fixed: "kura sets it with the node's --resp address"},
	{name: "client-query-buffer-limit", get: func(c *conn) string { return strconv.Itoa(c.s.limits.CommandBytesMax) },
		fixed: "kura derives it from the node's --max-value-bytes"},
	{name: "cluster-enabled", get: fixedValue("no"), fixed: "kura's cluster is not a Redis Cluster: every node serves every key"},
	{name: "daemonize", get: fixedValue("no")}, // kura runs in the foreground; refused in Redis's words
	{name: "databases", get: fixedValue("1"), fixed: "kura serves database 0 only (KURA.KEYSPACE switches keyspaces)"},
	// Redis's thresholds of a small hash's compact encoding, and their old names. kura
	// stores a record per field whatever the hash's size: the values are kept for CONFIG
	// GET, and change nothing else.
	keptIntParam("hash-max-listpack-entries", func(s *Server) *atomic.Int64 { return &s.hashListpack[0] }),
	keptIntParam("hash-max-listpack-value", func(s *Server) *atomic.Int64 { return &s.hashListpack[1] }),
	keptIntParam("hash-max-ziplist-entries", func(s *Server) *atomic.Int64 { return &s.hashListpack[0] }),
	keptIntParam("hash-max-ziplist-value", func(s *Server) *atomic.Int64 { return &s.hashListpack[1] }),
	// Redis's list encoding settings, kept for CONFIG GET: kura stores a record per item.
	keptIntParam("list-compress-depth", func(s *Server) *atomic.Int64 { return &s.lists.config[listCompressDepth] }, 0, math.MaxInt32),
	keptIntParam("list-max-listpack-size", func(s *Server) *atomic.Int64 { return &s.lists.config[listMaxListpackSize] }, math.MinInt32, math.MaxInt32),
	keptIntParam("list-max-ziplist-size", func(s *Server) *atomic.Int64 { return &s.lists.config[listMaxListpackSize] }, math.MinInt32, math.MaxInt32),
	{name: "maxclients", get: fixedValue("10000"), fixed: "kura does not limit its clients"},
	{name: "maxmemory", get: fixedValue("0"), fixed: "kura keeps its data on disk and does not limit its memory"},
	{name: "maxmemory-clients", get: fixedValue("0"), fixed: "kura does not limit its clients' memory"},
	{name: "maxmemory-policy", get: fixedValue("noeviction"), fixed: "kura never evicts keys"},
	{name: "maxmemory-samples", get: fixedValue("5"), fixed: "kura never evicts keys"},
	{name: "notify-keyspace-events", get: fixedValue(""), fixed: "kura has no keyspace notifications"},
	{name: "port", get: func(c *conn) string { return localPort(c) }, fixed: "kura sets it with the node's --resp address"},
	{name: "proto-max-bulk-len", get: func(c *conn) string { return strconv.Itoa(c.s.limits.BulkBytesMax) },
		fixed: "kura sets it with the node's --max-key-bytes and --max-value-bytes"},
	// A kura node is no replica of a Redis server: replicaof and its old name slaveof are
	// empty, as on a Redis master, and immutable as in Redis.
	{name: "replicaof", get: fixedValue("")},
	// save "" (no snapshots, kura's own state) is accepted, as the suite's units set it.
	{name: "save", get: fixedValue(""), set: setSave},
	// Redis's threshold of a small set's intset encoding: kept, as the hash ones are.
	keptIntParam("set-max-intset-entries", func(s *Server) *atomic.Int64 { return &s.setIntsetEntries }),
	{name: "slaveof", get: fixedValue("")},
	{name: "timeout", get: func(c *conn) string { return strconv.FormatInt(int64(c.s.IdleTimeout()/time.Second), 10) },
		set: setTimeout},
	// The same for a sorted set: kura keeps a record per member and one per score.
	keptIntParam("zset-max-listpack-entries", func(s *Server) *atomic.Int64 { return &s.zsetListpack[0] }),
	keptIntParam("zset-max-listpack-value", func(s *Server) *atomic.Int64 { return &s.zsetListpack[1] }),
	keptIntParam("zset-max-ziplist-entries", func(s *Server) *atomic.Int64 { return &s.zsetListpack[0] }),
	keptIntParam("zset-max-ziplist-value", func(s *Server) *atomic.Int64 { return &s.zsetListpack[1] }),
}

// keptIntParam is a parameter kept in the integer at returns, any integer from 0 (or
// within bounds, least and most, when given) as Redis takes it, which changes nothing but what CONFIG GET answers: the thresholds of Redis's
// compact encodings, which kura, a record per element whatever the size, does not have.
func keptIntParam(name string, at func(s *Server) *atomic.Int64, bounds ...int64) configParam {
	least, most := int64(0), int64(math.MaxInt64)
	if len(bounds) == 2 {
		least, most = bounds[0], bounds[1]
	}
	return configParam{name: name,
		get: func(c *conn) string { return strconv.FormatInt(at(c.s).Load(), 10) },
		set: func(s *Server, value []byte) (func(), string) {
			n, ok := parseInt(value)
			switch {
			case !ok:
				return nil, "argument couldn't be parsed into an integer"
			case n < least || n > most:
				return nil, fmt.Sprintf("argument must be between %d and %d inclusive", least, most)
			}
			return func() { at(s).Store(n) }, ""
		}}
}

// setSave is CONFIG SET save: only "", no snapshots, which is what kura does.
func setSave(_ *Server, value []byte) (func(), string) {
	if len(value) > 0 {
		return nil, "can't set immutable config: kura takes no snapshots: it writes every acknowledged write to its write-ahead log"
	}
	return func() {}, ""
}

func fixedValue(v string) func(*conn) string { return func(*conn) string { return v } }

// durability returns ifDurable when acknowledged writes are on disk, else ifInMemory.
func (s *Server) durability(ifDurable, ifInMemory string) string {
	if s.cfg.Backend.Info().Durable {
		return ifDurable
	}
	return ifInMemory
}

// listenHosts is bind's value: the hosts of the addresses the server listens on ("::"
// where it listens on every address), in order.
func (s *Server) listenHosts() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var hosts []string
	for l := range s.listeners {
		if host, _, err := net.SplitHostPort(l.Addr().String()); err == nil {
			hosts = append(hosts, host)
		}
	}
	sort.Strings(hosts)
	return strings.Join(hosts, " ")
}

// localPort is the port the client connected to.
func localPort(c *conn) string {
	_, port, err := net.SplitHostPort(c.nc.LocalAddr().String())
	if err != nil {
		return "0"
	}
	return port
}

// setTimeout is CONFIG SET timeout seconds, Redis's range 0..2^31-1 (0: never).
func setTimeout(s *Server, value []byte) (func(), string) {
	seconds, ok := parseInt(value)
	switch {
	case !ok:
		return nil, "argument couldn't be parsed into an integer"
	case seconds < 0 || seconds > math.MaxInt32:
		return nil, "argument must be between 0 and 2147483647 inclusive"
	}
	return func() { s.SetIdleTimeout(time.Duration(seconds) * time.Second) }, ""
}

func configSubcommands() []*command {
	flags := []string{"admin", "noscript", "loading", "stale"}
	return []*command{
		{name: "get", arity: -3, flags: flags, usage: "GET <pattern> [<pattern> ...]",
			summary: "Return parameters matching the glob-like <pattern> and their values.", run: configGetCommand},
		{name: "set", arity: -4, flags: flags, usage: "SET <directive> <value> [<directive> <value> ...]",
			summary: "Set the configuration <directive> to <value>: kura changes timeout only.", run: configSetCommand},
		{name: "resetstat", arity: 2, flags: flags, usage: "RESETSTAT", summary: "Reset statistics reported by the INFO command.",
			run: func(c *conn, _ [][]byte) {
				c.s.resetStats()
				c.w.SimpleString("OK")
			}},
		{name: "rewrite", arity: 2, flags: flags, usage: "REWRITE", summary: "Refused: kura has no configuration file.",
			run: func(c *conn, _ [][]byte) { c.w.Error("ERR The server is running without a config file") }},
	}
}

// configGetCommand is CONFIG GET pattern [pattern ...]: each parameter matching any of
// the glob patterns (case-insensitively), once.
func configGetCommand(c *conn, args [][]byte) {
	patterns := make([][]byte, len(args)-2)
	for i, p := range args[2:] {
		patterns[i] = appendLower(nil, p)
	}
	var matched []configParam
	for _, p := range configParams {
		for _, pattern := range patterns {
			if matchGlob(pattern, []byte(p.name)) {
				matched = append(matched, p)
				break
			}
		}
	}
	c.w.MapHeader(len(matched))
	for _, p := range matched {
		c.w.BulkString(p.name)
		c.w.BulkString(p.get(c))
	}
}

// configSetCommand is CONFIG SET parameter value [parameter value ...]. As in Redis it
// changes all the parameters or, when one is refused, none. A parameter kura fixes is
// refused unless given the value it has, as a client restoring what CONFIG GET read does.
func configSetCommand(c *conn, args [][]byte) {
	if len(args)%2 != 0 {
		c.w.Error(errSyntax)
		return
	}
	failed := func(name []byte, why string) {
		c.w.Error(fmt.Sprintf("ERR CONFIG SET failed (possibly related to argument '%s') - %s", name, why))
	}
	// As in Redis, every name is checked before any value.
	var params []configParam
	for i := 2; i < len(args); i += 2 {
		p, ok := lookupConfigParam(args[i])
		switch {
		case !ok:
			c.w.Error(fmt.Sprintf("ERR Unknown option or number of arguments for CONFIG SET - '%s'", args[i]))
			return
		case p.set == nil && p.fixed == "":
			failed(args[i], "can't set immutable config")
			return
		}
		for _, earlier := range params {
			if earlier.name == p.name {
				failed(args[i], "duplicate parameter")
				return
			}
		}
		params = append(params, p)
	}
	applies := make([]func(), len(params))
	for i, p := range params {
		if p.set == nil {
			// A parameter kura fixes takes its own value (the setting is then what the
			// client asked for); another is refused as a value, after every name is
			// checked, as Redis refuses a bad value (a duplicate is named first).
			if string(args[3+2*i]) != p.get(c) {
				failed(args[2+2*i], "can't set immutable config: "+p.fixed)
				return
			}
			applies[i] = func() {}
			continue
		}
		var why string
		if applies[i], why = p.set(c.s, args[3+2*i]); why != "" {
			failed(args[2+2*i], why)
			return
		}
	}
	for _, apply := range applies {
		apply()
	}
	c.w.SimpleString("OK")
}

// lookupConfigParam finds a parameter by its name, in any case.
func lookupConfigParam(name []byte) (configParam, bool) {
	lower := string(appendLower(nil, name))
	for _, p := range configParams {
		if p.name == lower {
			return p, true
		}
	}
	return configParam{}, false
}
