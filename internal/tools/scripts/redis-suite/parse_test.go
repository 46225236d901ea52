package main

import (
	"reflect"
	"strings"
	"testing"
)

// The lines below are the suite's own output (Redis 7.0.15, TERM=dumb), cut down.
func TestParseOutput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		output string
		want   unitOutput
	}{{
		name: "ok skip ignore and a block ignore",
		output: `[ready]: 11382
Testing unit/keyspace
[ok]: DEL against a single item (0 ms)
[skip]: KEYS with pattern
[ignore]: SCAN: Lazy-expire should not be wrapped in MULTI/EXEC: Tag: needs:debug denied
[ignore]: Not supported on external server
[1/1 done]: unit/keyspace (2 seconds)
`,
		want: unitOutput{Done: true, Tests: []testResult{
			{Name: "DEL against a single item", Status: statusOK},
			{Name: "KEYS with pattern", Status: statusSkip, Error: "--skiptest"},
			{Name: "SCAN: Lazy-expire should not be wrapped in MULTI/EXEC", Status: statusIgnore, Error: "Tag: needs:debug denied"},
			{Name: "", Status: statusIgnore, Error: "Not supported on external server"},
		}},
	}, {
		name: "an error reply under --durable: the errorInfo line has the whole message",
		output: `[err]: EXPIRE - write on expire should work in tests/unit/expire.tcl
n command 'lpush', with args beginning with: 'x' 'foo'
ERR unknown command 'lpush', with args beginning with: 'x' 'foo'
    while executing
"[srv $level "client"] {*}$args"
[ok]: EXPIRE - after 2.1 seconds the key should no longer be here (0 ms)
`,
		want: unitOutput{Tests: []testResult{
			{Name: "EXPIRE - write on expire should work", Status: statusErr, Error: "ERR unknown command 'lpush', with args beginning with: 'x' 'foo'"},
			{Name: "EXPIRE - after 2.1 seconds the key should no longer be here", Status: statusOK},
		}},
	}, {
		name: "assertions: one line, followed at once by the next status line",
		output: `[err]: FLUSHDB in tests/unit/other.tcl
Expected '0 0' to equal or match '0 930'
[err]: test verbatim str parsing in tests/unit/protocol.tcl
Expected 'This is a verbatim
string' to equal or match ''
[err]: CONFIG GET hidden configs in tests/unit/introspection.tcl
Expected [dict exists [r config get key-load-delay] "key-load-delay"] (context: type eval line 8)
[ok]: CONFIG sanity (5 ms)
`,
		want: unitOutput{Tests: []testResult{
			{Name: "FLUSHDB", Status: statusErr, Error: "Expected '0 0' to equal or match '0 930'"},
			{Name: "test verbatim str parsing", Status: statusErr, Error: "Expected 'This is a verbatim"},
			{Name: "CONFIG GET hidden configs", Status: statusErr, Error: `Expected [dict exists [r config get key-load-delay] "key-load-delay"] (context: type eval line 8)`},
			{Name: "CONFIG sanity", Status: statusOK},
		}},
	}, {
		name: "an exception outside a test stops the unit",
		output: `Testing unit/quit
[exception]: Executing test client: ERR unknown command 'function', with args beginning with: 'flush'.
ERR unknown command 'function', with args beginning with: 'flush'
    while executing
`,
		want: unitOutput{Exception: "ERR unknown command 'function', with args beginning with: 'flush'."},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseOutput(strings.NewReader(tc.output))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestCause(t *testing.T) {
	for _, tc := range []struct{ err, want string }{
		{"ERR unknown command 'lpush', with args beginning with: 'x' 'foo'", "unknown command LPUSH"},
		{"Expected '-ERR unknown command 'sadd', with args beginning with: 'ss' 'a'' to be equal to ':1'", "unknown command SADD"},
		{"ERR unknown subcommand 'reply'. Try CLIENT HELP.", "unknown subcommand CLIENT REPLY"},
		{"ERR Unknown option or number of arguments for CONFIG SET - 'zset-max-ziplist-entries'", "CONFIG SET zset-max-ziplist-entries refused"},
		{"ERR CONFIG SET failed (possibly related to argument 'maxmemory') - can't set immutable config: no", "CONFIG SET maxmemory refused"},
		{"Expected '' to match '*movablekeys*'", "other"},
		{"Expected 'unknown command' to match 'ERR unknown command *'", "other"},
		{"", "other"},
	} {
		if got := cause(tc.err); got != tc.want {
			t.Errorf("cause(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// A test kura did not run is counted apart from its failures, and tests that share a
// name are matched one for one.
func TestCompare(t *testing.T) {
	redis := unitOutput{Tests: []testResult{
		{Name: "a", Status: statusOK}, {Name: "a", Status: statusOK}, {Name: "b", Status: statusOK},
		{Name: "c", Status: statusOK}, {Name: "d", Status: statusIgnore, Error: "Tag: needs:debug denied"},
	}}
	kura := unitOutput{Tests: []testResult{
		{Name: "a", Status: statusOK}, {Name: "a", Status: statusErr, Error: "ERR unknown command 'sadd'"},
		{Name: "b", Status: statusOK}, {Name: "d", Status: statusIgnore, Error: "Tag: needs:debug denied"},
	}}
	u := compare("unit/x", redis, kura, 1, 2)
	got := [6]int{u.Tests, u.Skipped, u.RedisPassed, u.KuraPassed, u.KuraFailed, u.KuraNotRun}
	if want := [6]int{4, 1, 4, 2, 1, 1}; got != want {
		t.Errorf("tests, skipped, redis passed, kura passed, kura failed, not run = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(u.NotRunOnKura, []string{"c"}) {
		t.Errorf("not run on kura = %v, want [c]", u.NotRunOnKura)
	}
	if u.causes["unknown command SADD"] != 1 || len(u.causes) != 2 {
		t.Errorf("causes = %v", u.causes)
	}
}
