package resp

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// Hashes (docs/redis-types.md): each field is an element record of its own, last writer
// wins per field; the key's own record is the header, of type hash, holding the key's
// expiry; a reset point removes every field of an earlier life of the key at once.

// Redis's replies of the hash commands.
const (
	errHashNotInt   = "ERR hash value is not an integer"
	errHashNotFloat = "ERR hash value is not a float"
	// errMoveCollection refuses RENAME of a hash or sorted set: their fields and members
	// are rewritten in place, so removing from source the records one read copied could
	// hide a write made to one of them meanwhile (renameCollection).
	errMoveCollection = "ERR kura does not RENAME a hash or sorted set yet: only a string, list or set"
	// errCopyCounter refuses COPY of a PN counter: its shards are its writers' own, each
	// process keeping its shard's total (pnCounters), which a copy would share.
	errCopyCounter = "ERR kura does not COPY a conflict-free (PN) counter"
)

// hashCommands are the hash commands of the table.
func hashCommands() []*command {
	readKey := []string{"readonly", "fast"}
	writeKey := []string{"write", "denyoom", "fast"}
	key1 := func(cmd *command) *command {
		cmd.firstKey, cmd.lastKey, cmd.keyStep = 1, 1, 1
		return cmd
	}
	return []*command{
		key1(&command{name: "hset", arity: -4, flags: writeKey, run: hsetCommand}),
		key1(&command{name: "hmset", arity: -4, flags: writeKey, run: hsetCommand}),
		key1(&command{name: "hsetnx", arity: 4, flags: writeKey, run: hsetnxCommand}),
		key1(&command{name: "hget", arity: 3, flags: readKey, run: hgetCommand}),
		key1(&command{name: "hmget", arity: -3, flags: readKey, run: hmgetCommand}),
		key1(&command{name: "hexists", arity: 3, flags: readKey, run: hexistsCommand}),
		key1(&command{name: "hstrlen", arity: 3, flags: readKey, run: hstrlenCommand}),
		key1(&command{name: "hdel", arity: -3, flags: []string{"write", "fast"}, run: hdelCommand}),
		key1(&command{name: "hlen", arity: 2, flags: readKey, run: hlenCommand}),
		key1(&command{name: "hgetall", arity: 2, flags: []string{"readonly"}, run: hgetallCommand}),
		key1(&command{name: "hkeys", arity: 2, flags: []string{"readonly"}, run: hgetallCommand}),
		key1(&command{name: "hvals", arity: 2, flags: []string{"readonly"}, run: hgetallCommand}),
		key1(&command{name: "hincrby", arity: 4, flags: writeKey, run: hincrbyCommand}),
		key1(&command{name: "hincrbyfloat", arity: 4, flags: writeKey, run: hincrbyfloatCommand}),
		key1(&command{name: "hrandfield", arity: -2, flags: []string{"readonly"}, run: hrandfieldCommand}),
		key1(&command{name: "hscan", arity: -3, flags: []string{"readonly"}, run: hscanCommand}),
	}
}

// fieldKey is the key of hash key's field's element record.
func fieldKey(key, field []byte) []byte { return element.Key(key, element.HashField, field) }

// hashField is one field of a hash as read.
type hashField struct{ name, value []byte }

// readHash reads hash key whole. ok is false when the reply is written already: an
// error, or WRONGTYPE for a key of another type. A missing key is an empty hash.
func (c *conn) readHash(key []byte) (fields []hashField, header lww.Record, ok bool) {
	coll, ok := c.readCollection(key, lww.Hash)
	if !ok {
		return nil, lww.Record{}, false
	}
	return hashFields(coll.Elements), coll.Header, true
}

// hashFields are the fields a hash's live element records hold, in key order.
func hashFields(elems []lww.Record) (fields []hashField) {
	for _, rec := range elems {
		if _, kind, name, ok := element.Parse(rec.Key); ok && kind == element.HashField {
			fields = append(fields, hashField{name: name, value: rec.Value})
		}
	}
	return fields
}

// readFields reads the named fields of hash key, with its header: one result per name.
// ok is false when the reply is written already (an error, WRONGTYPE).
func (c *conn) readFields(key []byte, names [][]byte) (coll coord.Collection, results []coord.GetResult, ok bool) {
	keys := make([][]byte, len(names))
	for i, name := range names {
		keys[i] = fieldKey(key, name)
	}
	return c.readElements(key, lww.Hash, keys)
}

// writeHash writes w to hash key (writeCollection).
func (c *conn) writeHash(key []byte, coll coord.Collection, w coord.CollectionWrite) (hlc.Timestamp, error) {
	return c.writeCollection(key, lww.Hash, coll, w)
}

// hsetCommand is HSET key field value [field value ...] (the count of new fields) and
// HMSET (OK). Every field is a record of its own, written with the header under one
// timestamp; a field named twice takes its last value, as in Redis. The count is of the
// fields this read found absent: a field another client sets at the same moment may be
// counted by both.
func hsetCommand(c *conn, args [][]byte) {
	if len(args)%2 != 0 {
		c.w.Error(fmt.Sprintf("ERR wrong number of arguments for '%s' command", c.lowerName))
		return
	}
	key := args[1]
	last := map[string]int{} // field -> index of its last value
	var names [][]byte
	for i := 2; i < len(args); i += 2 {
		if _, seen := last[string(args[i])]; !seen {
			names = append(names, args[i])
		}
		last[string(args[i])] = i + 1
	}
	coll, results, ok := c.readFields(key, names)
	if !ok {
		return
	}
	w := coord.CollectionWrite{Header: &lww.Record{}}
	added := 0
	for i, name := range names {
		w.Elements = append(w.Elements, lww.Record{Key: fieldKey(key, name), Value: args[last[string(name)]]})
		if !results[i].Found {
			added++
		}
	}
	if _, err := c.writeHash(key, coll, w); err != nil {
		c.w.Error(errorReply(err))
		return
	}
	if string(c.lowerName) == "hmset" {
		c.w.SimpleString("OK")
		return
	}
	c.w.Int(int64(added))
}

// updateField runs fn on field of hash key as a lightweight transaction on the field's
// record (updateElement).
func (c *conn) updateField(key, field []byte, fn func(cur []byte, found bool) (next []byte, write bool, err error)) (res coord.UpdateResult, ok bool) {
	return c.updateElement(key, lww.Hash, fieldKey(key, field), fn, nil)
}

// hsetnxCommand is HSETNX key field value: 1 when it set the field, 0 when the field
// held a value. A transaction on the field's record, so of two clients racing one sets it.
func hsetnxCommand(c *conn, args [][]byte) {
	value := args[3]
	res, ok := c.updateField(args[1], args[2], func(_ []byte, found bool) ([]byte, bool, error) {
		return value, !found, nil
	})
	if ok {
		c.w.Int(boolInt(res.Applied))
	}
}

// hincrbyCommand is HINCRBY key field increment: a transaction on the field's record (no
// increment is lost, at the price of Paxos's round trips) rather than the per-DC counter
// shards docs/redis-types.md designs for later.
func hincrbyCommand(c *conn, args [][]byte) {
	step, ok := parseInt(args[3])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	res, ok := c.updateField(args[1], args[2], func(cur []byte, found bool) ([]byte, bool, error) {
		var n int64
		if found {
			var ok bool
			if n, ok = parseInt(cur); !ok {
				return nil, false, redisError(errHashNotInt)
			}
		}
		if (step > 0 && n > math.MaxInt64-step) || (step < 0 && n < math.MinInt64-step) {
			return nil, false, redisError(errOverflow)
		}
		return strconv.AppendInt(nil, n+step, 10), true, nil
	})
	if ok {
		sum, _ := parseInt(res.Record.Value)
		c.w.Int(sum)
	}
}

// hincrbyfloatCommand is HINCRBYFLOAT key field increment, with INCRBYFLOAT's arithmetic.
func hincrbyfloatCommand(c *conn, args [][]byte) {
	step, ok := parseLongDouble(args[3])
	switch word := strings.TrimLeft(strings.ToLower(string(args[3])), "+-"); {
	case word == "nan" || (ok && step.IsInf()):
		// Unlike INCRBYFLOAT, Redis's HINCRBYFLOAT refuses such an increment before it
		// reads the field.
		c.w.Error("ERR value is NaN or Infinity")
		return
	case !ok:
		c.w.Error(errNotFloat)
		return
	}
	res, ok := c.updateField(args[1], args[2], func(cur []byte, found bool) ([]byte, bool, error) {
		n := new(big.Float)
		if found {
			var ok bool
			if n, ok = parseLongDouble(cur); !ok {
				return nil, false, redisError(errHashNotFloat)
			}
		}
		sum, ok := addLongDouble(n, step)
		if !ok {
			return nil, false, redisError(errNaNOrInfty)
		}
		return formatLongDouble(sum), true, nil
	})
	if ok {
		c.w.Bulk(res.Record.Value)
	}
}

// hgetCommand is HGET key field.
func hgetCommand(c *conn, args [][]byte) {
	_, results, ok := c.readFields(args[1], args[2:3])
	if ok {
		c.writeValue(results[0].Record, results[0].Found)
	}
}

// hmgetCommand is HMGET key field [field ...]: a value or null per field.
func hmgetCommand(c *conn, args [][]byte) {
	_, results, ok := c.readFields(args[1], args[2:])
	if !ok {
		return
	}
	c.w.ArrayHeader(len(results))
	for _, r := range results {
		c.writeValue(r.Record, r.Found)
	}
}

// hexistsCommand is HEXISTS key field.
func hexistsCommand(c *conn, args [][]byte) {
	_, results, ok := c.readFields(args[1], args[2:3])
	if ok {
		c.w.Int(boolInt(results[0].Found))
	}
}

// hstrlenCommand is HSTRLEN key field: the length of its value, 0 when absent.
func hstrlenCommand(c *conn, args [][]byte) {
	_, results, ok := c.readFields(args[1], args[2:3])
	if ok {
		c.w.Int(int64(len(results[0].Record.Value)))
	}
}

// hdelCommand is HDEL key field [field ...]: the count of fields it removed, each
// tombstoned. The delete of the last fields keeps the header, and the emptied hash reads
// as absent (settle): a header tombstone and a reset point, as DEL writes them, would
// also remove a field another DC sets at that moment, an acknowledged write lost.
func hdelCommand(c *conn, args [][]byte) {
	key := args[1]
	fields, _, ok := c.readHash(key)
	if !ok {
		return
	}
	named := map[string]bool{}
	for _, name := range args[2:] {
		named[string(name)] = true
	}
	var w coord.CollectionWrite
	for _, f := range fields {
		if named[string(f.name)] {
			w.Elements = append(w.Elements, lww.Record{Key: fieldKey(key, f.name), Tombstone: true})
		}
	}
	if len(w.Elements) == 0 {
		c.w.Int(0)
		return
	}
	if _, err := c.writeHash(key, coord.Collection{Found: true}, w); err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.Int(int64(len(w.Elements)))
}

// hlenCommand is HLEN key: the count of its fields, read whole (kura keeps no count).
func hlenCommand(c *conn, args [][]byte) {
	if fields, _, ok := c.readHash(args[1]); ok {
		c.w.Int(int64(len(fields)))
	}
}

// hgetallCommand is HGETALL (a map of fields to values), HKEYS and HVALS, in field order.
func hgetallCommand(c *conn, args [][]byte) {
	fields, _, ok := c.readHash(args[1])
	if !ok {
		return
	}
	switch string(c.lowerName) {
	case "hgetall":
		c.w.MapHeader(len(fields))
		for _, f := range fields {
			c.w.Bulk(f.name)
			c.w.Bulk(f.value)
		}
	case "hkeys":
		c.w.ArrayHeader(len(fields))
		for _, f := range fields {
			c.w.Bulk(f.name)
		}
	default:
		c.w.ArrayHeader(len(fields))
		for _, f := range fields {
			c.w.Bulk(f.value)
		}
	}
}

// hrandfieldCommand is HRANDFIELD key [count [WITHVALUES]], as Redis 7.0: one field (or
// null), count distinct fields, or for a negative count that many drawn with repeats;
// with WITHVALUES each with its value (pairs in RESP3).
func hrandfieldCommand(c *conn, args [][]byte) {
	count, withCount, ok := c.parseRandomCount(args, "WITHVALUES")
	if !ok {
		return
	}
	withValues := len(args) == 4
	fields, _, ok := c.readHash(args[1])
	if !ok {
		return
	}
	if !withCount {
		if len(fields) == 0 {
			c.w.Null()
			return
		}
		c.w.Bulk(fields[rand.IntN(len(fields))].name)
		return
	}
	var picked []hashField
	switch {
	case len(fields) == 0 || count == 0:
	case count > 0:
		rand.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
		picked = fields[:min(int(count), len(fields))]
	default:
		if -count > int64(c.s.cfg.Limits.ScanLimitMax) {
			c.w.Error(fmt.Sprintf("ERR kura answers at most %d fields drawn with repeats", c.s.cfg.Limits.ScanLimitMax))
			return
		}
		for range -count {
			picked = append(picked, fields[rand.IntN(len(fields))])
		}
	}
	c.writeFields(picked, withValues)
}

// writeFields answers fields: their names, or with values each name then its value
// (flat in RESP2, a pair each in RESP3, as Redis's HRANDFIELD).
func (c *conn) writeFields(fields []hashField, withValues bool) {
	switch {
	case !withValues:
		c.w.ArrayHeader(len(fields))
		for _, f := range fields {
			c.w.Bulk(f.name)
		}
	case c.w.Version() >= 3:
		c.w.ArrayHeader(len(fields))
		for _, f := range fields {
			c.w.ArrayHeader(2)
			c.w.Bulk(f.name)
			c.w.Bulk(f.value)
		}
	default:
		c.w.ArrayHeader(2 * len(fields))
		for _, f := range fields {
			c.w.Bulk(f.name)
			c.w.Bulk(f.value)
		}
	}
}

// hscanCommand is HSCAN key cursor [MATCH pattern] [COUNT count]: the whole hash in one
// reply with cursor 0, as Redis answers a small hash, since a hash is read whole anyway.
func hscanCommand(c *conn, args [][]byte) {
	opts, ok := c.parseElementScan(args)
	if !ok {
		return
	}
	fields, _, ok := c.readHash(args[1])
	if !ok {
		return
	}
	writeElementScan(c, fields, opts.pattern, func(f hashField) []byte { return f.name }, func(f hashField) []byte { return f.value })
}

// stringOnly refuses, as WRONGTYPE, a transaction of a string command on a key of
// another type.
func stringOnly(fn coord.UpdateFunc) coord.UpdateFunc {
	return func(cur lww.Record, found bool) (lww.Record, bool, error) {
		if found && cur.Type != lww.String {
			return lww.Record{}, false, wrongTypeOf(cur.Type)
		}
		return fn(cur, found)
	}
}

// lookupString is lookup for a string command: a key of another type is refused as
// WRONGTYPE (a redisError; replyTransactError answers it).
func (c *conn) lookupString(key []byte) (lww.Record, bool, error) {
	rec, found, err := c.lookup(key)
	if err == nil && found && rec.Type != lww.String {
		return lww.Record{}, false, wrongTypeOf(rec.Type)
	}
	return rec, found, err
}
