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
			{cmd("HSET", "{u}h", "f", "v"), "-ERR HSET cannot run inside a transaction yet; kura's transactions run " + transactionalList() + "\r\n"},
			{cmd("EXEC"), "-EXECABORT Transaction discarded because of previous errors.\r\n"},
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

// TestTransactionLeavesCollectionsAlone: a transaction reads a collection's key for the
// string commands that refuse it (WRONGTYPE), but does not replace or delete it: its
// elements are records the transaction does not cover.
func TestTransactionLeavesCollectionsAlone(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	c := dial(t, addr)
	c.do(":1\r\n", "HSET", "{c}h", "f", "v")
	c.do("+OK\r\n", "MULTI")
	c.do("+QUEUED\r\n", "GET", "{c}h")
	c.do("+QUEUED\r\n", "EXISTS", "{c}h")
	c.do("+QUEUED\r\n", "DEL", "{c}h")
	c.do("*3\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n:1\r\n-ERR kura: key \"{c}h\" holds a hash, which a transaction does not replace or delete yet\r\n", "EXEC")
	c.do(":1\r\n", "HLEN", "{c}h")
	if !strings.Contains(transactionalList(), "INCR") || strings.Contains(transactionalList(), "HSET") {
		t.Errorf("transactional commands: %s", transactionalList())
	}
}
