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
