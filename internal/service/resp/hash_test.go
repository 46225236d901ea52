package resp

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// fakePartitioner is the partitioner of the fake's keyspaces: "other" keeps hash, where
// collections are refused.
func fakePartitioner(keyspace string) string {
	if keyspace == "other" {
		return "hash"
	}
	return "grouped"
}

// tick stamps a write of the fake, two apart, so that a reset point just before a write
// is after every earlier write: the fake's coord.ResetCreate, as the fake has one writer
// at a time.
func (f *fakeBackend) tick() hlc.Timestamp {
	f.clock += 2
	return f.clock
}

// collection returns the element records of keyspace, refusing as the coordinator does
// a keyspace without the grouped partitioner.
func (f *fakeBackend) collection(keyspace string, key []byte) (map[string]lww.Record, error) {
	if p := fakePartitioner(keyspace); p != "grouped" {
		return nil, fmt.Errorf("%w: keyspace %s has the %s partitioner", coord.ErrInvalidArgument, keyspace, p)
	}
	if string(key) == "broken" {
		return nil, errBroken
	}
	if f.elements == nil {
		f.elements = map[string]map[string]lww.Record{}
	}
	if f.elements[keyspace] == nil {
		f.elements[keyspace] = map[string]lww.Record{}
	}
	return f.elements[keyspace], nil
}

// applyElement keeps rec unless the stored version is newer (last writer wins).
func applyElement(elems map[string]lww.Record, rec lww.Record) {
	if cur, ok := elems[string(rec.Key)]; !ok || lww.Newer(rec, cur) {
		elems[string(rec.Key)] = rec
	}
}

// liveElement reports whether rec is part of its collection's current life.
func liveElement(rec lww.Record, reset hlc.Timestamp) bool {
	return !rec.Tombstone && rec.Timestamp > reset
}

func resetOf(elems map[string]lww.Record, key []byte) hlc.Timestamp {
	at, _ := element.ParseResetValue(elems[string(element.Key(key, element.Reset, nil))].Value)
	return at
}

func (f *fakeBackend) ReadCollection(_ context.Context, keyspace string, key []byte, cl consistency.Level) (coord.Collection, error) {
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
	out.Reset, out.Elements = liveElements(elems, key)
	if !coord.HoldsMembers(out.Header.Type, out.Elements) {
		return coord.Collection{Reset: out.Reset}, nil // emptied, as the coordinator answers
	}
	return out, nil
}

// liveElements returns collection key's reset point and its live element records
// newer than it, in key order.
func liveElements(elems map[string]lww.Record, key []byte) (reset hlc.Timestamp, live []lww.Record) {
	reset = resetOf(elems, key)
	resetKey := string(element.Key(key, element.Reset, nil))
	for _, k := range slices.Sorted(maps.Keys(elems)) {
		if strings.HasPrefix(k, string(element.Prefix(key))) && k != resetKey && liveElement(elems[k], reset) {
			live = append(live, elems[k])
		}
	}
	return reset, live
}

// storeHeld makes key a collection of typ holding one member: its header and a live
// element record of the type's member kind (a header alone is an emptied collection,
// which reads as absent).
func (f *fakeBackend) storeHeld(key string, typ lww.Type) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.store("default", f.data["default"], key, lww.Record{Value: []byte("header"), Type: typ})
	kind, _ := coord.MemberKind(typ)
	elems, _ := f.collection("default", []byte(key))
	applyElement(elems, lww.Record{Key: element.Key([]byte(key), kind, []byte("m")), Timestamp: f.tick()})
}

func (f *fakeBackend) HasMembers(_ context.Context, keyspace string, key []byte, typ lww.Type, _ consistency.Level) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	elems, err := f.collection(keyspace, key)
	if err != nil {
		return false, err
	}
	_, live := liveElements(elems, key)
	return coord.HoldsMembers(typ, live), nil
}

func (f *fakeBackend) ReadElements(_ context.Context, keyspace string, key []byte, elemKeys [][]byte, cl consistency.Level) (coord.Collection, []coord.GetResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	elems, err := f.collection(keyspace, key)
	if err != nil {
		return coord.Collection{}, nil, err
	}
	var out coord.Collection
	if out.Header, out.Found, err = f.get(keyspace, key, cl); err != nil {
		return coord.Collection{}, nil, err
	}
	out.Reset = resetOf(elems, key)
	results := make([]coord.GetResult, len(elemKeys))
	for i, k := range elemKeys {
		rec, ok := elems[string(k)]
		if ok && out.Found && out.Header.Type != lww.String && liveElement(rec, out.Reset) {
			results[i] = coord.GetResult{Record: rec, Found: true}
		}
	}
	return out, results, nil
}

func (f *fakeBackend) WriteCollection(_ context.Context, keyspace string, key []byte, w coord.CollectionWrite, cl consistency.Level) (hlc.Timestamp, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	elems, err := f.collection(keyspace, key)
	if err != nil {
		return 0, err
	}
	if _, err := f.record("putcollection", keyspace, cl); err != nil {
		return 0, err
	}
	t := f.tick()
	for _, e := range w.Elements {
		applyElement(elems, lww.Record{Key: e.Key, Value: bytes.Clone(e.Value), Tombstone: e.Tombstone, Timestamp: t})
	}
	for _, e := range w.Tagged {
		applyElement(elems, lww.Record{Key: slices.Concat(e.Key, element.Tag(t, "fake")), Value: bytes.Clone(e.Value), Tombstone: e.Tombstone, Timestamp: t})
	}
	switch w.Reset {
	case coord.ResetCreate:
		// The fake has one writer at a time: a key that is not live ended before this
		// write, and a live one keeps its elements, as the coordinator's rule says.
		if _, live := f.live(keyspace, f.data[keyspace], string(key)); !live {
			f.reset(elems, key, t-1)
		}
	case coord.ResetReplace:
		f.reset(elems, key, t-1)
	case coord.ResetAt:
		f.reset(elems, key, t)
	case coord.ResetEnded:
		if w.Ended != 0 {
			f.reset(elems, key, w.Ended)
		}
	}
	if w.Header != nil {
		f.store(keyspace, f.data[keyspace], string(key), *w.Header)
	}
	return t, nil
}

func (f *fakeBackend) ResetCollection(_ context.Context, keyspace string, key []byte, at hlc.Timestamp, _ consistency.Level) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	elems, err := f.collection(keyspace, key)
	if err != nil {
		return err
	}
	f.reset(elems, key, at)
	return nil
}

// updateElement is Update of an element record (a hash field's transaction), with f.mu
// held: the records keep their timestamps, which the reset point is compared with.
func (f *fakeBackend) updateElement(keyspace string, key []byte, fn coord.UpdateFunc) (coord.UpdateResult, error) {
	collection, _, _, _ := element.Parse(key)
	elems, err := f.collection(keyspace, collection)
	if err != nil {
		return coord.UpdateResult{}, err
	}
	cur, found := elems[string(key)]
	found = found && !cur.Tombstone
	if !found {
		cur = lww.Record{}
	}
	next, write, err := fn(cur, found)
	if err != nil || !write {
		return coord.UpdateResult{Previous: cur, PreviousFound: found}, err
	}
	next.Key, next.Timestamp = key, f.tick()
	applyElement(elems, next)
	return coord.UpdateResult{Applied: true, Previous: cur, PreviousFound: found, Record: next}, nil
}

func (f *fakeBackend) reset(elems map[string]lww.Record, key []byte, at hlc.Timestamp) {
	applyElement(elems, lww.Record{Key: element.Key(key, element.Reset, nil), Value: element.ResetValue(at), Timestamp: at})
}

const wrongType = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"

func TestHashCommands(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"fields", []step{
			{cmd("HSET", "h", "f1", "v1", "f2", "v2"), ":2\r\n"},
			{cmd("HSET", "h", "f1", "x", "f1", "y"), ":0\r\n"}, // the last value of a field named twice
			{cmd("HGET", "h", "f1"), "$1\r\ny\r\n"},
			{cmd("HGET", "h", "none"), "$-1\r\n"},
			{cmd("HGET", "nokey", "f1"), "$-1\r\n"},
			{cmd("HMGET", "h", "f2", "none", "f1"), "*3\r\n$2\r\nv2\r\n$-1\r\n$1\r\ny\r\n"},
			{cmd("HLEN", "h"), ":2\r\n"},
			{cmd("HLEN", "nokey"), ":0\r\n"},
			{cmd("HEXISTS", "h", "f2"), ":1\r\n"},
			{cmd("HEXISTS", "h", "none"), ":0\r\n"},
			{cmd("HSTRLEN", "h", "f2"), ":2\r\n"},
			{cmd("HSTRLEN", "h", "none"), ":0\r\n"},
			{cmd("HKEYS", "h"), "*2\r\n$2\r\nf1\r\n$2\r\nf2\r\n"},
			{cmd("HVALS", "h"), "*2\r\n$1\r\ny\r\n$2\r\nv2\r\n"},
			{cmd("HGETALL", "h"), "*4\r\n$2\r\nf1\r\n$1\r\ny\r\n$2\r\nf2\r\n$2\r\nv2\r\n"},
			{cmd("HGETALL", "nokey"), "*0\r\n"},
			{cmd("HMSET", "h", "f3", "v3"), "+OK\r\n"},
			{cmd("HSETNX", "h", "f3", "other"), ":0\r\n"},
			{cmd("HSETNX", "h", "f4", "v4"), ":1\r\n"},
			{cmd("HGET", "h", "f3"), "$2\r\nv3\r\n"},
			{cmd("HSCAN", "h", "0", "MATCH", "f[34]", "COUNT", "10"), "*2\r\n$1\r\n0\r\n*4\r\n$2\r\nf3\r\n$2\r\nv3\r\n$2\r\nf4\r\n$2\r\nv4\r\n"},
			{cmd("HSCAN", "h", "x"), "-ERR invalid cursor\r\n"},
			{cmd("HSCAN", "h", "0", "COUNT", "0"), "-ERR syntax error\r\n"},
			{cmd("HDEL", "h", "f1", "none", "f1"), ":1\r\n"},
			{cmd("HDEL", "h", "f1"), ":0\r\n"},
			{cmd("HLEN", "h"), ":3\r\n"},
			{cmd("TYPE", "h"), "+hash\r\n"},
			{cmd("EXISTS", "h"), ":1\r\n"},
			{cmd("OBJECT", "ENCODING", "h"), "$9\r\nhashtable\r\n"},
			// h, and each field's element key and value: "\x00\x01\x01hhf2" and "v2"...
			{cmd("MEMORY", "USAGE", "h"), ":" + strconv.Itoa(1+3*(7+2)) + "\r\n"},
			{cmd("MEMORY", "USAGE", "h", "SAMPLES", "x"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("MEMORY", "USAGE", "nokey"), "$-1\r\n"},
		}},
		{"counters", []step{
			{cmd("HINCRBY", "h", "n", "5"), ":5\r\n"},
			{cmd("HINCRBY", "h", "n", "-7"), ":-2\r\n"},
			{cmd("HINCRBY", "h", "n", "x"), "-ERR value is not an integer or out of range\r\n"},
			{cmd("HSET", "h", "s", "abc", "big", "9223372036854775807"), ":2\r\n"},
			{cmd("HINCRBY", "h", "s", "1"), "-ERR hash value is not an integer\r\n"},
			{cmd("HINCRBY", "h", "big", "1"), "-ERR increment or decrement would overflow\r\n"},
			{cmd("HINCRBYFLOAT", "h", "fl", "10.5"), "$4\r\n10.5\r\n"},
			{cmd("HINCRBYFLOAT", "h", "fl", "0.1"), "$4\r\n10.6\r\n"},
			{cmd("HINCRBYFLOAT", "h", "s", "1"), "-ERR hash value is not a float\r\n"},
			{cmd("HINCRBYFLOAT", "h", "fl", "x"), "-ERR value is not a valid float\r\n"},
			{cmd("HINCRBYFLOAT", "h", "fl", "+inf"), "-ERR value is NaN or Infinity\r\n"},
			{cmd("HINCRBYFLOAT", "h", "fl", "nan"), "-ERR value is NaN or Infinity\r\n"},
			{cmd("HGET", "h", "n"), "$2\r\n-2\r\n"},
			{cmd("HINCRBY", "fresh", "n", "3"), ":3\r\n"},
			{cmd("TYPE", "fresh"), "+hash\r\n"},
		}},
		{"arity", []step{
			{cmd("HSET", "h", "f"), "-ERR wrong number of arguments for 'hset' command\r\n"},
			{cmd("HSET", "h", "f", "v", "g"), "-ERR wrong number of arguments for 'hset' command\r\n"},
			{cmd("HMSET", "h", "f", "v", "g"), "-ERR wrong number of arguments for 'hmset' command\r\n"},
			{cmd("HGET", "h"), "-ERR wrong number of arguments for 'hget' command\r\n"},
			{cmd("HDEL", "h"), "-ERR wrong number of arguments for 'hdel' command\r\n"},
			{cmd("HLEN", "h", "x"), "-ERR wrong number of arguments for 'hlen' command\r\n"},
			{cmd("HRANDFIELD", "h", "1", "WITHVALUES", "x"), "-ERR syntax error\r\n"},
			{cmd("HRANDFIELD", "h", "x"), "-ERR value is not an integer or out of range\r\n"},
		}},
		{"random fields", []step{
			{cmd("HRANDFIELD", "h"), "$-1\r\n"},
			{cmd("HRANDFIELD", "h", "2"), "*0\r\n"},
			{cmd("HSET", "h", "a", "1"), ":1\r\n"},
			{cmd("HRANDFIELD", "h"), "$1\r\na\r\n"},
			{cmd("HRANDFIELD", "h", "5", "WITHVALUES"), "*2\r\n$1\r\na\r\n$1\r\n1\r\n"},
			{cmd("HRANDFIELD", "h", "-3"), "*3\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n"},
			{cmd("HRANDFIELD", "h", "0"), "*0\r\n"},
		}},
		{"string commands on a hash, and hash commands on a string", []step{
			{cmd("HSET", "h", "f", "1"), ":1\r\n"},
			{cmd("SET", "s", "1"), "+OK\r\n"},
			{cmd("HSET", "s", "f", "v"), wrongType},
			{cmd("HSETNX", "s", "f", "v"), wrongType},
			{cmd("HINCRBY", "s", "f", "1"), wrongType},
			{cmd("HGET", "s", "f"), wrongType},
			{cmd("HMGET", "s", "f"), wrongType},
			{cmd("HGETALL", "s"), wrongType},
			{cmd("HLEN", "s"), wrongType},
			{cmd("HDEL", "s", "f"), wrongType},
			{cmd("HSCAN", "s", "0"), wrongType},
			{cmd("GET", "h"), wrongType},
			{cmd("GETDEL", "h"), wrongType},
			{cmd("GETSET", "h", "v"), wrongType},
			{cmd("GETEX", "h", "PERSIST"), wrongType},
			{cmd("SET", "h", "v", "GET"), wrongType},
			{cmd("INCR", "h"), wrongType},
			{cmd("DECRBY", "h", "2"), wrongType},
			{cmd("INCRBYFLOAT", "h", "1"), wrongType},
			{cmd("APPEND", "h", "x"), wrongType},
			{cmd("STRLEN", "h"), wrongType},
			{cmd("SETRANGE", "h", "0", "x"), wrongType},
			{cmd("GETRANGE", "h", "0", "1"), wrongType},
			{cmd("GETBIT", "h", "0"), wrongType},
			{cmd("SETBIT", "h", "0", "1"), wrongType},
			{cmd("LCS", "h", "s"), wrongType},
			{cmd("MGET", "h", "s"), "*2\r\n$-1\r\n$1\r\n1\r\n"},
			{cmd("RENAME", "h", "h2"), "-" + errMoveCollection + "\r\n"},
			{cmd("HGET", "h", "f"), "$1\r\n1\r\n"},
		}},
		{"a delete or a retype ends the fields of the key's life", []step{
			{cmd("HSET", "h", "a", "1", "b", "2"), ":2\r\n"},
			{cmd("EXPIRE", "h", "100"), ":1\r\n"},
			{cmd("TYPE", "h"), "+hash\r\n"},
			{cmd("HSET", "h", "c", "3"), ":1\r\n"},
			{cmd("TTL", "h"), ":100\r\n"}, // HSET keeps the expiry
			{cmd("DEL", "h"), ":1\r\n"},
			{cmd("EXISTS", "h"), ":0\r\n"},
			{cmd("HGETALL", "h"), "*0\r\n"},
			{cmd("HSET", "h", "d", "4"), ":1\r\n"},
			{cmd("HGETALL", "h"), "*2\r\n$1\r\nd\r\n$1\r\n4\r\n"},
			{cmd("TTL", "h"), ":-1\r\n"},
			{cmd("HDEL", "h", "d"), ":1\r\n"}, // the last field: the key goes
			{cmd("TYPE", "h"), "+none\r\n"},
			{cmd("HSET", "h", "e", "5"), ":1\r\n"},
			{cmd("SET", "h", "string", "XX"), "+OK\r\n"}, // a retype
			{cmd("GET", "h"), "$6\r\nstring\r\n"},
			{cmd("DEL", "h"), ":1\r\n"},
			{cmd("HINCRBY", "h", "e", "1"), ":1\r\n"},
			{cmd("HGETALL", "h"), "*2\r\n$1\r\ne\r\n$1\r\n1\r\n"},
			{cmd("EXPIRE", "h", "-1"), ":1\r\n"}, // a deadline past deletes it
			{cmd("HSETNX", "h", "e", "new"), ":1\r\n"},
			{cmd("HGETALL", "h"), "*2\r\n$1\r\ne\r\n$3\r\nnew\r\n"},
		}},
		{"reserved keys", []step{
			{cmd("SET", "\x00\x01x", "v"), "-ERR keys starting with bytes 0x00 0x01 are reserved\r\n"},
			{cmd("HSET", "\x00\x01x", "f", "v"), "-ERR keys starting with bytes 0x00 0x01 are reserved\r\n"},
			{cmd("DEL", "a", "\x00\x01x"), "-ERR keys starting with bytes 0x00 0x01 are reserved\r\n"},
			{cmd("KURA.KEYSPACE", "other"), "+OK\r\n"},
			{cmd("SET", "\x00\x01x", "v"), "+OK\r\n"}, // a keyspace without collections
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, addr := startServer(t, Config{})
			converse(t, addr, tt.steps)
		})
	}
}

// TestGoRedisReadsHashReplies drives the hash commands with go-redis, in RESP2 and RESP3:
// its parsers must read kura's replies (HGETALL's map, HRANDFIELD's pairs, HSCAN's
// cursor and page) as they read Redis's.
func TestGoRedisReadsHashReplies(t *testing.T) {
	for _, protocol := range []int{2, 3} {
		t.Run("RESP"+string(rune('0'+protocol)), func(t *testing.T) {
			_, _, addr := startServer(t, Config{})
			rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: protocol, PoolSize: 1})
			defer rdb.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if n, err := rdb.HSet(ctx, "h", "a", "1", "b", "2").Result(); err != nil || n != 2 {
				t.Fatalf("HSET = %d, %v", n, err)
			}
			if m, err := rdb.HGetAll(ctx, "h").Result(); err != nil || !maps.Equal(m, map[string]string{"a": "1", "b": "2"}) {
				t.Errorf("HGETALL = %v, %v", m, err)
			}
			if vs, err := rdb.HMGet(ctx, "h", "b", "none").Result(); err != nil || len(vs) != 2 || vs[0] != "2" || vs[1] != nil {
				t.Errorf("HMGET = %v, %v", vs, err)
			}
			if n, err := rdb.HIncrBy(ctx, "h", "a", 41).Result(); err != nil || n != 42 {
				t.Errorf("HINCRBY = %d, %v", n, err)
			}
			if f, err := rdb.HIncrByFloat(ctx, "h", "c", 0.5).Result(); err != nil || f != 0.5 {
				t.Errorf("HINCRBYFLOAT = %v, %v", f, err)
			}
			if keys, err := rdb.HKeys(ctx, "h").Result(); err != nil || !slices.Equal(keys, []string{"a", "b", "c"}) {
				t.Errorf("HKEYS = %v, %v", keys, err)
			}
			if kvs, err := rdb.HRandFieldWithValues(ctx, "h", 3).Result(); err != nil || len(kvs) != 3 {
				t.Errorf("HRANDFIELD 3 WITHVALUES = %v, %v", kvs, err)
			}
			page, cursor, err := rdb.HScan(ctx, "h", 0, "[ab]", 10).Result()
			if err != nil || cursor != 0 || !slices.Equal(page, []string{"a", "42", "b", "2"}) {
				t.Errorf("HSCAN = %v, %d, %v", page, cursor, err)
			}
			if n, err := rdb.HDel(ctx, "h", "a", "b", "c").Result(); err != nil || n != 3 {
				t.Errorf("HDEL = %d, %v", n, err)
			}
			if n, err := rdb.Exists(ctx, "h").Result(); err != nil || n != 0 {
				t.Errorf("EXISTS after every field's HDEL = %d, %v", n, err)
			}
			if err := rdb.Set(ctx, "s", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.HSet(ctx, "s", "f", "v").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE ") {
				t.Errorf("HSET on a string: %v, want WRONGTYPE", err)
			}
		})
	}
}
