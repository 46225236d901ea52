package resp

import (
	"math"
	"sync"
	"time"

	"github.com/kuradb/kura/lww"
)

// The string commands. Every key is a string in kura. Options that make Redis read before
// it writes (SET NX, XX and GET; GETDEL; DEL's count) are a read at the connection's level
// followed by a write: they are not atomic against concurrent writers of the key, whose
// last write wins.

func getCommand(c *conn, args [][]byte) {
	rec, found, err := c.lookup(args[1])
	c.replyGet(rec, found, err)
}

// replyGet answers a read: the value, null for a missing key, or the error.
func (c *conn) replyGet(rec lww.Record, found bool, err error) {
	if err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.writeValue(rec, found)
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

// setCommand is SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]. A valid
// expiry is refused until kura has TTLs.
func setCommand(c *conn, args [][]byte) {
	opts, msg := parseSetOptions(args[3:], time.Now())
	switch {
	case msg != "":
		c.w.Error(msg)
		return
	case opts.expiresAtMs != 0:
		c.w.Error(errNoExpiry)
		return
	}
	nx, xx, get := opts.nx, opts.xx, opts.get
	key, value := args[1], args[2]
	var old lww.Record
	var found bool
	if nx || xx || get {
		var err error
		if old, found, err = c.get(key); err != nil {
			c.w.Error(errorReply(err))
			return
		}
	}
	if (nx && found) || (xx && !found) {
		if get {
			c.writeValue(old, found)
		} else {
			c.w.Null()
		}
		return
	}
	if err := c.put(key, value); err != nil {
		c.w.Error(errorReply(err))
		return
	}
	if get {
		c.writeValue(old, found)
		return
	}
	c.w.SimpleString("OK")
}

func getdelCommand(c *conn, args [][]byte) {
	rec, found, err := c.get(args[1])
	if err == nil && found {
		err = c.delete(args[1])
	}
	if err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.writeValue(rec, found)
}

// delCommand is DEL and UNLINK: it deletes every key given and counts those that existed
// (per a read before the delete); a key named twice counts once. UNLINK frees memory in
// the background in Redis; kura's delete is a tombstone either way.
func delCommand(c *conn, args [][]byte) {
	keys := distinct(args[1:])
	existed := make([]bool, len(keys))
	err := forEach(len(keys), func(i int) error {
		_, found, err := c.get(keys[i])
		if err != nil {
			return err
		}
		existed[i] = found
		return c.delete(keys[i])
	})
	if err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.Int(int64(countTrue(existed)))
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
	keys := args[1:]
	recs := make([]lww.Record, len(keys))
	found := make([]bool, len(keys))
	err := forEach(len(keys), func(i int) error {
		var err error
		recs[i], found[i], err = c.lookup(keys[i])
		return err
	})
	if err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.ArrayHeader(len(keys))
	for i := range keys {
		c.writeValue(recs[i], found[i])
	}
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
		return c.put(args[pairs[i]], args[pairs[i]+1])
	})
	if err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.SimpleString("OK")
}

func expireCommand(c *conn, _ [][]byte) { c.w.Error(errNoExpiry) }

// ttlCommand answers TTL and PTTL: no key expires, so -1 for a key that exists, -2 for
// one that does not.
func ttlCommand(c *conn, args [][]byte) {
	_, found, err := c.lookup(args[1])
	switch {
	case err != nil:
		c.w.Error(errorReply(err))
	case found:
		c.w.Int(-1)
	default:
		c.w.Int(-2)
	}
}

// strlenCommand answers a value's length in bytes, 0 for a missing key.
func strlenCommand(c *conn, args [][]byte) {
	rec, _, err := c.lookup(args[1])
	if err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.Int(int64(len(rec.Value)))
}

// typeCommand answers "string" for a key that exists (every kura value is a string) and
// "none" for one that does not.
func typeCommand(c *conn, args [][]byte) {
	_, found, err := c.lookup(args[1])
	switch {
	case err != nil:
		c.w.Error(errorReply(err))
	case found:
		c.w.SimpleString("string")
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
	rec, _, err := c.lookup(args[1])
	if err != nil {
		c.w.Error(errorReply(err))
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
