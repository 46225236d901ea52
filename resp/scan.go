package resp

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"strconv"
	"sync"
)

// SCAN walks the connection's keyspace across the whole cluster in key order, through the
// coordinator's ordered scan: each call reads the next COUNT keys after where the previous
// call stopped, then keeps those matching MATCH (so a call may return fewer keys than
// COUNT, or none, before the scan ends). Every key present for the whole scan is returned
// exactly once. Cursor "0" starts a scan, and a reply with cursor "0" ends it.

// scanCountDefault is SCAN's COUNT when the client gives none, as in Redis.
const scanCountDefault = 10

// scanPageKeys caps SCAN's COUNT and is DBSIZE's page (lower when the coordinator's scan
// limit is): the coordinator's scan carries every record's value, so a page's memory grows
// with it.
const scanPageKeys = 1000

// scanCommand is SCAN cursor [MATCH pattern] [COUNT count] [TYPE type].
func scanCommand(c *conn, args [][]byte) {
	cursor, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		c.w.Error("ERR invalid cursor")
		return
	}
	var pattern []byte
	count := scanCountDefault
	onlyStrings := true
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			c.w.Error(errSyntax)
			return
		}
		switch upper(args[i]) {
		case "MATCH":
			pattern = args[i+1]
		case "COUNT":
			if count, err = strconv.Atoi(string(args[i+1])); err != nil {
				c.w.Error(errNotInt)
				return
			}
			if count < 1 {
				c.w.Error(errSyntax)
				return
			}
			count = min(count, c.s.pageKeys)
		case "TYPE":
			onlyStrings = upper(args[i+1]) == "STRING" // the only type kura has
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	var start, end []byte
	if cursor != 0 {
		pos, ok := c.s.cursors.load(cursor)
		if !ok || pos.keyspace != c.keyspace {
			c.w.Error("ERR invalid cursor: unknown to this node, expired, or from another keyspace")
			return
		}
		start = successor(pos.lastKey)
	}
	if prefix := globPrefix(pattern); len(prefix) > 0 {
		if bytes.Compare(start, prefix) < 0 {
			start = prefix
		}
		end = prefixEnd(prefix)
	}
	var keys [][]byte
	next := uint64(0)
	if onlyStrings {
		recs, err := c.scan(start, end, count)
		if err != nil {
			c.w.Error(errorReply(err))
			return
		}
		for _, rec := range recs {
			if pattern == nil || matchGlob(pattern, rec.Key) {
				keys = append(keys, rec.Key)
			}
		}
		if len(recs) == count {
			next = c.s.cursors.save(scanPosition{keyspace: c.keyspace, lastKey: recs[len(recs)-1].Key})
		}
	}
	c.w.ArrayHeader(2)
	c.w.BulkString(strconv.FormatUint(next, 10))
	c.w.ArrayHeader(len(keys))
	for _, k := range keys {
		c.w.Bulk(k)
	}
}

// successor returns the smallest key after key.
func successor(key []byte) []byte {
	return append(bytes.Clone(key), 0)
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

// dbsizeCommand counts the keyspace's keys by scanning it whole at the connection's level:
// its cost grows with the keyspace (every record, values included, crosses the network
// once), so it is meant for small keyspaces and checks, not for monitoring.
func dbsizeCommand(c *conn, _ [][]byte) {
	count := 0
	var start []byte
	for {
		recs, err := c.scan(start, nil, c.s.pageKeys)
		if err != nil {
			c.w.Error(errorReply(err))
			return
		}
		count += len(recs)
		if len(recs) < c.s.pageKeys {
			break
		}
		start = successor(recs[len(recs)-1].Key)
	}
	c.w.Int(int64(count))
}

// cursorsMax bounds the SCAN cursors a server remembers; the oldest are forgotten first.
const cursorsMax = 4096

// cursorTable maps SCAN cursors to where the scan resumes. Clients parse a cursor as an
// unsigned 64-bit integer, too small to hold a key, so the cursor is a random handle the
// node keeps; it is valid on this node, from any connection, until cursorsMax newer
// cursors push it out.
type cursorTable struct {
	mu      sync.Mutex
	max     int
	resume  map[uint64]scanPosition
	byAge   []uint64 // handles, oldest first
	dropped int      // handles at the front of byAge already forgotten
}

// scanPosition is where a SCAN stopped: its keyspace and the last key it returned.
type scanPosition struct {
	keyspace string
	lastKey  []byte
}

func newCursorTable(max int) *cursorTable {
	return &cursorTable{max: max, resume: map[uint64]scanPosition{}}
}

// save remembers pos and returns its cursor, never 0 (which starts and ends a scan).
func (t *cursorTable) save(pos scanPosition) uint64 {
	var b [8]byte
	cursor := uint64(0)
	for cursor == 0 {
		rand.Read(b[:])
		cursor = binary.LittleEndian.Uint64(b[:]) >> 1 // below 2^63: safe for signed parsers
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.resume[cursor] = pos
	t.byAge = append(t.byAge, cursor)
	for len(t.resume) > t.max {
		delete(t.resume, t.byAge[t.dropped])
		t.dropped++
	}
	if t.dropped > t.max {
		t.byAge = append([]uint64(nil), t.byAge[t.dropped:]...)
		t.dropped = 0
	}
	return cursor
}

// load returns the position a cursor stands for.
func (t *cursorTable) load(cursor uint64) (scanPosition, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	pos, ok := t.resume[cursor]
	return pos, ok
}
