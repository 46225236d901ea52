package resp

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// ReadPrefixes is the coordinator's read of the element records under prefixes, over
// the fake's collections.
func (f *fakeBackend) ReadPrefixes(_ context.Context, keyspace string, key []byte, prefixes [][]byte, cl consistency.Level) (coord.Collection, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	elems, err := f.collection(keyspace, key)
	if err != nil {
		return coord.Collection{}, err
	}
	var out coord.Collection
	if out.Header, out.Found, err = f.get(keyspace, key, cl); err != nil || !out.Found || out.Header.Type == lww.String {
		return out, err
	}
	out.Reset = resetOf(elems, key)
	for _, p := range prefixes {
		for _, k := range slices.Sorted(maps.Keys(elems)) {
			if strings.HasPrefix(k, string(p)) && liveElement(elems[k], out.Reset) {
				out.Elements = append(out.Elements, elems[k])
			}
		}
	}
	return out, nil
}

// members is the RESP2 reply of an array of bulk strings.
func members(names ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(names)) + "\r\n")
	for _, n := range names {
		b.WriteString("$" + strconv.Itoa(len(n)) + "\r\n" + n + "\r\n")
	}
	return b.String()
}

const crossSlot = "-CROSSSLOT Keys in request don't hash to the same slot\r\n"

func TestSetCommands(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"members", []step{
			{cmd("SADD", "s", "b", "a", "b"), ":2\r\n"}, // a member named twice counts once
			{cmd("SADD", "s", "a", "c"), ":1\r\n"},
			{cmd("SMEMBERS", "s"), members("a", "b", "c")},
			{cmd("SMEMBERS", "nokey"), "*0\r\n"},
			{cmd("SCARD", "s"), ":3\r\n"},
			{cmd("SCARD", "nokey"), ":0\r\n"},
			{cmd("SISMEMBER", "s", "a"), ":1\r\n"},
			{cmd("SISMEMBER", "s", "z"), ":0\r\n"},
			{cmd("SISMEMBER", "nokey", "a"), ":0\r\n"},
			{cmd("SMISMEMBER", "s", "z", "a", "a"), "*3\r\n:0\r\n:1\r\n:1\r\n"},
			{cmd("SREM", "s", "a", "z", "a"), ":1\r\n"},
			{cmd("SREM", "s", "a"), ":0\r\n"},
			{cmd("SREM", "nokey", "a"), ":0\r\n"},
			{cmd("SMEMBERS", "s"), members("b", "c")},
			{cmd("SADD", "s", "a"), ":1\r\n"}, // added again after its removal
			{cmd("SMEMBERS", "s"), members("a", "b", "c")},
			{cmd("SSCAN", "s", "0", "MATCH", "[ab]", "COUNT", "10"), "*2\r\n$1\r\n0\r\n" + members("a", "b")},
			{cmd("SSCAN", "s", "x"), "-ERR invalid cursor\r\n"},
			{cmd("SSCAN", "s", "0", "MATCH"), "-ERR syntax error\r\n"},
			{cmd("TYPE", "s"), "+set\r\n"},
			{cmd("OBJECT", "ENCODING", "s"), "$9\r\nhashtable\r\n"},
			// s, and each add's key: "\x00\x01\x01s" "s" uvarint(1) member, 12 bytes of tag.
			{cmd("MEMORY", "USAGE", "s"), ":" + strconv.Itoa(1+3*(4+1+2+12)) + "\r\n"},
		}},
		{"an emptied set reads as absent", []step{
			{cmd("SADD", "s", "a", "b"), ":2\r\n"},
			{cmd("SREM", "s", "a", "b"), ":2\r\n"},
			{cmd("SCARD", "s"), ":0\r\n"},
			{cmd("SMEMBERS", "s"), "*0\r\n"},
			{cmd("TYPE", "s"), "+none\r\n"},
			{cmd("SADD", "s", "c"), ":1\r\n"},
			{cmd("SMEMBERS", "s"), members("c")},
			{cmd("DEL", "s"), ":1\r\n"},
			{cmd("TYPE", "s"), "+none\r\n"},
		}},
		{"pop and random members", []step{
			{cmd("SPOP", "s"), "$-1\r\n"},
			{cmd("SPOP", "s", "2"), "*0\r\n"},
			{cmd("SRANDMEMBER", "s"), "$-1\r\n"},
			{cmd("SRANDMEMBER", "s", "-2"), "*0\r\n"},
			{cmd("SADD", "s", "a"), ":1\r\n"},
			{cmd("SRANDMEMBER", "s"), "$1\r\na\r\n"},
			{cmd("SRANDMEMBER", "s", "5"), members("a")},
			{cmd("SRANDMEMBER", "s", "-3"), members("a", "a", "a")},
			{cmd("SRANDMEMBER", "s", "0"), "*0\r\n"},
			{cmd("SRANDMEMBER", "s", "x"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("SRANDMEMBER", "s", "-9223372036854775808"), "-ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807\r\n"},
			{cmd("SRANDMEMBER", "s", "-100001"), "-ERR kura answers at most 100000 members drawn with repeats\r\n"},
			{cmd("SRANDMEMBER", "s", "1", "2"), "-ERR syntax error\r\n"},
			{cmd("SPOP", "s", "-1"), "-ERR value is out of range, must be positive\r\n"},
			{cmd("SPOP", "s", "x"), "-ERR value is out of range, must be positive\r\n"},
			{cmd("SPOP", "s", "0"), "*0\r\n"},
			{cmd("SPOP", "s"), "$1\r\na\r\n"},
			{cmd("SCARD", "s"), ":0\r\n"},
			{cmd("SADD", "s", "a"), ":1\r\n"},
			{cmd("SPOP", "s", "5"), members("a")}, // every member
			{cmd("SCARD", "s"), ":0\r\n"},
		}},
		{"algebra", []step{
			{cmd("SADD", "{t}1", "a", "b", "c"), ":3\r\n"},
			{cmd("SADD", "{t}2", "b", "c", "d"), ":3\r\n"},
			{cmd("SADD", "other", "c", "e"), ":2\r\n"},
			// The reads may span hash tags.
			{cmd("SINTER", "{t}1", "{t}2", "other"), members("c")},
			{cmd("SINTER", "{t}1", "nokey"), "*0\r\n"},
			{cmd("SUNION", "{t}1", "other"), members("a", "b", "c", "e")},
			{cmd("SDIFF", "{t}1", "{t}2"), members("a")},
			{cmd("SDIFF", "nokey", "{t}1"), "*0\r\n"},
			{cmd("SINTERCARD", "2", "{t}1", "{t}2"), ":2\r\n"},
			{cmd("SINTERCARD", "2", "{t}1", "{t}2", "LIMIT", "1"), ":1\r\n"},
			{cmd("SINTERCARD", "2", "{t}1", "{t}2", "LIMIT", "0"), ":2\r\n"},
			{cmd("SINTERCARD", "0", "{t}1"), "-ERR numkeys should be greater than 0\r\n"},
			{cmd("SINTERCARD", "a", "{t}1"), "-ERR numkeys should be greater than 0\r\n"},
			{cmd("SINTERCARD", "3", "{t}1", "{t}2"), "-ERR Number of keys can't be greater than number of args\r\n"},
			{cmd("SINTERCARD", "1", "{t}1", "{t}2"), "-ERR syntax error\r\n"},
			{cmd("SINTERCARD", "1", "{t}1", "LIMIT"), "-ERR syntax error\r\n"},
			{cmd("SINTERCARD", "1", "{t}1", "LIMIT", "-1"), "-ERR LIMIT can't be negative\r\n"},
			{cmd("SINTERSTORE", "{t}d", "{t}1", "{t}2"), ":2\r\n"},
			{cmd("SMEMBERS", "{t}d"), members("b", "c")},
			{cmd("SUNIONSTORE", "{t}d", "{t}1", "{t}2"), ":4\r\n"},
			{cmd("SMEMBERS", "{t}d"), members("a", "b", "c", "d")},
			{cmd("SDIFFSTORE", "{t}d", "{t}1", "{t}2"), ":1\r\n"},
			{cmd("SMEMBERS", "{t}d"), members("a")},                   // the result replaces what it held
			{cmd("SINTERSTORE", "{t}d", "{t}1", "{t}none"), ":0\r\n"}, // an empty result deletes it
			{cmd("EXISTS", "{t}d"), ":0\r\n"},
			{cmd("SET", "{t}str", "x"), "+OK\r\n"},
			{cmd("EXPIRE", "{t}str", "100"), ":1\r\n"},
			{cmd("SUNIONSTORE", "{t}str", "{t}1"), ":3\r\n"}, // over a string, without its expiry
			{cmd("TYPE", "{t}str"), "+set\r\n"},
			{cmd("TTL", "{t}str"), ":-1\r\n"},
		}},
		{"move", []step{
			{cmd("SADD", "{t}src", "a", "b"), ":2\r\n"},
			{cmd("SADD", "{t}dst", "b"), ":1\r\n"},
			{cmd("SMOVE", "{t}src", "{t}dst", "a"), ":1\r\n"},
			{cmd("SMOVE", "{t}src", "{t}dst", "a"), ":0\r\n"},
			{cmd("SMOVE", "{t}src", "{t}dst", "b"), ":1\r\n"}, // already in the destination
			{cmd("SMEMBERS", "{t}dst"), members("a", "b")},
			{cmd("SCARD", "{t}src"), ":0\r\n"},
			{cmd("SMOVE", "{t}dst", "{t}dst", "a"), ":1\r\n"},
			{cmd("SMOVE", "{t}dst", "{t}dst", "z"), ":0\r\n"},
			{cmd("SMOVE", "{t}none", "{t}dst", "a"), ":0\r\n"},
			{cmd("SET", "{t}str", "x"), "+OK\r\n"},
			{cmd("SMOVE", "{t}dst", "{t}str", "a"), wrongType},
			{cmd("SMOVE", "{t}none", "{t}str", "a"), ":0\r\n"}, // as Redis: no source, no check
			{cmd("SMEMBERS", "{t}dst"), members("a", "b")},
		}},
		{"set commands on a string, and string commands on a set", []step{
			{cmd("SADD", "s", "a"), ":1\r\n"},
			{cmd("SET", "str", "1"), "+OK\r\n"},
			{cmd("HSET", "h", "f", "1"), ":1\r\n"},
			{cmd("SADD", "str", "a"), wrongType},
			{cmd("SADD", "h", "a"), wrongType},
			{cmd("SREM", "str", "a"), wrongType},
			{cmd("SMEMBERS", "h"), wrongType},
			{cmd("SISMEMBER", "str", "a"), wrongType},
			{cmd("SMISMEMBER", "str", "a"), wrongType},
			{cmd("SCARD", "str"), wrongType},
			{cmd("SPOP", "str"), wrongType},
			{cmd("SRANDMEMBER", "str"), wrongType},
			{cmd("SSCAN", "str", "0"), wrongType},
			{cmd("SINTER", "s", "str"), wrongType},
			{cmd("SUNION", "nokey", "str"), wrongType},
			{cmd("SINTERCARD", "2", "s", "h"), wrongType},
			{cmd("GET", "s"), wrongType},
			{cmd("INCR", "s"), wrongType},
			{cmd("HGET", "s", "a"), wrongType},
			{cmd("HSET", "s", "a", "1"), wrongType},
			{cmd("SMEMBERS", "s"), members("a")},
		}},
		{"a delete or an expiry ends the members of the key's life", []step{
			{cmd("SADD", "s", "a", "b"), ":2\r\n"},
			{cmd("EXPIRE", "s", "100"), ":1\r\n"},
			{cmd("SADD", "s", "c"), ":1\r\n"},
			{cmd("TTL", "s"), ":100\r\n"}, // SADD keeps the expiry
			{cmd("DEL", "s"), ":1\r\n"},
			{cmd("SMEMBERS", "s"), "*0\r\n"},
			{cmd("SADD", "s", "d"), ":1\r\n"},
			{cmd("SMEMBERS", "s"), members("d")},
			{cmd("EXPIRE", "s", "-1"), ":1\r\n"},
			{cmd("SADD", "s", "e"), ":1\r\n"},
			{cmd("SMEMBERS", "s"), members("e")},
			{cmd("SET", "s", "v", "XX"), "+OK\r\n"},
			{cmd("DEL", "s"), ":1\r\n"},
			{cmd("SADD", "s", "f"), ":1\r\n"},
			{cmd("SMEMBERS", "s"), members("f")},
		}},
		{"arity", []step{
			{cmd("SADD", "s"), "-ERR wrong number of arguments for 'sadd' command\r\n"},
			{cmd("SREM", "s"), "-ERR wrong number of arguments for 'srem' command\r\n"},
			{cmd("SMISMEMBER", "s"), "-ERR wrong number of arguments for 'smismember' command\r\n"},
			{cmd("SINTERCARD", "1"), "-ERR wrong number of arguments for 'sintercard' command\r\n"},
			{cmd("SMOVE", "a", "b"), "-ERR wrong number of arguments for 'smove' command\r\n"},
			{cmd("SPOP", "s", "1", "2"), "-ERR syntax error\r\n"},
		}},
		{"reserved keys and keyspaces without collections", []step{
			{cmd("SADD", "\x00\x01x", "a"), "-ERR keys starting with bytes 0x00 0x01 are reserved\r\n"},
			{cmd("KURA.KEYSPACE", "other"), "+OK\r\n"},
			{cmd("SADD", "s", "a"), "-ERR invalid argument: keyspace other has the hash partitioner\r\n"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, addr := startServer(t, Config{})
			converse(t, addr, tt.steps)
		})
	}
}

// TestGoRedisReadsSetReplies drives the set commands with go-redis, in RESP2 and RESP3,
// where SMEMBERS, SPOP with a count and the algebra answer RESP3 sets.
func TestGoRedisReadsSetReplies(t *testing.T) {
	for _, protocol := range []int{2, 3} {
		t.Run("RESP"+string(rune('0'+protocol)), func(t *testing.T) {
			_, _, addr := startServer(t, Config{})
			rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: protocol, PoolSize: 1})
			defer rdb.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if n, err := rdb.SAdd(ctx, "{t}a", "x", "y", "z").Result(); err != nil || n != 3 {
				t.Fatalf("SADD = %d, %v", n, err)
			}
			if n, err := rdb.SAdd(ctx, "{t}b", "y").Result(); err != nil || n != 1 {
				t.Fatalf("SADD = %d, %v", n, err)
			}
			if ms, err := rdb.SMembers(ctx, "{t}a").Result(); err != nil || !slices.Equal(ms, []string{"x", "y", "z"}) {
				t.Errorf("SMEMBERS = %v, %v", ms, err)
			}
			if ok, err := rdb.SIsMember(ctx, "{t}a", "y").Result(); err != nil || !ok {
				t.Errorf("SISMEMBER = %v, %v", ok, err)
			}
			if oks, err := rdb.SMIsMember(ctx, "{t}a", "y", "q").Result(); err != nil || !slices.Equal(oks, []bool{true, false}) {
				t.Errorf("SMISMEMBER = %v, %v", oks, err)
			}
			if ms, err := rdb.SDiff(ctx, "{t}a", "{t}b").Result(); err != nil || !slices.Equal(ms, []string{"x", "z"}) {
				t.Errorf("SDIFF = %v, %v", ms, err)
			}
			if n, err := rdb.SInterCard(ctx, 0, "{t}a", "{t}b").Result(); err != nil || n != 1 {
				t.Errorf("SINTERCARD = %d, %v", n, err)
			}
			page, cursor, err := rdb.SScan(ctx, "{t}a", 0, "[xy]", 10).Result()
			if err != nil || cursor != 0 || !slices.Equal(page, []string{"x", "y"}) {
				t.Errorf("SSCAN = %v, %d, %v", page, cursor, err)
			}
			if ms, err := rdb.SRandMemberN(ctx, "{t}a", -4).Result(); err != nil || len(ms) != 4 {
				t.Errorf("SRANDMEMBER -4 = %v, %v", ms, err)
			}
			popped, err := rdb.SPopN(ctx, "{t}a", 2).Result()
			if err != nil || len(popped) != 2 {
				t.Fatalf("SPOP 2 = %v, %v", popped, err)
			}
			left, err := rdb.SMembers(ctx, "{t}a").Result()
			if err != nil || len(left) != 1 || slices.Contains(popped, left[0]) {
				t.Errorf("after SPOP %v: SMEMBERS = %v, %v", popped, left, err)
			}
			if ok, err := rdb.SMove(ctx, "{t}b", "{t}a", "y").Result(); err != nil || !ok {
				t.Errorf("SMOVE = %v, %v", ok, err)
			}
			want, err := rdb.SMembers(ctx, "{t}a").Result()
			if err != nil {
				t.Fatalf("SMEMBERS: %v", err)
			}
			if n, err := rdb.SUnionStore(ctx, "other", "{t}a").Result(); err != nil || n != int64(len(want)) {
				t.Errorf("SUNIONSTORE across hash tags = %d, %v, want %d", n, err, len(want))
			}
			if got, err := rdb.SMembers(ctx, "other").Result(); err != nil || !slices.Equal(got, want) {
				t.Errorf("SMEMBERS of the stored union = %v, %v, want %v", got, err, want)
			}
		})
	}
}
