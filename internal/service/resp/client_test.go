package resp

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// clientFields splits one CLIENT LIST line into its fields, in order.
func clientFields(t *testing.T, line string) (keys []string, fields map[string]string) {
	t.Helper()
	fields = map[string]string{}
	for _, kv := range strings.Fields(line) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("field %q without '=' in %q", kv, line)
		}
		keys = append(keys, k)
		fields[k] = v
	}
	return keys, fields
}

// checkFields compares fields with want, where want holds them.
func checkFields(t *testing.T, who string, fields, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("%s: %s=%q, want %q", who, k, fields[k], v)
		}
	}
}

func TestClientInfoAndList(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	a, b := dial(t, addr), dial(t, addr)
	b.do("+OK\r\n", "CLIENT", "SETNAME", "worker")
	b.do("+OK\r\n", "KURA.KEYSPACE", "other")
	b.do("$-1\r\n", "GET", "k")

	info := a.call("CLIENT", "INFO").(string)
	if !strings.HasSuffix(info, "\n") || strings.Count(info, "\n") != 1 {
		t.Fatalf("CLIENT INFO = %q, want one line", info)
	}
	keys, fields := clientFields(t, info)
	// Redis 7's fields in Redis's order, then those of later versions and kura's.
	redis7 := "id addr laddr fd name age idle flags db sub psub ssub multi qbuf qbuf-free argv-mem multi-mem rbs rbp obl oll omem tot-mem events cmd user redir resp"
	if got := strings.Join(keys, " "); got != redis7+" lib-name lib-ver tot-net-in tot-net-out tot-cmds kura-keyspace kura-consistency" {
		t.Errorf("CLIENT INFO fields: %s", got)
	}
	const command = "*2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n"
	checkFields(t, "CLIENT INFO", fields, map[string]string{
		"id": "1", "addr": a.nc.LocalAddr().String(), "laddr": a.nc.RemoteAddr().String(), "name": "",
		"flags": "N", "db": "0", "sub": "0", "psub": "0", "ssub": "0", "multi": "-1",
		"qbuf": strconv.Itoa(len(command)), "qbuf-free": strconv.Itoa(readBufferBytes - len(command)),
		"argv-mem": "10", "multi-mem": "0", "rbs": strconv.Itoa(readBufferBytes), "obl": "0", "oll": "0", "omem": "0",
		"events": "r", "cmd": "client|info", "user": "default", "redir": "-1", "resp": "2",
		"tot-net-in": strconv.Itoa(len(command)), "tot-net-out": "0", "tot-cmds": "1",
		"kura-keyspace": "default", "kura-consistency": "ONE",
	})
	for _, k := range []string{"fd", "age", "idle", "rbp", "tot-mem"} {
		if n, err := strconv.Atoi(fields[k]); err != nil || n < 0 {
			t.Errorf("CLIENT INFO: %s=%q, want a count", k, fields[k])
		}
	}

	list := a.call("CLIENT", "LIST").(string)
	lines := strings.Split(strings.TrimSuffix(list, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("CLIENT LIST has %d lines, want 2: %q", len(lines), list)
	}
	_, fields = clientFields(t, lines[1])
	checkFields(t, "CLIENT LIST of the other client", fields, map[string]string{
		"id": "2", "addr": b.nc.LocalAddr().String(), "name": "worker", "cmd": "get", "tot-cmds": "3",
		"qbuf": "0", "argv-mem": "0", "kura-keyspace": "other",
	})
	// The same line but for the fields that may move between the two calls: the clock's,
	// and tot-net-out, which counts b's last reply once the socket write returns, after
	// b may have read it (it failed CI once so).
	steady := func(line string) string {
		return strings.Join(slices.DeleteFunc(strings.Fields(line), func(kv string) bool {
			return strings.HasPrefix(kv, "age=") || strings.HasPrefix(kv, "idle=") || strings.HasPrefix(kv, "tot-net-out=")
		}), " ")
	}
	if only := a.call("CLIENT", "LIST", "ID", "2", "7").(string); strings.Count(only, "\n") != 1 || steady(only) != steady(lines[1]) {
		t.Errorf("CLIENT LIST ID 2 7 = %q, want the other client's line %q", only, lines[1])
	}
	if normal := a.call("CLIENT", "LIST", "TYPE", "NORMAL").(string); strings.Count(normal, "\n") != 2 {
		t.Errorf("CLIENT LIST TYPE NORMAL = %q, want both clients", normal)
	}

	// RESP3 sends the text as a verbatim string, as Redis does.
	a.call("HELLO", "3")
	a.send(encode("CLIENT", "INFO"))
	header := a.line()
	body := a.line()
	if !strings.HasPrefix(header, "=") || !strings.HasPrefix(body, "txt:id=1 ") || !strings.Contains(body, " resp=3 ") {
		t.Fatalf("CLIENT INFO in RESP3: %q %q", header, body)
	}
}

// TestClientOutputBufferLength: obl counts the replies written and not yet sent, as
// Redis's does: 0 once a reply has gone, the earlier replies of a pipeline still held.
func TestClientOutputBufferLength(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	a, b := dial(t, addr), dial(t, addr)
	obl := func(text string) string {
		t.Helper()
		_, fields := clientFields(t, strings.Split(text, "\n")[0])
		return fields["obl"]
	}
	a.do("+OK\r\n", "SET", "k", "v")
	a.do("$1\r\nv\r\n", "GET", "k")
	if got := obl(a.call("CLIENT", "INFO").(string)); got != "0" {
		t.Errorf("CLIENT INFO after replies were sent: obl=%s, want 0", got)
	}
	if got := obl(b.call("CLIENT", "LIST", "ID", "1").(string)); got != "0" {
		t.Errorf("CLIENT LIST of a client whose replies were sent: obl=%s, want 0", got)
	}
	// PING's reply is still buffered when CLIENT INFO, sent with it, runs.
	a.send(encode("PING") + encode("CLIENT", "INFO"))
	a.expect("+PONG\r\n")
	if got := obl(a.reply().(string)); got != "7" {
		t.Errorf("CLIENT INFO after a pipelined PING: obl=%s, want 7 (+PONG\\r\\n)", got)
	}
}

func TestClientKill(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	// connect returns a client the server serves already: it has answered a PING.
	connect := func() *client {
		c := dial(t, addr)
		c.do("+PONG\r\n", "PING")
		return c
	}
	a := connect()
	for _, s := range []step{ // errors, in Redis 7.0.15's words
		{cmd("CLIENT", "KILL", "ID", "0"), "-ERR client-id should be greater than 0\r\n"},
		{cmd("CLIENT", "KILL", "ID", "x"), "-ERR client-id should be greater than 0\r\n"},
		{cmd("CLIENT", "KILL", "TYPE", "foo"), "-ERR Unknown client type 'foo'\r\n"},
		{cmd("CLIENT", "KILL", "USER", "bob"), "-ERR No such user 'bob'\r\n"},
		{cmd("CLIENT", "KILL", "SKIPME", "maybe"), "-ERR syntax error\r\n"},
		{cmd("CLIENT", "KILL", "foo", "bar"), "-ERR syntax error\r\n"},
		{cmd("CLIENT", "KILL", "ID", "1", "SKIPME"), "-ERR syntax error\r\n"},
		{cmd("CLIENT", "KILL", "1.2.3.4:5"), "-ERR No such client\r\n"},
		{cmd("CLIENT", "KILL", "ID", "99999"), ":0\r\n"},
		{cmd("CLIENT", "KILL", "TYPE", "pubsub"), ":0\r\n"},
	} {
		a.do(s.want, s.args...)
	}

	b := connect()
	a.do(":1\r\n", "CLIENT", "KILL", "ID", strconv.FormatInt(clientID(t, b), 10))
	b.expectClosed()

	c := connect()
	a.do(":1\r\n", "CLIENT", "KILL", "ADDR", c.nc.LocalAddr().String(), "TYPE", "normal")
	c.expectClosed()

	d := connect()
	a.do("+OK\r\n", "CLIENT", "KILL", d.nc.LocalAddr().String()) // the old form
	d.expectClosed()

	e := connect()
	a.do(":1\r\n", "CLIENT", "KILL", "USER", "default") // all but the caller
	e.expectClosed()
	a.do(":0\r\n", "CLIENT", "KILL", "LADDR", a.nc.RemoteAddr().String())
	if list := a.call("CLIENT", "LIST").(string); strings.Count(list, "\n") != 1 {
		t.Errorf("CLIENT LIST after the kills = %q, want the caller alone", list)
	}

	// A client killing itself gets its reply, then the connection closes.
	a.do(":1\r\n", "CLIENT", "KILL", "LADDR", a.nc.RemoteAddr().String(), "SKIPME", "no")
	a.expectClosed()
}

// clientID asks c for its connection's id.
func clientID(t *testing.T, c *client) int64 {
	t.Helper()
	return c.call("CLIENT", "ID").(int64)
}

// TestClientReply: CLIENT REPLY OFF drops every reply until ON, SKIP the next command's,
// errors included, command by command through a pipeline's batches. Each case's
// pipeline ends in ECHO end, so the bytes before its answer are all the server sent;
// the wanted bytes are redis-server 7.0.15's.
func TestClientReply(t *testing.T) {
	reply := func(args ...string) string { return encode(append([]string{"CLIENT", "REPLY"}, args...)...) }
	tests := []struct {
		name, pipeline, want string
		closes               bool
	}{
		{name: "off until on, errors too",
			pipeline: reply("OFF") + encode("PING", "a") + encode("NOSUCH") + encode("SET", "k") + reply("SKIP") + reply("ON") + encode("PING", "b"),
			want:     "+OK\r\n$1\r\nb\r\n"},
		{name: "skip the first read of a batch",
			pipeline: reply("SKIP") + encode("GET", "a") + encode("GET", "b"),
			want:     "$-1\r\n"},
		{name: "skip the first write of a batch",
			pipeline: reply("SKIP") + encode("SET", "a", "1") + encode("GET", "a") + encode("SET", "b", "2"),
			want:     "$1\r\n1\r\n+OK\r\n"},
		{name: "skip after reads",
			pipeline: encode("GET", "r1") + reply("SKIP") + encode("GET", "r2") + encode("GET", "r3"),
			want:     "$-1\r\n$-1\r\n"},
		{name: "off through batches",
			pipeline: reply("OFF") + strings.Repeat(encode("SET", "a", "1")+encode("GET", "a"), batchMax) + reply("ON"),
			want:     "+OK\r\n"},
		{name: "an empty command takes the skip",
			pipeline: reply("SKIP") + "*0\r\n" + encode("PING", "x"),
			want:     "$1\r\nx\r\n"},
		{name: "an empty inline line takes the skip",
			pipeline: reply("SKIP") + "\r\n" + encode("PING", "x"),
			want:     "$1\r\nx\r\n"},
		{name: "a skipped skip skips the next",
			pipeline: reply("SKIP") + reply("SKIP") + encode("PING", "x") + encode("PING", "y"),
			want:     "$1\r\ny\r\n"},
		{name: "on answers after skip",
			pipeline: reply("SKIP") + reply("ON") + encode("PING"),
			want:     "+OK\r\n+PONG\r\n"},
		{name: "an unknown command is skipped",
			pipeline: reply("SKIP") + encode("NOSUCH") + encode("PING", "z"),
			want:     "$1\r\nz\r\n"},
		{name: "bad arguments",
			pipeline: reply("FOO") + encode("CLIENT", "REPLY") + reply("ON", "x") + reply("on"),
			want:     "-ERR syntax error\r\n-ERR wrong number of arguments for 'client|reply' command\r\n-ERR wrong number of arguments for 'client|reply' command\r\n+OK\r\n"},
		// These three close the connection unanswered. Redis 7.0.15 leaves it open,
		// waiting to close it after a reply it never sends; kura does what was asked.
		{name: "a protocol error after skip", pipeline: reply("SKIP") + "*x\r\n", closes: true},
		{name: "a protocol error after a batch while off",
			pipeline: reply("OFF") + encode("GET", "a") + encode("GET", "b") + "*x\r\n", closes: true},
		{name: "quit while off", pipeline: reply("OFF") + encode("QUIT"), closes: true},
	}
	_, _, addr := startServer(t, Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, addr)
			if tt.closes {
				c.send(tt.pipeline)
				c.expectClosed()
				return
			}
			c.send(tt.pipeline + encode("ECHO", "end"))
			c.expect(tt.want + "$3\r\nend\r\n")
		})
	}

	// The error replies dropped still count, as in Redis.
	c := dial(t, addr)
	c.send(encode("CONFIG", "RESETSTAT") + reply("OFF") + encode("NOSUCH") + encode("SET", "k") + reply("ON"))
	c.expect("+OK\r\n+OK\r\n")
	if got := infoField(t, c.call("INFO", "stats").(string), "total_error_replies"); got != 2 {
		t.Errorf("total_error_replies = %d, want 2", got)
	}
}
