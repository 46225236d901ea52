package resp

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// bulks is the RESP2 array of bulk strings items.
func bulks(items ...string) string {
	out := "*" + strconv.Itoa(len(items)) + "\r\n"
	for _, s := range items {
		out += "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n"
	}
	return out
}

func TestZsetCommands(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"add and read", []step{
			{cmd("ZADD", "z", "1", "a", "2", "b", "3", "c"), ":3\r\n"},
			{cmd("ZADD", "z", "1", "a", "5", "b"), ":0\r\n"},
			{cmd("ZADD", "z", "CH", "1", "a", "2", "b", "0.5", "d"), ":2\r\n"}, // b changed, d added
			{cmd("ZRANGE", "z", "0", "-1"), bulks("d", "a", "b", "c")},
			{cmd("ZRANGE", "z", "0", "-1", "WITHSCORES"), bulks("d", "0.5", "a", "1", "b", "2", "c", "3")},
			{cmd("ZSCORE", "z", "d"), "$3\r\n0.5\r\n"},
			{cmd("ZSCORE", "z", "none"), "$-1\r\n"},
			{cmd("ZSCORE", "nokey", "a"), "$-1\r\n"},
			{cmd("ZMSCORE", "z", "a", "none", "c"), "*3\r\n$1\r\n1\r\n$-1\r\n$1\r\n3\r\n"},
			{cmd("ZCARD", "z"), ":4\r\n"},
			{cmd("ZCARD", "nokey"), ":0\r\n"},
			{cmd("ZRANK", "z", "b"), ":2\r\n"},
			{cmd("ZREVRANK", "z", "b"), ":1\r\n"},
			{cmd("ZRANK", "z", "none"), "$-1\r\n"},
			{cmd("ZREVRANGE", "z", "0", "1", "WITHSCORES"), bulks("c", "3", "b", "2")},
			{cmd("ZADD", "z", "0.1", "e"), ":1\r\n"},
			{cmd("ZSCORE", "z", "e"), "$19\r\n0.10000000000000001\r\n"}, // %.17g, as Redis 7.0
			{cmd("TYPE", "z"), "+zset\r\n"},
			{cmd("OBJECT", "ENCODING", "z"), "$8\r\nskiplist\r\n"},
		}},
		{"ZADD options", []step{
			{cmd("ZADD", "z", "NX", "1", "a"), ":1\r\n"},
			{cmd("ZADD", "z", "NX", "5", "a"), ":0\r\n"},
			{cmd("ZADD", "z", "XX", "1", "new"), ":0\r\n"},
			{cmd("ZADD", "z", "XX", "CH", "3", "a"), ":1\r\n"},
			{cmd("ZADD", "z", "GT", "CH", "2", "a"), ":0\r\n"},
			{cmd("ZADD", "z", "LT", "CH", "2", "a", "9", "b"), ":2\r\n"}, // LT still adds b
			{cmd("ZRANGE", "z", "0", "-1", "WITHSCORES"), bulks("a", "2", "b", "9")},
			{cmd("ZADD", "z", "INCR", "1.5", "a"), "$3\r\n3.5\r\n"},
			{cmd("ZADD", "z", "INCR", "NX", "1", "a"), "$-1\r\n"},
			{cmd("ZADD", "z", "INCR", "GT", "-1", "a"), "$-1\r\n"},
			{cmd("ZADD", "z", "INCR", "0", "a"), "$3\r\n3.5\r\n"},
			{cmd("ZINCRBY", "z", "-4", "a"), "$4\r\n-0.5\r\n"},
			{cmd("ZINCRBY", "z", "+inf", "a"), "$3\r\ninf\r\n"},
			{cmd("ZINCRBY", "z", "-inf", "a"), "-ERR resulting score is not a number (NaN)\r\n"},
			{cmd("ZINCRBY", "z", "x", "a"), "-ERR value is not a valid float\r\n"},
			{cmd("ZINCRBY", "fresh", "2", "m"), "$1\r\n2\r\n"},
			{cmd("ZRANGE", "z", "0", "-1", "WITHSCORES"), bulks("b", "9", "a", "inf")},
			{cmd("ZADD", "z", "XX", "NX", "1", "a"), "-ERR XX and NX options at the same time are not compatible\r\n"},
			{cmd("ZADD", "z", "GT", "LT", "1", "a"), "-ERR GT, LT, and/or NX options at the same time are not compatible\r\n"},
			{cmd("ZADD", "z", "NX", "GT", "1", "a"), "-ERR GT, LT, and/or NX options at the same time are not compatible\r\n"},
			{cmd("ZADD", "z", "INCR", "1", "a", "2", "b"), "-ERR INCR option supports a single increment-element pair\r\n"},
			{cmd("ZADD", "z", "1", "a", "2"), "-ERR syntax error\r\n"},
			{cmd("ZADD", "z", "CH"), "-ERR wrong number of arguments for 'zadd' command\r\n"},
			{cmd("ZADD", "z", "1", "a", "nan", "b"), "-ERR value is not a valid float\r\n"},
			{cmd("ZADD", "z", "1", "x", "abc", "y"), "-ERR value is not a valid float\r\n"},
			{cmd("ZCARD", "z"), ":2\r\n"}, // nothing of a refused ZADD is written
			{cmd("ZADD", "new", "XX", "1", "a"), ":0\r\n"},
			{cmd("EXISTS", "new"), ":0\r\n"}, // a ZADD that adds nothing creates no key
		}},
		{"ranges", []step{
			{cmd("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "-inf", "lo", "+inf", "hi"), ":6\r\n"},
			{cmd("ZRANGEBYSCORE", "z", "2", "(4"), bulks("b", "c")},
			{cmd("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1", "2"), bulks("a", "b")},
			{cmd("ZRANGEBYSCORE", "z", "(1", "3", "WITHSCORES"), bulks("b", "2", "c", "3")},
			{cmd("ZREVRANGEBYSCORE", "z", "+inf", "(3", "WITHSCORES"), bulks("hi", "inf", "d", "4")},
			{cmd("ZRANGE", "z", "(1", "3", "BYSCORE", "REV"), "*0\r\n"}, // REV takes max first
			{cmd("ZRANGE", "z", "3", "(1", "BYSCORE", "REV", "LIMIT", "0", "1"), bulks("c")},
			{cmd("ZCOUNT", "z", "(1", "inf"), ":4\r\n"},
			{cmd("ZRANGEBYSCORE", "z", "x", "1"), "-ERR min or max is not a float\r\n"},
			{cmd("ZCOUNT", "z", "1", "nan"), "-ERR min or max is not a float\r\n"},
			{cmd("ZRANGE", "z", "0", "1", "LIMIT", "0", "1"), "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n"},
			{cmd("ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES"), "-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n"},
			{cmd("ZRANGE", "z", "0", "1", "BYSCORE", "BYLEX"), "-ERR syntax error\r\n"},
			{cmd("ZRANGE", "z", "0", "x"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("ZRANGEBYSCORE", "z", "0", "1", "LIMIT", "0"), "-ERR syntax error\r\n"},
			{cmd("ZREVRANGE", "z", "0", "0", "REV"), "-ERR syntax error\r\n"},
			{cmd("ZADD", "l", "0", "a", "0", "b", "0", "c", "0", "d"), ":4\r\n"},
			{cmd("ZRANGEBYLEX", "l", "[b", "(d"), bulks("b", "c")},
			{cmd("ZREVRANGEBYLEX", "l", "+", "(b", "LIMIT", "0", "1"), bulks("d")},
			{cmd("ZRANGE", "l", "-", "[a", "BYLEX"), bulks("a")},
			{cmd("ZLEXCOUNT", "l", "(a", "+"), ":3\r\n"},
			{cmd("ZLEXCOUNT", "l", "a", "+"), "-ERR min or max not valid string range item\r\n"},
			{cmd("ZRANGE", "nokey", "0", "-1"), "*0\r\n"},
		}},
		{"removes", []step{
			{cmd("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e", "6", "f"), ":6\r\n"},
			{cmd("ZREM", "z", "a", "none", "a"), ":1\r\n"},
			{cmd("ZREMRANGEBYSCORE", "z", "(5", "+inf"), ":1\r\n"},
			{cmd("ZREMRANGEBYRANK", "z", "0", "0"), ":1\r\n"},
			{cmd("ZRANGE", "z", "0", "-1"), bulks("c", "d", "e")},
			{cmd("ZREMRANGEBYLEX", "z", "[d", "+"), ":2\r\n"},
			{cmd("ZPOPMAX", "z"), bulks("c", "3")},
			{cmd("EXISTS", "z"), ":0\r\n"}, // the last member gone, the header stays and reads as absent
			{cmd("ZADD", "z", "1", "a", "2", "b", "3", "c"), ":3\r\n"},
			{cmd("ZPOPMIN", "z", "2"), bulks("a", "1", "b", "2")},
			{cmd("ZPOPMIN", "z", "0"), "*0\r\n"},
			{cmd("ZPOPMIN", "z", "-1"), "-ERR value is out of range, must be positive\r\n"},
			{cmd("ZPOPMIN", "nokey"), "*0\r\n"},
			{cmd("ZREM", "z", "c"), ":1\r\n"},
			{cmd("TYPE", "z"), "+none\r\n"}, // emptied
			{cmd("ZREMRANGEBYRANK", "z", "0", "x"), "-ERR value is not an integer or out of range\r\n"},
		}},
		{"a delete ends the members of the key's life", []step{
			{cmd("ZADD", "z", "1", "a", "2", "b"), ":2\r\n"},
			{cmd("EXPIRE", "z", "100"), ":1\r\n"},
			{cmd("ZADD", "z", "3", "c"), ":1\r\n"},
			{cmd("TTL", "z"), ":100\r\n"}, // ZADD keeps the expiry
			{cmd("DEL", "z"), ":1\r\n"},
			{cmd("ZRANGE", "z", "0", "-1"), "*0\r\n"},
			{cmd("ZINCRBY", "z", "1", "a"), "$1\r\n1\r\n"}, // a fresh member, not 2
			{cmd("ZADD", "z", "5", "d"), ":1\r\n"},
			{cmd("ZRANGE", "z", "0", "-1", "WITHSCORES"), bulks("a", "1", "d", "5")},
			// z, and each member's two records: "\x00\x01\x01zza" with its 8-byte score, and
			// "\x00\x01\x01zo" with the 8-byte order and the member.
			{cmd("MEMORY", "USAGE", "z"), ":" + strconv.Itoa(1+2*((6+8)+(5+8+1))) + "\r\n"},
		}},
		{"random members and scan", []step{
			{cmd("ZRANDMEMBER", "z"), "$-1\r\n"},
			{cmd("ZRANDMEMBER", "z", "2"), "*0\r\n"},
			{cmd("ZADD", "z", "1.5", "a"), ":1\r\n"},
			{cmd("ZRANDMEMBER", "z"), "$1\r\na\r\n"},
			{cmd("ZRANDMEMBER", "z", "5", "WITHSCORES"), bulks("a", "1.5")},
			{cmd("ZRANDMEMBER", "z", "-2"), bulks("a", "a")},
			{cmd("ZRANDMEMBER", "z", "1", "x"), "-ERR syntax error\r\n"},
			{cmd("ZADD", "z", "2", "b", "3", "c"), ":2\r\n"},
			{cmd("ZSCAN", "z", "0", "MATCH", "[ab]"), "*2\r\n$1\r\n0\r\n" + bulks("a", "1.5", "b", "2")},
			{cmd("ZSCAN", "z", "x"), "-ERR invalid cursor\r\n"},
		}},
		{"unions, intersections, differences and stores", []step{
			{cmd("ZADD", "{t}a", "1", "a", "2", "b", "3", "c"), ":3\r\n"},
			{cmd("ZADD", "{t}b", "10", "b", "20", "c", "30", "d"), ":3\r\n"},
			{cmd("ZUNION", "2", "{t}a", "{t}b", "WITHSCORES"), bulks("a", "1", "b", "12", "c", "23", "d", "30")},
			{cmd("ZINTER", "2", "{t}a", "{t}b", "WEIGHTS", "2", "1", "AGGREGATE", "MIN", "WITHSCORES"), bulks("b", "4", "c", "6")},
			{cmd("ZDIFF", "2", "{t}a", "{t}b"), bulks("a")},
			{cmd("ZUNION", "2", "{t}a", "nokey"), bulks("a", "b", "c")},
			{cmd("ZUNIONSTORE", "{t}u", "2", "{t}a", "{t}b", "AGGREGATE", "MAX"), ":4\r\n"},
			{cmd("ZRANGE", "{t}u", "0", "-1", "WITHSCORES"), bulks("a", "1", "b", "10", "c", "20", "d", "30")},
			{cmd("ZINTERSTORE", "{t}u", "2", "{t}a", "{t}b"), ":2\r\n"}, // replaces {t}u whole
			{cmd("ZRANGE", "{t}u", "0", "-1"), bulks("b", "c")},
			{cmd("ZDIFFSTORE", "{t}u", "2", "{t}a", "{t}a"), ":0\r\n"},
			{cmd("EXISTS", "{t}u"), ":0\r\n"}, // an empty result deletes the destination
			{cmd("SET", "{t}s", "string"), "+OK\r\n"},
			{cmd("ZRANGESTORE", "{t}s", "{t}b", "(10", "+inf", "BYSCORE"), ":2\r\n"}, // a string replaced
			{cmd("ZRANGE", "{t}s", "0", "-1", "WITHSCORES"), bulks("c", "20", "d", "30")},
			{cmd("ZRANGESTORE", "{t}s", "{t}b", "0", "-1", "WITHSCORES"), "-ERR syntax error\r\n"},
			{cmd("ZUNION", "0", "{t}a"), "-ERR at least 1 input key is needed for 'zunion' command\r\n"},
			{cmd("ZUNION", "3", "{t}a", "{t}b"), "-ERR syntax error\r\n"},
			{cmd("ZUNION", "2", "{t}a", "{t}b", "WEIGHTS", "1", "nan"), "-ERR weight value is not a float\r\n"},
			{cmd("ZDIFF", "2", "{t}a", "{t}b", "WEIGHTS", "1", "1"), "-ERR syntax error\r\n"},
			{cmd("ZUNIONSTORE", "{t}u", "1", "{t}a", "WITHSCORES"), "-ERR syntax error\r\n"},
			{cmd("ZINTER", "2", "{t}a", "{t}s2", "AGGREGATE", "avg"), "-ERR syntax error\r\n"},
		}},
		{"sets as inputs, scored 1", []step{
			{cmd("ZADD", "{t}b", "1", "b", "2", "c", "3", "d"), ":3\r\n"},
			{cmd("SADD", "{t}s", "a", "b", "c"), ":3\r\n"},
			{cmd("ZUNIONSTORE", "{t}u", "2", "{t}s", "{t}b", "WEIGHTS", "2", "3"), ":4\r\n"},
			{cmd("ZRANGE", "{t}u", "0", "-1", "WITHSCORES"), bulks("a", "2", "b", "5", "c", "8", "d", "9")},
			{cmd("ZINTER", "2", "{t}s", "{t}b", "WITHSCORES"), bulks("b", "2", "c", "3")},
			{cmd("ZDIFF", "2", "{t}s", "{t}b", "WITHSCORES"), bulks("a", "1")},
			{cmd("ZINTERCARD", "2", "{t}s", "{t}b"), ":2\r\n"},
			{cmd("SADD", "{t}s2", "x"), ":1\r\n"},
			{cmd("ZINTERSTORE", "{t}i", "2", "{t}s", "{t}s2"), ":0\r\n"},
			{cmd("HSET", "{t}h", "a", "1"), ":1\r\n"},
			{cmd("ZUNION", "2", "{t}s", "{t}h"), wrongType},
			{cmd("ZRANGESTORE", "{t}r", "{t}s", "0", "-1"), wrongType}, // a range's source is a sorted set only
		}},
		{"ZINTERCARD", []step{
			{cmd("ZADD", "{t}a", "1", "a", "2", "b", "3", "c"), ":3\r\n"},
			{cmd("ZADD", "{t}b", "1", "b", "2", "c", "3", "d"), ":3\r\n"},
			{cmd("ZINTERCARD", "2", "{t}a", "{t}b"), ":2\r\n"},
			{cmd("ZINTERCARD", "2", "{t}a", "{t}b", "LIMIT", "0"), ":2\r\n"},
			{cmd("ZINTERCARD", "2", "{t}a", "{t}b", "limit", "1"), ":1\r\n"},
			{cmd("ZINTERCARD", "2", "{t}a", "{t}b", "LIMIT", "10"), ":2\r\n"},
			{cmd("ZINTERCARD", "1", "nokey"), ":0\r\n"},
			{cmd("ZINTERCARD", "1", "{t}a", "{t}a"), "-ERR syntax error\r\n"},
			{cmd("ZINTERCARD", "1", "{t}a", "LIMIT"), "-ERR syntax error\r\n"},
			{cmd("ZINTERCARD", "2", "{t}a", "{t}b", "WITHSCORES"), "-ERR syntax error\r\n"},
			{cmd("ZINTERCARD", "2", "{t}a", "{t}b", "WEIGHTS", "1", "2"), "-ERR syntax error\r\n"},
			{cmd("ZINTERCARD", "1", "{t}a", "LIMIT", "-1"), "-ERR LIMIT can't be negative\r\n"},
			{cmd("ZINTERCARD", "1", "{t}a", "LIMIT", "a"), "-ERR LIMIT can't be negative\r\n"},
			{cmd("ZINTERCARD", "0", "{t}a"), "-ERR at least 1 input key is needed for 'zintercard' command\r\n"},
			{cmd("ZINTERCARD", "x", "{t}a"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("ZINTERCARD", "2", "{t}a"), "-ERR syntax error\r\n"},
		}},
		{"ZMPOP", []step{
			{cmd("ZADD", "{t}a", "1", "a", "2", "b", "3", "c"), ":3\r\n"},
			{cmd("ZMPOP", "2", "{t}none", "{t}a", "MIN"), "*2\r\n$4\r\n{t}a\r\n*1\r\n" + bulks("a", "1")},
			{cmd("ZMPOP", "1", "{t}a", "max", "count", "5"), "*2\r\n$4\r\n{t}a\r\n*2\r\n" + bulks("c", "3") + bulks("b", "2")},
			{cmd("ZMPOP", "1", "{t}a", "MIN"), "*-1\r\n"}, // emptied
			{cmd("ZMPOP", "2", "{t}none", "{t}a", "MAX", "COUNT", "1"), "*-1\r\n"},
			{cmd("SET", "{t}s", "x"), "+OK\r\n"},
			{cmd("ZMPOP", "2", "{t}none", "{t}s", "MIN"), wrongType},
			{cmd("ZMPOP", "1", "{t}s", "MIN", "COUNT", "0"), "-ERR count should be greater than 0\r\n"}, // arguments first
			{cmd("ZADD", "{t}b", "1", "b"), ":1\r\n"},
			{cmd("ZMPOP", "2", "{t}b", "{t}s", "MIN"), "*2\r\n$4\r\n{t}b\r\n*1\r\n" + bulks("b", "1")}, // {t}s is not reached
			{cmd("ZMPOP", "1"), "-ERR wrong number of arguments for 'zmpop' command\r\n"},
			{cmd("ZMPOP", "1", "k"), "-ERR wrong number of arguments for 'zmpop' command\r\n"},
			{cmd("ZMPOP", "0", "k", "MIN"), "-ERR numkeys should be greater than 0\r\n"},
			{cmd("ZMPOP", "a", "k", "MIN"), "-ERR numkeys should be greater than 0\r\n"},
			{cmd("ZMPOP", "-1", "k", "MAX"), "-ERR numkeys should be greater than 0\r\n"},
			{cmd("ZMPOP", "2", "k", "MIN"), "-ERR syntax error\r\n"},
			{cmd("ZMPOP", "1", "k", "bad_where"), "-ERR syntax error\r\n"},
			{cmd("ZMPOP", "1", "k", "MIN", "bar_arg"), "-ERR syntax error\r\n"},
			{cmd("ZMPOP", "1", "k", "MAX", "MIN"), "-ERR syntax error\r\n"},
			{cmd("ZMPOP", "1", "k", "COUNT"), "-ERR syntax error\r\n"},
			{cmd("ZMPOP", "1", "k", "MIN", "COUNT"), "-ERR syntax error\r\n"},
			{cmd("ZMPOP", "1", "k", "MAX", "COUNT", "1", "COUNT", "2"), "-ERR syntax error\r\n"},
			{cmd("ZMPOP", "1", "k", "MAX", "COUNT", "a"), "-ERR count should be greater than 0\r\n"},
			{cmd("ZMPOP", "1", "k", "MIN", "COUNT", "-1"), "-ERR count should be greater than 0\r\n"},
		}},
		{"blocking pops with members there", []step{
			{cmd("ZADD", "z", "0", "a", "1", "b", "2", "c"), ":3\r\n"},
			{cmd("BZPOPMIN", "none", "z", "0"), bulks("z", "a", "0")},
			{cmd("BZPOPMAX", "z", "5"), bulks("z", "c", "2")},
			{cmd("BZMPOP", "0", "2", "none", "z", "MIN", "COUNT", "10"), "*2\r\n$1\r\nz\r\n*1\r\n" + bulks("b", "1")},
			{cmd("BZPOPMIN", "z", "0.01"), "*-1\r\n"}, // the timeout passes
			{cmd("BZMPOP", "0.01", "1", "z", "MAX"), "*-1\r\n"},
			{cmd("BZPOPMIN", "z", "-1"), "-ERR timeout is negative\r\n"},
			{cmd("BZPOPMIN", "z", "x"), "-ERR timeout is not a float or out of range\r\n"},
			{cmd("BZMPOP", "x", "1", "z", "MIN"), "-ERR timeout is not a float or out of range\r\n"},
			{cmd("BZMPOP", "-1", "0", "z", "MIN"), "-ERR numkeys should be greater than 0\r\n"}, // numkeys before the timeout
			{cmd("BZMPOP", "0", "1", "z", "MIN", "COUNT", "0"), "-ERR count should be greater than 0\r\n"},
			{cmd("BZMPOP", "0", "1", "z"), "-ERR wrong number of arguments for 'bzmpop' command\r\n"},
			{cmd("BZPOPMIN", "z"), "-ERR wrong number of arguments for 'bzpopmin' command\r\n"},
			{cmd("SET", "s", "x"), "+OK\r\n"},
			{cmd("BZPOPMIN", "s", "1"), wrongType},
			{cmd("BZMPOP", "1", "2", "none", "s", "MAX", "COUNT", "1"), wrongType},
		}},
		{"wrong types", []step{
			{cmd("ZADD", "z", "1", "a"), ":1\r\n"},
			{cmd("SET", "s", "1"), "+OK\r\n"},
			{cmd("HSET", "h", "f", "v"), ":1\r\n"},
			{cmd("ZADD", "s", "1", "a"), wrongType},
			{cmd("ZINCRBY", "s", "1", "a"), wrongType},
			{cmd("ZSCORE", "h", "a"), wrongType},
			{cmd("ZRANGE", "s", "0", "-1"), wrongType},
			{cmd("ZCARD", "h"), wrongType},
			{cmd("ZREM", "s", "a"), wrongType},
			{cmd("ZPOPMIN", "s"), wrongType},
			{cmd("ZUNION", "2", "z", "s"), wrongType},
			{cmd("GET", "z"), wrongType},
			{cmd("INCR", "z"), wrongType},
			{cmd("HGET", "z", "a"), wrongType},
			{cmd("HSET", "z", "a", "1"), wrongType},
			{cmd("SCAN", "0", "TYPE", "zset"), "*2\r\n$1\r\n0\r\n" + bulks("z")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, addr := startServer(t, Config{})
			converse(t, addr, tt.steps)
		})
	}
}

// TestZsetRESP3: scores are RESP3 doubles, and WITHSCORES answers a pair per member.
func TestZsetRESP3(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	converse(t, addr, []step{
		{cmd("HELLO", "3"), "%7\r\n$6\r\nserver\r\n$4\r\nkura\r\n$7\r\nversion\r\n$5\r\n7.0.0\r\n$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:1\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"},
		{cmd("ZADD", "z", "1", "a", "2.5", "b"), ":2\r\n"},
		{cmd("ZSCORE", "z", "b"), ",2.5\r\n"},
		{cmd("ZINCRBY", "z", "+inf", "b"), ",inf\r\n"},
		{cmd("ZMSCORE", "z", "a", "none"), "*2\r\n,1\r\n_\r\n"},
		{cmd("ZRANGE", "z", "0", "-1", "WITHSCORES"), "*2\r\n*2\r\n$1\r\na\r\n,1\r\n*2\r\n$1\r\nb\r\n,inf\r\n"},
		{cmd("ZPOPMIN", "z"), "*2\r\n$1\r\na\r\n,1\r\n"},
		{cmd("ZPOPMAX", "z", "1"), "*1\r\n*2\r\n$1\r\nb\r\n,inf\r\n"},
		{cmd("ZADD", "z", "1", "a", "2", "b"), ":2\r\n"},
		{cmd("BZPOPMIN", "z", "0"), "*3\r\n$1\r\nz\r\n$1\r\na\r\n,1\r\n"},
		{cmd("ZMPOP", "1", "z", "MIN"), "*2\r\n$1\r\nz\r\n*1\r\n*2\r\n$1\r\nb\r\n,2\r\n"},
		{cmd("ZMPOP", "1", "z", "MIN"), "_\r\n"},
		{cmd("BZMPOP", "0.01", "1", "z", "MIN"), "_\r\n"},
		{cmd("BZPOPMAX", "z", "0.01"), "_\r\n"},
	})
}

// TestBlockingZpopWakes: a client blocked in BZPOPMIN or BZMPOP on empty sorted sets is
// woken by each command that gives one of them members, and pops from it.
func TestBlockingZpopWakes(t *testing.T) {
	tests := []struct {
		name  string
		block []string
		setup []step // before the block
		wake  step
		want  string
	}{
		{"ZADD", cmd("BZPOPMIN", "{t}z", "{t}y", "0"), nil,
			step{cmd("ZADD", "{t}y", "-1", "foo", "1", "bar"), ":2\r\n"}, bulks("{t}y", "foo", "-1")},
		{"ZINCRBY", cmd("BZPOPMAX", "{t}z", "0"), nil,
			step{cmd("ZINCRBY", "{t}z", "2.5", "m"), "$3\r\n2.5\r\n"}, bulks("{t}z", "m", "2.5")},
		{"ZADD after the last member went", cmd("BZMPOP", "0", "1", "{t}z", "MAX", "COUNT", "2"),
			[]step{{cmd("ZADD", "{t}z", "1", "a"), ":1\r\n"}, {cmd("ZREM", "{t}z", "a"), ":1\r\n"}},
			step{cmd("ZADD", "{t}z", "1", "a", "2", "b", "3", "c"), ":3\r\n"}, "*2\r\n$4\r\n{t}z\r\n*2\r\n" + bulks("c", "3") + bulks("b", "2")},
		{"ZUNIONSTORE", cmd("BZMPOP", "0", "2", "{t}z", "{t}y", "MIN"),
			[]step{{cmd("SADD", "{t}s", "m"), ":1\r\n"}},
			step{cmd("ZUNIONSTORE", "{t}y", "1", "{t}s"), ":1\r\n"}, "*2\r\n$4\r\n{t}y\r\n*1\r\n" + bulks("m", "1")},
		{"ZRANGESTORE", cmd("BZPOPMIN", "{t}z", "0"),
			[]step{{cmd("ZADD", "{t}src", "7", "m"), ":1\r\n"}},
			step{cmd("ZRANGESTORE", "{t}z", "{t}src", "0", "-1"), ":1\r\n"}, bulks("{t}z", "m", "7")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, addr := startServer(t, Config{})
			converse(t, addr, tt.setup)
			blocked := dial(t, addr)
			blocked.send(encode(tt.block...))
			waitBlocked(t, s, 1)
			converse(t, addr, []step{tt.wake})
			blocked.expect(tt.want)
			waitBlocked(t, s, 0)
		})
	}
}

// TestConcurrentZpopsTakeEachMemberOnce: clients popping one sorted set at once, by
// ZPOPMIN, ZMPOP and BZPOPMIN, get every member exactly once between them, and each
// client its members in score order (the lowest left, at each pop).
func TestConcurrentZpopsTakeEachMemberOnce(t *testing.T) {
	const members, clients = 60, 6
	_, _, addr := startServer(t, Config{})
	add := []string{"ZADD", "z"}
	for i := range members {
		add = append(add, strconv.Itoa(i), "m"+strconv.Itoa(i))
	}
	converse(t, addr, []step{{add, ":" + strconv.Itoa(members) + "\r\n"}})
	pops := [][]string{cmd("ZPOPMIN", "z", "2"), cmd("ZMPOP", "1", "z", "MIN", "COUNT", "3"), cmd("BZPOPMIN", "z", "0.01")}
	got := make(chan []string, clients)
	for i := range clients {
		go func() {
			rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, PoolSize: 1})
			defer rdb.Close()
			var names []string
			for {
				v, err := rdb.Do(context.Background(), toAny(pops[i%len(pops)])...).Result()
				if err == redis.Nil {
					break
				}
				if err != nil {
					t.Errorf("%v: %v", pops[i%len(pops)], err)
					break
				}
				popped := poppedNames(pops[i%len(pops)][0], v)
				if len(popped) == 0 {
					break
				}
				names = append(names, popped...)
			}
			got <- names
		}()
	}
	seen := map[string]int{}
	for range clients {
		last := -1
		for _, name := range <-got {
			seen[name]++
			score, _ := strconv.Atoi(strings.TrimPrefix(name, "m"))
			if score <= last {
				t.Errorf("a client popped %s after m%d", name, last)
			}
			last = score
		}
	}
	for i := range members {
		if name := "m" + strconv.Itoa(i); seen[name] != 1 {
			t.Errorf("%s popped %d times, want once", name, seen[name])
		}
	}
	if len(seen) != members {
		t.Errorf("%d members popped, want %d", len(seen), members)
	}
}

func toAny(args []string) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}

// poppedNames returns the members named by the RESP2 reply of pop: ZPOPMIN's flat
// pairs, ZMPOP's key and pairs, BZPOPMIN's key, member and score.
func poppedNames(pop string, reply any) []string {
	items, _ := reply.([]any)
	var names []string
	switch pop {
	case "BZPOPMIN":
		names = append(names, items[1].(string))
	case "ZMPOP":
		for _, p := range items[1].([]any) {
			names = append(names, p.([]any)[0].(string))
		}
	default:
		for i := 0; i < len(items); i += 2 {
			names = append(names, items[i].(string))
		}
	}
	return names
}

// TestGoRedisReadsZsetReplies drives the sorted-set commands with go-redis, in RESP2 and
// RESP3: its parsers must read kura's replies as they read Redis's.
func TestGoRedisReadsZsetReplies(t *testing.T) {
	for _, protocol := range []int{2, 3} {
		t.Run("RESP"+string(rune('0'+protocol)), func(t *testing.T) {
			_, _, addr := startServer(t, Config{})
			rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: protocol, PoolSize: 1})
			defer rdb.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if n, err := rdb.ZAdd(ctx, "board", redis.Z{Score: 10, Member: "ann"}, redis.Z{Score: 30, Member: "bob"}, redis.Z{Score: 20, Member: "cy"}).Result(); err != nil || n != 3 {
				t.Fatalf("ZADD = %d, %v", n, err)
			}
			if f, err := rdb.ZIncrBy(ctx, "board", 0.5, "ann").Result(); err != nil || f != 10.5 {
				t.Errorf("ZINCRBY = %v, %v", f, err)
			}
			if f, err := rdb.ZScore(ctx, "board", "cy").Result(); err != nil || f != 20 {
				t.Errorf("ZSCORE = %v, %v", f, err)
			}
			if fs, err := rdb.ZMScore(ctx, "board", "bob", "none").Result(); err != nil || !slices.Equal(fs, []float64{30, 0}) {
				t.Errorf("ZMSCORE = %v, %v", fs, err)
			}
			zs, err := rdb.ZRevRangeWithScores(ctx, "board", 0, 1).Result()
			if err != nil || !slices.Equal(zs, []redis.Z{{Score: 30, Member: "bob"}, {Score: 20, Member: "cy"}}) {
				t.Errorf("ZREVRANGE WITHSCORES = %v, %v", zs, err)
			}
			names, err := rdb.ZRangeArgs(ctx, redis.ZRangeArgs{Key: "board", Start: "(10.5", Stop: "+inf", ByScore: true}).Result()
			if err != nil || !slices.Equal(names, []string{"cy", "bob"}) {
				t.Errorf("ZRANGE BYSCORE = %v, %v", names, err)
			}
			if r, err := rdb.ZRank(ctx, "board", "bob").Result(); err != nil || r != 2 {
				t.Errorf("ZRANK = %d, %v", r, err)
			}
			if zs, err := rdb.ZPopMin(ctx, "board", 1).Result(); err != nil || !slices.Equal(zs, []redis.Z{{Score: 10.5, Member: "ann"}}) {
				t.Errorf("ZPOPMIN = %v, %v", zs, err)
			}
			if zs, err := rdb.ZRandMemberWithScores(ctx, "board", 5).Result(); err != nil || len(zs) != 2 {
				t.Errorf("ZRANDMEMBER WITHSCORES = %v, %v", zs, err)
			}
			page, cursor, err := rdb.ZScan(ctx, "board", 0, "*", 10).Result()
			if err != nil || cursor != 0 || !slices.Equal(page, []string{"cy", "20", "bob", "30"}) {
				t.Errorf("ZSCAN = %v, %d, %v", page, cursor, err)
			}
			if n, err := rdb.ZCard(ctx, "board").Result(); err != nil || n != 2 {
				t.Errorf("ZCARD = %d, %v", n, err)
			}
			if err := rdb.ZAdd(ctx, "board", redis.Z{Score: 1, Member: "x"}).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.Set(ctx, "s", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.ZAdd(ctx, "s", redis.Z{Score: 1, Member: "x"}).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE ") {
				t.Errorf("ZADD on a string: %v, want WRONGTYPE", err)
			}
		})
	}
}
