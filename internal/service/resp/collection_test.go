package resp

import "testing"

// TestCopyCollection drives COPY of each collection type: the copy holds the source's
// elements and expiry, lives apart from the source afterwards, and replaces destination
// whole only under REPLACE.
func TestCopyCollection(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"hash", []step{
			{cmd("HSET", "h", "a", "1", "b", "2"), ":2\r\n"},
			{cmd("EXPIRE", "h", "100"), ":1\r\n"},
			{cmd("COPY", "h", "h2"), ":1\r\n"},
			{cmd("TYPE", "h2"), "+hash\r\n"},
			{cmd("TTL", "h2"), ":100\r\n"},
			{cmd("DEL", "h"), ":1\r\n"},
			{cmd("HGETALL", "h2"), bulks("a", "1", "b", "2")},
			{cmd("HSET", "h2", "c", "3"), ":1\r\n"},
			{cmd("HLEN", "h2"), ":3\r\n"},
			{cmd("COPY", "h", "h3"), ":0\r\n"}, // source gone
		}},
		{"set", []step{
			{cmd("SADD", "s", "a", "b", "c"), ":3\r\n"},
			{cmd("SREM", "s", "c"), ":1\r\n"}, // a removed member stays removed in the copy
			{cmd("COPY", "s", "s2"), ":1\r\n"},
			{cmd("SREM", "s", "a"), ":1\r\n"},
			{cmd("SMEMBERS", "s2"), bulks("a", "b")},
			{cmd("SREM", "s2", "b"), ":1\r\n"},
			{cmd("SMEMBERS", "s"), bulks("b")},
			{cmd("TTL", "s2"), ":-1\r\n"},
		}},
		{"sorted set", []step{
			{cmd("ZADD", "z", "1", "a", "2", "b"), ":2\r\n"},
			{cmd("ZINCRBY", "z", "5", "a"), "$1\r\n6\r\n"}, // a's entry at score 1 is gone
			{cmd("COPY", "z", "z2"), ":1\r\n"},
			{cmd("ZRANGE", "z2", "0", "-1", "WITHSCORES"), bulks("b", "2", "a", "6")},
			{cmd("ZADD", "z2", "0", "c"), ":1\r\n"},
			{cmd("ZCARD", "z"), ":2\r\n"},
		}},
		{"list", []step{
			{cmd("RPUSH", "l", "a", "b", "c"), ":3\r\n"},
			{cmd("COPY", "l", "l2"), ":1\r\n"},
			{cmd("LPUSH", "l2", "x"), ":4\r\n"},
			{cmd("RPOP", "l"), "$1\r\nc\r\n"},
			{cmd("LRANGE", "l2", "0", "-1"), bulks("x", "a", "b", "c")},
			{cmd("LRANGE", "l", "0", "-1"), bulks("a", "b")},
		}},
		{"destination kept without REPLACE, replaced whole with it", []step{
			{cmd("HSET", "h", "a", "1"), ":1\r\n"},
			{cmd("SET", "str", "v"), "+OK\r\n"},
			{cmd("HSET", "h2", "old", "1"), ":1\r\n"},
			{cmd("COPY", "h", "str"), ":0\r\n"},
			{cmd("GET", "str"), "$1\r\nv\r\n"},
			{cmd("COPY", "h", "h2"), ":0\r\n"},
			{cmd("HGETALL", "h2"), bulks("old", "1")},
			{cmd("COPY", "h", "str", "REPLACE"), ":1\r\n"},
			{cmd("HGETALL", "str"), bulks("a", "1")},
			{cmd("EXPIRE", "h2", "100"), ":1\r\n"},
			{cmd("COPY", "h", "h2", "REPLACE"), ":1\r\n"},
			{cmd("HGETALL", "h2"), bulks("a", "1")}, // old's field and expiry are gone
			{cmd("TTL", "h2"), ":-1\r\n"},
			{cmd("SADD", "s", "m"), ":1\r\n"},
			{cmd("COPY", "s", "h2", "REPLACE"), ":1\r\n"}, // a retype: no field comes back
			{cmd("TYPE", "h2"), "+set\r\n"},
			{cmd("DEL", "h2"), ":1\r\n"},
			{cmd("HSET", "h2", "b", "2"), ":1\r\n"},
			{cmd("HGETALL", "h2"), bulks("b", "2")},
		}},
		{"a PN counter is refused", []step{
			{cmd("KURA.COUNTERS", "pn"), "+OK\r\n"},
			{cmd("INCR", "c"), ":1\r\n"},
			{cmd("COPY", "c", "c2"), "-ERR kura does not COPY a conflict-free (PN) counter\r\n"},
			{cmd("EXISTS", "c2"), ":0\r\n"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, addr := startServer(t, Config{NodeID: "n1"})
			converse(t, addr, tt.steps)
		})
	}
}

// TestRenameCollection drives RENAME and RENAMENX of a list and a set: destination holds
// the source's elements, in order, and its expiry; the source keeps its header, emptied
// and read as absent (only what was copied is removed from it); hashes and sorted sets
// are refused.
func TestRenameCollection(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"list", []step{
			{cmd("RPUSH", "{t}l", "a", "b", "c"), ":3\r\n"},
			{cmd("EXPIRE", "{t}l", "100"), ":1\r\n"},
			{cmd("LSET", "{t}l", "1", "B"), "+OK\r\n"},
			{cmd("RENAME", "{t}l", "{t}l2"), "+OK\r\n"},
			{cmd("LRANGE", "{t}l2", "0", "-1"), bulks("a", "B", "c")},
			{cmd("TTL", "{t}l2"), ":100\r\n"},
			{cmd("LLEN", "{t}l"), ":0\r\n"},
			{cmd("EXISTS", "{t}l"), ":0\r\n"}, // emptied: its header stays, and reads as absent
			{cmd("RPUSH", "{t}l", "d"), ":1\r\n"},
			{cmd("LRANGE", "{t}l2", "0", "-1"), bulks("a", "B", "c")},
		}},
		{"set over a string", []step{
			{cmd("SADD", "{t}s", "m", "n"), ":2\r\n"},
			{cmd("SET", "{t}x", "v"), "+OK\r\n"},
			{cmd("RENAME", "{t}s", "{t}x"), "+OK\r\n"},
			{cmd("SMEMBERS", "{t}x"), bulks("m", "n")},
			{cmd("SCARD", "{t}s"), ":0\r\n"},
			{cmd("SADD", "{t}s", "m"), ":1\r\n"}, // removed from the source, not hidden
		}},
		{"RENAMENX", []step{
			{cmd("RPUSH", "{t}l", "a"), ":1\r\n"},
			{cmd("RPUSH", "{t}taken", "z"), ":1\r\n"},
			{cmd("RENAMENX", "{t}l", "{t}taken"), ":0\r\n"},
			{cmd("LRANGE", "{t}l", "0", "-1"), bulks("a")},
			{cmd("LRANGE", "{t}taken", "0", "-1"), bulks("z")},
			{cmd("RENAMENX", "{t}l", "{t}new"), ":1\r\n"},
			{cmd("LRANGE", "{t}new", "0", "-1"), bulks("a")},
			{cmd("RENAME", "{t}new", "{t}new"), "+OK\r\n"},
		}},
		{"refused", []step{
			{cmd("HSET", "{t}h", "f", "v"), ":1\r\n"},
			{cmd("RENAME", "{t}h", "{t}h2"), "-" + errMoveCollection + "\r\n"},
			{cmd("ZADD", "{t}z", "1", "m"), ":1\r\n"},
			{cmd("RENAMENX", "{t}z", "{t}z2"), "-" + errMoveCollection + "\r\n"},
			{cmd("EXISTS", "{t}h2", "{t}z2"), ":0\r\n"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, addr := startServer(t, Config{NodeID: "n1"})
			converse(t, addr, tt.steps)
		})
	}
}
