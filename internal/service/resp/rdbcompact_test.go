package resp

import (
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/core/lww"
)

// redis-server 7.0.15's DUMPs of small collections, in its compact encodings (its
// default thresholds, and list-max-listpack-size 2 for redisDumpList3Nodes).
const (
	// HSET h b xyz a 1 n -300 big 9223372036854775807: a listpack of strings and of
	// 7-bit, 13-bit and 64-bit integers.
	redisDumpHashListpack = "\x10))\x00\x00\x00\x08\x00\x81b\x02\x83xyz\x04\x81a\x02\x01\x01\x81n\x02\xde\xd4\x02\x83big\x04\xf4\xff\xff\xff\xff\xff\xff\xff\x7f\x09\xff\n\x00\xb7\xfee\xc5\x080T\x96"
	// HSET hl f12 <100 y's> i32 2147483647 i16 -5000 (hash-max-listpack-value 10000):
	// the listpack LZF-compressed, a 12-bit string, 32-bit and 16-bit integers.
	redisDumpHashListpackLZF = "\x10\xc3)@\x87\x0d\x87\x00\x00\x00\x06\x00\x83f12\x04\xe0dy\xe0Z\x00\x15f\x83i32\x04\xf3\xff\xff\xff\x7f\x05\x83i16\x04\xf1x\xec\x03\xff\n\x00<d\x9e.\x0eL\xa4\xc9"
	// ZADD z 2 b 1.5 a -inf m 100000 c: scores as strings, a 7-bit and a 24-bit integer.
	redisDumpZsetListpack = "\x11%%\x00\x00\x00\x08\x00\x81m\x02\x84-inf\x05\x81a\x02\x831.5\x04\x81b\x02\x02\x01\x81c\x02\xf2\xa0\x86\x01\x04\xff\n\x00\xfe\x85\xacv\xcf\xe4\xf2\xc1"
	// SADD is 3 -2 70000 5, SADD is16 1 300, SADD is64 1 5000000000: intsets of 4, 2
	// and 8 bytes an integer.
	redisDumpIntset32 = "\x0b\x18\x04\x00\x00\x00\x04\x00\x00\x00\xfe\xff\xff\xff\x03\x00\x00\x00\x05\x00\x00\x00p\x11\x01\x00\n\x00\xbb\x90\x1f-\x00\xffN@"
	redisDumpIntset16 = "\x0b\x0c\x02\x00\x00\x00\x02\x00\x00\x00\x01\x00,\x01\n\x00)\x08\xafQAx\xa5\x13"
	redisDumpIntset64 = "\x0b\x18\x08\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\xf2\x05*\x01\x00\x00\x00\n\x00T\xf5\xa2j\xe7\x07\xb5\xfc"
	// RPUSH l x 300 y -5000 100000 12345678901: a quicklist of one listpack node.
	redisDumpList = "\x12\x01\x02##\x00\x00\x00\x06\x00\x81x\x02\xc1,\x02\x81y\x02\xf1x\xec\x03\xf2\xa0\x86\x01\x04\xf45\x1c\xdc\xdf\x02\x00\x00\x00\x09\xff\n\x00\x9b\xbd\xfe\xbc-K\xda\x8d"
	// RPUSH l2 a b c d e with list-max-listpack-size 2: three nodes.
	redisDumpList3Nodes = "\x12\x03\x02\x0d\x0d\x00\x00\x00\x02\x00\x81a\x02\x81b\x02\xff\x02\x0d\x0d\x00\x00\x00\x02\x00\x81c\x02\x81d\x02\xff\x02\n\n\x00\x00\x00\x01\x00\x81e\x02\xff\n\x00\xecR6\xa7` \xa1\xdb"
)

// Payloads in the encodings of Redis before 7.0 (RDB version 9: ziplists), made for
// these tests and each restored by redis-server 7.0.15 to the value the test expects.
var (
	// f v, n 12, i8 -100, i16 -300, i24 70000, i32 2147483647, i64 2^40, long <300
	// x's>, after y: every ziplist encoding of an integer, a 14-bit string, and an
	// entry after it whose previous-entry length takes 5 bytes.
	ziplistHash = "\x0dA\x8d\x8d\x01\x00\x00\x89\x01\x00\x00\x12\x00\x00\x01f\x03\x01v\x03\x01n\x03\xfd\x02\x02i8\x04\xfe\x9c\x03\x03i16\x05\xc0\xd4\xfe\x04\x03i24\x05\xf0p\x11\x01\x05\x03i32\x05\xd0\xff\xff\xff\x7f\x06\x03i64\x05\xe0\x00\x00\x00\x00\x00\x01\x00\x00\n\x04long\x06A," +
		strings.Repeat("x", 300) + "\xfe/\x01\x00\x00\x05after\x0b\x01y\xff\x09\x00\xa6\x93\xa2oVfGq"
	// a 1, b 1.5, c -inf, d -300.
	ziplistZset = "\x0c((\x00\x00\x00#\x00\x00\x00\x08\x00\x00\x01a\x03\xf2\x02\x01b\x03\x031.5\x05\x01c\x03\x04-inf\x06\x01d\x03\xc0\xd4\xfe\xff\x09\x00 \x06|X\xa6\xf4\xa9\x91"
	// a 5 <300 x's> b, as one ziplist (RDB_TYPE_LIST_ZIPLIST).
	ziplistList = "\nAFF\x01\x00\x00>\x01\x00\x00\x04\x00\x00\x01a\x03\xf6\x02A," + strings.Repeat("x", 300) + "\xfe/\x01\x00\x00\x01b\xff\x09\x00\xe0\xd2\xc0\x16\x871\xbb5"
	// a 1.5, b -inf, c inf, d -3: a sorted set with its scores as text (RDB_TYPE_ZSET,
	// version 7, as Redis 3.2 wrote a large one).
	textScoresZset = "\x03\x04\x01a\x031.5\x01b\xff\x01c\xfe\x01d\x02-3\x07\x00\x94\x14\x90H\x9dm\x1aK"
	// a b, an empty node, 3 c: a quicklist of ziplists (RDB_TYPE_LIST_QUICKLIST).
	ziplistQuicklist = "\x0e\x03\x11\x11\x00\x00\x00\x0d\x00\x00\x00\x02\x00\x00\x01a\x03\x01b\xff\x0b\x0b\x00\x00\x00\n\x00\x00\x00\x00\x00\xff\x10\x10\x00\x00\x00\x0c\x00\x00\x00\x02\x00\x00\xf4\x02\x01c\xff\x09\x00\x85IW\x02z\x96D\xc6"
)

// TestRestoreCompactEncodings: RESTORE reads what redis-server writes for a small hash,
// sorted set, set of integers or list (listpacks, intsets, quicklists), and what Redis
// before 7.0 wrote (ziplists, text scores), to the values redis-server restores them to.
func TestRestoreCompactEncodings(t *testing.T) {
	tests := []struct {
		name, payload string
		read          []string
		want          string
	}{
		{"listpack hash", redisDumpHashListpack, cmd("HGETALL", "k"), bulks("a", "1", "b", "xyz", "big", "9223372036854775807", "n", "-300")},
		{"compressed listpack hash", redisDumpHashListpackLZF, cmd("HGETALL", "k"), bulks("f12", strings.Repeat("y", 100), "i16", "-5000", "i32", "2147483647")},
		{"listpack sorted set", redisDumpZsetListpack, cmd("ZRANGE", "k", "0", "-1", "WITHSCORES"), bulks("m", "-inf", "a", "1.5", "b", "2", "c", "100000")},
		{"intset of 32-bit integers", redisDumpIntset32, cmd("SMEMBERS", "k"), bulks("-2", "3", "5", "70000")},
		{"intset of 16-bit integers", redisDumpIntset16, cmd("SMEMBERS", "k"), bulks("1", "300")},
		{"intset of 64-bit integers", redisDumpIntset64, cmd("SMEMBERS", "k"), bulks("1", "5000000000")},
		{"quicklist of one listpack", redisDumpList, cmd("LRANGE", "k", "0", "-1"), bulks("x", "300", "y", "-5000", "100000", "12345678901")},
		{"quicklist of three listpacks", redisDumpList3Nodes, cmd("LRANGE", "k", "0", "-1"), bulks("a", "b", "c", "d", "e")},
		{"ziplist hash", ziplistHash, cmd("HGETALL", "k"), bulks("after", "y", "f", "v", "i16", "-300", "i24", "70000", "i32", "2147483647", "i64", "1099511627776", "i8", "-100", "long", strings.Repeat("x", 300), "n", "12")},
		{"ziplist sorted set", ziplistZset, cmd("ZRANGE", "k", "0", "-1", "WITHSCORES"), bulks("c", "-inf", "d", "-300", "a", "1", "b", "1.5")},
		{"ziplist list", ziplistList, cmd("LRANGE", "k", "0", "-1"), bulks("a", "5", strings.Repeat("x", 300), "b")},
		{"sorted set with scores as text", textScoresZset, cmd("ZRANGE", "k", "0", "-1", "WITHSCORES"), bulks("b", "-inf", "d", "-3", "a", "1.5", "c", "inf")},
		{"quicklist of ziplists", ziplistQuicklist, cmd("LRANGE", "k", "0", "-1"), bulks("a", "b", "3", "c")},
	}
	_, _, addr := startServer(t, Config{NodeID: "n1"})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			converse(t, addr, []step{
				{cmd("RESTORE", "k", "0", tt.payload, "REPLACE"), "+OK\r\n"},
				{tt.read, tt.want},
			})
		})
	}
}

// lp is a listpack holding the entries of body (each with its back length), its header
// counting count of them.
func lp(count byte, body string) string {
	n := 6 + len(body) + 1
	return string([]byte{byte(n), byte(n >> 8), 0, 0, count, 0}) + body + "\xff"
}

// rdbStr is s as a short RDB string (a 6-bit length).
func rdbStr(s string) string { return string([]byte{byte(len(s))}) + s }

// TestUndumpRefusesBadCompactEncodings: a listpack, ziplist, intset or quicklist that is
// not exactly one, or that holds no element, an odd number of a hash's or sorted set's
// entries, a score that is not a number or a name twice, is refused in Redis's words.
func TestUndumpRefusesBadCompactEncodings(t *testing.T) {
	good := lp(2, "\x81a\x02\x81b\x02") // a b
	if d, err := undump([]byte(footed("\x10"+rdbStr(good))), 1<<20); err != nil || len(d.strings) != 2 {
		t.Fatalf("the well-formed listpack the cases change: %v, %v", d, err)
	}
	tests := []struct{ name, body string }{
		{"listpack's byte count wrong", "\x10" + rdbStr("\x0e"+good[1:])},
		{"listpack's entry count wrong", "\x10" + rdbStr(lp(3, "\x81a\x02\x81b\x02"))},
		{"listpack without its end mark", "\x10" + rdbStr(good[:len(good)-1]+"\x00")},
		{"listpack's back length wrong", "\x10" + rdbStr(lp(2, "\x81a\x03\x81b\x02"))},
		{"listpack's string past its end", "\x10" + rdbStr(lp(2, "\x81a\x02\x85b\x02"))},
		{"listpack's no encoding 0xf5", "\x10" + rdbStr(lp(2, "\x81a\x02\xf5\x01"))},
		{"listpack's integer cut short", "\x10" + rdbStr(lp(2, "\x81a\x02\xf3\x01\x02"))},
		{"listpack with no entry", "\x10" + rdbStr(lp(0, ""))},
		{"hash of an odd number of entries", "\x10" + rdbStr(lp(3, "\x81a\x02\x81b\x02\x81c\x02"))},
		{"hash's field twice", "\x10" + rdbStr(lp(4, "\x81a\x02\x81b\x02\x81a\x02\x81c\x02"))},
		{"sorted set's score a word", "\x11" + rdbStr(lp(2, "\x81a\x02\x81x\x02"))},
		{"sorted set's score nan", "\x11" + rdbStr(lp(2, "\x81a\x02\x83nan\x04"))},
		{"sorted set's member twice", "\x11" + rdbStr(lp(4, "\x81a\x02\x01\x01\x81a\x02\x02\x01"))},
		{"intset's width 3", "\x0b" + rdbStr("\x03\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00")},
		{"intset's count wrong", "\x0b" + rdbStr("\x02\x00\x00\x00\x02\x00\x00\x00\x01\x00")},
		{"intset out of order", "\x0b" + rdbStr("\x02\x00\x00\x00\x02\x00\x00\x00\x02\x00\x01\x00")},
		{"intset's integer twice", "\x0b" + rdbStr("\x02\x00\x00\x00\x02\x00\x00\x00\x01\x00\x01\x00")},
		{"intset empty", "\x0b" + rdbStr("\x02\x00\x00\x00\x00\x00\x00\x00")},
		{"quicklist node's container 3", "\x12\x01\x03" + rdbStr(good)},
		{"quicklist node a bad listpack", "\x12\x01\x02" + rdbStr(lp(1, "\x81a\x02\x81b\x02"))},
		{"quicklist of no item", "\x12\x01\x02" + rdbStr(lp(0, ""))},
		{"quicklist of no node", "\x12\x00"},
		{"ziplist's previous length wrong", "\x0d" + rdbStr("\x11\x00\x00\x00\x0d\x00\x00\x00\x02\x00\x00\x01a\x02\x01b\xff")},
		{"ziplist's tail wrong", "\x0d" + rdbStr("\x11\x00\x00\x00\x0a\x00\x00\x00\x02\x00\x00\x01a\x03\x01b\xff")},
		{"ziplist's no encoding 0xc1", "\x0d" + rdbStr("\x11\x00\x00\x00\x0d\x00\x00\x00\x02\x00\x00\x01a\x03\xc1\xff\xff")},
		{"ziplist's string past its end", "\x0d" + rdbStr("\x11\x00\x00\x00\x0d\x00\x00\x00\x02\x00\x00\x01a\x03\x09b\xff")},
		{"ziplist quicklist's node not a ziplist", "\x0e\x01" + rdbStr(good)},
		{"the blob past the payload's end", "\x10\x20" + good},
		{"text score NaN", "\x03\x01\x01a\xfd"},
		{"text score a word", "\x03\x01\x01a\x03abc"},
		{"text score past the end", "\x03\x01\x01a\x031."},
	}
	for _, tt := range tests {
		if _, err := undump([]byte(footed(tt.body)), 1<<20); err == nil || err.Error() != errDumpFormat.Error() {
			t.Errorf("%s: %v, want %s", tt.name, err, errDumpFormat)
		}
	}
}

// TestRestoreOfBadCompactPayloadWritesNothing: a malformed compact payload leaves the
// key as it was, missing or holding its value under REPLACE.
func TestRestoreOfBadCompactPayloadWritesNothing(t *testing.T) {
	bad := footed("\x10" + rdbStr(lp(3, "\x81a\x02\x81b\x02\x81c\x02")))
	_, _, addr := startServer(t, Config{NodeID: "n1"})
	converse(t, addr, []step{
		{cmd("RESTORE", "k", "0", bad), "-ERR Bad data format\r\n"},
		{cmd("EXISTS", "k"), ":0\r\n"},
		{cmd("HSET", "h", "f", "v"), ":1\r\n"},
		{cmd("RESTORE", "h", "0", bad, "REPLACE"), "-ERR Bad data format\r\n"},
		{cmd("HGETALL", "h"), bulks("f", "v")},
	})
}

// FuzzUndump feeds arbitrary payloads, checksummed so that they reach the decoders, to
// undump: it must not panic, and what it accepts must be a value kura can write.
func FuzzUndump(f *testing.F) {
	for _, p := range []string{
		redisDumpHashListpack, redisDumpHashListpackLZF, redisDumpZsetListpack, redisDumpIntset32,
		redisDumpList, redisDumpList3Nodes, ziplistHash, ziplistZset, ziplistQuicklist,
		textScoresZset, redisDumpHash, redisDumpSet, redisDumpZset, dumpMixed,
	} {
		f.Add([]byte(p[:len(p)-10]))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := undump([]byte(footed(string(body))), 1<<20)
		if err != nil {
			return
		}
		switch {
		case d.typ != lww.String && d.typ != lww.List && d.typ != lww.Set && d.typ != lww.Hash && d.typ != lww.SortedSet:
			t.Fatalf("accepted a value of type %v", d.typ)
		case len(d.strings) == 0 && len(body) > 0 && body[0] >= rdbTypeListZiplist:
			t.Fatalf("accepted an empty compact collection from %q", body)
		case len(d.scores) != 0 && len(d.scores) != len(d.strings):
			t.Fatalf("%d scores for %d members", len(d.scores), len(d.strings))
		}
	})
}
