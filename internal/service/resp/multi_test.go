package resp

import (
	"strings"
	"testing"
)

// TestTransactions: MULTI queues, EXEC runs the queue as one transaction and answers each
// command's reply in order, DISCARD drops it, and the errors are Redis's, in RESP2 and
// RESP3.
func TestTransactions(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"queue and exec", []step{
			{cmd("SET", "{u}a", "1"), "+OK\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("INCR", "{u}a"), "+QUEUED\r\n"},
			{cmd("SET", "{u}b", "x", "GET"), "+QUEUED\r\n"},
			{cmd("APPEND", "{u}b", "y"), "+QUEUED\r\n"},
			{cmd("GET", "{u}b"), "+QUEUED\r\n"},
			{cmd("MGET", "{u}a", "{u}b", "{u}c"), "+QUEUED\r\n"},
			{cmd("DEL", "{u}a", "{u}c"), "+QUEUED\r\n"},
			{cmd("EXISTS", "{u}a"), "+QUEUED\r\n"},
			{cmd("PING"), "+QUEUED\r\n"},
			{cmd("EXPIRE", "{u}b", "100"), "+QUEUED\r\n"},
			{cmd("PERSIST", "{u}b"), "+QUEUED\r\n"},
			{cmd("TTL", "{u}b"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*11\r\n:2\r\n$-1\r\n:2\r\n$2\r\nxy\r\n*3\r\n$1\r\n2\r\n$2\r\nxy\r\n$-1\r\n:1\r\n:0\r\n+PONG\r\n:1\r\n:1\r\n:-1\r\n"},
			{cmd("MGET", "{u}a", "{u}b"), "*2\r\n$-1\r\n$2\r\nxy\r\n"},
		}},
		{"a runtime error is its command's reply, and the others run", []step{
			{cmd("SET", "{u}s", "text"), "+OK\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("INCR", "{u}s"), "+QUEUED\r\n"},
			{cmd("SET", "{u}n", "5"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*2\r\n-ERR value is not an integer or out of range\r\n+OK\r\n"},
			{cmd("GET", "{u}n"), "$1\r\n5\r\n"},
		}},
		{"commands that touch no key run at EXEC, their replies in their place", []step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("SET", "{u}k", "1"), "+QUEUED\r\n"},
			{cmd("ECHO", "hi"), "+QUEUED\r\n"},
			{cmd("CONFIG", "GET", "proto-max-bulk-len"), "+QUEUED\r\n"},
			{cmd("GET", "{u}k"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*4\r\n+OK\r\n$2\r\nhi\r\n*2\r\n$18\r\nproto-max-bulk-len\r\n$8\r\n16777216\r\n$1\r\n1\r\n"},
		}},
		{"CONFIG SET runs once, after the round, its reply in its place", []step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("SET", "{u}c", "1"), "+QUEUED\r\n"},
			{cmd("CONFIG", "SET", "maxmemory", "bla"), "+QUEUED\r\n"},
			{cmd("CONFIG", "SET", "maxmemory", "0"), "+QUEUED\r\n"},
			{cmd("GET", "{u}c"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*4\r\n+OK\r\n-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - can't set immutable config: kura keeps its data on disk and does not limit its memory\r\n+OK\r\n$1\r\n1\r\n"},
		}},
		{"a collection emptied inside the transaction reads as absent there and after", []step{
			{cmd("RPUSH", "{u}l", "a"), ":1\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("LPOP", "{u}l"), "+QUEUED\r\n"},
			{cmd("EXISTS", "{u}l"), "+QUEUED\r\n"},
			{cmd("SET", "{u}l", "s", "NX"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*3\r\n$1\r\na\r\n:0\r\n+OK\r\n"},
			{cmd("GET", "{u}l"), "$1\r\ns\r\n"},
		}},
		{"an empty transaction", []step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("EXEC"), "*0\r\n"},
		}},
		{"discard", []step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("SET", "{u}d", "1"), "+QUEUED\r\n"},
			{cmd("DISCARD"), "+OK\r\n"},
			{cmd("GET", "{u}d"), "$-1\r\n"},
			{cmd("DISCARD"), "-ERR DISCARD without MULTI\r\n"},
			{cmd("EXEC"), "-ERR EXEC without MULTI\r\n"},
		}},
		{"nested MULTI and WATCH inside MULTI are refused, and the transaction goes on", []step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("MULTI"), "-ERR MULTI calls can not be nested\r\n"},
			{cmd("WATCH", "{u}a"), "-ERR WATCH inside MULTI is not allowed\r\n"},
			{cmd("SET", "{u}a", "1"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*1\r\n+OK\r\n"},
		}},
		{"an error while queueing aborts the EXEC", []step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("SET", "{u}e", "1"), "+QUEUED\r\n"},
			{cmd("NOSUCH", "x"), "-ERR unknown command 'NOSUCH', with args beginning with: 'x' \r\n"},
			{cmd("GET"), "-ERR wrong number of arguments for 'get' command\r\n"},
			{cmd("EXEC"), "-EXECABORT Transaction discarded because of previous errors.\r\n"},
			{cmd("GET", "{u}e"), "$-1\r\n"},
			{cmd("PING"), "+PONG\r\n"},
		}},
		{"a command no transaction runs yet is refused by name", []step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("RENAME", "{u}a", "{u}b"), "-ERR RENAME cannot run inside a transaction yet; kura's transactions run " + transactionalList() + ", the hash, set, sorted set and list commands, and SORT\r\n"},
			{cmd("EXEC"), "-EXECABORT Transaction discarded because of previous errors.\r\n"},
			{cmd("PING"), "+PONG\r\n"}, // out of MULTI
		}},
		{"DISCARD after a refused command leaves MULTI", []step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("SET", "{u}f", "1"), "+QUEUED\r\n"},
			{cmd("RENAME", "{u}a", "{u}b"), "-ERR RENAME cannot run inside a transaction yet; kura's transactions run " + transactionalList() + ", the hash, set, sorted set and list commands, and SORT\r\n"},
			{cmd("DISCARD"), "+OK\r\n"},
			{cmd("GET", "{u}f"), "$-1\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("SET", "{u}f", "2"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*1\r\n+OK\r\n"},
		}},
		{"keys of several hash tags", []step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("SET", "{u}a", "1"), "+QUEUED\r\n"},
			{cmd("SET", "{v}a", "1"), "+QUEUED\r\n"},
			{cmd("EXEC"), "-CROSSSLOT Keys in request don't hash to the same slot\r\n"},
			{cmd("GET", "{u}a"), "$-1\r\n"},
		}},
		{"a keyspace of per-key transactions runs one key and refuses several with the reason", []step{
			{cmd("KURA.KEYSPACE", "other"), "+OK\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("INCR", "k"), "+QUEUED\r\n"},
			{cmd("INCR", "k"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*2\r\n:1\r\n:2\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("SET", "{u}a", "1"), "+QUEUED\r\n"},
			{cmd("SET", "{u}b", "1"), "+QUEUED\r\n"},
			{cmd("EXEC"), "-ERR invalid argument: keyspace other runs its lightweight transactions per key\r\n"},
		}},
		{"RESP3", []step{
			{cmd("HELLO", "3"), "%7\r\n$6\r\nserver\r\n$4\r\nkura\r\n$7\r\nversion\r\n$5\r\n7.0.0\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:1\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("GET", "{u}none"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*1\r\n_\r\n"},
			{cmd("WATCH", "{u}w"), "+OK\r\n"},
			{cmd("SET", "{u}w", "changed"), "+OK\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("PING"), "+QUEUED\r\n"},
			{cmd("EXEC"), "_\r\n"},
		}},
		{"reset leaves the transaction", []step{
			{cmd("WATCH", "{u}r"), "+OK\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("RESET"), "+RESET\r\n"},
			{cmd("EXEC"), "-ERR EXEC without MULTI\r\n"},
			{cmd("SET", "{u}r", "1"), "+OK\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("PING"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*1\r\n+PONG\r\n"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, addr := startServer(t, Config{})
			converse(t, addr, tt.steps)
		})
	}
}

// TestWatch: EXEC runs when no watched key changed since WATCH, answers a null array when
// one did (whoever changed it, and when it expired or was deleted), and forgets the
// watched keys either way; UNWATCH and DISCARD forget them too.
func TestWatch(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	a, b := dial(t, addr), dial(t, addr)
	a.do("+OK\r\n", "SET", "{w}x", "30")
	a.do("+OK\r\n", "WATCH", "{w}x", "{w}y")
	a.do("+OK\r\n", "MULTI")
	a.do("+QUEUED\r\n", "INCR", "{w}x")
	a.do("*1\r\n:31\r\n", "EXEC")

	a.do("+OK\r\n", "WATCH", "{w}x")
	b.do("+OK\r\n", "SET", "{w}x", "40")
	a.do("+OK\r\n", "MULTI")
	a.do("+QUEUED\r\n", "INCR", "{w}x")
	a.do("*-1\r\n", "EXEC")
	a.do("$2\r\n40\r\n", "GET", "{w}x")

	// After a failed EXEC the key is no longer watched.
	b.do("+OK\r\n", "SET", "{w}x", "41")
	a.do("+OK\r\n", "MULTI")
	a.do("+QUEUED\r\n", "PING")
	a.do("*1\r\n+PONG\r\n", "EXEC")

	// A key absent when watched and written since.
	a.do("+OK\r\n", "WATCH", "{w}y")
	b.do("+OK\r\n", "SET", "{w}y", "1")
	a.do("+OK\r\n", "MULTI")
	a.do("+QUEUED\r\n", "PING")
	a.do("*-1\r\n", "EXEC")

	// Deleted since.
	a.do("+OK\r\n", "WATCH", "{w}y")
	b.do(":1\r\n", "DEL", "{w}y")
	a.do("+OK\r\n", "MULTI")
	a.do("+QUEUED\r\n", "PING")
	a.do("*-1\r\n", "EXEC")

	for _, forget := range [][]string{{"UNWATCH"}, {"MULTI", "DISCARD"}} {
		a.do("+OK\r\n", "WATCH", "{w}x")
		b.do("+OK\r\n", "SET", "{w}x", "50")
		for _, c := range forget {
			a.do("+OK\r\n", c)
		}
		a.do("+OK\r\n", "MULTI")
		a.do("+QUEUED\r\n", "PING")
		a.do("*1\r\n+PONG\r\n", "EXEC")
	}

	// Watched in one keyspace, run in another.
	a.do("+OK\r\n", "WATCH", "{w}x")
	a.do("+OK\r\n", "KURA.KEYSPACE", "other")
	a.do("+OK\r\n", "MULTI")
	a.do("+QUEUED\r\n", "PING")
	a.do("-ERR kura: key \"{w}x\" was watched in keyspace default, and EXEC runs in other: a transaction covers one keyspace\r\n", "EXEC")
}

// TestTransactionReplacesCollections: a transaction's string commands read a
// collection's key (WRONGTYPE for GET), and DEL deletes it whole, by a reset point just
// below the transaction's timestamp: what the same transaction writes to the key after
// survives, what was there before does not come back.
func TestTransactionReplacesCollections(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	c := dial(t, addr)
	c.do(":2\r\n", "HSET", "{c}h", "old1", "v", "old2", "v")
	c.do("+OK\r\n", "MULTI")
	c.do("+QUEUED\r\n", "GET", "{c}h")
	c.do("+QUEUED\r\n", "EXISTS", "{c}h")
	c.do("+QUEUED\r\n", "DEL", "{c}h")
	c.do("+QUEUED\r\n", "HSET", "{c}h", "new", "v")
	c.do("+QUEUED\r\n", "HKEYS", "{c}h")
	c.do("*5\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n:1\r\n:1\r\n:1\r\n*1\r\n$3\r\nnew\r\n", "EXEC")
	c.do("*1\r\n$3\r\nnew\r\n", "HKEYS", "{c}h")
	c.do("+OK\r\n", "MULTI")
	c.do("+QUEUED\r\n", "SET", "{c}h", "s")
	c.do("*1\r\n+OK\r\n", "EXEC")
	c.do(":1\r\n", "DEL", "{c}h")
	c.do(":1\r\n", "HSET", "{c}h", "f", "v")
	c.do("*1\r\n$1\r\nf\r\n", "HKEYS", "{c}h")
	if !strings.Contains(transactionalList(), "INCR") || strings.Contains(transactionalList(), "SORT") {
		t.Errorf("transactional commands: %s", transactionalList())
	}
}

// elementRefused is the error a command that reads and rewrites one element of key gets
// inside EXEC where that element's own transactions run on another Paxos instance.
func elementRefused(key string) string {
	return "-ERR kura: a command that reads and rewrites one element of \"" + key + "\" (a pop, HINCRBY, HSETNX, ZINCRBY...) runs outside a transaction on the element's own Paxos instance, which EXEC is not serialized with; inside MULTI it needs a keyspace created with --transactions partition, and a key with a hash tag unless the keyspace runs element records on their collection's instance (docs/lwt.md)\r\n"
}

// TestCollectionTransactions: the hash, set, sorted set and list commands run inside
// EXEC over the transaction's records, each seeing what the commands before it wrote,
// and their writes are there after it; a blocking pop does not wait, as in Redis.
func TestCollectionTransactions(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"hash", []step{
			{cmd("HSET", "{h}k", "a", "1"), ":1\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("HSET", "{h}k", "b", "2", "a", "3"), "+QUEUED\r\n"},
			{cmd("HINCRBY", "{h}k", "b", "5"), "+QUEUED\r\n"},
			{cmd("HDEL", "{h}k", "a"), "+QUEUED\r\n"},
			{cmd("HGETALL", "{h}k"), "+QUEUED\r\n"},
			{cmd("SET", "{h}s", "x"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*5\r\n:1\r\n:7\r\n:1\r\n*2\r\n$1\r\nb\r\n$1\r\n7\r\n+OK\r\n"},
			{cmd("HGETALL", "{h}k"), "*2\r\n$1\r\nb\r\n$1\r\n7\r\n"},
			{cmd("GET", "{h}s"), "$1\r\nx\r\n"},
		}},
		{"set", []step{
			{cmd("SADD", "{s}k", "a"), ":1\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("SADD", "{s}k", "b", "c"), "+QUEUED\r\n"},
			{cmd("SREM", "{s}k", "a"), "+QUEUED\r\n"},
			{cmd("SISMEMBER", "{s}k", "b"), "+QUEUED\r\n"},
			{cmd("SMEMBERS", "{s}k"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*4\r\n:2\r\n:1\r\n:1\r\n*2\r\n$1\r\nb\r\n$1\r\nc\r\n"},
			{cmd("SMEMBERS", "{s}k"), "*2\r\n$1\r\nb\r\n$1\r\nc\r\n"},
			{cmd("SREM", "{s}k", "b"), ":1\r\n"},
		}},
		{"sorted set", []step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("ZADD", "{z}k", "1", "a", "2", "b"), "+QUEUED\r\n"},
			{cmd("ZINCRBY", "{z}k", "5", "a"), "+QUEUED\r\n"},
			{cmd("ZPOPMIN", "{z}k"), "+QUEUED\r\n"},
			{cmd("ZRANGE", "{z}k", "0", "-1", "WITHSCORES"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*4\r\n:2\r\n$1\r\n6\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n*2\r\n$1\r\na\r\n$1\r\n6\r\n"},
			{cmd("ZRANGE", "{z}k", "0", "-1", "WITHSCORES"), "*2\r\n$1\r\na\r\n$1\r\n6\r\n"},
		}},
		{"list, and a blocking pop that does not wait", []step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("RPUSH", "{l}k", "a", "b"), "+QUEUED\r\n"},
			{cmd("LPUSH", "{l}k", "c"), "+QUEUED\r\n"},
			{cmd("LPOP", "{l}k"), "+QUEUED\r\n"},
			{cmd("LRANGE", "{l}k", "0", "-1"), "+QUEUED\r\n"},
			{cmd("BLPOP", "{l}empty", "0"), "+QUEUED\r\n"},
			{cmd("BRPOP", "{l}k", "0"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*6\r\n:2\r\n:3\r\n$1\r\nc\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n*-1\r\n*2\r\n$4\r\n{l}k\r\n$1\r\nb\r\n"},
			{cmd("LRANGE", "{l}k", "0", "-1"), "*1\r\n$1\r\na\r\n"},
		}},
		{"a list deleted and pushed again in one transaction", []step{
			{cmd("RPUSH", "{l}d", "old"), ":1\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("DEL", "{l}d"), "+QUEUED\r\n"},
			{cmd("RPUSH", "{l}d", "new"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*2\r\n:1\r\n:1\r\n"},
			{cmd("LRANGE", "{l}d", "0", "-1"), "*1\r\n$3\r\nnew\r\n"},
		}},
		{"commands whose keys follow a count", []step{
			{cmd("RPUSH", "{m}b", "x", "y"), ":2\r\n"},
			{cmd("ZADD", "{m}z", "1", "a"), ":1\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("LMPOP", "2", "{m}a", "{m}b", "LEFT"), "+QUEUED\r\n"},
			{cmd("ZUNIONSTORE", "{m}d", "1", "{m}z", "WEIGHTS", "3"), "+QUEUED\r\n"},
			{cmd("LMPOP", "0", "{m}a", "LEFT"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*3\r\n*2\r\n$4\r\n{m}b\r\n*1\r\n$1\r\nx\r\n:1\r\n-ERR numkeys should be greater than 0\r\n"},
			{cmd("ZRANGE", "{m}d", "0", "-1", "WITHSCORES"), "*2\r\n$1\r\na\r\n$1\r\n3\r\n"},
		}},
		{"a read-and-rewrite of one element of a key without a tag, on its collection's instance", []step{
			{cmd("HSET", "h", "f", "1"), ":1\r\n"},
			{cmd("RPUSH", "xlist", "a", "b", "c"), ":3\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("HINCRBY", "h", "f", "1"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*1\r\n:2\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("LPOP", "xlist"), "+QUEUED\r\n"},
			{cmd("BLPOP", "xlist", "0"), "+QUEUED\r\n"},
			{cmd("BLMPOP", "0", "1", "xlist", "LEFT"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*3\r\n$1\r\na\r\n*2\r\n$5\r\nxlist\r\n$1\r\nb\r\n*2\r\n$5\r\nxlist\r\n*1\r\n$1\r\nc\r\n"},
			{cmd("HGET", "h", "f"), "$1\r\n2\r\n"},
			{cmd("EXISTS", "xlist"), ":0\r\n"},
		}},
		{"a read-and-rewrite of one element is refused where its own transactions run on another instance", []step{
			{cmd("KURA.KEYSPACE", "upgraded"), "+OK\r\n"},
			{cmd("HSET", "h", "f", "1"), ":1\r\n"},
			{cmd("RPUSH", "l", "a"), ":1\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("HINCRBY", "h", "f", "1"), "+QUEUED\r\n"},
			{cmd("HSET", "h", "g", "2"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*2\r\n" + elementRefused("h") + ":1\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("LPOP", "l"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*1\r\n" + elementRefused("l")},
			{cmd("HGETALL", "h"), "*4\r\n$1\r\nf\r\n$1\r\n1\r\n$1\r\ng\r\n$1\r\n2\r\n"},
			{cmd("LRANGE", "l", "0", "-1"), "*1\r\n$1\r\na\r\n"},
		}},
		{"wrong type inside a transaction", []step{
			{cmd("SET", "{w}s", "x"), "+OK\r\n"},
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("LPUSH", "{w}s", "a"), "+QUEUED\r\n"},
			{cmd("HSET", "{w}h", "f", "v"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*2\r\n" + wrongType + ":1\r\n"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, addr := startServer(t, Config{})
			converse(t, addr, tt.steps)
		})
	}
}

// TestWatchCollection: EXEC fails when any record of a watched collection changed since
// WATCH, an element's write that leaves the header alone (HDEL) included, and runs when
// none did.
func TestWatchCollection(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	a, b := dial(t, addr), dial(t, addr)
	a.do(":1\r\n", "HSET", "{w}h", "f", "1")
	for _, change := range []step{
		{cmd("HSET", "{w}h", "g", "2"), ":1\r\n"},
		{cmd("HDEL", "{w}h", "g"), ":1\r\n"},
		{cmd("HINCRBY", "{w}h", "f", "1"), ":2\r\n"},
	} {
		a.do("+OK\r\n", "WATCH", "{w}h")
		b.do(change.want, change.args...)
		a.do("+OK\r\n", "MULTI")
		a.do("+QUEUED\r\n", "HSET", "{w}h", "x", "1")
		a.do("*-1\r\n", "EXEC")
	}
	a.do("+OK\r\n", "WATCH", "{w}h")
	b.do("$1\r\n2\r\n", "HGET", "{w}h", "f")
	a.do("+OK\r\n", "MULTI")
	a.do("+QUEUED\r\n", "HSET", "{w}h", "x", "1")
	a.do("*1\r\n:1\r\n", "EXEC")
}
