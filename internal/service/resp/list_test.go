package resp

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// arr is the RESP2 array of bulk strings.
func arr(items ...string) string {
	out := "*" + strconv.Itoa(len(items)) + "\r\n"
	for _, it := range items {
		out += "$" + strconv.Itoa(len(it)) + "\r\n" + it + "\r\n"
	}
	return out
}

func TestListCommands(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"push and read", []step{
			{cmd("RPUSH", "l", "a", "b"), ":2\r\n"},
			{cmd("LPUSH", "l", "x", "y"), ":4\r\n"}, // y x a b
			{cmd("LRANGE", "l", "0", "-1"), arr("y", "x", "a", "b")},
			{cmd("LRANGE", "l", "1", "2"), arr("x", "a")},
			{cmd("LRANGE", "l", "-2", "100"), arr("a", "b")},
			{cmd("LRANGE", "l", "3", "1"), "*0\r\n"},
			{cmd("LRANGE", "nokey", "0", "-1"), "*0\r\n"},
			{cmd("LRANGE", "l", "a", "1"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("LLEN", "l"), ":4\r\n"},
			{cmd("LLEN", "nokey"), ":0\r\n"},
			{cmd("LINDEX", "l", "0"), "$1\r\ny\r\n"},
			{cmd("LINDEX", "l", "-1"), "$1\r\nb\r\n"},
			{cmd("LINDEX", "l", "4"), "$-1\r\n"},
			{cmd("TYPE", "l"), "+list\r\n"},
			{cmd("OBJECT", "ENCODING", "l"), "$9\r\nquicklist\r\n"},
			{cmd("LPUSHX", "nokey", "a"), ":0\r\n"},
			{cmd("RPUSHX", "l", "c"), ":5\r\n"},
			{cmd("EXISTS", "nokey"), ":0\r\n"},
		}},
		{"pops", []step{
			{cmd("RPUSH", "l", "a", "b", "c", "d"), ":4\r\n"},
			{cmd("LPOP", "l"), "$1\r\na\r\n"},
			{cmd("RPOP", "l"), "$1\r\nd\r\n"},
			{cmd("LPOP", "l", "5"), arr("b", "c")},
			// The last pop leaves the header (a push at that moment would be lost
			// otherwise), and the emptied list reads as absent, as Redis deletes it.
			{cmd("EXISTS", "l"), ":0\r\n"},
			{cmd("LLEN", "l"), ":0\r\n"},
			{cmd("LPOP", "l"), "$-1\r\n"},
			{cmd("LPOP", "l", "2"), "*-1\r\n"},
			{cmd("LPOP", "l", "-1"), "-ERR value is out of range, must be positive\r\n"},
			{cmd("RPUSH", "l", "a"), ":1\r\n"},
			{cmd("RPOP", "l", "0"), "*0\r\n"},
			{cmd("LPOP", "l", "1", "2"), "-ERR wrong number of arguments for 'lpop' command\r\n"},
		}},
		{"set, remove, insert, trim", []step{
			{cmd("RPUSH", "l", "a", "b", "a", "c", "a"), ":5\r\n"},
			{cmd("LSET", "l", "1", "B"), "+OK\r\n"},
			{cmd("LSET", "l", "-1", "A"), "+OK\r\n"},
			{cmd("LSET", "l", "9", "x"), "-ERR index out of range\r\n"},
			{cmd("LSET", "nokey", "0", "x"), "-ERR no such key\r\n"},
			{cmd("LRANGE", "l", "0", "-1"), arr("a", "B", "a", "c", "A")},
			{cmd("LREM", "l", "-1", "a"), ":1\r\n"}, // from the tail
			{cmd("LRANGE", "l", "0", "-1"), arr("a", "B", "c", "A")},
			{cmd("LINSERT", "l", "BEFORE", "c", "x"), ":5\r\n"},
			{cmd("LINSERT", "l", "AFTER", "c", "y"), ":6\r\n"},
			{cmd("LINSERT", "l", "AFTER", "A", "z"), ":7\r\n"},
			{cmd("LINSERT", "l", "BEFORE", "a", "w"), ":8\r\n"},
			{cmd("LINSERT", "l", "BEFORE", "none", "w"), ":-1\r\n"},
			{cmd("LINSERT", "nokey", "BEFORE", "a", "w"), ":0\r\n"},
			{cmd("LINSERT", "l", "ASIDE", "a", "w"), "-ERR syntax error\r\n"},
			{cmd("LRANGE", "l", "0", "-1"), arr("w", "a", "B", "x", "c", "y", "A", "z")},
			{cmd("LTRIM", "l", "1", "-2"), "+OK\r\n"},
			{cmd("LRANGE", "l", "0", "-1"), arr("a", "B", "x", "c", "y", "A")},
			{cmd("LREM", "l", "0", "x"), ":1\r\n"},
			{cmd("LTRIM", "l", "5", "1"), "+OK\r\n"}, // empties the list, which reads as absent
			{cmd("EXISTS", "l"), ":0\r\n"},
			{cmd("LRANGE", "l", "0", "-1"), "*0\r\n"},
		}},
		{"lpos", []step{
			{cmd("RPUSH", "l", "a", "b", "c", "a", "b", "a"), ":6\r\n"},
			{cmd("LPOS", "l", "a"), ":0\r\n"},
			{cmd("LPOS", "l", "a", "RANK", "2"), ":3\r\n"},
			{cmd("LPOS", "l", "a", "RANK", "-1"), ":5\r\n"},
			{cmd("LPOS", "l", "a", "COUNT", "0"), "*3\r\n:0\r\n:3\r\n:5\r\n"},
			{cmd("LPOS", "l", "a", "COUNT", "2", "RANK", "-1"), "*2\r\n:5\r\n:3\r\n"},
			{cmd("LPOS", "l", "a", "COUNT", "0", "MAXLEN", "4"), "*2\r\n:0\r\n:3\r\n"},
			{cmd("LPOS", "l", "z"), "$-1\r\n"},
			{cmd("LPOS", "l", "a", "RANK", "0"), "-ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list\r\n"},
			{cmd("LPOS", "l", "a", "COUNT", "-1"), "-ERR COUNT can't be negative\r\n"},
			{cmd("LPOS", "l", "a", "MAXLEN", "-1"), "-ERR MAXLEN can't be negative\r\n"},
			{cmd("LPOS", "l", "a", "BOGUS", "1"), "-ERR syntax error\r\n"},
		}},
		{"move", []step{
			{cmd("RPUSH", "{q}:src", "a", "b", "c"), ":3\r\n"},
			{cmd("LMOVE", "{q}:src", "{q}:dst", "LEFT", "RIGHT"), "$1\r\na\r\n"},
			{cmd("RPOPLPUSH", "{q}:src", "{q}:dst"), "$1\r\nc\r\n"},
			{cmd("LRANGE", "{q}:dst", "0", "-1"), arr("c", "a")},
			{cmd("LMOVE", "{q}:src", "{q}:src", "RIGHT", "LEFT"), "$1\r\nb\r\n"}, // a rotation
			{cmd("LMOVE", "{q}:src", "{q}:dst", "RIGHT", "LEFT"), "$1\r\nb\r\n"},
			{cmd("LLEN", "{q}:src"), ":0\r\n"},
			{cmd("LMOVE", "{q}:src", "{q}:dst", "RIGHT", "LEFT"), "$-1\r\n"},
			{cmd("LMOVE", "{q}:dst", "{q}:x", "UP", "LEFT"), "-ERR syntax error\r\n"},
			{cmd("LRANGE", "{q}:dst", "0", "-1"), arr("b", "c", "a")},
		}},
		{"lmpop", []step{
			{cmd("RPUSH", "{t}:a", "a", "b", "c", "d"), ":4\r\n"},
			{cmd("LMPOP", "2", "{t}:none", "{t}:a", "LEFT"), "*2\r\n$5\r\n{t}:a\r\n" + arr("a")},
			{cmd("LMPOP", "2", "{t}:none", "{t}:a", "right", "COUNT", "2"), "*2\r\n$5\r\n{t}:a\r\n" + arr("d", "c")},
			{cmd("LMPOP", "1", "{t}:a", "LEFT", "count", "10"), "*2\r\n$5\r\n{t}:a\r\n" + arr("b")},
			{cmd("LMPOP", "2", "{t}:a", "{t}:none", "LEFT"), "*-1\r\n"},
			{cmd("BLMPOP", "0.01", "2", "{t}:a", "{t}:none", "LEFT", "COUNT", "3"), "*-1\r\n"},
			{cmd("RPUSH", "{t}:b", "x", "y"), ":2\r\n"},
			{cmd("BLMPOP", "0", "2", "{t}:a", "{t}:b", "RIGHT", "COUNT", "3"), "*2\r\n$5\r\n{t}:b\r\n" + arr("y", "x")},
			// Redis's errors, in its order: numkeys, the end, the options, the timeout.
			{cmd("LMPOP", "1"), "-ERR wrong number of arguments for 'lmpop' command\r\n"},
			{cmd("LMPOP", "0", "{t}:a", "LEFT"), "-ERR numkeys should be greater than 0\r\n"},
			{cmd("LMPOP", "a", "{t}:a", "LEFT"), "-ERR numkeys should be greater than 0\r\n"},
			{cmd("LMPOP", "2", "{t}:a", "LEFT"), "-ERR syntax error\r\n"},
			{cmd("LMPOP", "9223372036854775807", "{t}:a", "LEFT"), "-ERR syntax error\r\n"},
			{cmd("LMPOP", "1", "{t}:a", "UP"), "-ERR syntax error\r\n"},
			{cmd("LMPOP", "1", "{t}:a", "LEFT", "COUNT"), "-ERR syntax error\r\n"},
			{cmd("LMPOP", "1", "{t}:a", "LEFT", "COUNT", "1", "COUNT", "2"), "-ERR syntax error\r\n"},
			{cmd("LMPOP", "1", "{t}:a", "LEFT", "bad"), "-ERR syntax error\r\n"},
			{cmd("LMPOP", "1", "{t}:a", "LEFT", "COUNT", "0"), "-ERR count should be greater than 0\r\n"},
			{cmd("LMPOP", "1", "{t}:a", "LEFT", "COUNT", "x"), "-ERR count should be greater than 0\r\n"},
			{cmd("BLMPOP", "0", "1", "{t}:a"), "-ERR wrong number of arguments for 'blmpop' command\r\n"},
			{cmd("BLMPOP", "-1", "0", "{t}:a", "LEFT"), "-ERR numkeys should be greater than 0\r\n"},
			{cmd("BLMPOP", "-1", "1", "{t}:a", "LEFT"), "-ERR timeout is negative\r\n"},
			{cmd("SET", "{t}:s", "1"), "+OK\r\n"},
			{cmd("LMPOP", "2", "{t}:none", "{t}:s", "LEFT"), wrongType},
			{cmd("BLMPOP", "0", "2", "{t}:s", "{t}:b", "LEFT"), wrongType},
		}},
		{"types", []step{
			{cmd("SET", "s", "1"), "+OK\r\n"},
			{cmd("LPUSH", "s", "a"), wrongType},
			{cmd("LRANGE", "s", "0", "-1"), wrongType},
			{cmd("LPOP", "s"), wrongType},
			{cmd("BLPOP", "s", "0"), wrongType},
			{cmd("HSET", "h", "f", "v"), ":1\r\n"},
			{cmd("LLEN", "h"), wrongType},
			{cmd("RPUSH", "l", "a"), ":1\r\n"},
			{cmd("GET", "l"), wrongType},
			{cmd("HGET", "l", "f"), wrongType},
			{cmd("INCR", "l"), wrongType},
			{cmd("SET", "l", "x"), "+OK\r\n"}, // replaces it, as in Redis
			{cmd("GET", "l"), "$1\r\nx\r\n"},
			{cmd("DEL", "l"), ":1\r\n"},
			{cmd("RPUSH", "l", "new"), ":1\r\n"},
			{cmd("LRANGE", "l", "0", "-1"), arr("new")}, // no item of the earlier life
			{cmd("EXPIRE", "l", "100"), ":1\r\n"},
			{cmd("RPUSH", "l", "b"), ":2\r\n"},
			{cmd("TTL", "l"), ":100\r\n"},
			{cmd("DEL", "l"), ":1\r\n"},
			{cmd("LLEN", "l"), ":0\r\n"},
			{cmd("BLPOP", "l", "-1"), "-ERR timeout is negative\r\n"},
			{cmd("BLPOP", "l", "x"), "-ERR timeout is not a float or out of range\r\n"},
			{cmd("BLPOP", "l", "0.01"), "*-1\r\n"},
			{cmd("BRPOP", "l", "m", "0.01"), "*-1\r\n"},
			{cmd("BLMOVE", "{l}", "{l}:d", "LEFT", "LEFT", "0.01"), "$-1\r\n"},
			{cmd("BRPOPLPUSH", "{l}", "{l}:d", "0.01"), "$-1\r\n"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, addr := startServer(t, Config{})
			converse(t, addr, tt.steps)
		})
	}
}

// waitBlocked waits until n clients are blocked on lists in s.
func waitBlocked(t *testing.T, s *Server, n int) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		got, changed := s.lists.blocked()
		if got == n {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("%d clients blocked on lists after 20s, want %d", got, n)
		}
	}
}

// TestGoRedisBlockingPops: BLPOP, BRPOP, BLMOVE and BLMPOP through go-redis, in RESP2 and RESP3:
// a client blocked on empty lists is woken by a push to any of them and takes the item;
// of two clients blocked on one list each push wakes one; a timeout answers null.
func TestGoRedisBlockingPops(t *testing.T) {
	for _, protocol := range []int{2, 3} {
		t.Run("RESP"+strconv.Itoa(protocol), func(t *testing.T) {
			s, _, addr := startServer(t, Config{})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			newClient := func() *redis.Client {
				c := redis.NewClient(&redis.Options{Addr: addr, Protocol: protocol, PoolSize: 1, ReadTimeout: -1})
				t.Cleanup(func() { c.Close() })
				return c
			}
			pusher := newClient()
			type popped struct {
				kv  []string
				err error
			}
			bpop := func(c *redis.Client, right bool, keys ...string) chan popped {
				done := make(chan popped, 1)
				go func() {
					var p popped
					if right {
						p.kv, p.err = c.BRPop(ctx, 0, keys...).Result()
					} else {
						p.kv, p.err = c.BLPop(ctx, 0, keys...).Result()
					}
					done <- p
				}()
				return done
			}

			// One client, blocked on two keys, woken by a push to the second.
			waiting := bpop(newClient(), false, "{q}:a", "{q}:b")
			waitBlocked(t, s, 1)
			if err := pusher.RPush(ctx, "{q}:b", "x", "y").Err(); err != nil {
				t.Fatal(err)
			}
			if p := <-waiting; p.err != nil || !slices.Equal(p.kv, []string{"{q}:b", "x"}) {
				t.Fatalf("BLPOP = %v, %v; want [{q}:b x]", p.kv, p.err)
			}
			waitBlocked(t, s, 0)
			if kv, err := pusher.BRPop(ctx, 0, "{q}:a", "{q}:b").Result(); err != nil || !slices.Equal(kv, []string{"{q}:b", "y"}) {
				t.Fatalf("BRPOP of a list with an item = %v, %v", kv, err)
			}

			// Two clients on one list: each push goes to one of them, never both.
			first, second := bpop(newClient(), true, "{q}:a"), bpop(newClient(), true, "{q}:a")
			waitBlocked(t, s, 2)
			if info, err := pusher.Info(ctx, "clients").Result(); err != nil || !strings.Contains(info, "blocked_clients:2\r\n") {
				t.Fatalf("INFO clients with two clients blocked = %q, %v", info, err)
			}
			if err := pusher.LPush(ctx, "{q}:a", "1").Err(); err != nil {
				t.Fatal(err)
			}
			var got []string
			select {
			case p := <-first:
				got, first = append(got, p.kv[1]), nil
			case p := <-second:
				got, second = append(got, p.kv[1]), nil
			}
			waitBlocked(t, s, 1)
			if err := pusher.LPush(ctx, "{q}:a", "2").Err(); err != nil {
				t.Fatal(err)
			}
			for _, ch := range []chan popped{first, second} {
				if ch != nil {
					p := <-ch
					got = append(got, p.kv[1])
				}
			}
			if !slices.Equal(got, []string{"1", "2"}) {
				t.Fatalf("two blocked clients took %v, want 1 then 2", got)
			}

			// BLMOVE: woken by a push, moves the item.
			moved := make(chan popped, 1)
			mover := newClient()
			go func() {
				v, err := mover.BLMove(ctx, "{q}:src", "{q}:dst", "LEFT", "RIGHT", 0).Result()
				moved <- popped{kv: []string{v}, err: err}
			}()
			waitBlocked(t, s, 1)
			if err := pusher.RPush(ctx, "{q}:src", "m").Err(); err != nil {
				t.Fatal(err)
			}
			if p := <-moved; p.err != nil || p.kv[0] != "m" {
				t.Fatalf("BLMOVE = %v, %v", p.kv, p.err)
			}
			if items, err := pusher.LRange(ctx, "{q}:dst", 0, -1).Result(); err != nil || !slices.Equal(items, []string{"m"}) {
				t.Fatalf("destination after BLMOVE = %v, %v", items, err)
			}
			if n, err := pusher.LLen(ctx, "{q}:src").Result(); err != nil || n != 0 {
				t.Fatalf("LLEN source after BLMOVE = %d, %v", n, err)
			}

			// BLMPOP: blocked on two lists, woken by a push to the second, takes up to
			// its count from the end named.
			mpopped := make(chan popped, 1)
			go func() {
				key, items, err := newClient().BLMPop(ctx, 0, "right", 5, "{q}:m1", "{q}:m2").Result()
				mpopped <- popped{kv: append([]string{key}, items...), err: err}
			}()
			waitBlocked(t, s, 1)
			if err := pusher.RPush(ctx, "{q}:m2", "a", "b").Err(); err != nil {
				t.Fatal(err)
			}
			if p := <-mpopped; p.err != nil || !slices.Equal(p.kv, []string{"{q}:m2", "b", "a"}) {
				t.Fatalf("BLMPOP = %v, %v; want [{q}:m2 b a]", p.kv, p.err)
			}
			if _, _, err := pusher.LMPop(ctx, "left", 1, "{q}:m1", "{q}:m2").Result(); err != redis.Nil {
				t.Fatalf("LMPOP of empty lists: %v, want redis.Nil", err)
			}

			// A timeout answers null (go-redis sends at least a second).
			if err := pusher.BLPop(ctx, time.Second, "{q}:none").Err(); err != redis.Nil {
				t.Fatalf("BLPOP timed out: %v, want redis.Nil", err)
			}
		})
	}
}

// TestBlockedClientHangsUp: a client that hangs up while blocked frees its wait, and
// takes no item pushed after it left.
func TestBlockedClientHangsUp(t *testing.T) {
	s, _, addr := startServer(t, Config{})
	c := dial(t, addr)
	if _, err := c.nc.Write([]byte(encode("BLPOP", "q", "0"))); err != nil {
		t.Fatal(err)
	}
	waitBlocked(t, s, 1)
	c.nc.Close()
	waitBlocked(t, s, 0)
	converse(t, addr, []step{
		{cmd("RPUSH", "q", "a"), ":1\r\n"},
		{cmd("LRANGE", "q", "0", "-1"), arr("a")},
	})
}

// TestPushServesBlockedClients: a push answers once the clients it woke have tried
// again, as Redis serves its blocked clients before the next command runs: the pusher's
// next command sees the item taken, and moved on by a chain of blocked moves.
func TestPushServesBlockedClients(t *testing.T) {
	foo := "$3\r\nfoo\r\n"
	tests := []struct {
		name    string
		blocked [][]string // sent in order, each once those before it block
		then    []step
		replies []string // of the blocked clients, in order
	}{
		{"linked BLMOVEs", [][]string{
			cmd("BLMOVE", "{t}1", "{t}2", "RIGHT", "LEFT", "0"),
			cmd("BLMOVE", "{t}2", "{t}3", "LEFT", "RIGHT", "0"),
		}, []step{
			{cmd("RPUSH", "{t}1", "foo"), ":1\r\n"},
			{cmd("LRANGE", "{t}1", "0", "-1"), "*0\r\n"},
			{cmd("LRANGE", "{t}2", "0", "-1"), "*0\r\n"},
			{cmd("LRANGE", "{t}3", "0", "-1"), arr("foo")},
		}, []string{foo, foo}},
		{"circular BRPOPLPUSH", [][]string{
			cmd("BRPOPLPUSH", "{t}1", "{t}2", "0"),
			cmd("BRPOPLPUSH", "{t}2", "{t}1", "0"),
		}, []step{
			{cmd("RPUSH", "{t}1", "foo"), ":1\r\n"},
			{cmd("LRANGE", "{t}1", "0", "-1"), arr("foo")},
			{cmd("LRANGE", "{t}2", "0", "-1"), "*0\r\n"},
		}, []string{foo, foo}},
		{"self-referential BRPOPLPUSH", [][]string{
			cmd("BRPOPLPUSH", "{t}1", "{t}1", "0"),
		}, []step{
			{cmd("RPUSH", "{t}1", "foo"), ":1\r\n"},
			{cmd("LRANGE", "{t}1", "0", "-1"), arr("foo")},
		}, []string{foo}},
		{"BLPOP and BLMPOP", [][]string{
			cmd("BLPOP", "{t}1", "0"),
			cmd("BLMPOP", "0", "1", "{t}1", "RIGHT", "COUNT", "2"),
		}, []step{
			{cmd("RPUSH", "{t}1", "a", "b", "c", "d"), ":4\r\n"},
			{cmd("LRANGE", "{t}1", "0", "-1"), arr("b")},
		}, []string{arr("{t}1", "a"), "*2\r\n$4\r\n{t}1\r\n" + arr("d", "c")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, addr := startServer(t, Config{})
			var clients []*client
			for i, args := range tt.blocked {
				c := dial(t, addr)
				c.send(encode(args...))
				waitBlocked(t, s, i+1)
				clients = append(clients, c)
			}
			converse(t, addr, tt.then)
			for i, c := range clients {
				c.expect(tt.replies[i])
			}
		})
	}
}

// TestPushServesInBlockingOrder: a push serves the clients blocked on its key in the
// order they blocked, as Redis does, each taking what it can before the next tries; a
// client that fails to take the item (its destination of another type) leaves it for
// the next; and a client blocked on a key that became another type keeps waiting there
// (a list or a sorted set).
func TestPushServesInBlockingOrder(t *testing.T) {
	wrongType := "-" + errWrongType + "\r\n"
	tests := []struct {
		name    string
		before  []step
		blocked [][]string // sent in order, each once those before it block
		then    []step
		replies []string // of the blocked clients, in order
	}{
		{"three BLPOPs, two items", nil, [][]string{
			cmd("BLPOP", "q", "0"),
			cmd("BLPOP", "q", "0"),
			cmd("BLPOP", "q", "0"),
		}, []step{
			{cmd("RPUSH", "q", "a", "b"), ":2\r\n"},
			{cmd("LLEN", "q"), ":0\r\n"},
			{cmd("RPUSH", "q", "c"), ":1\r\n"},
		}, []string{arr("q", "a"), arr("q", "b"), arr("q", "c")}},
		{"BLMPOP counts in order", nil, [][]string{
			cmd("BLMPOP", "0", "1", "q", "LEFT", "COUNT", "2"),
			cmd("BRPOP", "q", "0"),
		}, []step{
			{cmd("RPUSH", "q", "a", "b", "c", "d"), ":4\r\n"},
			{cmd("LRANGE", "q", "0", "-1"), arr("c")},
		}, []string{"*2\r\n$1\r\nq\r\n" + arr("a", "b"), arr("q", "d")}},
		{"BRPOPLPUSH onto a string leaves the item", []step{
			{cmd("SET", "{t}d1", "s"), "+OK\r\n"},
		}, [][]string{
			cmd("BRPOPLPUSH", "{t}q", "{t}d1", "0"),
			cmd("BRPOPLPUSH", "{t}q", "{t}d2", "0"),
		}, []step{
			{cmd("LPUSH", "{t}q", "foo"), ":1\r\n"},
			{cmd("LRANGE", "{t}d2", "0", "-1"), arr("foo")},
			{cmd("LLEN", "{t}q"), ":0\r\n"},
		}, []string{wrongType, "$3\r\nfoo\r\n"}},
		{"EXEC wakes once it has run: the client sees the transaction whole", nil, [][]string{
			cmd("BLPOP", "{t}q", "0"),
		}, []step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("LPUSH", "{t}q", "a"), "+QUEUED\r\n"},
			{cmd("LPUSH", "{t}q", "b"), "+QUEUED\r\n"},
			{cmd("LPUSH", "{t}q", "c"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*3\r\n:1\r\n:2\r\n:3\r\n"},
			{cmd("LRANGE", "{t}q", "0", "-1"), arr("b", "a")},
		}, []string{arr("{t}q", "c")}},
		// The suite's "BLMPOP with multiple blocked clients", in a keyspace whose
		// transactions run per partition (the fake's default): the default keyspace of a
		// node refuses this EXEC over two keys, and its four clients then stay blocked.
		{"EXEC over two lists serves four BLMPOPs in order", nil, [][]string{
			cmd("BLMPOP", "0", "2", "{t}1", "{t}2", "LEFT", "COUNT", "1"),
			cmd("BLMPOP", "0", "2", "{t}1", "{t}2", "RIGHT", "COUNT", "10"),
			cmd("BLMPOP", "0", "2", "{t}1", "{t}2", "LEFT", "COUNT", "10"),
			cmd("BLMPOP", "0", "2", "{t}1", "{t}2", "RIGHT", "COUNT", "1"),
		}, []step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("LPUSH", "{t}1", "a", "b", "c", "d", "e"), "+QUEUED\r\n"},
			{cmd("LPUSH", "{t}2", "1", "2", "3", "4", "5"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*2\r\n:5\r\n:5\r\n"},
			{cmd("LLEN", "{t}1"), ":0\r\n"},
			{cmd("LLEN", "{t}2"), ":0\r\n"},
			{cmd("LPUSH", "{t}2", "1", "2", "3"), ":3\r\n"},
			{cmd("LRANGE", "{t}2", "0", "-1"), arr("3", "2")},
		}, []string{
			"*2\r\n$4\r\n{t}1\r\n" + arr("e"),
			"*2\r\n$4\r\n{t}1\r\n" + arr("a", "b", "c", "d"),
			"*2\r\n$4\r\n{t}2\r\n" + arr("5", "4", "3", "2", "1"),
			"*2\r\n$4\r\n{t}2\r\n" + arr("1"),
		}},
		{"a push, DEL and SET in one EXEC do not wake the client", nil, [][]string{
			cmd("BLPOP", "{t}l", "0"),
		}, []step{
			{cmd("MULTI"), "+OK\r\n"},
			{cmd("LPUSH", "{t}l", "a"), "+QUEUED\r\n"},
			{cmd("DEL", "{t}l"), "+QUEUED\r\n"},
			{cmd("SET", "{t}l", "foo"), "+QUEUED\r\n"},
			{cmd("EXEC"), "*3\r\n:1\r\n:1\r\n+OK\r\n"},
			{cmd("DEL", "{t}l"), ":1\r\n"},
			{cmd("LPUSH", "{t}l", "bar"), ":1\r\n"},
		}, []string{arr("{t}l", "bar")}},
		{"a key that became a string is waited on", nil, [][]string{
			cmd("BLPOP", "{t}1", "{t}2", "0"),
		}, []step{
			{cmd("SET", "{t}1", "s"), "+OK\r\n"},
			{cmd("RPUSH", "{t}2", "x"), ":1\r\n"},
		}, []string{arr("{t}2", "x")}},
		{"RENAME onto the key serves it", []step{
			{cmd("LPUSH", "{t}bob", "abc", "def", "hij"), ":3\r\n"},
		}, [][]string{
			cmd("BLPOP", "{t}foo", "0"),
		}, []step{
			{cmd("RENAME", "{t}bob", "{t}foo"), "+OK\r\n"},
			{cmd("LRANGE", "{t}foo", "0", "-1"), arr("def", "abc")},
		}, []string{arr("{t}foo", "hij")}},
		{"a key that became a list is waited on by BZPOPMIN", nil, [][]string{
			cmd("BZPOPMIN", "{t}1", "{t}2", "0"),
		}, []step{
			{cmd("RPUSH", "{t}1", "x"), ":1\r\n"},
			{cmd("ZADD", "{t}2", "1", "m"), ":1\r\n"},
		}, []string{arr("{t}2", "m", "1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, addr := startServer(t, Config{})
			converse(t, addr, tt.before)
			var clients []*client
			for i, args := range tt.blocked {
				c := dial(t, addr)
				c.send(encode(args...))
				waitBlocked(t, s, i+1)
				clients = append(clients, c)
			}
			converse(t, addr, tt.then)
			for i, c := range clients {
				c.expect(tt.replies[i])
			}
		})
	}
}

// TestLeads: at a poll only the client that blocked first on one of its keys tries, so
// that an item pushed through another node goes to it.
func TestLeads(t *testing.T) {
	l := newListState()
	keys := func(names ...string) [][]byte {
		var out [][]byte
		for _, n := range names {
			out = append(out, []byte(n))
		}
		return out
	}
	first, stop1 := l.wait(1, "ks", keys("a"))
	second, stop2 := l.wait(2, "ks", keys("a", "b"))
	third, stop3 := l.wait(3, "ks", keys("a", "b"))
	defer stop3()
	for _, tt := range []struct {
		name string
		w    *waiter
		want bool
	}{
		{"first on a", first, true},
		{"second on a, first on b", second, true},
		{"third on both", third, false},
	} {
		if got := l.leads(tt.w); got != tt.want {
			t.Errorf("%s: leads = %v, want %v", tt.name, got, tt.want)
		}
	}
	stop1()
	stop2()
	if !l.leads(third) {
		t.Error("the last client left does not lead once the others left")
	}
}

// TestLaterClientLeavesTheItemToTheEarlier: a client that blocks behind another on a
// list does not take at its first try an item the earlier one has not seen yet (pushed
// through another node, here another server on the same backend): the earlier takes it
// at its poll, as Redis serves clients in the order they blocked. A client behind
// another on a key of another type is answered WRONGTYPE at once, as in Redis; one that
// waited without a first try then waits on a key that becomes another type.
func TestLaterClientLeavesTheItemToTheEarlier(t *testing.T) {
	s, fake, addr := startServer(t, Config{})
	_, _, other := startServer(t, Config{Backend: fake})
	earlier := dial(t, addr)
	earlier.send(encode("BLPOP", "{t}q", "0"))
	waitBlocked(t, s, 1)
	converse(t, other, []step{
		{cmd("RPUSH", "{t}q", "x"), ":1\r\n"},
	})
	later := dial(t, addr)
	later.send(encode("BLPOP", "{t}q", "0"))
	earlier.expect(arr("{t}q", "x"))
	waitBlocked(t, s, 1)
	converse(t, addr, []step{{cmd("RPUSH", "{t}q", "y"), ":1\r\n"}})
	later.expect(arr("{t}q", "y"))

	waiting := dial(t, addr)
	waiting.send(encode("BLPOP", "{t}s", "0"))
	waitBlocked(t, s, 1)
	converse(t, addr, []step{
		{cmd("SET", "{t}s", "string"), "+OK\r\n"},
		{cmd("BLPOP", "{t}s", "0"), "-" + errWrongType + "\r\n"},
	})

	// Once it waits, the later client waits on a key that became another type, as a
	// client whose first try found nothing does.
	first, second := dial(t, addr), dial(t, addr)
	first.send(encode("BLPOP", "{t}a", "{t}b", "0"))
	waitBlocked(t, s, 2)
	second.send(encode("BLPOP", "{t}a", "{t}b", "0"))
	waitBlocked(t, s, 3)
	converse(t, addr, []step{
		{cmd("SET", "{t}a", "string"), "+OK\r\n"},
		{cmd("RPUSH", "{t}b", "x"), ":1\r\n"},
	})
	first.expect(arr("{t}b", "x"))
	converse(t, addr, []step{{cmd("RPUSH", "{t}b", "y"), ":1\r\n"}})
	second.expect(arr("{t}b", "y"))
}

// TestWakeWaitsForClients: a push's wake returns once each client it woke has tried
// again, not before, even one that was in the middle of a try (its first, which may have
// read the list before the push: the suite's "BRPOPLPUSH with multiple blocked clients"
// hung when the push went past it); only a push that is itself a try tells a client in a
// try without waiting for it (its try may be a push waiting on this one); a client that
// leaves with a wake-up untaken releases the push.
func TestWakeWaitsForClients(t *testing.T) {
	tests := []struct {
		name string
		idle bool
		// fromTry is true when the push is itself a blocked client's try.
		fromTry bool
		// leave is true when the client leaves (stop) instead of trying again.
		leave    bool
		waitsFor bool // wake waits until the client tried or left
	}{
		{"idle client tries again", true, false, false, true},
		{"idle client leaves", true, false, true, true},
		{"client in a try", false, false, false, true},
		{"client in a try leaves", false, false, true, true},
		{"idle client, pushed by a try", true, true, false, true},
		{"client in a try, pushed by a try", false, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newListState()
				w, stop := l.wait(1, "ks", [][]byte{[]byte("k")})
				defer stop()
				l.setIdle(w, tt.idle)
				woke := make(chan struct{})
				go func() {
					l.wake("ks", []byte("k"), tt.fromTry)
					close(woke)
				}()
				synctest.Wait()
				returned := func() bool {
					select {
					case <-woke:
						return true
					default:
						return false
					}
				}
				if returned() == tt.waitsFor {
					t.Fatalf("wake returned %v before the client tried, want %v", returned(), !tt.waitsFor)
				}
				if tt.leave {
					stop()
				} else if served := <-w.wake; served != nil {
					served <- true
				}
				synctest.Wait()
				if !returned() {
					t.Fatal("wake did not return once the client tried or left")
				}
			})
		})
	}
}

// TestClientUnblock: CLIENT UNBLOCK answers a blocked client as its timeout would, or
// with Redis's UNBLOCKED error, and 1; 0 for a client that is not blocked.
func TestClientUnblock(t *testing.T) {
	tests := []struct {
		name    string
		blocked []string
		reason  []string
		want    string // the blocked client's reply
	}{
		{"BLPOP, default", cmd("BLPOP", "l", "0"), nil, "*-1\r\n"},
		{"BLMPOP, timeout", cmd("BLMPOP", "0", "1", "l", "LEFT"), cmd("timeout"), "*-1\r\n"},
		{"BLMOVE, timeout", cmd("BLMOVE", "l", "l", "LEFT", "LEFT", "0"), cmd("TIMEOUT"), "$-1\r\n"},
		{"BRPOP, error", cmd("BRPOP", "l", "0"), cmd("ERROR"), "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, addr := startServer(t, Config{})
			blocked := dial(t, addr)
			blocked.send(encode("CLIENT", "ID"))
			blocked.expect(":1\r\n") // the first connection
			blocked.send(encode(tt.blocked...))
			waitBlocked(t, s, 1)
			converse(t, addr, []step{
				{cmd("CLIENT", "UNBLOCK", "1", "BOGUS"), "-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n"},
				{cmd("CLIENT", "UNBLOCK", "x"), "-ERR value is not an integer or out of range\r\n"},
				{cmd("CLIENT", "UNBLOCK", "1", "ERROR", "more"), "-ERR unknown subcommand or wrong number of arguments for 'unblock'. Try CLIENT HELP.\r\n"},
				{append(cmd("CLIENT", "UNBLOCK", "1"), tt.reason...), ":1\r\n"},
			})
			blocked.expect(tt.want)
			waitBlocked(t, s, 0)
			converse(t, addr, []step{
				{cmd("CLIENT", "UNBLOCK", "1"), ":0\r\n"},
				{cmd("CLIENT", "UNBLOCK", "99"), ":0\r\n"},
			})
			// The client is usable again.
			blocked.send(encode("LPUSH", "l", "x"))
			blocked.expect(":1\r\n")
		})
	}
}

// TestBlockedCountsOnlyAfterAFailedTry: a client registered for pushes is not counted
// among the blocked clients (INFO's blocked_clients) until its first try found nothing,
// as in Redis: a test that waits for the count, then changes the key, must not race the
// client's first try.
func TestBlockedCountsOnlyAfterAFailedTry(t *testing.T) {
	l := newListState()
	w, stop := l.wait(1, "default", [][]byte{[]byte("k")})
	if got, _ := l.blocked(); got != 0 {
		t.Fatalf("registered, before its first try: %d blocked, want 0", got)
	}
	_, changed := l.blocked()
	l.setIdle(w, true)
	select {
	case <-changed:
	default:
		t.Fatal("the count changed without a signal")
	}
	if got, _ := l.blocked(); got != 1 {
		t.Fatalf("after a failed try: %d blocked, want 1", got)
	}
	l.setIdle(w, false) // trying again: still blocked
	if got, _ := l.blocked(); got != 1 {
		t.Fatalf("trying again: %d blocked, want 1", got)
	}
	stop()
	if got, _ := l.blocked(); got != 0 {
		t.Fatalf("gone: %d blocked, want 0", got)
	}
}
