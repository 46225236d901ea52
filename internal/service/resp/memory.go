package resp

import "github.com/kuradb/kura/internal/core/lww"

// The MEMORY command: MEMORY USAGE answers the bytes of a key's data as kura holds it,
// which is not RAM but the records of every replica's storage.

func memorySubcommands() []*command {
	return []*command{
		{name: "usage", arity: -3, flags: []string{"readonly"}, firstKey: 2, lastKey: 2, keyStep: 1,
			usage:   "USAGE <key> [SAMPLES <count>]",
			summary: "Return the bytes of the key's records: key and value of each (a hash's header and fields), without storage's overhead.",
			run:     memoryUsageCommand},
	}
}

// memoryUsageCommand is MEMORY USAGE key [SAMPLES count]: the key and value bytes of the
// key's records, its own and, for a collection, each element record (SAMPLES is checked
// and ignored: every element is counted), or null for a missing key. Redis answers the RAM
// its objects take, allocator overhead included; kura keeps no object in RAM per key.
func memoryUsageCommand(c *conn, args [][]byte) {
	for i := 3; i < len(args); i += 2 {
		if upper(args[i]) != "SAMPLES" || i+1 >= len(args) {
			c.w.Error(errSyntax)
			return
		}
		if _, ok := parseInt(args[i+1]); !ok {
			c.w.Error(errNotInt)
			return
		}
	}
	key := args[2]
	rec, found, err := c.get(key)
	switch {
	case err != nil:
		c.w.Error(errorReply(err))
		return
	case !found:
		c.w.Null()
		return
	case rec.Type == lww.List:
		c.listUsage(key, rec)
		return
	case rec.Type == lww.String:
		c.w.Int(int64(len(key) + len(rec.Value)))
		return
	}
	// A collection's size is its header's and its element records' keys and values.
	coll, ok := c.readCollection(key, rec.Type)
	if !ok {
		return
	}
	size := len(key) + len(coll.Header.Value)
	for _, e := range coll.Elements {
		size += len(e.Key) + len(e.Value)
	}
	c.w.Int(int64(size))
}
