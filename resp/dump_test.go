package resp

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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
		if got, err := undumpString([]byte(tt.payload), 1<<20); err != nil || string(got) != tt.value {
			t.Errorf("RESTORE of %q = %q, %v", tt.payload, got, err)
		}
	}
	for payload, want := range map[string]string{
		dumpLong:  strings.Repeat("a", 99),
		dumpMixed: "abcabcabcabcabcabcabcabcXYZabcabcabcXYZXYZhello-hello-hello-hello",
	} {
		if got, err := undumpString([]byte(payload), 1<<20); err != nil || string(got) != want {
			t.Errorf("RESTORE of redis-server's compressed %q = %q, %v", want, got, err)
		}
	}
	long := strings.Repeat("x", 20000) // a 32-bit length
	if got, err := undumpString(dumpString([]byte(long)), 1<<20); err != nil || string(got) != long {
		t.Errorf("RESTORE of a DUMP of 20000 bytes: %d bytes, %v", len(got), err)
	}
}

// TestUndumpRefusesBadPayloads: a payload cut short, with a wrong checksum, a later RDB
// version, bytes left over or LZF data that does not expand to its size is refused in
// Redis's words, never read past its end.
func TestUndumpRefusesBadPayloads(t *testing.T) {
	withFooter := func(body string) string {
		p := append([]byte(body), rdbVersion, 0)
		return string(p) + crcOf(p)
	}
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
		{"a list", withFooter("\x01\x00"), "ERR kura RESTOREs strings only; the payload holds a value of Redis's RDB type 1"},
	}
	for _, tt := range tests {
		if _, err := undumpString([]byte(tt.payload), 1<<20); err == nil || err.Error() != tt.want {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.want)
		}
	}
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
	if err := rdb.HSet(ctx, "h", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Dump(ctx, "h").Err(); err == nil || err.Error() != "ERR kura DUMPs strings only; h holds a hash" {
		t.Errorf("DUMP of a hash: %v", err)
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
