package resp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestSortCommands: SORT and SORT_RO answer as redis-server 7.0.15 does (each reply
// compared with it), their BY and GET patterns and STORE's destination forming keys of
// any hash tag.
func TestSortCommands(t *testing.T) {
	const notDouble = "-ERR One or more scores can't be converted into double\r\n"
	tests := []struct {
		name  string
		steps []step
	}{
		{"list, numeric and alpha", []step{
			{cmd("RPUSH", "l", "3", "1", "2", "10", "-5", "1.5"), ":6\r\n"},
			{cmd("SORT", "l"), arr("-5", "1", "1.5", "2", "3", "10")},
			{cmd("SORT", "l", "DESC"), arr("10", "3", "2", "1.5", "1", "-5")},
			{cmd("SORT", "l", "ALPHA"), arr("-5", "1", "1.5", "10", "2", "3")},
			{cmd("sort", "l", "alpha", "desc", "asc"), arr("-5", "1", "1.5", "10", "2", "3")}, // the last wins
			{cmd("SORT_RO", "l", "DESC", "LIMIT", "1", "2"), arr("3", "2")},
			{cmd("SORT", "nokey"), "*0\r\n"},
		}},
		{"limit", []step{
			{cmd("RPUSH", "l", "3", "1", "2"), ":3\r\n"},
			{cmd("SORT", "l", "LIMIT", "1", "1"), arr("2")},
			{cmd("SORT", "l", "LIMIT", "-1", "2"), arr("1", "2")}, // a negative offset is 0
			{cmd("SORT", "l", "LIMIT", "1", "-1"), arr("2", "3")}, // a negative count is all
			{cmd("SORT", "l", "LIMIT", "5", "2"), "*0\r\n"},
			{cmd("SORT", "l", "LIMIT", "0", "0"), "*0\r\n"},
			{cmd("SORT", "l", "LIMIT", "1", "100"), arr("2", "3")},
			{cmd("SORT", "l", "LIMIT", "a", "1"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("SORT", "l", "LIMIT", "1"), "-ERR syntax error\r\n"},
		}},
		{"values that are no double", []step{
			{cmd("RPUSH", "bad", "1", "x", "2"), ":3\r\n"},
			{cmd("SORT", "bad"), notDouble},
			{cmd("SORT", "bad", "LIMIT", "0", "1"), notDouble},
			{cmd("SORT", "bad", "ALPHA"), arr("1", "2", "x")},
			{cmd("RPUSH", "nan", "nan", "1"), ":2\r\n"},
			{cmd("SORT", "nan"), notDouble},
			// As strtod: leading spaces, infinities and the empty string (0) are doubles.
			{cmd("RPUSH", "odd", " 4", "", "inf", "-inf", "1e308"), ":5\r\n"},
			{cmd("SORT", "odd"), arr("-inf", "", " 4", "1e308", "inf")},
			{cmd("RPUSH", "blank", "  "), ":1\r\n"},
			{cmd("SORT", "blank"), notDouble},
		}},
		{"sets and sorted sets", []step{
			{cmd("SADD", "s", "b", "a", "c", "2", "1"), ":5\r\n"},
			{cmd("SORT", "s", "ALPHA"), arr("1", "2", "a", "b", "c")},
			{cmd("SORT", "s", "ALPHA", "DESC", "LIMIT", "0", "2"), arr("c", "b")},
			{cmd("ZADD", "z", "3", "a", "1", "b", "2", "c"), ":3\r\n"},
			{cmd("SORT", "z", "ALPHA"), arr("a", "b", "c")},
			{cmd("SORT", "z", "BY", "nosort"), arr("b", "c", "a")}, // by score
			{cmd("SORT", "z", "BY", "nosort", "DESC"), arr("a", "c", "b")},
			{cmd("SORT", "z", "BY", "nosort", "DESC", "LIMIT", "1", "1"), arr("c")},
			{cmd("SORT", "z"), notDouble},
		}},
		{"nosort keeps a list's order", []step{
			{cmd("LPUSH", "l", "2", "1", "4", "3", "5"), ":5\r\n"},
			{cmd("SORT", "l", "BY", "nosort"), arr("5", "3", "4", "1", "2")},
			{cmd("SORT", "l", "BY", "nosort", "DESC"), arr("2", "1", "4", "3", "5")},
			{cmd("SORT", "l", "BY", "nosort", "DESC", "LIMIT", "1", "2"), arr("1", "4")},
			// A BY without '*' leaves the elements unsorted even with another BY after it.
			{cmd("SORT", "l", "BY", "nosort", "BY", "w_*"), arr("5", "3", "4", "1", "2")},
			{cmd("SORT", "l", "BY", "nosort", "BY", "{l}w_*"), arr("5", "3", "4", "1", "2")},
			{cmd("SORT", "l", "BY", "nosort", "GET", "#", "GET", "const"), "*10\r\n$1\r\n5\r\n$-1\r\n$1\r\n3\r\n$-1\r\n$1\r\n4\r\n$-1\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n$-1\r\n"},
		}},
		{"BY and GET patterns of the key's tag", []step{
			{cmd("RPUSH", "{t}n", "1", "2", "3"), ":3\r\n"},
			{cmd("MSET", "{t}w_1", "30", "{t}w_2", "10", "{t}w_3", "20"), "+OK\r\n"},
			{cmd("SORT", "{t}n", "BY", "{t}w_*"), arr("2", "3", "1")},
			{cmd("SORT", "{t}n", "BY", "{t}w_*", "DESC", "LIMIT", "0", "2"), arr("1", "3")},
			{cmd("SORT", "{t}n", "BY", "{t}w_*", "GET", "#", "GET", "{t}w_*", "GET", "{t}no_*"),
				"*9\r\n$1\r\n2\r\n$2\r\n10\r\n$-1\r\n$1\r\n3\r\n$2\r\n20\r\n$-1\r\n$1\r\n1\r\n$2\r\n30\r\n$-1\r\n"},
			{cmd("HSET", "{t}h_1", "f", "3", "g", "a"), ":2\r\n"},
			{cmd("HSET", "{t}h_2", "f", "1"), ":1\r\n"},
			{cmd("HSET", "{t}h_3", "f", "2"), ":1\r\n"},
			{cmd("SORT", "{t}n", "BY", "{t}h_*->f"), arr("2", "3", "1")},
			{cmd("SORT", "{t}n", "BY", "{t}h_*->f", "GET", "{t}h_*->g", "GET", "{t}w_*->f"), "*6\r\n$-1\r\n$-1\r\n$-1\r\n$-1\r\n$1\r\na\r\n$-1\r\n"},
			// A missing weight scores 0; in ALPHA it sorts first.
			{cmd("SORT", "{t}n", "BY", "{t}h_*->g"), notDouble},
			{cmd("SET", "{t}k_2", "-1"), "+OK\r\n"},
			{cmd("SORT", "{t}n", "BY", "{t}k_*"), arr("2", "1", "3")},
			{cmd("SORT", "{t}n", "BY", "{t}h_*->g", "ALPHA", "DESC"), arr("1", "2", "3")},
			// "->" with nothing after it is part of the key's name.
			{cmd("SET", "{t}x:1->", "100"), "+OK\r\n"},
			{cmd("SORT", "{t}n", "BY", "nosort", "GET", "{t}x:*->"), "*3\r\n$3\r\n100\r\n$-1\r\n$-1\r\n"},
			{cmd("SET", "{t}w_3", "x"), "+OK\r\n"},
			{cmd("SORT", "{t}n", "BY", "{t}w_*"), notDouble},
			{cmd("SORT", "{t}n", "BY", "{t}w_*", "ALPHA"), arr("2", "1", "3")},
		}},
		{"patterns of keys of any tag, read as MGET reads them", []step{
			{cmd("RPUSH", "{t}n", "1", "2"), ":2\r\n"},
			{cmd("MSET", "w_1", "9", "w_2", "3", "{u}g_1", "x"), "+OK\r\n"},
			{cmd("SORT", "{t}n", "BY", "w_*"), arr("2", "1")},
			{cmd("SORT", "{t}n", "BY", "w_*", "GET", "{u}g_*"), "*2\r\n$-1\r\n$1\r\nx\r\n"},
			{cmd("SORT", "{t}n", "GET", "*{t}"), "*2\r\n$-1\r\n$-1\r\n"},
			{cmd("SORT", "t", "GET", "{t}*"), "*0\r\n"},
			// The options are read in order: the first error is answered.
			{cmd("SORT", "{t}n", "LIMIT", "x", "1", "BY", "w_*"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("SORT", "{t}n", "BY", "w_*", "LIMIT", "x", "1"), "-ERR value is not an integer or out of range\r\n"},
		}},
		{"store", []step{
			{cmd("RPUSH", "{d}l", "3", "1", "2"), ":3\r\n"},
			{cmd("SET", "{d}out", "v"), "+OK\r\n"},
			{cmd("EXPIRE", "{d}out", "100"), ":1\r\n"},
			{cmd("SORT", "{d}l", "DESC", "STORE", "{d}out"), ":3\r\n"},
			{cmd("TYPE", "{d}out"), "+list\r\n"},
			{cmd("TTL", "{d}out"), ":-1\r\n"},
			{cmd("LRANGE", "{d}out", "0", "-1"), arr("3", "2", "1")},
			{cmd("SORT", "{d}l", "LIMIT", "0", "1", "STORE", "{d}out"), ":1\r\n"},
			{cmd("LRANGE", "{d}out", "0", "-1"), arr("1")}, // a new life: nothing of the last
			{cmd("SORT", "{d}l", "GET", "{d}none_*", "GET", "#", "STORE", "{d}out"), ":6\r\n"},
			{cmd("LRANGE", "{d}out", "0", "-1"), arr("", "1", "", "2", "", "3")},
			{cmd("SORT", "{d}l", "LIMIT", "0", "0", "STORE", "{d}out"), ":0\r\n"},
			{cmd("EXISTS", "{d}out"), ":0\r\n"},
			{cmd("SORT", "{d}nokey", "STORE", "{d}l"), ":0\r\n"},
			{cmd("EXISTS", "{d}l"), ":0\r\n"},
			{cmd("SADD", "{d}s", "b", "a", "c"), ":3\r\n"},
			{cmd("SORT", "{d}s", "BY", "nosort", "STORE", "{d}out"), ":3\r\n"}, // a set is sorted when stored
			{cmd("LRANGE", "{d}out", "0", "-1"), arr("a", "b", "c")},
			{cmd("SORT", "{d}s", "STORE", "{d}out"), notDouble},
			{cmd("LRANGE", "{d}out", "0", "-1"), arr("a", "b", "c")},
			{cmd("SORT", "{d}s", "ALPHA", "STORE", "{d}s"), ":3\r\n"}, // over itself
			{cmd("TYPE", "{d}s"), "+list\r\n"},
			{cmd("SORT", "{d}s", "ALPHA", "DESC", "STORE", "out"), ":3\r\n"}, // another tag
			{cmd("LRANGE", "out", "0", "-1"), arr("c", "b", "a")},
			{cmd("SORT", "{d}s", "STORE"), "-ERR syntax error\r\n"},
			{cmd("SORT_RO", "{d}s", "STORE", "{d}out"), "-ERR syntax error\r\n"},
		}},
		{"wrong types", []step{
			{cmd("SET", "str", "x"), "+OK\r\n"},
			{cmd("SORT", "str"), wrongType},
			{cmd("HSET", "h", "f", "v"), ":1\r\n"},
			{cmd("SORT_RO", "h"), wrongType},
			{cmd("SORT", "h", "FOO"), "-ERR syntax error\r\n"}, // options are checked first
			{cmd("SORT"), "-ERR wrong number of arguments for 'sort' command\r\n"},
		}},
		{"keys", []step{
			{cmd("COMMAND", "GETKEYS", "SORT", "abc", "STORE", "def"), arr("abc", "def")},
			{cmd("COMMAND", "GETKEYS", "sort", "abc", "store", "invalid", "store", "stillbad", "store", "def"), arr("abc", "def")},
			{cmd("COMMAND", "GETKEYS", "sort", "a", "get", "store", "b"), arr("a")},
			{cmd("COMMAND", "GETKEYS", "sort", "a", "limit", "1", "2", "store"), arr("a")},
			{cmd("COMMAND", "GETKEYS", "sort_ro", "abc", "store", "def"), arr("abc")},
			{cmd("COMMAND", "GETKEYSANDFLAGS", "sort", "a", "store", "b"),
				"*2\r\n*2\r\n$1\r\na\r\n*2\r\n+RO\r\n+access\r\n*2\r\n$1\r\nb\r\n*2\r\n+OW\r\n+update\r\n"},
			{cmd("COMMAND", "GETKEYS", "sort"), "-ERR wrong number of arguments for 'command|getkeys' command\r\n"},
			// redis-server's reply but for its ACL categories (@read @set ...), which kura does
			// not report; SORT's has its third specification (STORE) and write, denyoom.
			{cmd("COMMAND", "INFO", "sort_ro"), "*1\r\n*10\r\n$7\r\nsort_ro\r\n:-2\r\n*2\r\n+readonly\r\n+movablekeys\r\n:1\r\n:1\r\n:1\r\n*0\r\n*0\r\n*2\r\n*6\r\n$5\r\nflags\r\n*2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*8\r\n$5\r\nnotes\r\n$120\r\nFor the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort\r\n$5\r\nflags\r\n*2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$7\r\nunknown\r\n$4\r\nspec\r\n*0\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$7\r\nunknown\r\n$4\r\nspec\r\n*0\r\n*0\r\n"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, addr := startServer(t, Config{})
			converse(t, addr, tt.steps)
		})
	}
}

// TestSortInTransaction drives SORT and SORT_RO queued inside MULTI with go-redis's
// TxPipelined, in RESP2 and RESP3: they read their key as the transaction's commands
// before them left it, STORE writes the destination inside the transaction where it may
// (one key, or keys of one tag in a keyspace of partition transactions) and EXEC refuses
// it with the reason elsewhere, and a BY or GET pattern that forms keys is refused when
// queued, aborting the EXEC.
func TestSortInTransaction(t *testing.T) {
	const crossSlot = "error: CROSSSLOT Keys in request don't hash to the same slot"
	const execAbort = "error: EXECABORT Transaction discarded because of previous errors."
	const patternRefused = "error: ERR kura: SORT's BY and GET patterns with '*' read keys formed from the elements, which a transaction cannot read with its own; inside MULTI, SORT takes only BY and GET patterns without '*' (BY nosort, GET #)"
	// reply is one command and what it answers, printed by shown.
	type reply struct {
		args []any
		want string
	}
	tests := []struct {
		name string
		// before run outside the transaction, queued inside it, and after outside again.
		before, queued, after []reply
		// execErr is what EXEC answers as a whole, empty when it runs the queue.
		execErr string
	}{
		{name: "list, after a push in the same transaction",
			before: []reply{{[]any{"RPUSH", "{t}l", "3", "1", "2"}, "3"}},
			queued: []reply{
				{[]any{"RPUSH", "{t}l", "10"}, "4"},
				{[]any{"SORT", "{t}l"}, "[1 2 3 10]"},
				{[]any{"SORT", "{t}l", "DESC", "LIMIT", "0", "2"}, "[10 3]"},
				{[]any{"SORT_RO", "{t}l", "ALPHA"}, "[1 10 2 3]"},
				{[]any{"SORT", "{t}l", "BY", "nosort"}, "[3 1 2 10]"},
				{[]any{"SORT", "{t}l", "BY", "nosort", "DESC", "LIMIT", "1", "2"}, "[2 1]"},
				{[]any{"SORT", "{t}l", "GET", "#", "GET", "nokey"}, "[1 <nil> 2 <nil> 3 <nil> 10 <nil>]"},
				{[]any{"SORT", "{t}none"}, "[]"},
			}},
		{name: "set, after a removal in the same transaction",
			before: []reply{{[]any{"SADD", "{t}s", "c", "a", "b"}, "3"}},
			queued: []reply{
				{[]any{"SREM", "{t}s", "a"}, "1"},
				{[]any{"SORT", "{t}s", "ALPHA"}, "[b c]"},
				{[]any{"SORT_RO", "{t}s", "ALPHA", "DESC", "LIMIT", "0", "1"}, "[c]"},
				{[]any{"SORT", "{t}s"}, "error: ERR One or more scores can't be converted into double"},
			}},
		{name: "sorted set BY nosort keeps its order by score",
			before: []reply{{[]any{"ZADD", "{t}z", "1", "a", "5", "b", "2", "c", "10", "d"}, "4"}},
			queued: []reply{
				{[]any{"ZADD", "{t}z", "3", "e"}, "1"},
				{[]any{"SORT", "{t}z", "BY", "nosort", "ASC"}, "[a c e b d]"},
				{[]any{"SORT", "{t}z", "BY", "nosort", "DESC"}, "[d b e c a]"},
				{[]any{"SORT_RO", "{t}z", "BY", "nosort", "LIMIT", "0", "3"}, "[a c e]"},
				{[]any{"SORT", "{t}z", "BY", "nosort", "DESC", "LIMIT", "1", "2"}, "[b e]"},
				{[]any{"SORT", "{t}z", "ALPHA"}, "[a b c d e]"},
			}},
		{name: "STORE into a key of the same tag, read back in the same transaction",
			before: []reply{{[]any{"RPUSH", "{t}src", "2", "1", "3"}, "3"}, {[]any{"SET", "{t}dst", "old"}, "OK"}},
			queued: []reply{
				{[]any{"SORT", "{t}src", "STORE", "{t}dst"}, "3"},
				{[]any{"LRANGE", "{t}dst", "0", "-1"}, "[1 2 3]"},
				{[]any{"SORT", "{t}src", "BY", "nosort", "LIMIT", "0", "2", "STORE", "{t}dst"}, "2"},
				{[]any{"LRANGE", "{t}dst", "0", "-1"}, "[2 1]"},
				{[]any{"SORT", "{t}src", "STORE", "{t}src"}, "3"},
			},
			after: []reply{
				{[]any{"LRANGE", "{t}dst", "0", "-1"}, "[2 1]"},
				{[]any{"LRANGE", "{t}src", "0", "-1"}, "[1 2 3]"},
				{[]any{"TYPE", "{t}dst"}, "list"},
			}},
		{name: "an empty result STOREd deletes the destination inside the transaction",
			before: []reply{{[]any{"RPUSH", "{t}dst", "x"}, "1"}},
			queued: []reply{
				{[]any{"SORT", "{t}none", "STORE", "{t}dst"}, "0"},
				{[]any{"EXISTS", "{t}dst"}, "0"},
			},
			after: []reply{{[]any{"EXISTS", "{t}dst"}, "0"}}},
		{name: "a wrong type is its command's reply, and the others run",
			before: []reply{{[]any{"SET", "{t}str", "x"}, "OK"}},
			queued: []reply{
				{[]any{"SORT", "{t}str"}, "error: WRONGTYPE Operation against a key holding the wrong kind of value"},
				{[]any{"SET", "{t}k", "v"}, "OK"},
			},
			after: []reply{{[]any{"GET", "{t}k"}, "v"}}},
		{name: "a BY pattern after BY nosort is not read, and is queued",
			before: []reply{{[]any{"RPUSH", "{t}l", "b", "a"}, "2"}},
			queued: []reply{{[]any{"SORT", "{t}l", "BY", "nosort", "BY", "w_*"}, "[b a]"}}},
		{name: "a BY pattern that forms keys is refused when queued",
			before: []reply{{[]any{"RPUSH", "{t}l", "2", "1"}, "2"}},
			queued: []reply{
				{[]any{"SET", "{t}k", "v"}, execAbort},
				{[]any{"SORT", "{t}l", "BY", "{t}w_*"}, patternRefused},
			},
			execErr: execAbort,
			after: []reply{
				{[]any{"GET", "{t}k"}, "<nil>"},
				{[]any{"SORT", "{t}l"}, "[1 2]"}, // out of MULTI again
			}},
		{name: "a GET pattern that forms keys is refused when queued",
			queued:  []reply{{[]any{"SORT_RO", "{t}l", "GET", "#", "GET", "{t}h_*->f"}, patternRefused}},
			execErr: execAbort},
		{name: "STORE into another tag: CROSSSLOT",
			queued:  []reply{{[]any{"SORT", "{t}l", "STORE", "{u}d"}, crossSlot}},
			execErr: crossSlot},
		{name: "a keyspace of per-key transactions refuses a STORE into another key with the reason",
			// The test backend's keyspace of per-key transactions serves no collections:
			// the sorted key is missing, and the EXEC is refused before it reads it.
			before: []reply{{[]any{"KURA.KEYSPACE", "other"}, "OK"}},
			queued: []reply{{[]any{"SORT", "{t}l"}, "[]"}},
			after: []reply{
				{[]any{"MULTI"}, "OK"},
				{[]any{"SORT", "{t}l", "STORE", "{t}d"}, "QUEUED"},
				{[]any{"EXEC"}, "error: ERR invalid argument: keyspace other runs its lightweight transactions per key"},
			}},
	}
	for _, protocol := range []int{2, 3} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("RESP%d/%s", protocol, tt.name), func(t *testing.T) {
				_, _, addr := startServer(t, Config{})
				// One connection, so that KURA.KEYSPACE and MULTI hold for what follows.
				rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: protocol, PoolSize: 1})
				defer rdb.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				check := func(when string, r reply, got string) {
					t.Helper()
					if got != r.want {
						t.Errorf("%s %v = %s, want %s", when, r.args, got, r.want)
					}
				}
				for _, r := range tt.before {
					check("before", r, shown(rdb.Do(ctx, r.args...).Result()))
				}
				cmds := make([]*redis.Cmd, len(tt.queued))
				_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
					for i, r := range tt.queued {
						cmds[i] = p.Do(ctx, r.args...)
					}
					return nil
				})
				// TxPipelined answers EXEC's own error, else the first queued command's.
				wantErr := tt.execErr
				for _, r := range tt.queued {
					if wantErr == "" && strings.HasPrefix(r.want, "error: ") {
						wantErr = r.want
					}
				}
				if got := shown(nil, err); err != nil && got != wantErr || err == nil && wantErr != "" {
					t.Errorf("EXEC = %s, want %q", got, wantErr)
				}
				for i, r := range tt.queued {
					check("queued", r, shown(cmds[i].Result()))
				}
				for _, r := range tt.after {
					check("after", r, shown(rdb.Do(ctx, r.args...).Result()))
				}
			})
		}
	}
}

// shown prints a go-redis reply for comparison: the error's text, or the value as fmt
// prints it, a null reply as <nil>.
func shown(v any, err error) string {
	switch {
	case errors.Is(err, redis.Nil):
		return "<nil>"
	case err != nil:
		return "error: " + err.Error()
	}
	return fmt.Sprint(v)
}
