package resp

import (
	"errors"
	"math"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// The string commands. Every key is a string in kura; see transact.go for those that
// read the key they write.

func getCommand(c *conn, args [][]byte) {
	rec, found, err := c.lookup(args[1])
	c.replyGet(rec, found, err)
}

// replyGet answers a read: the value, a PN counter's sum (read then), null for a missing
// key, WRONGTYPE for a key of another type than string, or the error.
func (c *conn) replyGet(rec lww.Record, found bool, err error) {
	switch {
	case err != nil:
		c.w.Error(errorReply(err))
	case found && rec.Type == lww.Counter:
		c.counterValue(rec.Key)
	case found && rec.Type != lww.String:
		c.w.Error(errWrongType)
	default:
		c.writeValue(rec, found)
	}
}

// writeValue writes a record's value, or null for a missing key.
func (c *conn) writeValue(rec lww.Record, found bool) {
	if !found {
		c.w.Null()
		return
	}
	c.w.Bulk(rec.Value)
}

// setOptions are SET's options, parsed.
type setOptions struct {
	nx, xx, get, keepTTL bool
	// expiresAtMs is the deadline EX, PX, EXAT or PXAT gives, in Unix milliseconds; 0
	// when none does.
	expiresAtMs int64
}

// errExpireTime is Redis's refusal of an expiry that is not positive or overflows.
const errExpireTime = "ERR invalid expire time in 'set' command"

// parseSetOptions reads SET's options (the arguments after key and value) as Redis 7 reads
// them: first the words, which may repeat but not conflict (NX with XX, KEEPTTL or two
// kinds of expiry together: a syntax error), then the expiry's integer, which must be
// positive and keep the deadline within int64 milliseconds. It returns the error reply
// for options Redis refuses, or "".
func parseSetOptions(options [][]byte, now time.Time) (setOptions, string) {
	var opts setOptions
	var expiry string // EX, PX, EXAT or PXAT, the kind given
	var expiryArg []byte
	for i := 0; i < len(options); i++ {
		switch word := upper(options[i]); {
		case word == "NX" && !opts.xx:
			opts.nx = true
		case word == "XX" && !opts.nx:
			opts.xx = true
		case word == "GET":
			opts.get = true
		case word == "KEEPTTL" && expiry == "":
			opts.keepTTL = true
		case (word == "EX" || word == "PX" || word == "EXAT" || word == "PXAT") &&
			!opts.keepTTL && (expiry == "" || expiry == word) && i+1 < len(options):
			expiry, expiryArg = word, options[i+1]
			i++
		default:
			return setOptions{}, errSyntax
		}
	}
	if expiry == "" {
		return opts, ""
	}
	ms, ok := parseInt(expiryArg)
	if !ok {
		return setOptions{}, errNotInt
	}
	seconds := expiry == "EX" || expiry == "EXAT"
	if ms <= 0 || (seconds && ms > math.MaxInt64/1000) {
		return setOptions{}, errExpireTime
	}
	if seconds {
		ms *= 1000
	}
	if expiry == "EX" || expiry == "PX" {
		nowMs := now.UnixMilli()
		if ms > math.MaxInt64-nowMs {
			return setOptions{}, errExpireTime
		}
		ms += nowMs
	}
	opts.expiresAtMs = ms
	return opts, ""
}

// setCommand is SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]. Without
// NX, XX, GET or KEEPTTL it is one last-writer-wins write; with any of them it reads the
// key it writes, as one lightweight transaction.
func setCommand(c *conn, args [][]byte) {
	opts, msg := parseSetOptions(args[3:], time.Now())
	if msg != "" {
		c.w.Error(msg)
		return
	}
	key, value, expiresAt := args[1], args[2], expiryOf(opts.expiresAtMs)
	if !opts.nx && !opts.xx && !opts.get && !opts.keepTTL {
		if err := c.put(key, value, expiresAt); err != nil {
			c.w.Error(errorReply(err))
			return
		}
		c.w.SimpleString("OK")
		return
	}
	fn := writeIf(
		func(_ lww.Record, found bool) bool { return !(opts.nx && found) && !(opts.xx && !found) },
		func(cur lww.Record, found bool) lww.Record {
			if opts.keepTTL && found {
				expiresAt = cur.ExpiresAt
			}
			return lww.Record{Value: value, ExpiresAt: expiresAt}
		})
	if opts.get {
		// SET ... GET answers the string it replaced: a key of another type is refused.
		fn = stringOnly(fn)
	}
	res, err := c.transact(key, fn)
	if err == nil {
		err = c.resetReplaced(key, res)
	}
	switch {
	case err != nil:
		c.replyTransactError(err)
	case opts.get:
		c.writeValue(res.Previous, res.PreviousFound)
	case res.Applied:
		c.w.SimpleString("OK")
	default:
		c.w.Null()
	}
}

// setnxCommand is SETNX key value: 1 when it set the key, 0 when the key held a value.
func setnxCommand(c *conn, args [][]byte) {
	value := args[2]
	res, err := c.transact(args[1], writeIf(
		func(_ lww.Record, found bool) bool { return !found },
		func(lww.Record, bool) lww.Record { return lww.Record{Value: value} }))
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.w.Int(boolInt(res.Applied))
}

// getsetCommand is GETSET key value: SET key value GET, the expiry dropped.
func getsetCommand(c *conn, args [][]byte) {
	value := args[2]
	res, err := c.transact(args[1], stringOnly(writeIf(
		func(lww.Record, bool) bool { return true },
		func(lww.Record, bool) lww.Record { return lww.Record{Value: value} })))
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.writeValue(res.Previous, res.PreviousFound)
}

// getdelCommand is GETDEL key: the value, deleted in the same step, so that of clients
// racing for it one gets it.
func getdelCommand(c *conn, args [][]byte) {
	res, err := c.transact(args[1], stringOnly(deleteIfFound))
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.writeValue(res.Previous, res.PreviousFound)
}

// delCommand is DEL and UNLINK: it deletes every key given and counts those it deleted,
// each key's delete a transaction, so that of clients racing to delete a key one counts
// it; a key named twice counts once. UNLINK frees memory in the background in Redis;
// kura's delete is a tombstone either way.
func delCommand(c *conn, args [][]byte) {
	keys := distinct(args[1:])
	deleted := make([]bool, len(keys))
	err := forEach(len(keys), func(i int) error {
		res, err := c.transact(keys[i], deleteIfFound)
		deleted[i] = res.Applied
		if err == nil {
			err = c.resetReplaced(keys[i], res)
		}
		return err
	})
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.w.Int(int64(countTrue(deleted)))
}

// existsCommand counts the keys that exist; a key named twice counts twice, as in Redis.
func existsCommand(c *conn, args [][]byte) {
	keys := args[1:]
	found := make([]bool, len(keys))
	err := forEach(len(keys), func(i int) error {
		var err error
		_, found[i], err = c.lookup(keys[i])
		return err
	})
	if err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.Int(int64(countTrue(found)))
}

func mgetCommand(c *conn, args [][]byte) {
	start := time.Now()
	results := c.lookupAll(args[1:])
	for _, r := range results {
		if r.Err != nil {
			if errors.Is(r.Err, coord.ErrAnswerFull) {
				c.observe("get", c.level, start, r.Err) // the refusal, once
			}
			c.w.Error(errorReply(r.Err))
			return
		}
	}
	if !c.counterValues(args[1:], results) {
		return
	}
	c.w.ArrayHeader(len(results))
	for _, r := range results {
		// As Redis's MGET, a key of another type than string reads as missing.
		c.writeValue(r.Record, r.Found && r.Record.Type == lww.String)
	}
}

// counterValues replaces each PN counter among results, the reads of keys, by its value as
// a string, as the string commands read one. ok is false when the reply is written
// already.
func (c *conn) counterValues(keys [][]byte, results []coord.GetResult) bool {
	for i, r := range results {
		if r.Found && r.Record.Type == lww.Counter {
			value, ok := c.readCounterValue(keys[i])
			if !ok {
				return false
			}
			results[i].Record.Value, results[i].Record.Type, results[i].Found = value, lww.String, value != nil
		}
	}
	return true
}

// msetCommand writes every pair, in parallel; it is not atomic: on an error some pairs may
// be written. Of a key named twice the last value is written, as in Redis.
func msetCommand(c *conn, args [][]byte) {
	if len(args)%2 == 0 {
		c.w.Error("ERR wrong number of arguments for 'mset' command")
		return
	}
	last := map[string]int{} // key -> index of its last pair
	for i := 1; i < len(args); i += 2 {
		last[string(args[i])] = i
	}
	pairs := make([]int, 0, len(last))
	for i := 1; i < len(args); i += 2 {
		if last[string(args[i])] == i {
			pairs = append(pairs, i)
		}
	}
	err := forEach(len(pairs), func(i int) error {
		return c.put(args[pairs[i]], args[pairs[i]+1], 0)
	})
	if err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.SimpleString("OK")
}

// strlenCommand answers a value's length in bytes, 0 for a missing key.
func strlenCommand(c *conn, args [][]byte) {
	rec, _, err := c.lookupString(args[1])
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.w.Int(int64(len(rec.Value)))
}

// typeCommand answers the type of a key that exists, as its record carries it ("string"
// for every record written before types), and "none" for one that does not.
func typeCommand(c *conn, args [][]byte) {
	rec, found, err := c.lookup(args[1])
	switch {
	case err != nil:
		c.w.Error(errorReply(err))
	case found:
		c.w.SimpleString(rec.Type.String())
	default:
		c.w.SimpleString("none")
	}
}

// getrangeCommand is GETRANGE (and its old name SUBSTR) key start end: the bytes from
// start to end inclusive, negative offsets counting from the end, clamped to the value,
// as Redis 7.0 cuts them; an empty string for a missing key.
func getrangeCommand(c *conn, args [][]byte) {
	start, okStart := parseInt(args[2])
	end, okEnd := parseInt(args[3])
	if !okStart || !okEnd {
		c.w.Error(errNotInt)
		return
	}
	rec, _, err := c.lookupString(args[1])
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.w.Bulk(substring(rec.Value, start, end))
}

// substring cuts value[start..end] as Redis's GETRANGE does.
func substring(value []byte, start, end int64) []byte {
	n := int64(len(value))
	if start < 0 && end < 0 && start > end {
		return nil
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	end = min(end, n-1)
	if start > end || n == 0 {
		return nil
	}
	return value[start : end+1]
}

// fanoutMax bounds how many keys of one multi-key command are read or written at once.
const fanoutMax = 32

// forEach calls fn(0..n-1), up to fanoutMax at once, and returns the first error by
// index. Keys of one command are independent, so their round trips overlap.
func forEach(n int, fn func(i int) error) error {
	if n == 1 {
		return fn(0)
	}
	errs := make([]error, n)
	slots := make(chan struct{}, fanoutMax)
	var wg sync.WaitGroup
	for i := range n {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			errs[i] = fn(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// distinct returns keys without repeats, in first-seen order.
func distinct(keys [][]byte) [][]byte {
	seen := make(map[string]bool, len(keys))
	out := keys[:0:0]
	for _, k := range keys {
		if !seen[string(k)] {
			seen[string(k)] = true
			out = append(out, k)
		}
	}
	return out
}

func countTrue(flags []bool) int {
	n := 0
	for _, f := range flags {
		if f {
			n++
		}
	}
	return n
}

// boolInt is Redis's integer reply for a yes or no.
func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// appendCommand is APPEND key value: the length after appending, in one transaction.
func appendCommand(c *conn, args [][]byte) {
	suffix := args[2]
	limit := c.s.cfg.Limits.ValueBytesMax
	res, err := c.transact(args[1], stringOnly(func(cur lww.Record, found bool) (lww.Record, bool, error) {
		if len(cur.Value)+len(suffix) > limit {
			return lww.Record{}, false, redisError("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		}
		value := append(append(make([]byte, 0, len(cur.Value)+len(suffix)), cur.Value...), suffix...)
		return lww.Record{Value: value, ExpiresAt: cur.ExpiresAt}, true, nil
	}))
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.w.Int(int64(len(res.Record.Value)))
}

// setrangeCommand is SETRANGE key offset value: the length after overwriting from offset,
// zero bytes padding a value shorter than offset. Writing nothing to a missing key
// leaves it missing.
func setrangeCommand(c *conn, args [][]byte) {
	offset, ok := parseInt(args[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	if offset < 0 {
		c.w.Error("ERR offset is out of range")
		return
	}
	patch := args[3]
	limit := int64(c.s.cfg.Limits.ValueBytesMax)
	if len(patch) > 0 && offset > limit-int64(len(patch)) { // offset+len could overflow
		c.w.Error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return
	}
	res, err := c.transact(args[1], stringOnly(func(cur lww.Record, found bool) (lww.Record, bool, error) {
		if len(patch) == 0 {
			return lww.Record{}, false, nil
		}
		value := make([]byte, max(len(cur.Value), int(offset)+len(patch)))
		copy(value, cur.Value)
		copy(value[offset:], patch)
		return lww.Record{Value: value, ExpiresAt: cur.ExpiresAt}, true, nil
	}))
	switch {
	case err != nil:
		c.replyTransactError(err)
	case res.Applied:
		c.w.Int(int64(len(res.Record.Value)))
	default:
		c.w.Int(int64(len(res.Previous.Value)))
	}
}

// renameCommand is RENAME and RENAMENX source destination. Each key's step is a
// transaction, but the two keys are not one: the value is written to destination first,
// then source is deleted if it still holds what was copied, so a crash between the two
// leaves both keys, never neither, and a concurrent write to source survives.
func renameCommand(c *conn, args [][]byte) {
	nx := string(c.lowerName) == "renamenx"
	src, dst := args[1], args[2]
	moved, found, err := c.serialGet(src)
	switch {
	case err != nil:
		c.w.Error(errorReply(err))
		return
	case !found:
		c.w.Error("ERR no such key")
		return
	case string(src) == string(dst):
		if nx {
			c.w.Int(0)
		} else {
			c.w.SimpleString("OK")
		}
		return
	case moved.Type != lww.String:
		c.renameCollection(src, dst, moved.Type, nx)
		return
	}
	wrote, err := c.transact(dst, writeIf(
		func(_ lww.Record, found bool) bool { return !nx || !found },
		func(lww.Record, bool) lww.Record { return lww.Record{Value: moved.Value, ExpiresAt: moved.ExpiresAt} }))
	if err == nil {
		err = c.resetReplaced(dst, wrote)
	}
	if err != nil {
		c.replyTransactError(err)
		return
	}
	if wrote.Applied {
		_, err = c.transact(src, writeIf(
			func(cur lww.Record, found bool) bool { return found && cur.Timestamp == moved.Timestamp },
			func(lww.Record, bool) lww.Record { return lww.Record{Tombstone: true} }))
		if err != nil {
			c.replyTransactError(err)
			return
		}
	}
	if nx {
		c.w.Int(boolInt(wrote.Applied))
		return
	}
	c.w.SimpleString("OK")
}

// copyCommand is COPY source destination [DB 0] [REPLACE]: 1 when it copied the value and
// its deadline, 0 when source is missing or destination holds a value (without REPLACE).
func copyCommand(c *conn, args [][]byte) {
	replace := false
	for i := 3; i < len(args); i++ {
		switch upper(args[i]) {
		case "REPLACE":
			replace = true
		case "DB":
			if i+1 >= len(args) {
				c.w.Error(errSyntax)
				return
			}
			db, ok := parseInt(args[i+1])
			if !ok {
				c.w.Error(errNotInt)
				return
			}
			if db != 0 {
				c.w.Error("ERR DB index is out of range")
				return
			}
			i++
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	src, dst := args[1], args[2]
	if string(src) == string(dst) {
		c.w.Error("ERR source and destination objects are the same")
		return
	}
	value, found, err := c.serialGet(src)
	if err != nil {
		c.w.Error(errorReply(err))
		return
	}
	if !found {
		c.w.Int(0)
		return
	}
	if value.Type != lww.String {
		c.copyCollection(src, dst, value.Type, replace)
		return
	}
	wrote, err := c.transact(dst, writeIf(
		func(_ lww.Record, found bool) bool { return replace || !found },
		func(lww.Record, bool) lww.Record { return lww.Record{Value: value.Value, ExpiresAt: value.ExpiresAt} }))
	if err == nil {
		err = c.resetReplaced(dst, wrote)
	}
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.w.Int(boolInt(wrote.Applied))
}

// msetnxCommand is MSETNX key value [key value ...]: 1 when it set every key, none of
// which held a value, 0 otherwise. Each key's set-if-absent is a transaction, but the
// keys are not one: keys are first read (serially), and if a racing client sets one of
// them between that read and its own set, the keys set before it stay set.
func msetnxCommand(c *conn, args [][]byte) {
	if len(args)%2 == 0 {
		c.w.Error("ERR wrong number of arguments for 'msetnx' command")
		return
	}
	keys := make([][]byte, 0, len(args)/2)
	for i := 1; i < len(args); i += 2 {
		keys = append(keys, args[i])
	}
	keys = distinct(keys)
	exists := make([]bool, len(keys))
	err := forEach(len(keys), func(i int) error {
		var err error
		_, exists[i], err = c.serialGet(keys[i])
		return err
	})
	if err != nil {
		c.w.Error(errorReply(err))
		return
	}
	if countTrue(exists) > 0 {
		c.w.Int(0)
		return
	}
	last := map[string][]byte{} // of a key named twice, the last value is written
	for i := 1; i < len(args); i += 2 {
		last[string(args[i])] = args[i+1]
	}
	set := make([]bool, len(keys))
	err = forEach(len(keys), func(i int) error {
		value := last[string(keys[i])]
		res, err := c.transact(keys[i], writeIf(
			func(_ lww.Record, found bool) bool { return !found },
			func(lww.Record, bool) lww.Record { return lww.Record{Value: value} }))
		set[i] = res.Applied
		return err
	})
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.w.Int(boolInt(countTrue(set) == len(keys)))
}

// errBitOffset is Redis's refusal of a bit offset outside 0 .. 2^32-1.
const errBitOffset = "ERR bit offset is not an integer or out of range"

// bitOffset reads a bit offset as Redis does: an integer in 0 .. 2^32-1.
func bitOffset(arg []byte) (int64, bool) {
	n, ok := parseInt(arg)
	return n, ok && n >= 0 && n < 1<<32
}

// getbitCommand is GETBIT key offset: the bit at offset (bit 0 is the first byte's most
// significant), 0 past the value's end or for a missing key.
func getbitCommand(c *conn, args [][]byte) {
	offset, ok := bitOffset(args[2])
	if !ok {
		c.w.Error(errBitOffset)
		return
	}
	rec, _, err := c.lookupString(args[1])
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.w.Int(int64(bitAt(rec.Value, offset)))
}

// setbitCommand is SETBIT key offset 0|1: the bit's former value, the value grown with
// zero bytes to reach offset, in one lightweight transaction. The key keeps its deadline.
func setbitCommand(c *conn, args [][]byte) {
	offset, ok := bitOffset(args[2])
	if !ok {
		c.w.Error(errBitOffset)
		return
	}
	bit, ok := parseInt(args[3])
	if !ok || (bit != 0 && bit != 1) {
		c.w.Error("ERR bit is not an integer or out of range")
		return
	}
	if offset/8 >= int64(c.s.cfg.Limits.ValueBytesMax) {
		c.w.Error("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return
	}
	res, err := c.transact(args[1], stringOnly(func(cur lww.Record, _ bool) (lww.Record, bool, error) {
		value := make([]byte, max(len(cur.Value), int(offset/8)+1))
		copy(value, cur.Value)
		mask := byte(0x80) >> (offset % 8)
		if bit == 1 {
			value[offset/8] |= mask
		} else {
			value[offset/8] &^= mask
		}
		return lww.Record{Value: value, ExpiresAt: cur.ExpiresAt}, true, nil
	}))
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.w.Int(int64(bitAt(res.Previous.Value, offset)))
}

// bitAt returns the bit at offset of value, 0 past its end.
func bitAt(value []byte, offset int64) int {
	if offset/8 >= int64(len(value)) {
		return 0
	}
	return int(value[offset/8]>>(7-offset%8)) & 1
}
