package resp

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/core/lww"
)

// The payloads below are redis-server 7.0.15's DUMP answers.
const (
	dumpBar   = "\x00\x03bar\n\x00\xe6\xbeI`\xeef\xfd\x17"
	dumpLong  = "\x00\xc3\t@c\x01aa\xe0V\x00\x01aa\n\x00\xa9/\xc2z\x8f\xcd\x14a"                                                           // 99 a's, LZF-compressed
	dumpMixed = "\x00\xc3 @A\x03abca\xe0\x0b\x02\x02XYZ\xe0\x00\x17 \x0b \x02\x05hello-\xe0\x06\x05\x01lo\n\x00\x03\xc3\xdc\x97\xd4\xfa@@" // LZF with runs and references
)

// TestRedisCRC64 checks Redis's CRC-64 against its check value (src/crc64.c's test).
func TestRedisCRC64(t *testing.T) {
	if got := redisCRC64([]byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Errorf("crc64 = %#x, want 0xe9c6d914c4b8d9ca", got)
	}
}

// TestDumpIsRedisPayload: DUMP writes what redis-server 7.0.15 writes for each encoding
// it leaves uncompressed, and RESTORE reads those and redis-server's compressed ones.
func TestDumpIsRedisPayload(t *testing.T) {
	tests := []struct{ value, payload string }{
		{"bar", dumpBar},
		{"123", "\x00\xc0{\n\x00H\xe2S\xe1\x00zg\xb9"},
		{"-40000", "\x00\xc2\xc0c\xff\xff\n\x00\xab]Fu\x1b\x1d\xaa\x83"},
		{"12345678901", "\x00\x0b12345678901\n\x000NR\xd7'\x17e\x10"},
		{"0123456789abcdefghijk", "\x00\x150123456789abcdefghijk\n\x00,~\r\xe6W\xfe\x7f\xe6"},
	}
	for _, tt := range tests {
		if got := string(dumpString([]byte(tt.value))); got != tt.payload {
			t.Errorf("DUMP of %q = %q, want %q", tt.value, got, tt.payload)
		}
		if got, err := undumpedString([]byte(tt.payload)); err != nil || got != tt.value {
			t.Errorf("RESTORE of %q = %q, %v", tt.payload, got, err)
		}
	}
	for payload, want := range map[string]string{
		dumpLong:  strings.Repeat("a", 99),
		dumpMixed: "abcabcabcabcabcabcabcabcXYZabcabcabcXYZXYZhello-hello-hello-hello",
	} {
		if got, err := undumpedString([]byte(payload)); err != nil || got != want {
			t.Errorf("RESTORE of redis-server's compressed %q = %q, %v", want, got, err)
		}
	}
	long := strings.Repeat("x", 20000) // a 32-bit length
	if got, err := undumpedString(dumpString([]byte(long))); err != nil || got != long {
		t.Errorf("RESTORE of a DUMP of 20000 bytes: %d bytes, %v", len(got), err)
	}
}

// footed is body with the footer of a payload: RDB version 10 and the checksum.
func footed(body string) string {
	p := append([]byte(body), rdbVersion, 0)
	return string(p) + crcOf(p)
}

// The payloads of redis-server 7.0.15's DUMP of collections in their plain encodings
// (its compact ones' thresholds set to 0).
const (
	redisDumpHash = "\x04\x02\x01b\x03xyz\x01a\xc0\x01\n\x00YQq\x197\x00\x1c\xa1"                                               // b xyz, a 1
	redisDumpSet  = "\x02\x02\x01n\x01m\n\x002\xbc\xf8A\xdb0\x8d\xef"                                                           // n, m
	redisDumpZset = "\x05\x02\x01b\x00\x00\x00\x00\x00\x00\x00@\x01a\x00\x00\x00\x00\x00\x00\xf8?\n\x00\xe7|\x0b\x13\x9fNg\x1e" // b 2, a 1.5
)

// TestDumpRestoreCollections: DUMP writes a collection in Redis's plain encoding of its
// type (elements in kura's order, which redis-server 7.0.15 restores: checked by hand),
// and RESTORE reads those and redis-server's, with the TTL, BUSYKEY and REPLACE rules of
// strings.
func TestDumpRestoreCollections(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"hash", []step{
			{cmd("HSET", "h", "b", "xyz", "a", "1"), ":2\r\n"},
			{cmd("DUMP", "h"), bulk(footed("\x04\x02\x01a\xc0\x01\x01b\x03xyz"))},
			{cmd("RESTORE", "h2", "0", redisDumpHash), "+OK\r\n"},
			{cmd("HGETALL", "h2"), bulks("a", "1", "b", "xyz")},
			{cmd("RESTORE", "h2", "0", redisDumpHash), "-BUSYKEY Target key name already exists.\r\n"},
			{cmd("HSET", "h2", "c", "3"), ":1\r\n"},
			{cmd("RESTORE", "h2", "100000", footed("\x04\x01\x01z\x01z"), "REPLACE"), "+OK\r\n"},
			{cmd("HGETALL", "h2"), bulks("z", "z")}, // what h2 held is gone
			{cmd("TTL", "h2"), ":100\r\n"},
		}},
		{"set", []step{
			{cmd("SADD", "s", "n", "m"), ":2\r\n"},
			{cmd("DUMP", "s"), bulk(footed("\x02\x02\x01m\x01n"))},
			{cmd("RESTORE", "s2", "0", redisDumpSet), "+OK\r\n"},
			{cmd("SMEMBERS", "s2"), bulks("m", "n")},
			{cmd("SREM", "s2", "m"), ":1\r\n"},
			{cmd("SMEMBERS", "s2"), bulks("n")},
		}},
		{"sorted set", []step{
			{cmd("ZADD", "z", "2", "b", "1.5", "a"), ":2\r\n"},
			{cmd("DUMP", "z"), bulk(footed("\x05\x02\x01a\x00\x00\x00\x00\x00\x00\xf8?\x01b\x00\x00\x00\x00\x00\x00\x00@"))},
			{cmd("RESTORE", "z2", "0", redisDumpZset), "+OK\r\n"},
			{cmd("ZRANGE", "z2", "0", "-1", "WITHSCORES"), bulks("a", "1.5", "b", "2")},
		}},
		{"list", []step{
			{cmd("RPUSH", "l", "x", "300", "y"), ":3\r\n"},
			{cmd("DUMP", "l"), bulk(footed("\x01\x03\x01x\xc1\x2c\x01\x01y"))},
			{cmd("RESTORE", "l2", "0", footed("\x01\x03\x01x\xc1\x2c\x01\x01y")), "+OK\r\n"},
			{cmd("LPUSH", "l2", "w"), ":4\r\n"},
			{cmd("LRANGE", "l2", "0", "-1"), bulks("w", "x", "300", "y")},
		}},
		{"a deadline past deletes under REPLACE", []step{
			{cmd("SADD", "s", "m"), ":1\r\n"},
			{cmd("RESTORE", "s", "1", redisDumpSet, "ABSTTL", "REPLACE"), "+OK\r\n"},
			{cmd("EXISTS", "s"), ":0\r\n"},
			{cmd("SADD", "s", "k"), ":1\r\n"},
			{cmd("SMEMBERS", "s"), bulks("k")}, // no member of before comes back
		}},
		{"a PN counter is refused", []step{
			{cmd("KURA.COUNTERS", "pn"), "+OK\r\n"},
			{cmd("INCR", "c"), ":1\r\n"},
			{cmd("DUMP", "c"), "-ERR kura does not DUMP a conflict-free (PN) counter\r\n"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, addr := startServer(t, Config{NodeID: "n1"})
			converse(t, addr, tt.steps)
		})
	}
}

// bulk is the RESP reply of the bulk string s.
func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// TestUndumpRefusesBadPayloads: a payload cut short, with a wrong checksum, a later RDB
// version, bytes left over or LZF data that does not expand to its size is refused in
// Redis's words, never read past its end.
func TestUndumpRefusesBadPayloads(t *testing.T) {
	withFooter := footed
	tests := []struct{ name, payload, want string }{
		{"short", "\x00\x03", errDumpFooter.Error()},
		{"checksum", dumpBar[:len(dumpBar)-1] + "x", errDumpFooter.Error()},
		{"later version", func() string { p := []byte("\x00\x03bar\x0b\x00"); return string(p) + crcOf(p) }(), errDumpFooter.Error()},
		{"length past the end", withFooter("\x00\x09bar"), errDumpFormat.Error()},
		{"bytes left over", withFooter("\x00\x03barx"), errDumpFormat.Error()},
		{"no body", withFooter(""), errDumpFormat.Error()},
		{"bad length byte", withFooter("\x00\x82"), errDumpFormat.Error()},
		{"bad encoding", withFooter("\x00\xc4"), errDumpFormat.Error()},
		{"LZF short of its size", withFooter("\x00\xc3\x02\x05\x01aa"), errDumpFormat.Error()},
		{"LZF reference before the start", withFooter("\x00\xc3\x03\x05\x20\x05\x00"), errDumpFormat.Error()},
		{"LZF size absurd", withFooter("\x00\xc3\x02\x81\x01aa"), errDumpFormat.Error()},
		{"LZF past the value limit", withFooter("\x00\xc3\x02\x80\x00\x10\x00\x01\x01aa"), "ERR invalid argument: the payload's string of 1048577 bytes exceeds the limit of 1048576 bytes"},
		{"a stream", withFooter("\x0f\x00"), "ERR kura RESTOREs strings, lists, sets, sorted sets and hashes; the payload holds a value of Redis's RDB type 15"},
		{"a set's member twice", withFooter("\x02\x02\x01a\x01a"), errDumpFormat.Error()},
		{"a hash's field twice", withFooter("\x04\x02\x01a\x01x\x01a\x01y"), errDumpFormat.Error()},
		{"a sorted set's NaN score", withFooter("\x05\x01\x01a\x00\x00\x00\x00\x00\x00\xf8\x7f"), errDumpFormat.Error()},
		{"a length past the end", withFooter("\x01\x05\x01a"), errDumpFormat.Error()},
		{"an encoded length", withFooter("\x01\xc0\x01a"), errDumpFormat.Error()},
	}
	for _, tt := range tests {
		if _, err := undump([]byte(tt.payload), 1<<20); err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.want)
		}
	}
}

// undumpedString is the string payload holds.
func undumpedString(payload []byte) (string, error) {
	d, err := undump(payload, 1<<20)
	if err != nil {
		return "", err
	}
	if d.typ != lww.String {
		return "", fmt.Errorf("a %s, not a string", d.typ)
	}
	return string(d.strings[0]), nil
}

// crcOf is the footer's checksum of p.
func crcOf(p []byte) string {
	var b [8]byte
	for i, crc := 0, redisCRC64(p); i < 8; i, crc = i+1, crc>>8 {
		b[i] = byte(crc)
	}
	return string(b[:])
}

// TestDumpRestoreCommands: DUMP and RESTORE through go-redis, and their errors in
// redis-server 7.0.15's words and order.
func TestDumpRestoreCommands(t *testing.T) {
	_, _, addr := startServer(t, Config{})
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, PoolSize: 1, DisableIdentity: true})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rdb.Set(ctx, "s", "bar", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := rdb.Dump(ctx, "s").Result(); err != nil || got != dumpBar {
		t.Fatalf("DUMP = %q, %v", got, err)
	}
	if err := rdb.Dump(ctx, "nosuch").Err(); err != redis.Nil {
		t.Errorf("DUMP of a missing key: %v, want nil", err)
	}
	if err := rdb.Restore(ctx, "r", 0, dumpLong).Err(); err != nil {
		t.Fatal(err)
	}
	if got, _ := rdb.Get(ctx, "r").Result(); got != strings.Repeat("a", 99) {
		t.Errorf("GET after RESTORE = %q", got)
	}
	if ttl, _ := rdb.TTL(ctx, "r").Result(); ttl != -1 {
		t.Errorf("TTL after RESTORE with ttl 0 = %v", ttl)
	}
	if err := rdb.RestoreReplace(ctx, "r", time.Hour, dumpBar).Err(); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := rdb.PTTL(ctx, "r").Result(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("PTTL after RESTORE with an hour = %v", ttl)
	}
	if got, _ := rdb.Get(ctx, "r").Result(); got != "bar" {
		t.Errorf("GET after RESTORE REPLACE = %q", got)
	}
	past := time.Now().Add(-time.Hour).UnixMilli()
	if err := rdb.Do(ctx, "RESTORE", "r", past, dumpBar, "ABSTTL", "REPLACE").Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(ctx, "r").Result(); n != 0 {
		t.Error("RESTORE with a deadline past left the key")
	}
	converse(t, addr, []step{ // as redis-server 7.0.15 answers
		{cmd("RESTORE", "s", "0", "x"), "-BUSYKEY Target key name already exists.\r\n"},
		{cmd("RESTORE", "s2", "0", "x"), "-ERR DUMP payload version or checksum are wrong\r\n"},
		{cmd("RESTORE", "s2", "0", "x", "foo"), "-ERR syntax error\r\n"},
		{cmd("RESTORE", "s", "0", "x", "IDLETIME", "-1"), "-ERR Invalid IDLETIME value, must be >= 0\r\n"},
		{cmd("RESTORE", "s", "0", "x", "IDLETIME", "1", "FREQ", "2"), "-ERR syntax error\r\n"},
		{cmd("RESTORE", "s", "0", "x", "FREQ", "256"), "-ERR Invalid FREQ value, must be >= 0 and <= 255\r\n"},
		{cmd("RESTORE", "s", "x", "x", "REPLACE"), "-ERR value is not an integer or out of range\r\n"},
		{cmd("RESTORE", "s", "-1", "x", "REPLACE"), "-ERR Invalid TTL value, must be >= 0\r\n"},
		{cmd("RESTORE", "s3", "0", dumpBar, "IDLETIME", "1000"), "+OK\r\n"},
		{cmd("GET", "s3"), "$3\r\nbar\r\n"},
		{cmd("DUMP"), "-ERR wrong number of arguments for 'dump' command\r\n"},
	})
}
