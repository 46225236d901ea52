package resp

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// SCAN walks the connection's keyspace across the whole cluster through the coordinator's
// ScanKeys, in the order of the keys' hash (the hash partitioner's token of each key,
// whatever the keyspace's partitioner). The cursor is the position where the next call
// resumes, an unsigned 64-bit integer as in Redis: it carries the whole state of the
// scan, so any node resumes any cursor and nothing is kept between calls. Each call reads
// about COUNT keys, then keeps those matching MATCH (so a call may return fewer keys than
// COUNT, or none, before the scan ends). Every key present for the whole scan is returned
// once; cursor 0 starts a scan, and a reply with cursor 0 ends it. Deleted keys cost the
// walk nothing (replicas walk a live-key index), so a keyspace of a few live keys among
// many deleted ones answers at once. TYPE reads the own record of each key the walk
// found, in one read of many, for its type.

// scanCountDefault is SCAN's COUNT when the client gives none, as in Redis.
const scanCountDefault = 10

// scanPageKeys is KEYS's page: the keys one ScanKeys call walks (lower when the
// coordinator's scan limit is).
const scanPageKeys = 1000

// scanOptions are the options of SCAN, HSCAN and the other cursor commands.
type scanOptions struct {
	pattern  []byte // nil: every key or element
	count    int    // COUNT, at least 1
	typeName string // TYPE, lower case; empty: every type
}

// parseScanOptions reads [MATCH pattern] [COUNT count], and [TYPE type] when withType,
// from args, in any order and repeated as Redis allows (the last one counts). It answers
// the client's error and returns false on a bad option.
func (c *conn) parseScanOptions(args [][]byte, withType bool) (scanOptions, bool) {
	opts := scanOptions{count: scanCountDefault}
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			c.w.Error(errSyntax)
			return opts, false
		}
		switch name := upper(args[i]); {
		case name == "MATCH":
			opts.pattern = args[i+1]
		case name == "COUNT":
			n, err := strconv.Atoi(string(args[i+1]))
			if err != nil {
				c.w.Error(errNotInt)
				return opts, false
			}
			if n < 1 {
				c.w.Error(errSyntax)
				return opts, false
			}
			opts.count = n
		case name == "TYPE" && withType:
			opts.typeName = strings.ToLower(string(args[i+1]))
		default:
			c.w.Error(errSyntax)
			return opts, false
		}
	}
	return opts, true
}

// scanCommand is SCAN cursor [MATCH pattern] [COUNT count] [TYPE type].
func scanCommand(c *conn, args [][]byte) {
	cursor, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		c.w.Error("ERR invalid cursor")
		return
	}
	opts, ok := c.parseScanOptions(args[2:], true)
	if !ok {
		return
	}
	pattern, typeName := opts.pattern, opts.typeName
	count := min(opts.count, c.s.cfg.Limits.ScanLimitMax)
	var keys [][]byte
	next := uint64(0)
	// A type no key can have (Redis filters every key out, and so does not refuse it)
	// needs no walk.
	if typ, known := typeNamed(typeName); typeName == "" || known {
		page, after, err := c.scanKeys(cursor, count)
		if err == nil {
			keys, next = matching(page, pattern), after
			if typeName != "" {
				keys, err = c.ofType(keys, typ)
			}
		}
		if err != nil {
			c.w.Error(errorReply(err))
			return
		}
	}
	c.w.ArrayHeader(2)
	c.w.BulkString(strconv.FormatUint(next, 10))
	c.w.ArrayHeader(len(keys))
	for _, k := range keys {
		c.w.Bulk(k)
	}
}

// typeNamed returns the type TYPE answers as name.
func typeNamed(name string) (lww.Type, bool) {
	for t := lww.String; t <= lww.TypeMax; t++ {
		if t.String() == name {
			return t, true
		}
	}
	return 0, false
}

// ofType keeps the keys whose own record holds typ, read at the connection's level: the
// key walk's answer does not carry the type. A key whose value does not fit the answer
// of a read of many (coord.ErrAnswerFull) is read alone.
func (c *conn) ofType(keys [][]byte, typ lww.Type) ([][]byte, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	var out [][]byte
	for i, r := range c.s.cfg.Backend.GetAll(c.ctx, c.keyspace, keys, c.level) {
		if errors.Is(r.Err, coord.ErrAnswerFull) {
			r.Record, r.Found, r.Err = c.get(keys[i])
		}
		if r.Err != nil {
			return nil, r.Err
		}
		// TYPE names a PN counter string, as it answers for one.
		if r.Found && r.Record.Type.String() == typ.String() {
			out = append(out, keys[i])
		}
	}
	return out, nil
}

// matching returns the keys that match pattern, all of them for a nil pattern.
func matching(keys [][]byte, pattern []byte) [][]byte {
	if pattern == nil {
		return keys
	}
	var out [][]byte
	for _, k := range keys {
		if matchGlob(pattern, k) {
			out = append(out, k)
		}
	}
	return out
}

// keysCommand is KEYS pattern: the keyspace's keys matching pattern, found by walking
// the whole keyspace as SCAN does, a page at a time. Its cost grows with the keyspace,
// as Redis's does, but the walk stops as soon as the client disconnects.
func keysCommand(c *conn, args [][]byte) {
	var keys [][]byte
	page := min(scanPageKeys, c.s.cfg.Limits.ScanLimitMax)
	for cursor := uint64(0); ; {
		found, next, err := c.scanKeys(cursor, page)
		if err != nil {
			c.w.Error(errorReply(err))
			return
		}
		keys = append(keys, matching(found, args[1])...)
		if cursor = next; cursor == 0 {
			break
		}
	}
	c.w.ArrayHeader(len(keys))
	for _, k := range keys {
		c.w.Bulk(k)
	}
}

// dbsizeCommand counts the keyspace's live keys (coord.CountKeys): each token range is
// counted by one replica walking its live-key index, so the cost is one index entry per
// live key on the replicas, and no key crosses the network.
func dbsizeCommand(c *conn, _ [][]byte) {
	n, err := c.countKeys()
	if err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.Int(n.Keys)
}

// rangeCommand is KURA.RANGE start end limit: up to limit records with start <= key < end
// in key order, as an array of [key, value] pairs. An empty start or end leaves that side
// open (kura keys are never empty); limit 0 means the node's default.
func rangeCommand(c *conn, args [][]byte) {
	limit, err := strconv.Atoi(string(args[3]))
	if err != nil || limit < 0 {
		c.w.Error(errNotInt)
		return
	}
	recs, err := c.scan(openIfEmpty(args[1]), openIfEmpty(args[2]), limit)
	if err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.ArrayHeader(len(recs))
	for _, rec := range recs {
		c.w.ArrayHeader(2)
		c.w.Bulk(rec.Key)
		c.w.Bulk(rec.Value)
	}
}

func openIfEmpty(bound []byte) []byte {
	if len(bound) == 0 {
		return nil
	}
	return bound
}

// scanKeys and countKeys are the connection's walks of its keyspace, reported to
// Config.Observe as "scan".

func (c *conn) scanKeys(cursor uint64, count int) ([][]byte, uint64, error) {
	began := time.Now()
	keys, next, err := c.s.cfg.Backend.ScanKeys(c.ctx, c.keyspace, cursor, count, c.level)
	c.observe("scan", c.level, began, err)
	if err != nil || len(keys) == 0 || !c.collectionsServed() {
		return keys, next, err
	}
	// The walk lists every key whose own record is live, an emptied collection's too:
	// the page's records are read again, and such a key is left out (settle).
	var live [][]byte
	for i, r := range c.getAll(keys) {
		if r.Err != nil && !errors.Is(r.Err, coord.ErrAnswerFull) {
			return nil, 0, r.Err
		}
		if r.Found || r.Err != nil {
			live = append(live, keys[i])
		}
	}
	return live, next, nil
}

func (c *conn) countKeys() (coord.KeyCount, error) {
	began := time.Now()
	n, err := c.s.cfg.Backend.CountKeys(c.ctx, c.keyspace)
	c.observe("scan", c.level, began, err)
	return n, err
}

// randomkeyCommand is RANDOMKEY: a key from a walk started at a random position, wrapping
// once to the start; null for an empty keyspace. Keys are not equally likely: a key after
// a wide gap in position order comes up more often, as in Redis a key in a sparse bucket
// does.
func randomkeyCommand(c *conn, _ [][]byte) {
	cursor, wrapped := rand.Uint64(), false
	for {
		keys, next, err := c.scanKeys(cursor, 1)
		switch {
		case err != nil:
			c.w.Error(errorReply(err))
			return
		case len(keys) > 0:
			c.w.Bulk(keys[0])
			return
		case next == 0 && (wrapped || cursor == 0):
			c.w.Null()
			return
		case next == 0:
			wrapped = true
		}
		cursor = next
	}
}
