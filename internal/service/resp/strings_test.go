package resp

import (
	"errors"
	"math"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/core/lww"
)

func TestStringCommands(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"get and set", []step{
			{cmd("GET", "k"), "$-1\r\n"},
			{cmd("SET", "k", "v1"), "+OK\r\n"},
			{cmd("GET", "k"), "$2\r\nv1\r\n"},
			{cmd("SET", "k", ""), "+OK\r\n"},
			{cmd("GET", "k"), "$0\r\n\r\n"},
		}},
		{"set options", []step{
			{cmd("SET", "k", "v1", "XX"), "$-1\r\n"},
			{cmd("GET", "k"), "$-1\r\n"},
			{cmd("SET", "k", "v1", "nx"), "+OK\r\n"},
			{cmd("SET", "k", "v2", "NX"), "$-1\r\n"},
			{cmd("SET", "k", "v2", "NX", "GET"), "$2\r\nv1\r\n"},
			{cmd("SET", "k", "v3", "XX", "GET"), "$2\r\nv1\r\n"},
			{cmd("SET", "k", "v4", "GET", "KEEPTTL"), "$2\r\nv3\r\n"},
			{cmd("SET", "new", "v", "GET"), "$-1\r\n"},
			{cmd("GET", "new"), "$1\r\nv\r\n"},
			{cmd("SET", "k", "v", "NX", "XX"), "-ERR syntax error\r\n"},
			{cmd("SET", "k", "v", "SOON"), "-ERR syntax error\r\n"},
			{cmd("GET", "k"), "$2\r\nv4\r\n"},
			{cmd("SET", "k", "v", "EX", "100"), "+OK\r\n"},
			{cmd("SET", "k", "v5", "px", "100000"), "+OK\r\n"},
			{cmd("GET", "k"), "$2\r\nv5\r\n"},
		}},
		{"set options refused as Redis refuses them", []step{
			{cmd("SET", "k", "v", "EX", "0"), "-ERR invalid expire time in 'set' command\r\n"},
			{cmd("SET", "k", "v", "EX", "-5"), "-ERR invalid expire time in 'set' command\r\n"},
			{cmd("SET", "k", "v", "PX", "0"), "-ERR invalid expire time in 'set' command\r\n"},
			{cmd("SET", "k", "v", "EXAT", "0"), "-ERR invalid expire time in 'set' command\r\n"},
			{cmd("SET", "k", "v", "EX", "9223372036854775"), "-ERR invalid expire time in 'set' command\r\n"},
			{cmd("SET", "k", "v", "EX", "9223372036854775807"), "-ERR invalid expire time in 'set' command\r\n"},
			{cmd("SET", "k", "v", "PX", "9223372036854775807"), "-ERR invalid expire time in 'set' command\r\n"},
			{cmd("SET", "k", "v", "EX", "abc"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("SET", "k", "v", "EX", "1.5"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("SET", "k", "v", "EX", "010"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("SET", "k", "v", "EX", "abc", "XX", "NX"), "-ERR syntax error\r\n"}, // words before numbers
			{cmd("SET", "k", "v", "EX"), "-ERR syntax error\r\n"},
			{cmd("SET", "k", "v", "EX", "10", "PX", "10"), "-ERR syntax error\r\n"},
			{cmd("SET", "k", "v", "KEEPTTL", "EX", "10"), "-ERR syntax error\r\n"},
			{cmd("SET", "k", "v", "EX", "10", "KEEPTTL"), "-ERR syntax error\r\n"},
			{cmd("SET", "k", "v", "XX", "NX"), "-ERR syntax error\r\n"},
			{cmd("SET", "k", "v", "EXAT", "9223372036854775"), "+OK\r\n"},
			{cmd("SET", "k", "v", "EX", "10", "EX", "20"), "+OK\r\n"},
			{cmd("SET", "k", "v", "NX", "NX", "GET", "GET", "KEEPTTL", "KEEPTTL"), "$1\r\nv\r\n"},
			{cmd("SET", "k"), "-ERR wrong number of arguments for 'set' command\r\n"},
			{cmd("GET", "k"), "$1\r\nv\r\n"},
		}},
		{"strlen and type", []step{
			{cmd("STRLEN", "k"), ":0\r\n"},
			{cmd("TYPE", "k"), "+none\r\n"},
			{cmd("SET", "k", "hello"), "+OK\r\n"},
			{cmd("STRLEN", "k"), ":5\r\n"},
			{cmd("TYPE", "k"), "+string\r\n"},
			{cmd("STRLEN"), "-ERR wrong number of arguments for 'strlen' command\r\n"},
			{cmd("STRLEN", "k", "x"), "-ERR wrong number of arguments for 'strlen' command\r\n"},
			{cmd("TYPE"), "-ERR wrong number of arguments for 'type' command\r\n"},
			{cmd("TYPE", "broken"), "-UNAVAILABLE unavailable: QUORUM needs 0 replicas, 1 (dc1: 1) alive, so no replica was asked: bring the down replicas back (kura status shows them) or use a lower consistency level\r\n"},
		}},
		{"getrange", []step{
			{cmd("GETRANGE", "k", "0", "-1"), "$0\r\n\r\n"},
			{cmd("SET", "k", "hello"), "+OK\r\n"},
			{cmd("GETRANGE", "k", "0", "-1"), "$5\r\nhello\r\n"},
			{cmd("GETRANGE", "k", "-3", "-1"), "$3\r\nllo\r\n"},
			{cmd("GETRANGE", "k", "-1", "-3"), "$0\r\n\r\n"},
			{cmd("GETRANGE", "k", "3", "1"), "$0\r\n\r\n"},
			{cmd("GETRANGE", "k", "1", "100"), "$4\r\nello\r\n"},
			{cmd("GETRANGE", "k", "-100", "-100"), "$1\r\nh\r\n"},
			{cmd("GETRANGE", "k", "-100", "0"), "$1\r\nh\r\n"},
			{cmd("GETRANGE", "k", "9223372036854775807", "9223372036854775807"), "$0\r\n\r\n"},
			{cmd("GETRANGE", "k", "-9223372036854775808", "9223372036854775807"), "$5\r\nhello\r\n"},
			{cmd("GETRANGE", "k", "0", "9223372036854775808"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("GETRANGE", "k", "01", "2"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("GETRANGE", "k", "1"), "-ERR wrong number of arguments for 'getrange' command\r\n"},
			{cmd("SUBSTR", "k", "1", "2"), "$2\r\nel\r\n"},
			{cmd("SET", "empty", ""), "+OK\r\n"},
			{cmd("GETRANGE", "empty", "0", "-1"), "$0\r\n\r\n"},
		}},
		{"unlink", []step{
			{cmd("MSET", "a", "1", "b", "2"), "+OK\r\n"},
			{cmd("UNLINK", "a", "a", "nokey"), ":1\r\n"},
			{cmd("EXISTS", "a", "b"), ":1\r\n"},
			{cmd("UNLINK"), "-ERR wrong number of arguments for 'unlink' command\r\n"},
		}},
		{"getdel", []step{
			{cmd("SET", "k", "v"), "+OK\r\n"},
			{cmd("GETDEL", "k"), "$1\r\nv\r\n"},
			{cmd("GETDEL", "k"), "$-1\r\n"},
		}},
		{"del and exists", []step{
			{cmd("MSET", "a", "1", "b", "2"), "+OK\r\n"},
			{cmd("EXISTS", "a", "a", "b", "c"), ":3\r\n"},
			{cmd("DEL", "a", "a", "c"), ":1\r\n"},
			{cmd("EXISTS", "a", "b"), ":1\r\n"},
		}},
		{"mset and mget", []step{
			{cmd("MSET", "a", "1", "b", "2", "a", "3"), "+OK\r\n"},
			{cmd("MGET", "a", "b", "c"), "*3\r\n$1\r\n3\r\n$1\r\n2\r\n$-1\r\n"},
		}},
		{"expiry", []step{
			{cmd("SET", "k", "v"), "+OK\r\n"},
			{cmd("TTL", "k"), ":-1\r\n"},
			{cmd("PTTL", "missing"), ":-2\r\n"},
			{cmd("SET", "k", "v", "EXAT", "4102444800"), "+OK\r\n"},
			{cmd("EXPIRETIME", "k"), ":4102444800\r\n"},
			{cmd("SET", "k", "w", "KEEPTTL"), "+OK\r\n"},
			{cmd("PEXPIRETIME", "k"), ":4102444800000\r\n"},
			{cmd("SET", "k", "x"), "+OK\r\n"},
			{cmd("EXPIRETIME", "k"), ":-1\r\n"},
			{cmd("SET", "k", "v", "PXAT", "1"), "+OK\r\n"},
			{cmd("GET", "k"), "$-1\r\n"},
		}},
		// The replies below were recorded from redis-server 7.0.15, in this order, except
		// COPY's DB 1 (kura has one database).
		{"commands that read the key they write, as redis-server answers them", []step{
			{cmd("SETNX", "k", "a"), ":1\r\n"},
			{cmd("SETNX", "k", "b"), ":0\r\n"},
			{cmd("GETSET", "k", "c"), "$1\r\na\r\n"},
			{cmd("GETSET", "nope", "x"), "$-1\r\n"},
			{cmd("GET", "nope"), "$1\r\nx\r\n"},
			{cmd("SET", "n", "10"), "+OK\r\n"},
			{cmd("INCR", "n"), ":11\r\n"},
			{cmd("INCRBY", "n", "5"), ":16\r\n"},
			{cmd("DECR", "n"), ":15\r\n"},
			{cmd("DECRBY", "n", "20"), ":-5\r\n"},
			{cmd("INCR", "k"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("INCRBY", "n", "x"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("SET", "big", "9223372036854775807"), "+OK\r\n"},
			{cmd("INCR", "big"), "-ERR increment or decrement would overflow\r\n"},
			{cmd("DECRBY", "n", "-9223372036854775808"), "-ERR decrement would overflow\r\n"},
			{cmd("INCRBYFLOAT", "f", "10.5"), "$4\r\n10.5\r\n"},
			{cmd("INCRBYFLOAT", "f", "0.1"), "$4\r\n10.6\r\n"},
			{cmd("INCRBYFLOAT", "f", "x"), "-ERR value is not a valid float\r\n"},
			{cmd("INCRBYFLOAT", "k", "1"), "-ERR value is not a valid float\r\n"},
			{cmd("APPEND", "a", "hello"), ":5\r\n"},
			{cmd("APPEND", "a", " world"), ":11\r\n"},
			{cmd("GET", "a"), "$11\r\nhello world\r\n"},
			{cmd("SETRANGE", "a", "6", "WORLD"), ":11\r\n"},
			{cmd("GET", "a"), "$11\r\nhello WORLD\r\n"},
			{cmd("SETRANGE", "r", "3", "x"), ":4\r\n"},
			{cmd("GET", "r"), "$4\r\n\x00\x00\x00x\r\n"},
			{cmd("SETRANGE", "empty", "5", ""), ":0\r\n"},
			{cmd("SETRANGE", "huge", "9223372036854775807", "A"), "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"},
			{cmd("COPY", "a", "b", "DB", "x"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("EXISTS", "empty"), ":0\r\n"},
			{cmd("SETRANGE", "a", "-1", "x"), "-ERR offset is out of range\r\n"},
			{cmd("SET", "s", "v"), "+OK\r\n"},
			{cmd("EXPIREAT", "s", "4102444800"), ":1\r\n"},
			{cmd("EXPIRETIME", "s"), ":4102444800\r\n"},
			{cmd("PEXPIRETIME", "s"), ":4102444800000\r\n"},
			{cmd("TTL", "missing"), ":-2\r\n"},
			{cmd("PERSIST", "s"), ":1\r\n"},
			{cmd("PERSIST", "s"), ":0\r\n"},
			{cmd("EXPIRETIME", "s"), ":-1\r\n"},
			{cmd("EXPIRE", "s", "100", "XX"), ":0\r\n"},
			{cmd("EXPIRE", "s", "100", "NX"), ":1\r\n"},
			{cmd("EXPIRE", "s", "50", "GT"), ":0\r\n"},
			{cmd("EXPIRE", "s", "200", "GT"), ":1\r\n"},
			{cmd("EXPIRE", "s", "50", "LT"), ":1\r\n"},
			{cmd("EXPIRE", "s", "10", "NX", "XX"), "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"},
			{cmd("EXPIRE", "s", "10", "GT", "LT"), "-ERR GT and LT options at the same time are not compatible\r\n"},
			{cmd("EXPIRE", "s", "10", "FOO"), "-ERR Unsupported option FOO\r\n"},
			{cmd("EXPIRE", "s", "x"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("EXPIRE", "missing", "10"), ":0\r\n"},
			{cmd("EXPIRE", "s", "-1"), ":1\r\n"},
			{cmd("EXISTS", "s"), ":0\r\n"},
			{cmd("SETEX", "e", "0", "v"), "-ERR invalid expire time in 'setex' command\r\n"},
			{cmd("SETEX", "e", "x", "v"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("PSETEX", "e", "-5", "v"), "-ERR invalid expire time in 'psetex' command\r\n"},
			{cmd("SETEX", "e", "100", "v"), "+OK\r\n"},
			{cmd("SET", "g", "v"), "+OK\r\n"},
			{cmd("GETEX", "g", "EXAT", "4102444800"), "$1\r\nv\r\n"},
			{cmd("EXPIRETIME", "g"), ":4102444800\r\n"},
			{cmd("GETEX", "g", "PERSIST"), "$1\r\nv\r\n"},
			{cmd("TTL", "g"), ":-1\r\n"},
			{cmd("GETEX", "g", "EX", "0"), "-ERR invalid expire time in 'getex' command\r\n"},
			{cmd("GETEX", "g", "FOO"), "-ERR syntax error\r\n"},
			{cmd("GETEX", "missing", "EX", "10"), "$-1\r\n"},
			{cmd("GETEX", "g"), "$1\r\nv\r\n"},
			{cmd("SET", "src", "v"), "+OK\r\n"},
			{cmd("EXPIREAT", "src", "4102444800"), ":1\r\n"},
			{cmd("RENAME", "src", "dst"), "+OK\r\n"},
			{cmd("EXISTS", "src"), ":0\r\n"},
			{cmd("GET", "dst"), "$1\r\nv\r\n"},
			{cmd("EXPIRETIME", "dst"), ":4102444800\r\n"},
			{cmd("RENAME", "missing", "x"), "-ERR no such key\r\n"},
			{cmd("RENAMENX", "dst", "a"), ":0\r\n"},
			{cmd("RENAMENX", "dst", "dst2"), ":1\r\n"},
			{cmd("RENAME", "dst2", "dst2"), "+OK\r\n"},
			{cmd("RENAMENX", "dst2", "dst2"), ":0\r\n"},
			{cmd("COPY", "dst2", "c1"), ":1\r\n"},
			{cmd("COPY", "dst2", "c1"), ":0\r\n"},
			{cmd("COPY", "dst2", "c1", "REPLACE"), ":1\r\n"},
			{cmd("COPY", "missing", "c2"), ":0\r\n"},
			{cmd("COPY", "dst2", "dst2"), "-ERR source and destination objects are the same\r\n"},
			{cmd("COPY", "dst2", "c3", "DB", "1"), "-ERR DB index is out of range\r\n"},
			{cmd("EXPIRETIME", "c1"), ":4102444800\r\n"},
			{cmd("MSETNX", "m1", "a", "m2", "b"), ":1\r\n"},
			{cmd("MSETNX", "m2", "x", "m3", "y"), ":0\r\n"},
			{cmd("EXISTS", "m3"), ":0\r\n"},
			{cmd("MSETNX", "m1"), "-ERR wrong number of arguments for 'msetnx' command\r\n"},
			{cmd("DEL", "m1", "m2", "m1", "none"), ":2\r\n"},
			{cmd("GETDEL", "c1"), "$1\r\nv\r\n"},
			{cmd("GETDEL", "c1"), "$-1\r\n"},
			{cmd("FLUSHDB", "FOO"), "-ERR syntax error\r\n"},
			{cmd("FLUSHDB", "ASYNC"), "+OK\r\n"},
			{cmd("DBSIZE"), ":0\r\n"},
		}},
		// Recorded from redis-server 7.0.15 in this order, but for a RANDOMKEY while two
		// keys exist (either may come).
		{"bits and random keys, as redis-server answers them", []step{
			{cmd("RANDOMKEY"), "$-1\r\n"},
			{cmd("GETBIT", "b", "0"), ":0\r\n"},
			{cmd("SETBIT", "b", "7", "1"), ":0\r\n"},
			{cmd("GET", "b"), "$1\r\n\x01\r\n"},
			{cmd("SETBIT", "b", "7", "0"), ":1\r\n"},
			{cmd("SETBIT", "b", "100", "1"), ":0\r\n"},
			{cmd("STRLEN", "b"), ":13\r\n"},
			{cmd("GETBIT", "b", "100"), ":1\r\n"},
			{cmd("GETBIT", "b", "99"), ":0\r\n"},
			{cmd("GETBIT", "b", "100000"), ":0\r\n"},
			{cmd("SETBIT", "b", "4294967296", "1"), "-ERR bit offset is not an integer or out of range\r\n"},
			{cmd("SETBIT", "b", "-1", "1"), "-ERR bit offset is not an integer or out of range\r\n"},
			{cmd("SETBIT", "b", "0", "2"), "-ERR bit is not an integer or out of range\r\n"},
			{cmd("SETBIT", "b", "0", "x"), "-ERR bit is not an integer or out of range\r\n"},
			{cmd("GETBIT", "b", "x"), "-ERR bit offset is not an integer or out of range\r\n"},
			{cmd("SET", "s", "A"), "+OK\r\n"},
			{cmd("GETBIT", "s", "1"), ":1\r\n"},
			{cmd("SETBIT", "s", "6", "1"), ":0\r\n"},
			{cmd("GET", "s"), "$1\r\nC\r\n"},
			{cmd("DEL", "b"), ":1\r\n"},
			{cmd("RANDOMKEY"), "$1\r\ns\r\n"},
			{cmd("DEL", "s"), ":1\r\n"},
			{cmd("RANDOMKEY"), "$-1\r\n"},
		}},
		{"errors", []step{
			{cmd("SET", "broken", "v"), "-UNAVAILABLE unavailable: QUORUM needs 0 replicas, 1 (dc1: 1) alive, so no replica was asked: bring the down replicas back (kura status shows them) or use a lower consistency level\r\n"},
			{cmd("MGET", "a", "broken"), "-UNAVAILABLE unavailable: QUORUM needs 0 replicas, 1 (dc1: 1) alive, so no replica was asked: bring the down replicas back (kura status shows them) or use a lower consistency level\r\n"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, addr := startServer(t, Config{})
			converse(t, addr, tt.steps)
		})
	}
}

// TestTypedKeys: a key whose record carries another type than string (a collection's
// header) answers GET with WRONGTYPE, reads as missing in MGET as in Redis, and TYPE
// names its type; SET over it makes it a string again.
func TestTypedKeys(t *testing.T) {
	_, fake, addr := startServer(t, Config{})
	for key, typ := range map[string]lww.Type{"h": lww.Hash, "s": lww.Set, "z": lww.SortedSet, "l": lww.List} {
		fake.storeHeld(key, typ)
	}
	converse(t, addr, []step{
		{cmd("SET", "str", "v"), "+OK\r\n"},
		{cmd("GET", "h"), "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{cmd("GET", "l"), "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{cmd("MGET", "h", "str", "missing"), "*3\r\n$-1\r\n$1\r\nv\r\n$-1\r\n"},
		{cmd("TYPE", "h"), "+hash\r\n"},
		{cmd("TYPE", "s"), "+set\r\n"},
		{cmd("TYPE", "z"), "+zset\r\n"},
		{cmd("TYPE", "l"), "+list\r\n"},
		{cmd("TYPE", "str"), "+string\r\n"},
		{cmd("TYPE", "missing"), "+none\r\n"},
		{cmd("SET", "h", "now a string"), "+OK\r\n"},
		{cmd("TYPE", "h"), "+string\r\n"},
		{cmd("GET", "h"), "$12\r\nnow a string\r\n"},
	})
}

func TestNoKeyspaceErrorSaysWhatToDo(t *testing.T) {
	_, fake, addr := startServer(t, Config{DefaultKeyspace: "missing"})
	converse(t, addr, []step{
		{cmd("GET", "k"), "-ERR no such keyspace \"missing\": create it (kura keyspace create) or choose another with KURA.KEYSPACE; a new connection starts in the node's --resp-keyspace\r\n"},
	})
	if ops := fake.takeOps(); !reflect.DeepEqual(ops, []string{"get missing ONE"}) {
		t.Fatalf("backend saw %q", ops)
	}
}

func TestForEach(t *testing.T) {
	var running, peak atomic.Int32
	release := make(chan struct{})
	var releaseOnce sync.Once
	done := make(chan error)
	go func() {
		done <- forEach(100, func(i int) error {
			now := running.Add(1)
			for {
				old := peak.Load()
				if now <= old || peak.CompareAndSwap(old, now) {
					break
				}
			}
			if now == fanoutMax {
				releaseOnce.Do(func() { close(release) })
			}
			<-release
			running.Add(-1)
			if i == 70 || i == 90 {
				return errors.New(string(rune('a' + i%26)))
			}
			return nil
		})
	}()
	err := <-done
	if peak.Load() != fanoutMax {
		t.Errorf("peak concurrency %d, want %d", peak.Load(), fanoutMax)
	}
	if err == nil || err.Error() != string(rune('a'+70%26)) {
		t.Errorf("error %v, want the one of the lowest index", err)
	}
}

func TestDistinct(t *testing.T) {
	in := [][]byte{[]byte("b"), []byte("a"), []byte("b"), []byte("c"), []byte("a")}
	var got []string
	for _, k := range distinct(in) {
		got = append(got, string(k))
	}
	if !reflect.DeepEqual(got, []string{"b", "a", "c"}) {
		t.Fatalf("distinct = %q", got)
	}
	if n := countTrue([]bool{true, false, true}); n != 2 {
		t.Fatalf("countTrue = %d, want 2", n)
	}
}

func TestParseSetOptions(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	nowMs := now.UnixMilli()
	tests := []struct {
		options []string
		want    setOptions
		err     string
	}{
		{nil, setOptions{}, ""},
		{[]string{"nx", "GET"}, setOptions{nx: true, get: true}, ""},
		{[]string{"XX", "KEEPTTL"}, setOptions{xx: true, keepTTL: true}, ""},
		{[]string{"EX", "10"}, setOptions{expiresAtMs: nowMs + 10_000}, ""},
		{[]string{"px", "5"}, setOptions{expiresAtMs: nowMs + 5}, ""},
		{[]string{"EXAT", "100"}, setOptions{expiresAtMs: 100_000}, ""},
		{[]string{"PXAT", "7", "NX"}, setOptions{nx: true, expiresAtMs: 7}, ""},
		{[]string{"PX", strconv.FormatInt(math.MaxInt64-nowMs, 10)}, setOptions{expiresAtMs: math.MaxInt64}, ""},
		{[]string{"PX", strconv.FormatInt(math.MaxInt64-nowMs+1, 10)}, setOptions{}, errExpireTime},
		{[]string{"EXAT", strconv.FormatInt(math.MaxInt64/1000, 10)}, setOptions{expiresAtMs: math.MaxInt64 / 1000 * 1000}, ""},
		{[]string{"EXAT", strconv.FormatInt(math.MaxInt64/1000+1, 10)}, setOptions{}, errExpireTime},
		{[]string{"EX", "-1"}, setOptions{}, errExpireTime},
		{[]string{"EX", "+1"}, setOptions{}, errNotInt},
		{[]string{"NX", "XX"}, setOptions{}, errSyntax},
		{[]string{"PERSIST"}, setOptions{}, errSyntax}, // GETEX's, not SET's
	}
	for _, tt := range tests {
		options := make([][]byte, len(tt.options))
		for i, o := range tt.options {
			options[i] = []byte(o)
		}
		got, msg := parseSetOptions(options, now)
		if got != tt.want || msg != tt.err {
			t.Errorf("parseSetOptions(%q) = %+v, %q; want %+v, %q", tt.options, got, msg, tt.want, tt.err)
		}
	}
}
