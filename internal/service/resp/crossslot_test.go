package resp

import "testing"

// TestWritesAcrossHashTags: the commands that write one key from others (the *STORE
// forms, SMOVE, the list moves, RENAME of a list or set) take keys of different hash
// tags, and keys without one, outside a transaction: each key is read or written on its
// own, as within one tag. The result is the destination's, the sources are left as the
// command leaves them within one tag (read, or emptied by a move).
func TestWritesAcrossHashTags(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"set algebra stores", []step{
			{cmd("SADD", "{a}1", "a", "b", "c"), ":3\r\n"},
			{cmd("SADD", "{b}2", "b", "c", "d"), ":3\r\n"},
			{cmd("SINTERSTORE", "{c}d", "{a}1", "{b}2"), ":2\r\n"},
			{cmd("SMEMBERS", "{c}d"), members("b", "c")},
			{cmd("SUNIONSTORE", "{c}d", "{a}1", "{b}2"), ":4\r\n"},
			{cmd("SMEMBERS", "{c}d"), members("a", "b", "c", "d")},
			{cmd("SDIFFSTORE", "{c}d", "{a}1", "{b}2"), ":1\r\n"},
			{cmd("SMEMBERS", "{c}d"), members("a")},
			{cmd("SUNIONSTORE", "plain", "{a}1"), ":3\r\n"}, // a key without a tag
			{cmd("SINTERSTORE", "{c}d", "{a}1", "{b}none"), ":0\r\n"},
			{cmd("EXISTS", "{c}d"), ":0\r\n"},
			{cmd("SMEMBERS", "{a}1"), members("a", "b", "c")},
			{cmd("SMEMBERS", "{b}2"), members("b", "c", "d")},
		}},
		{"SMOVE", []step{
			{cmd("SADD", "{a}src", "a", "b"), ":2\r\n"},
			{cmd("SADD", "{b}dst", "b"), ":1\r\n"},
			{cmd("SMOVE", "{a}src", "{b}dst", "a"), ":1\r\n"},
			{cmd("SMOVE", "{a}src", "{b}dst", "a"), ":0\r\n"},
			{cmd("SMEMBERS", "{b}dst"), members("a", "b")},
			{cmd("SMEMBERS", "{a}src"), members("b")},
			{cmd("SMOVE", "{a}src", "{b}dst", "b"), ":1\r\n"}, // already in the destination
			{cmd("EXISTS", "{a}src"), ":0\r\n"},
			{cmd("SET", "str", "x"), "+OK\r\n"},
			{cmd("SMOVE", "{b}dst", "str", "a"), wrongType},
			{cmd("SMEMBERS", "{b}dst"), members("a", "b")},
		}},
		{"sorted set stores", []step{
			{cmd("ZADD", "{a}1", "1", "a", "2", "b", "3", "c"), ":3\r\n"},
			{cmd("ZADD", "{b}2", "10", "b", "20", "c", "30", "d"), ":3\r\n"},
			{cmd("ZUNIONSTORE", "{c}d", "2", "{a}1", "{b}2"), ":4\r\n"},
			{cmd("ZRANGE", "{c}d", "0", "-1", "WITHSCORES"), bulks("a", "1", "b", "12", "c", "23", "d", "30")},
			{cmd("ZINTERSTORE", "{c}d", "2", "{a}1", "{b}2", "WEIGHTS", "2", "1"), ":2\r\n"},
			{cmd("ZRANGE", "{c}d", "0", "-1", "WITHSCORES"), bulks("b", "14", "c", "26")},
			{cmd("ZDIFFSTORE", "{c}d", "2", "{a}1", "{b}2"), ":1\r\n"},
			{cmd("ZRANGE", "{c}d", "0", "-1", "WITHSCORES"), bulks("a", "1")},
			{cmd("ZRANGESTORE", "plain", "{b}2", "(10", "+inf", "BYSCORE"), ":2\r\n"},
			{cmd("ZRANGE", "plain", "0", "-1", "WITHSCORES"), bulks("c", "20", "d", "30")},
			{cmd("ZDIFFSTORE", "{c}d", "2", "{a}1", "{a}1"), ":0\r\n"},
			{cmd("EXISTS", "{c}d"), ":0\r\n"},
			{cmd("ZRANGE", "{a}1", "0", "-1", "WITHSCORES"), bulks("a", "1", "b", "2", "c", "3")},
			{cmd("ZCARD", "{b}2"), ":3\r\n"},
		}},
		{"geo stores", []step{
			{cmd("GEOADD", "{a}g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"), ":2\r\n"},
			{cmd("GEOSEARCHSTORE", "{c}d", "{a}g", "FROMMEMBER", "Catania", "BYRADIUS", "200", "km", "STOREDIST"), ":2\r\n"},
			{cmd("ZRANGE", "{c}d", "0", "-1", "WITHSCORES"), "*4\r\n$7\r\nCatania\r\n$1\r\n0\r\n$7\r\nPalermo\r\n$18\r\n166.27415156960032\r\n"},
			{cmd("GEORADIUS", "{a}g", "15", "37", "200", "km", "STORE", "{c}e"), ":2\r\n"},
			{cmd("ZRANGE", "{c}e", "0", "-1"), bulks("Palermo", "Catania")},
			{cmd("GEORADIUSBYMEMBER", "{a}g", "Palermo", "1", "km", "STORE", "plain"), ":1\r\n"},
			{cmd("ZRANGE", "plain", "0", "-1"), bulks("Palermo")},
			{cmd("GEOSEARCHSTORE", "{c}d", "{a}g", "FROMLONLAT", "100", "10", "BYRADIUS", "1", "km"), ":0\r\n"},
			{cmd("EXISTS", "{c}d"), ":0\r\n"},
			{cmd("ZCARD", "{a}g"), ":2\r\n"},
		}},
		{"SORT STORE", []step{
			{cmd("RPUSH", "{a}l", "3", "1", "2"), ":3\r\n"},
			{cmd("SORT", "{a}l", "STORE", "{c}d"), ":3\r\n"},
			{cmd("LRANGE", "{c}d", "0", "-1"), arr("1", "2", "3")},
			{cmd("MSET", "w_1", "30", "w_2", "20", "w_3", "10"), "+OK\r\n"},
			{cmd("SORT", "{a}l", "BY", "w_*", "STORE", "plain"), ":3\r\n"},
			{cmd("LRANGE", "plain", "0", "-1"), arr("3", "2", "1")},
			{cmd("SORT", "{a}l", "BY", "nosort", "LIMIT", "0", "2", "STORE", "{c}d"), ":2\r\n"},
			{cmd("LRANGE", "{c}d", "0", "-1"), arr("3", "1")},
			{cmd("SORT", "{a}none", "STORE", "{c}d"), ":0\r\n"},
			{cmd("EXISTS", "{c}d"), ":0\r\n"},
			{cmd("LRANGE", "{a}l", "0", "-1"), arr("3", "1", "2")},
		}},
		{"list moves", []step{
			{cmd("RPUSH", "{a}src", "a", "b", "c"), ":3\r\n"},
			{cmd("LMOVE", "{a}src", "{b}dst", "LEFT", "RIGHT"), "$1\r\na\r\n"},
			{cmd("RPOPLPUSH", "{a}src", "{b}dst"), "$1\r\nc\r\n"},
			{cmd("BLMOVE", "{a}src", "{b}dst", "RIGHT", "LEFT", "0"), "$1\r\nb\r\n"}, // an item there: no wait
			{cmd("LRANGE", "{b}dst", "0", "-1"), arr("b", "c", "a")},
			{cmd("EXISTS", "{a}src"), ":0\r\n"},
			{cmd("LMOVE", "{a}src", "{b}dst", "LEFT", "LEFT"), "$-1\r\n"},
			{cmd("BRPOPLPUSH", "{b}dst", "plain", "0"), "$1\r\na\r\n"},
			{cmd("LRANGE", "plain", "0", "-1"), arr("a")},
			{cmd("LRANGE", "{b}dst", "0", "-1"), arr("b", "c")},
		}},
		{"RENAME of a list and a set", []step{
			{cmd("RPUSH", "{a}l", "a", "b"), ":2\r\n"},
			{cmd("EXPIRE", "{a}l", "100"), ":1\r\n"},
			{cmd("RENAME", "{a}l", "{b}l"), "+OK\r\n"},
			{cmd("LRANGE", "{b}l", "0", "-1"), arr("a", "b")},
			{cmd("TTL", "{b}l"), ":100\r\n"},
			{cmd("EXISTS", "{a}l"), ":0\r\n"},
			{cmd("SADD", "{a}s", "m", "n"), ":2\r\n"},
			{cmd("RENAMENX", "{a}s", "{b}l"), ":0\r\n"},
			{cmd("RENAMENX", "{a}s", "plain"), ":1\r\n"},
			{cmd("SMEMBERS", "plain"), members("m", "n")},
			{cmd("EXISTS", "{a}s"), ":0\r\n"},
			{cmd("SADD", "{a}s", "m"), ":1\r\n"}, // removed from the source, not hidden
			{cmd("LRANGE", "{b}l", "0", "-1"), arr("a", "b")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, addr := startServer(t, Config{})
			converse(t, addr, tt.steps)
		})
	}
}

// TestWritesAcrossHashTagsInTransaction: inside MULTI the same commands across tags are
// refused, as Redis Cluster refuses them: a transaction covers one tag's partition. EXEC
// refuses the keys it finds (the command table's), and a command whose own parsing finds
// a key of another tag (GEORADIUS's last STORE) answers CROSSSLOT in EXEC's reply. Nothing
// is written.
func TestWritesAcrossHashTagsInTransaction(t *testing.T) {
	tests := []struct {
		name   string
		before []step
		queued []string
		exec   string
		after  []step
	}{
		{name: "SUNIONSTORE",
			before: []step{{cmd("SADD", "{a}1", "m"), ":1\r\n"}},
			queued: cmd("SUNIONSTORE", "{c}d", "{a}1"), exec: crossSlot,
			after: []step{{cmd("EXISTS", "{c}d"), ":0\r\n"}}},
		{name: "SINTERSTORE",
			before: []step{{cmd("SADD", "{a}1", "m"), ":1\r\n"}},
			queued: cmd("SINTERSTORE", "{a}d", "{a}1", "{b}2"), exec: crossSlot,
			after: []step{{cmd("EXISTS", "{a}d"), ":0\r\n"}}},
		{name: "SDIFFSTORE",
			before: []step{{cmd("SADD", "{a}1", "m"), ":1\r\n"}},
			queued: cmd("SDIFFSTORE", "plain", "{a}1"), exec: crossSlot,
			after: []step{{cmd("EXISTS", "plain"), ":0\r\n"}}},
		{name: "SMOVE",
			before: []step{{cmd("SADD", "{a}src", "m"), ":1\r\n"}},
			queued: cmd("SMOVE", "{a}src", "{b}dst", "m"), exec: crossSlot,
			after: []step{{cmd("SMEMBERS", "{a}src"), members("m")}, {cmd("EXISTS", "{b}dst"), ":0\r\n"}}},
		{name: "ZUNIONSTORE",
			before: []step{{cmd("ZADD", "{a}1", "1", "m"), ":1\r\n"}},
			queued: cmd("ZUNIONSTORE", "{c}d", "1", "{a}1"), exec: crossSlot,
			after: []step{{cmd("EXISTS", "{c}d"), ":0\r\n"}}},
		{name: "ZINTERSTORE",
			before: []step{{cmd("ZADD", "{a}1", "1", "m"), ":1\r\n"}},
			queued: cmd("ZINTERSTORE", "{a}d", "2", "{a}1", "{b}2"), exec: crossSlot,
			after: []step{{cmd("EXISTS", "{a}d"), ":0\r\n"}}},
		{name: "ZDIFFSTORE",
			before: []step{{cmd("ZADD", "{a}1", "1", "m"), ":1\r\n"}},
			queued: cmd("ZDIFFSTORE", "{c}d", "1", "{a}1"), exec: crossSlot,
			after: []step{{cmd("EXISTS", "{c}d"), ":0\r\n"}}},
		{name: "ZRANGESTORE",
			before: []step{{cmd("ZADD", "{a}1", "1", "m"), ":1\r\n"}},
			queued: cmd("ZRANGESTORE", "{c}d", "{a}1", "0", "-1"), exec: crossSlot,
			after: []step{{cmd("EXISTS", "{c}d"), ":0\r\n"}}},
		{name: "GEOSEARCHSTORE",
			before: []step{{cmd("GEOADD", "{a}g", "15", "37", "m"), ":1\r\n"}},
			queued: cmd("GEOSEARCHSTORE", "{c}d", "{a}g", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km"), exec: crossSlot,
			after: []step{{cmd("EXISTS", "{c}d"), ":0\r\n"}}},
		{name: "GEORADIUS STORE",
			before: []step{{cmd("GEOADD", "{a}g", "15", "37", "m"), ":1\r\n"}},
			queued: cmd("GEORADIUS", "{a}g", "15", "37", "1", "km", "STORE", "{c}d"), exec: crossSlot,
			after: []step{{cmd("EXISTS", "{c}d"), ":0\r\n"}}},
		{name: "GEORADIUS, the last of two STOREs of another tag: the command's own refusal",
			before: []step{{cmd("GEOADD", "{a}g", "15", "37", "m"), ":1\r\n"}},
			queued: cmd("GEORADIUS", "{a}g", "15", "37", "1", "km", "STORE", "{a}d", "STORE", "{c}d"), exec: "*1\r\n" + crossSlot,
			after: []step{{cmd("EXISTS", "{a}d", "{c}d"), ":0\r\n"}}},
		{name: "SORT STORE",
			before: []step{{cmd("RPUSH", "{a}l", "1"), ":1\r\n"}},
			queued: cmd("SORT", "{a}l", "STORE", "{c}d"), exec: crossSlot,
			after: []step{{cmd("EXISTS", "{c}d"), ":0\r\n"}}},
		{name: "LMOVE",
			before: []step{{cmd("RPUSH", "{a}src", "x"), ":1\r\n"}},
			queued: cmd("LMOVE", "{a}src", "{b}dst", "LEFT", "RIGHT"), exec: crossSlot,
			after: []step{{cmd("LRANGE", "{a}src", "0", "-1"), arr("x")}, {cmd("EXISTS", "{b}dst"), ":0\r\n"}}},
		{name: "RPOPLPUSH",
			before: []step{{cmd("RPUSH", "{a}src", "x"), ":1\r\n"}},
			queued: cmd("RPOPLPUSH", "{a}src", "plain"), exec: crossSlot,
			after: []step{{cmd("LRANGE", "{a}src", "0", "-1"), arr("x")}, {cmd("EXISTS", "plain"), ":0\r\n"}}},
		{name: "BLMOVE",
			before: []step{{cmd("RPUSH", "{a}src", "x"), ":1\r\n"}},
			queued: cmd("BLMOVE", "{a}src", "{b}dst", "LEFT", "RIGHT", "0"), exec: crossSlot,
			after: []step{{cmd("LRANGE", "{a}src", "0", "-1"), arr("x")}, {cmd("EXISTS", "{b}dst"), ":0\r\n"}}},
		{name: "BRPOPLPUSH",
			before: []step{{cmd("RPUSH", "{a}src", "x"), ":1\r\n"}},
			queued: cmd("BRPOPLPUSH", "{a}src", "{b}dst", "0"), exec: crossSlot,
			after: []step{{cmd("LRANGE", "{a}src", "0", "-1"), arr("x")}, {cmd("EXISTS", "{b}dst"), ":0\r\n"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, addr := startServer(t, Config{})
			steps := append([]step{}, tt.before...)
			steps = append(steps, step{cmd("MULTI"), "+OK\r\n"}, step{tt.queued, "+QUEUED\r\n"}, step{cmd("EXEC"), tt.exec})
			converse(t, addr, append(steps, tt.after...))
		})
	}
}
