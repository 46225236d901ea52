package resp

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// monitorLine matches one MONITOR line as redis-server 7.0.15 writes it: the time in
// seconds and microseconds, database 0 and the client's address, then the arguments.
var monitorLine = regexp.MustCompile(`^\+\d+\.\d{6} \[0 ([0-9.:]+)\] (.*)\r\n$`)

// expectMonitor reads m's next line and checks that it shows args, sent by from.
func expectMonitor(t *testing.T, m, from *client, args string) {
	t.Helper()
	line := m.line()
	match := monitorLine.FindStringSubmatch(line)
	if match == nil {
		t.Fatalf("MONITOR line %q", line)
	}
	if match[1] != from.nc.LocalAddr().String() || match[2] != args {
		t.Fatalf("MONITOR line %q, want %s from %s", line, args, from.nc.LocalAddr())
	}
}

// TestMonitor: a MONITOR connection is sent a line per command the node runs, Redis's
// format, in the order run: credentials redacted, administrative and unknown commands
// left out, a pipeline's GETs and SETs each shown in turn; RESET ends it.
func TestMonitor(t *testing.T) {
	s, _, addr := startServer(t, Config{Password: "pw"})
	m, b := dial(t, addr), dial(t, addr)
	m.do("+OK\r\n", "AUTH", "pw")
	m.do("+OK\r\n", "MONITOR")
	m.do("", "MONITOR") // ignored, unanswered, as by Redis

	b.do("-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH", "nope")
	expectMonitor(t, m, b, `"AUTH" "(redacted)"`)
	b.do("-WRONGPASS invalid username-password pair or user is disabled.\r\n", "AUTH", "default", "nope")
	expectMonitor(t, m, b, `"AUTH" "(redacted)" "(redacted)"`)
	b.send(encode("HELLO", "2", "AUTH", "default", "pw", "SETNAME", "b"))
	b.reply()
	expectMonitor(t, m, b, `"HELLO" "2" "AUTH" "(redacted)" "(redacted)" "SETNAME" "b"`)
	b.do("+OK\r\n", "set", "foo", "bar")
	expectMonitor(t, m, b, `"set" "foo" "bar"`)
	b.do("+OK\r\n", "SET", "k", "a\x00\"\\\n\r\t\a\bé")
	expectMonitor(t, m, b, `"SET" "k" "a\x00\"\\\n\r\t\a\b\xc3\xa9"`)
	b.call("CONFIG", "GET", "port")                                     // administrative: not shown
	b.call("NOSUCH")                                                    // unknown: not shown
	b.do("-ERR wrong number of arguments for 'get' command\r\n", "GET") // refused: not shown
	b.do("$3\r\nbar\r\n", "get", "foo")
	expectMonitor(t, m, b, `"get" "foo"`)

	// The monitoring connection's own command: its reply, then its line.
	m.do("+PONG\r\n", "PING")
	expectMonitor(t, m, m, `"PING"`)

	// A pipeline of GETs and SETs, which runs as a batch when no one monitors.
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: "pw", Protocol: 2, PoolSize: 1, DisableIdentity: true})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range 3 {
			p.Set(ctx, "p"+strconv.Itoa(i), i, 0)
			p.Get(ctx, "p"+strconv.Itoa(i))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	line := m.line()
	for !strings.Contains(line, `"set"`) {
		line = m.line() // go-redis's HELLO on connecting
	}
	for i := range 3 {
		for j, want := range []string{fmt.Sprintf(`"set" "p%d" "%d"`, i, i), fmt.Sprintf(`"get" "p%d"`, i)} {
			if i+j > 0 {
				line = m.line()
			}
			if match := monitorLine.FindStringSubmatch(line); match == nil || match[2] != want {
				t.Fatalf("pipelined command %d: MONITOR line %q, want %s", i, line, want)
			}
		}
	}

	// CLIENT LIST shows the monitor's flag O until RESET.
	mID := strconv.FormatInt(clientID(t, m), 10)
	m.line() // the monitor's own CLIENT ID line
	flagsOf := func() string {
		_, fields := clientFields(t, strings.TrimSpace(b.call("CLIENT", "LIST", "ID", mID).(string)))
		return fields["flags"]
	}
	if got := flagsOf(); got != "O" {
		t.Errorf("a monitor's flags = %q, want O", got)
	}
	m.line() // b's CLIENT LIST
	m.do("+RESET\r\n", "RESET")
	b.do("+PONG\r\n", "PING")
	m.do("-NOAUTH Authentication required.\r\n", "PING") // RESET forgot the password, as in Redis
	if got := flagsOf(); got != "N" {
		t.Errorf("flags after RESET = %q, want N", got)
	}
	if s.monitors.active() {
		t.Error("the server still has a monitor after RESET")
	}
	m.do("+OK\r\n", "QUIT")
	m.expectClosed()
}

// TestMonitorEndsWithItsConnection: a monitor that quits or is killed is forgotten,
// and its queued reply still reaches it.
func TestMonitorEndsWithItsConnection(t *testing.T) {
	s, _, addr := startServer(t, Config{})
	m, b := dial(t, addr), dial(t, addr)
	mID := clientID(t, m)
	m.do("+OK\r\n", "MONITOR")
	b.do("+PONG\r\n", "PING")
	expectMonitor(t, m, b, `"PING"`)
	b.do(":1\r\n", "CLIENT", "KILL", "ID", strconv.FormatInt(mID, 10))
	if b, err := m.br.ReadString(0); err == nil || b != "" {
		t.Fatalf("a killed monitor read %q, %v", b, err)
	}
	if s.monitors.active() {
		t.Error("a killed monitor is still fed")
	}
	m2 := dial(t, addr)
	m2.do("+OK\r\n", "MONITOR")
	m2.do("+OK\r\n", "QUIT")
	expectMonitor(t, m2, m2, `"QUIT"`) // as redis-server 7.0.15 shows it
	m2.expectClosed()
}

// TestReset: RESET brings a connection back to a new one's state, Redis's answers.
func TestReset(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	c := dial(t, addr)
	c.do("+OK\r\n", "CLIENT", "SETNAME", "worker")
	c.do("+OK\r\n", "CLIENT", "NO-EVICT", "on")
	c.do("+OK\r\n", "CLIENT", "NO-TOUCH", "ON")
	c.do("+OK\r\n", "KURA.KEYSPACE", "other")
	c.do("+OK\r\n", "KURA.CONSISTENCY", "QUORUM")
	_, fields := clientFields(t, c.call("CLIENT", "INFO").(string))
	checkFields(t, "before RESET", fields, map[string]string{"name": "worker", "flags": "eT", "kura-keyspace": "other", "kura-consistency": "QUORUM"})
	c.send(encode("HELLO", "3"))
	c.reply()
	c.send(encode("CLIENT", "REPLY", "OFF"))
	c.do("+RESET\r\n", "RESET")
	_, fields = clientFields(t, c.call("CLIENT", "INFO").(string))
	checkFields(t, "after RESET", fields, map[string]string{"name": "", "flags": "N", "resp": "2", "kura-keyspace": "default", "kura-consistency": "ONE"})
	c.do("-ERR wrong number of arguments for 'reset' command\r\n", "RESET", "x")
	c.do("-ERR syntax error\r\n", "CLIENT", "NO-EVICT", "maybe")
	c.do("-ERR wrong number of arguments for 'client|no-touch' command\r\n", "CLIENT", "NO-TOUCH")
}

// TestClientKillMaxAge: CLIENT KILL MAXAGE closes the connections open at least that
// many seconds.
func TestClientKillMaxAge(t *testing.T) {
	s, _, addr := startServer(t, Config{})
	a, old := dial(t, addr), dial(t, addr)
	a.do("+PONG\r\n", "PING")
	oldID := clientID(t, old)
	for _, c := range s.clients() {
		if c.id == oldID {
			c.update(func() { c.created = c.created.Add(-time.Hour) })
		}
	}
	a.do("-ERR maxage is not an integer or out of range\r\n", "CLIENT", "KILL", "MAXAGE", "x")
	a.do(":1\r\n", "CLIENT", "KILL", "MAXAGE", "3000", "SKIPME", "no")
	old.expectClosed()
	a.do(":0\r\n", "CLIENT", "KILL", "MAXAGE", "3000", "SKIPME", "no")
}

// TestMonitorShowsTransactions: MONITOR shows MULTI, then the commands EXEC ran, then
// EXEC, as Redis does (the suite's "MONITOR correctly handles multi-exec cases"); a
// queued command is not shown when queued, nor one refused while queueing, nor those
// of an EXEC that ran nothing.
func TestMonitorShowsTransactions(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	m, b, w := dial(t, addr), dial(t, addr), dial(t, addr)
	m.do("+OK\r\n", "MONITOR")

	b.do("+OK\r\n", "MULTI")
	b.do("+QUEUED\r\n", "SET", "foo", "bar")
	b.do("+QUEUED\r\n", "GET", "foo")
	b.do("*2\r\n+OK\r\n$3\r\nbar\r\n", "EXEC")
	for _, want := range []string{`"MULTI"`, `"SET" "foo" "bar"`, `"GET" "foo"`, `"EXEC"`} {
		expectMonitor(t, m, b, want)
	}

	b.do("+OK\r\n", "MULTI")
	b.call("SYNTAX", "ERROR")
	b.do("-EXECABORT Transaction discarded because of previous errors.\r\n", "EXEC")
	expectMonitor(t, m, b, `"MULTI"`)
	expectMonitor(t, m, b, `"EXEC"`)

	b.do("+OK\r\n", "WATCH", "foo")
	w.do("+OK\r\n", "SET", "foo", "baz")
	b.do("+OK\r\n", "MULTI")
	b.do("+QUEUED\r\n", "GET", "foo")
	b.do("*-1\r\n", "EXEC")
	for _, step := range []struct {
		from *client
		args string
	}{{b, `"WATCH" "foo"`}, {w, `"SET" "foo" "baz"`}, {b, `"MULTI"`}, {b, `"EXEC"`}} {
		expectMonitor(t, m, step.from, step.args)
	}
}
