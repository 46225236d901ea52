package resp

import "github.com/kuradb/kura/internal/core/lww"

// The OBJECT command: how a key's value is kept. kura keeps every value as the bytes the
// client sent, in every replica's storage, so it answers what is true of that where
// Redis's answer describes its own memory (see each subcommand).

// Redis keeps a string of at most 20 bytes that reads as a 64-bit integer as an integer,
// one of at most 44 bytes within its object header ("embstr"), and a longer one apart.
const (
	intEncodingBytesMax    = 20
	embstrEncodingBytesMax = 44
)

func objectSubcommands() []*command {
	readKey := []string{"readonly"}
	return []*command{
		{name: "encoding", arity: 3, flags: readKey, firstKey: 2, lastKey: 2, keyStep: 1, usage: "ENCODING <key>",
			summary: "Return the encoding Redis gives the value when it is SET: int, embstr or raw; hashtable for a hash.",
			run:     withObjectKey(func(c *conn, rec lww.Record) { c.w.BulkString(encodingOf(rec)) })},
		{name: "freq", arity: 3, flags: readKey, firstKey: 2, lastKey: 2, keyStep: 1, usage: "FREQ <key>",
			summary: "Refused: kura has no LFU maxmemory policy and counts no accesses.",
			run: withObjectKey(func(c *conn, _ lww.Record) {
				c.w.Error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
			})},
		{name: "idletime", arity: 3, flags: readKey, firstKey: 2, lastKey: 2, keyStep: 1, usage: "IDLETIME <key>",
			summary: "Refused: kura does not record when a key was last read.",
			run: withObjectKey(func(c *conn, _ lww.Record) {
				c.w.Error("ERR idle time not tracked: kura does not record when a key was last read")
			})},
		{name: "refcount", arity: 3, flags: readKey, firstKey: 2, lastKey: 2, keyStep: 1, usage: "REFCOUNT <key>",
			summary: "Return 1: kura shares no value between keys.",
			run:     withObjectKey(func(c *conn, _ lww.Record) { c.w.Int(1) })},
	}
}

// withObjectKey returns an OBJECT subcommand that reads the key and answers it with
// reply; a missing key is answered null, before any refusal, as Redis answers it.
func withObjectKey(reply func(c *conn, rec lww.Record)) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		rec, found, err := c.lookup(args[2])
		switch {
		case err != nil:
			c.w.Error(errorReply(err))
		case !found:
			c.w.Null()
		default:
			reply(c, rec)
		}
	}
}

// encodingOf is OBJECT ENCODING's answer for rec: a string's by its bytes, and for a hash
// hashtable, a record per field as Redis's hashtable keeps an entry per field (Redis
// answers listpack for a small hash, a layout kura does not have); for a sorted set
// skiplist, Redis's encoding of a big one, whose order kura's score entries keep.
func encodingOf(rec lww.Record) string {
	switch rec.Type {
	case lww.Hash, lww.Set:
		return "hashtable" // a record per field or member's add, as Redis's hashtable an entry each
	case lww.SortedSet:
		return "skiplist"
	case lww.List:
		return "quicklist" // Redis 7.0's for every list; kura keeps a record per item
	case lww.Counter:
		return "int" // a PN counter's value is a 64-bit integer, as an INCR'd Redis string
	}
	return stringEncoding(rec.Value)
}

// stringEncoding is the encoding Redis gives a string value when it is SET. Redis's
// answer after APPEND, SETRANGE or SETBIT is raw whatever the length, which kura, keeping
// no record of how a value was made, does not follow.
func stringEncoding(value []byte) string {
	if _, ok := parseInt(value); ok && len(value) <= intEncodingBytesMax {
		return "int"
	}
	if len(value) <= embstrEncodingBytesMax {
		return "embstr"
	}
	return "raw"
}
