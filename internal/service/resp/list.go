package resp

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/collection/list"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// Lists (docs/redis-types.md, "Lists"): each item is an element record at a position
// that sorts in list order (package internal/core/collection/list), so a list read in key order is the
// list; the key's own record is the header, of type list. A push writes new records
// beyond the end it read; a pop deletes the item it returns by a lightweight transaction
// on the item's record, so that of two clients popping one item, through any nodes, one
// gets it and the other goes on to the next.

// Redis's replies of the list commands.
const (
	errNoSuchKey  = "ERR no such key"
	errIndexRange = "ERR index out of range"
)

// listPollInterval bounds how long a blocked BLPOP, BRPOP or BLMOVE waits before it
// reads its lists again: a push through this node wakes it at once, a push through
// another node is seen at the next read.
const listPollInterval = 100 * time.Millisecond

// listState is what a server's list commands share: the stamp of the positions its
// pushes make, and the clients blocked on lists.
type listState struct {
	clock *hlc.Clock
	// writer names this server in its positions: random at each start, so that a node
	// restarted with a clock set back never makes a position it made before.
	writer uint64

	mu       sync.Mutex
	waiters  map[string]map[*waiter]bool // keyspace NUL key -> the clients blocked on it
	blocks   uint64                      // counts the waits begun: the next waiter's seq
	byClient map[int64]*waiter           // the blocked clients by connection id, for CLIENT UNBLOCK
	// config holds CONFIG's list-compress-depth and list-max-listpack-size, as last set.
	config [2]atomic.Int64
	// changed is closed, and replaced, when a client starts or stops waiting: what a
	// test waits on to know a client is blocked, or freed.
	changed chan struct{}
}

func newListState() *listState {
	var b [8]byte
	rand.Read(b[:])
	l := &listState{clock: hlc.NewClock(time.Now), writer: binary.BigEndian.Uint64(b[:]), waiters: map[string]map[*waiter]bool{}, byClient: map[int64]*waiter{}, changed: make(chan struct{})}
	l.config[listMaxListpackSize].Store(-2) // Redis 7's default
	return l
}

// The list settings of listState.config.
const (
	listCompressDepth = iota
	listMaxListpackSize
)

func waiterKey(keyspace string, key []byte) string { return keyspace + "\x00" + string(key) }

// waiter is a client blocked on lists (conn.block).
type waiter struct {
	// seq orders the waiters as they blocked: a push serves the earliest first.
	seq uint64
	// keys are the waiterKeys the client waits on.
	keys []string
	// wake carries a push's wake-up: a channel on which the client, once it has tried
	// again, says whether the push should go on to the next client (nil when the push
	// does not wait for that).
	wake chan chan bool
	// idle is true while the client waits between two tries; l.mu guards it.
	idle bool
	// blocked is true once a try found nothing and the client waits: from then on it
	// counts among the blocked clients (INFO's blocked_clients), as in Redis, which
	// counts a client only once its first try failed; l.mu guards it.
	blocked bool
	// unblock carries CLIENT UNBLOCK's order: true to answer an error, false to answer
	// as a timeout does.
	unblock chan bool
}

// wait registers client id's waiter for pushes to any of keys, and returns it with the
// function that removes it.
func (l *listState) wait(id int64, keyspace string, keys [][]byte) (*waiter, func()) {
	w := &waiter{wake: make(chan chan bool, 1), unblock: make(chan bool, 1)}
	l.mu.Lock()
	l.blocks++
	w.seq = l.blocks
	l.byClient[id] = w
	for _, key := range keys {
		k := waiterKey(keyspace, key)
		w.keys = append(w.keys, k)
		if l.waiters[k] == nil {
			l.waiters[k] = map[*waiter]bool{}
		}
		l.waiters[k][w] = true
	}
	l.signal()
	l.mu.Unlock()
	return w, func() {
		l.mu.Lock()
		if l.byClient[id] == w {
			delete(l.byClient, id)
		}
		for _, k := range w.keys {
			delete(l.waiters[k], w)
			if len(l.waiters[k]) == 0 {
				delete(l.waiters, k)
			}
		}
		l.signal()
		l.mu.Unlock()
		// A push may be waiting for a try that will not come: it goes on to the next
		// client, the item untaken.
		select {
		case served := <-w.wake:
			if served != nil {
				served <- true
			}
		default:
		}
	}
}

// unblock tells client id, if it is blocked, to stop waiting (CLIENT UNBLOCK), answering
// an error when withError, else as a timeout does; it reports whether it was blocked.
func (l *listState) unblock(id int64, withError bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.byClient[id]
	if w == nil {
		return false
	}
	select {
	case w.unblock <- withError:
		return true
	default:
		return false // told already
	}
}

// clientUnblockCommand is CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 when that client was
// blocked (BLPOP and the other blocking commands), which then answers as on its timeout
// or, with ERROR, Redis's UNBLOCKED error; 0 otherwise.
func clientUnblockCommand(c *conn, args [][]byte) {
	if len(args) > 4 {
		c.w.Error("ERR unknown subcommand or wrong number of arguments for 'unblock'. Try CLIENT HELP.")
		return
	}
	withError := false
	if len(args) == 4 {
		switch upper(args[3]) {
		case "TIMEOUT":
		case "ERROR":
			withError = true
		default:
			c.w.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	id, ok := parseInt(args[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	c.w.Int(int64(btoi(c.s.lists.unblock(id, withError))))
}

// setIdle says whether w waits between two tries.
func (l *listState) setIdle(w *waiter, idle bool) {
	l.mu.Lock()
	w.idle = idle
	if idle && !w.blocked {
		w.blocked = true
		l.signal()
	}
	l.mu.Unlock()
}

// wake tells the clients blocked on key that it was pushed to, one at a time in the
// order they blocked (Redis's rule), and returns once each it served has tried again
// (or left): as Redis serves its blocked clients before the next command runs, the
// pusher's next command sees the item taken, and moved on by a chain of BLMOVEs. It
// stops at the first client that found its lists empty: those after it would too.
//
// A client in the middle of a try (its first, still reading the list as it was before
// the push) is waited for too, so that the push goes to it before those that blocked
// after it. Only when the push is itself a blocked client's try (fromTry) is such a
// client told without waiting for it: its try may be a push waiting here for this one
// (two BRPOPLPUSHes feeding each other), and it tries again anyway.
func (l *listState) wake(keyspace string, key []byte, fromTry bool) {
	k := waiterKey(keyspace, key)
	l.mu.Lock()
	queue := make([]*waiter, 0, len(l.waiters[k]))
	for w := range l.waiters[k] {
		queue = append(queue, w)
	}
	l.mu.Unlock()
	slices.SortFunc(queue, func(a, b *waiter) int { return cmp.Compare(a.seq, b.seq) })
	for _, w := range queue {
		if goOn := l.serve(k, w, fromTry); !goOn {
			return
		}
	}
}

// serve wakes w for a push to waiterKey k, if it still waits, and waits for its word on
// whether the push should go on to the next client: unless the push is a try (fromTry)
// and w is in one too (wake).
func (l *listState) serve(k string, w *waiter, fromTry bool) (goOn bool) {
	l.mu.Lock()
	if !l.waiters[k][w] {
		l.mu.Unlock()
		return true // it left
	}
	var done chan bool
	if w.idle || !fromTry {
		done = make(chan bool, 1)
	}
	select {
	case w.wake <- done:
		w.idle = false
	default:
		done = nil // woken already: it tries again anyway
	}
	l.mu.Unlock()
	if done == nil {
		return true
	}
	return <-done
}

// leads reports whether w blocked first among the clients waiting on one of its keys:
// the client that tries at a poll, for pushes through other nodes, so that those too
// go to the earliest client.
func (l *listState) leads(w *waiter) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range w.keys {
		first := true
		for other := range l.waiters[k] {
			if other.seq < w.seq {
				first = false
				break
			}
		}
		if first {
			return true
		}
	}
	return false
}

// signal tells those watching that the blocked clients changed; l.mu is held.
func (l *listState) signal() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// blocked counts the clients blocked on lists (waiter.blocked: a try found nothing),
// and returns the channel closed at the next change.
func (l *listState) blocked() (int, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	clients := map[*waiter]bool{}
	for _, set := range l.waiters {
		for w := range set {
			if w.blocked {
				clients[w] = true
			}
		}
	}
	return len(clients), l.changed
}

// listCommands are the list commands of the table.
func listCommands() []*command {
	readKey := []string{"readonly"}
	writeKey := []string{"write", "denyoom"}
	keys := func(first, last int, cmd *command) *command {
		cmd.firstKey, cmd.lastKey, cmd.keyStep = first, last, 1
		return cmd
	}
	return []*command{
		keys(1, 1, &command{name: "lpush", arity: -3, flags: writeKey, run: pushCommand}),
		keys(1, 1, &command{name: "rpush", arity: -3, flags: writeKey, run: pushCommand}),
		keys(1, 1, &command{name: "lpushx", arity: -3, flags: writeKey, run: pushCommand}),
		keys(1, 1, &command{name: "rpushx", arity: -3, flags: writeKey, run: pushCommand}),
		keys(1, 1, &command{name: "lpop", arity: -2, flags: []string{"write"}, run: popCommand}),
		keys(1, 1, &command{name: "rpop", arity: -2, flags: []string{"write"}, run: popCommand}),
		keys(1, 1, &command{name: "lrange", arity: 4, flags: readKey, run: lrangeCommand}),
		keys(1, 1, &command{name: "llen", arity: 2, flags: readKey, run: llenCommand}),
		keys(1, 1, &command{name: "lindex", arity: 3, flags: readKey, run: lindexCommand}),
		keys(1, 1, &command{name: "lset", arity: 4, flags: writeKey, run: lsetCommand}),
		keys(1, 1, &command{name: "lrem", arity: 4, flags: []string{"write"}, run: lremCommand}),
		keys(1, 1, &command{name: "linsert", arity: 5, flags: writeKey, run: linsertCommand}),
		keys(1, 1, &command{name: "ltrim", arity: 4, flags: []string{"write"}, run: ltrimCommand}),
		keys(1, 1, &command{name: "lpos", arity: -3, flags: readKey, run: lposCommand}),
		keys(1, 2, &command{name: "lmove", arity: 5, flags: writeKey, run: lmoveCommand}),
		keys(1, 2, &command{name: "rpoplpush", arity: 3, flags: writeKey, run: lmoveCommand}),
		blocking(keys(1, -2, &command{name: "blpop", arity: -3, flags: []string{"write"}, run: bpopCommand})),
		blocking(keys(1, -2, &command{name: "brpop", arity: -3, flags: []string{"write"}, run: bpopCommand})),
		blocking(keys(1, 2, &command{name: "blmove", arity: 6, flags: writeKey, run: lmoveCommand})),
		blocking(keys(1, 2, &command{name: "brpoplpush", arity: 4, flags: writeKey, run: lmoveCommand})),
		// Their keys are counted by numkeys: no fixed key positions (Redis's key specs).
		{name: "lmpop", arity: -4, flags: []string{"write"}, run: lmpopCommand},
		blocking(&command{name: "blmpop", arity: -5, flags: []string{"write"}, run: lmpopCommand}),
	}
}

// itemKey is the key of list key's item record at pos.
func itemKey(key, pos []byte) []byte { return element.Key(key, element.ListItem, pos) }

// readList reads list key whole, in list order. ok is false when the reply is written
// already (an error, WRONGTYPE). A missing key is an empty list.
func (c *conn) readList(key []byte) (items []list.Item, coll coord.Collection, ok bool) {
	coll, ok = c.readCollection(key, lww.List)
	if !ok {
		return nil, coll, false
	}
	return list.Items(coll.Elements), coll, true
}

// listStamp is the stamp of a push through this server now.
func (c *conn) listStamp() list.Stamp {
	return list.Stamp{Time: c.s.lists.clock.Now(), Writer: c.s.lists.writer}
}

// pushItems writes values beyond end of list key as read (items, coll), one record
// each under one timestamp, with the header, and wakes the clients blocked on key here.
func (c *conn) pushItems(key []byte, end list.End, items []list.Item, coll coord.Collection, values [][]byte) error {
	positions, err := list.Push(end, list.Edge(items, end), len(values), c.listStamp())
	if err != nil {
		return err
	}
	w := coord.CollectionWrite{Header: &lww.Record{}}
	for i, pos := range positions {
		w.Elements = append(w.Elements, lww.Record{Key: itemKey(key, pos), Value: values[i]})
	}
	if _, err := c.writeCollection(key, lww.List, coll, w); err != nil {
		return err
	}
	c.wakeBlocked(key)
	return nil
}

// endOf is the end a command's name starts with: l for the head, r for the tail.
func endOf(name []byte) list.End {
	if name[0] == 'l' {
		return list.Head
	}
	return list.Tail
}

// pushCommand is LPUSH, RPUSH, LPUSHX and RPUSHX key element [element ...]: the list's
// length after the push, as this read counted it (items another client pushes at the
// same moment may be missed). The X forms push only onto a list that exists.
func pushCommand(c *conn, args [][]byte) {
	key := args[1]
	items, coll, ok := c.readList(key)
	if !ok {
		return
	}
	if bytes.HasSuffix(c.lowerName, []byte("x")) && len(items) == 0 {
		c.w.Int(0)
		return
	}
	if err := c.pushItems(key, endOf(c.lowerName), items, coll, args[2:]); err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.Int(int64(len(items) + len(args) - 2))
}

// popSerial is the level of a pop's transaction: SERIAL whatever the connection's level,
// since at LOCAL_SERIAL two DCs' Paxos rounds would not meet, and both could pop one item.
const popSerial = consistency.Serial

// takeItem deletes list key's item at pos by a lightweight transaction on its record,
// if it is still there in the key's life after reset: popped reports whether this call
// took it, and value is the value it held.
func (c *conn) takeItem(key, pos []byte, reset hlc.Timestamp) (value []byte, popped bool, err error) {
	res, err := c.take(itemKey(key, pos), list.Take(reset))
	if err != nil || !res.Applied {
		return nil, false, err
	}
	return res.Previous.Value, true, nil
}

// readSource is readList for the list a pop or move takes from (readWaited).
func (c *conn) readSource(key []byte) (items []list.Item, coll coord.Collection, ok bool) {
	coll, ok = c.readWaited(key, lww.List)
	return list.Items(coll.Elements), coll, ok
}

// popItems pops up to count items from end of list key, each by takeItem: an item
// another client took first is skipped, and the list read again when this read's items
// run out before count. When every item read is gone, the key is deleted (its header's
// tombstone). exists is false for a missing key; ok false when the reply is written.
func (c *conn) popItems(key []byte, end list.End, count int) (values [][]byte, exists, ok bool) {
	for {
		items, coll, ok := c.readSource(key)
		if !ok {
			return nil, false, false
		}
		if len(items) == 0 {
			return values, exists, true
		}
		exists = true
		raced := false
		for i := range items {
			if len(values) == count {
				break
			}
			it := items[i]
			if end == list.Tail {
				it = items[len(items)-1-i]
			}
			value, popped, err := c.takeItem(key, it.Pos, coll.Reset)
			if err != nil {
				c.w.Error(errorReply(err))
				return nil, false, false
			}
			if popped {
				values = append(values, value)
			} else {
				raced = true
			}
		}
		if len(values) == count || !raced {
			return values, exists, true
		}
	}
}

// popCommand is LPOP and RPOP key [count]: an item (or null), or with a count an array of
// up to count items (null for a missing key).
func popCommand(c *conn, args [][]byte) {
	if len(args) > 3 {
		c.w.Error(fmt.Sprintf("ERR wrong number of arguments for '%s' command", c.lowerName))
		return
	}
	count, withCount := int64(1), len(args) == 3
	if withCount {
		var ok bool
		if count, ok = parseInt(args[2]); !ok || count < 0 {
			c.w.Error(errNotPositive)
			return
		}
	}
	values, exists, ok := c.popItems(args[1], endOf(c.lowerName), int(count))
	switch {
	case !ok:
	case !withCount && len(values) == 0:
		c.w.Null()
	case !withCount:
		c.w.Bulk(values[0])
	case !exists:
		c.nullArray()
	default:
		c.w.ArrayHeader(len(values))
		for _, v := range values {
			c.w.Bulk(v)
		}
	}
}

// nullArray writes RESP2's null array, RESP3's null.
func (c *conn) nullArray() {
	if c.w.Version() >= 3 {
		c.w.Null()
		return
	}
	c.w.header('*', -1)
}

// parseRange reads two integer arguments; ok is false when the reply is written.
func (c *conn) parseRange(a, b []byte) (start, stop int64, ok bool) {
	start, ok1 := parseInt(a)
	stop, ok2 := parseInt(b)
	if !ok1 || !ok2 {
		c.w.Error(errNotInt)
		return 0, 0, false
	}
	return start, stop, true
}

// lrangeCommand is LRANGE key start stop.
func lrangeCommand(c *conn, args [][]byte) {
	start, stop, ok := c.parseRange(args[2], args[3])
	if !ok {
		return
	}
	items, _, ok := c.readList(args[1])
	if !ok {
		return
	}
	from, to := list.Span(len(items), start, stop)
	c.w.ArrayHeader(to - from)
	for _, it := range items[from:to] {
		c.w.Bulk(it.Value)
	}
}

// llenCommand is LLEN key: the count of its items, read whole (kura keeps no count).
func llenCommand(c *conn, args [][]byte) {
	if items, _, ok := c.readList(args[1]); ok {
		c.w.Int(int64(len(items)))
	}
}

// lindexCommand is LINDEX key index.
func lindexCommand(c *conn, args [][]byte) {
	i, ok := parseInt(args[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	items, _, ok := c.readList(args[1])
	if !ok {
		return
	}
	if at, ok := list.Index(len(items), i); ok {
		c.w.Bulk(items[at].Value)
		return
	}
	c.w.Null()
}

// lsetCommand is LSET key index element: a last-writer-wins write of the item's record,
// at its position.
func lsetCommand(c *conn, args [][]byte) {
	i, ok := parseInt(args[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	key := args[1]
	items, coll, ok := c.readList(key)
	switch {
	case !ok:
		return
	case len(items) == 0:
		c.w.Error(errNoSuchKey)
		return
	}
	at, ok := list.Index(len(items), i)
	if !ok {
		c.w.Error(errIndexRange)
		return
	}
	w := coord.CollectionWrite{Elements: []lww.Record{{Key: itemKey(key, items[at].Pos), Value: args[3]}}}
	if _, err := c.writeCollection(key, lww.List, coll, w); err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.SimpleString("OK")
}

// removeItems tombstones the items of list key it names, as read (items, coll). A list
// left without items keeps its header, as an emptied set does: a push concurrent with
// the removal, whose header write a tombstone newer than it would hide, is then read, not
// lost (docs/redis-types.md, "Lists as built").
func (c *conn) removeItems(key []byte, items []list.Item, coll coord.Collection, remove []list.Item) error {
	if len(remove) == 0 {
		return nil
	}
	w := coord.CollectionWrite{}
	for _, it := range remove {
		w.Elements = append(w.Elements, lww.Record{Key: itemKey(key, it.Pos), Tombstone: true})
	}
	_, err := c.writeCollection(key, lww.List, coll, w)
	return err
}

// lremCommand is LREM key count element: removes the first count items equal to element
// (from the tail for a negative count, all of them for 0), each tombstoned: an item
// pushed meanwhile, which this read did not see, stays.
func lremCommand(c *conn, args [][]byte) {
	count, ok := parseInt(args[2])
	if !ok {
		c.w.Error(errNotInt)
		return
	}
	key := args[1]
	items, coll, ok := c.readList(key)
	if !ok {
		return
	}
	var remove []list.Item
	for i := range items {
		it := items[i]
		if count < 0 {
			it = items[len(items)-1-i]
		}
		if count != 0 && int64(len(remove)) == max(count, -count) {
			break
		}
		if bytes.Equal(it.Value, args[3]) {
			remove = append(remove, it)
		}
	}
	if err := c.removeItems(key, items, coll, remove); err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.Int(int64(len(remove)))
}

// ltrimCommand is LTRIM key start stop: tombstones the items outside the range.
func ltrimCommand(c *conn, args [][]byte) {
	start, stop, ok := c.parseRange(args[2], args[3])
	if !ok {
		return
	}
	key := args[1]
	items, coll, ok := c.readList(key)
	if !ok {
		return
	}
	from, to := list.Span(len(items), start, stop)
	remove := append(append([]list.Item(nil), items[:from]...), items[max(to, from):]...)
	if err := c.removeItems(key, items, coll, remove); err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.w.SimpleString("OK")
}

// linsertCommand is LINSERT key BEFORE|AFTER pivot element: the new item takes a position
// between the first item equal to pivot and its neighbour. The length after, -1 when no
// item is pivot, 0 for a missing key.
func linsertCommand(c *conn, args [][]byte) {
	where := upper(args[2])
	if where != "BEFORE" && where != "AFTER" {
		c.w.Error(errSyntax)
		return
	}
	key := args[1]
	items, coll, ok := c.readList(key)
	switch {
	case !ok:
		return
	case len(items) == 0:
		c.w.Int(0)
		return
	}
	at := -1
	for i, it := range items {
		if bytes.Equal(it.Value, args[3]) {
			at = i
			break
		}
	}
	if at < 0 {
		c.w.Int(-1)
		return
	}
	lo, hi := at-1, at // the neighbours of the new item
	if where == "AFTER" {
		lo, hi = at, at+1
	}
	var loPos, hiPos []byte
	if lo >= 0 {
		loPos = items[lo].Pos
	}
	if hi < len(items) {
		hiPos = items[hi].Pos
	}
	pos, err := list.Between(loPos, hiPos, c.listStamp())
	if err != nil {
		c.w.Error("ERR " + err.Error())
		return
	}
	w := coord.CollectionWrite{Header: &lww.Record{}, Elements: []lww.Record{{Key: itemKey(key, pos), Value: args[4]}}}
	if _, err := c.writeCollection(key, lww.List, coll, w); err != nil {
		c.w.Error(errorReply(err))
		return
	}
	c.wakeBlocked(key)
	c.w.Int(int64(len(items) + 1))
}

// lposCommand is LPOS key element [RANK rank] [COUNT num] [MAXLEN len], as Redis 7.0.
func lposCommand(c *conn, args [][]byte) {
	rank, count, maxLen, withCount := int64(1), int64(1), int64(0), false
	for i := 3; i < len(args); i += 2 {
		if i+1 >= len(args) {
			c.w.Error(errSyntax)
			return
		}
		n, ok := parseInt(args[i+1])
		if !ok {
			c.w.Error(errNotInt)
			return
		}
		switch upper(args[i]) {
		case "RANK":
			switch {
			case n == math.MinInt64:
				c.w.Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
				return
			case n == 0:
				c.w.Error("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
				return
			}
			rank = n
		case "COUNT":
			if n < 0 {
				c.w.Error("ERR COUNT can't be negative")
				return
			}
			count, withCount = n, true
		case "MAXLEN":
			if n < 0 {
				c.w.Error("ERR MAXLEN can't be negative")
				return
			}
			maxLen = n
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	items, _, ok := c.readList(args[1])
	if !ok {
		return
	}
	var found []int64
	skip := max(rank, -rank) - 1
	for i := range items {
		if (maxLen > 0 && int64(i) >= maxLen) || (count > 0 && int64(len(found)) == count) {
			break
		}
		at := i
		if rank < 0 {
			at = len(items) - 1 - i
		}
		if !bytes.Equal(items[at].Value, args[2]) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		found = append(found, int64(at))
	}
	switch {
	case withCount:
		c.w.ArrayHeader(len(found))
		for _, at := range found {
			c.w.Int(at)
		}
	case len(found) == 0:
		c.w.Null()
	default:
		c.w.Int(found[0])
	}
}

// parseTimeout reads a blocking command's timeout in seconds, as Redis: a float, 0 for
// ever. ok is false when the reply is written.
func (c *conn) parseTimeout(arg []byte) (deadline time.Time, forever, ok bool) {
	secs, err := strconv.ParseFloat(string(arg), 64)
	switch {
	case err != nil || math.IsNaN(secs) || math.IsInf(secs, 0) || secs > float64(math.MaxInt64/int64(time.Second)):
		c.w.Error("ERR timeout is not a float or out of range")
		return time.Time{}, false, false
	case secs < 0:
		c.w.Error("ERR timeout is negative")
		return time.Time{}, false, false
	}
	return time.Now().Add(time.Duration(secs * float64(time.Second))), secs == 0, true
}

// wakeBlocked tells the clients blocked on key that it was pushed to (wakeNow); inside
// EXEC, once the transaction has run (txView.wakeAfter).
func (c *conn) wakeBlocked(key []byte) {
	if c.txn != nil {
		c.txn.wakeAfter(key)
		return
	}
	c.wakeNow(key)
}

// wakeNow tells the clients blocked on key that it was pushed to (listState.wake).
func (c *conn) wakeNow(key []byte) {
	c.s.lists.wake(c.keyspace, key, c.blocking)
}

// block runs try on keys, collections of type typ, until it has an answer, the timeout
// passes (or CLIENT UNBLOCK says so), or the client goes: at once, then whenever a push
// through this server wakes it, and at least every listPollInterval for pushes through
// other nodes. try reports done when it answered (or wrote an error). timedOut is true
// when nothing came in time, and the reply is the caller's to write.
//
// A client that blocked after others on every key it waits on does not take at once
// what it finds (firstTryWaits): Redis serves clients in the order their commands came,
// and a push arriving while this client's first try runs would otherwise go to it
// before the ones that wait already.
func (c *conn) block(keys [][]byte, typ lww.Type, deadline time.Time, forever bool, try func() (done bool)) (timedOut bool) {
	if c.txn != nil {
		// Inside EXEC nothing waits, as in Redis: the command answers what it finds,
		// as at its timeout when that is nothing.
		return !try()
	}
	// Registered before the first try, so that a push between the try and the wait
	// wakes it.
	w, stop := c.s.lists.wait(c.id, c.keyspace, keys)
	defer stop()
	c.blocking = true
	defer func() { c.blocking = false }()
	poll := time.NewTimer(listPollInterval)
	defer poll.Stop()
	var expired <-chan time.Time
	if !forever {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expired = t.C
	}
	var served chan bool // the wake-up of a push waiting for this try
	defer func() {
		// Even when the try panics: the push must not wait for ever.
		if served != nil {
			served <- true
		}
	}()
	defer func() { c.waiting = false }()
	tryNow := true
	if c.firstTryWaits(w, keys, typ) {
		// Its check of the keys' types was the first try: from now on a key that
		// becomes another type is waited on, as after a try.
		c.waiting, tryNow = true, false
	}
	for {
		if tryNow {
			done := try()
			// Once the client waits, a key that becomes another type is waited on
			// (readSource), as Redis 7.0 does; WRONGTYPE is the first try's answer only.
			c.waiting = true
			if served != nil {
				served <- done // a client that found nothing: the next would neither
				served = nil
			}
			if done {
				return false
			}
		}
		c.s.lists.setIdle(w, true)
		select {
		case served = <-w.wake:
			tryNow = true
		case <-poll.C:
			tryNow = c.s.lists.leads(w)
		case <-expired:
			return true
		case withError := <-w.unblock:
			if withError {
				c.w.Error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
			}
			return !withError
		case <-c.ctx.Done():
			// The client hung up or was killed: nothing to answer.
			c.w.Error(errorReply(c.ctx.Err()))
			return false
		}
		c.s.lists.setIdle(w, false)
		poll.Reset(listPollInterval)
	}
}

// firstTryWaits reports whether a client that just blocked (w) should wait before its
// first try: when it leads on none of its keys (listState.leads), another client waits
// on each already, and is served first. A key of another type than typ is answered at
// once, WRONGTYPE, as Redis's first try does; reading the keys costs only the clients that
// do not lead, which are rare.
func (c *conn) firstTryWaits(w *waiter, keys [][]byte, typ lww.Type) bool {
	if c.s.lists.leads(w) {
		return false
	}
	for _, key := range keys {
		if coll, err := c.loadCollection(key); err != nil || coll.Found && coll.Header.Type != typ {
			return false // the try answers the error, or WRONGTYPE
		}
	}
	return true
}

// popItemsOf is popItems without its count of items left, for popFirst.
func (c *conn) popItemsOf(end list.End, count int) func(key []byte) ([][]byte, bool) {
	return func(key []byte) ([][]byte, bool) {
		values, _, ok := c.popItems(key, end, count)
		return values, ok
	}
}

// bpopCommand is BLPOP and BRPOP key [key ...] timeout: the first item of the first
// list, in the order named, that has one, as [key, item]; it waits for one (block) when
// all are empty, and answers null when the timeout passes.
func bpopCommand(c *conn, args [][]byte) {
	deadline, forever, ok := c.parseTimeout(args[len(args)-1])
	if !ok {
		return
	}
	keys, end := args[1:len(args)-1], endOf(c.lowerName[1:])
	if c.block(keys, lww.List, deadline, forever, func() bool {
		key, values, ok := popFirst(keys, c.popItemsOf(end, 1))
		if ok && len(values) > 0 {
			c.w.ArrayHeader(2)
			c.w.Bulk(key)
			c.w.Bulk(values[0])
		}
		return !ok || len(values) > 0
	}) {
		c.nullArray()
	}
}

// lmpopCommand is LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count] and BLMPOP
// timeout numkeys key [key ...] LEFT|RIGHT [COUNT count], as Redis 7.0: up to count
// items (1 without COUNT) from the given end of the first list that has any, as [key,
// [item ...]]; null when none has (LMPOP) or none had one before the timeout (BLMPOP,
// which waits as BLPOP does). Redis's errors, in its order: numkeys, the end and the
// options, then the timeout.
func lmpopCommand(c *conn, args [][]byte) {
	blocking := c.lowerName[0] == 'b'
	at := 1 // numkeys
	if blocking {
		at = 2
	}
	keys, endWord, count, ok := c.parseMultiPop(args[at:], func(word []byte) bool { _, ok := parseEnd(word); return ok })
	if !ok {
		return
	}
	end, _ := parseEnd(endWord)
	try := func() bool {
		key, values, ok := popFirst(keys, c.popItemsOf(end, int(count)))
		switch {
		case !ok:
		case len(values) > 0:
			c.w.ArrayHeader(2)
			c.w.Bulk(key)
			c.w.ArrayHeader(len(values))
			for _, v := range values {
				c.w.Bulk(v)
			}
		case !blocking:
			c.nullArray()
		default:
			return false
		}
		return true
	}
	if !blocking {
		try()
		return
	}
	deadline, forever, ok := c.parseTimeout(args[1])
	if ok && c.block(keys, lww.List, deadline, forever, try) {
		c.nullArray()
	}
}

// lmoveCommand is LMOVE source destination LEFT|RIGHT LEFT|RIGHT, RPOPLPUSH source
// destination, and their blocking forms BLMOVE (timeout last) and BRPOPLPUSH. The two
// keys may be of any hash tags, except inside EXEC (sameSlot). Two keys of one tag in a
// keyspace of partition transactions move the item in one transaction (oneTransaction).
// Otherwise the move is not one atomic step: the item is pushed onto the destination
// first, then taken from the source by its transaction; when another client took it
// first, the copy is tombstoned and the next item tried. So the item is never lost (a
// failure between the two steps leaves it in both lists), and no item is moved twice.
func lmoveCommand(c *conn, args [][]byte) {
	src, dst := args[1], args[2]
	from, to := list.Tail, list.Head // RPOPLPUSH
	name := string(c.lowerName)
	if name == "lmove" || name == "blmove" {
		var ok1, ok2 bool
		from, ok1 = parseEnd(args[3])
		to, ok2 = parseEnd(args[4])
		if !ok1 || !ok2 {
			c.w.Error(errSyntax)
			return
		}
	}
	var deadline time.Time
	forever, blocking := false, name[0] == 'b'
	if blocking {
		var ok bool
		if deadline, forever, ok = c.parseTimeout(args[len(args)-1]); !ok {
			return
		}
	}
	if !c.sameSlot([][]byte{src, dst}) {
		return
	}
	moveArgs := [][]byte{[]byte("lmove"), src, dst, endName(from), endName(to)}
	try := func() bool {
		if reply, done := c.oneTransaction(moveArgs); done {
			switch {
			case reply == nil: // its error is written
			case blocking && isNull(reply):
				return false
			default:
				c.w.raw(reply)
			}
			return true
		}
		value, moved, ok := c.moveItem(src, dst, from, to)
		switch {
		case !ok:
		case moved:
			c.w.Bulk(value)
		case !blocking:
			c.w.Null()
		default:
			return false
		}
		return true
	}
	if !blocking {
		try()
		return
	}
	if c.block([][]byte{src}, lww.List, deadline, forever, try) {
		c.w.Null()
	}
}

// endName is parseEnd's inverse.
func endName(end list.End) []byte {
	if end == list.Head {
		return []byte("LEFT")
	}
	return []byte("RIGHT")
}

// parseEnd reads LEFT or RIGHT.
func parseEnd(arg []byte) (list.End, bool) {
	switch upper(arg) {
	case "LEFT":
		return list.Head, true
	case "RIGHT":
		return list.Tail, true
	}
	return 0, false
}

// moveItem moves the item at end from of list src to end to of list dst (lmoveCommand).
// moved is false when src is empty; ok is false when the reply is written.
func (c *conn) moveItem(src, dst []byte, from, to list.End) (value []byte, moved, ok bool) {
	for {
		items, coll, ok := c.readSource(src)
		if !ok || len(items) == 0 {
			return nil, false, ok
		}
		it := items[0]
		if from == list.Tail {
			it = items[len(items)-1]
		}
		dstItems, dstColl := items, coll
		if !bytes.Equal(src, dst) {
			if dstItems, dstColl, ok = c.readList(dst); !ok {
				return nil, false, false
			}
		}
		positions, err := list.Push(to, list.Edge(dstItems, to), 1, c.listStamp())
		if err != nil {
			c.w.Error("ERR " + err.Error())
			return nil, false, false
		}
		copyRec := lww.Record{Key: itemKey(dst, positions[0]), Value: it.Value}
		if _, err := c.writeCollection(dst, lww.List, dstColl, coord.CollectionWrite{Header: &lww.Record{}, Elements: []lww.Record{copyRec}}); err != nil {
			c.w.Error(errorReply(err))
			return nil, false, false
		}
		value, popped, err := c.takeItem(src, it.Pos, coll.Reset)
		if err != nil {
			c.w.Error(errorReply(err))
			return nil, false, false
		}
		if popped {
			if !bytes.Equal(value, it.Value) {
				// An LSET changed the item between the read and the take: the copy
				// holds what was taken.
				copyRec.Value = value
				if _, err := c.writeCollection(dst, lww.List, coord.Collection{Found: true}, coord.CollectionWrite{Elements: []lww.Record{copyRec}}); err != nil {
					c.w.Error(errorReply(err))
					return nil, false, false
				}
			}
			c.wakeBlocked(dst)
			return value, true, true
		}
		copyRec.Value, copyRec.Tombstone = nil, true
		if _, err := c.writeCollection(dst, lww.List, coord.Collection{Found: true}, coord.CollectionWrite{Elements: []lww.Record{copyRec}}); err != nil {
			c.w.Error(errorReply(err))
			return nil, false, false
		}
	}
}

// takeRenamed takes from list src each item of coll, which RENAME copied to dst at the
// same positions, by the pop's transaction, as moveItem does: a copy
// whose item another client took first is tombstoned, and one whose item an LSET changed
// meanwhile is given the value taken. An error leaves the items not yet taken in both
// lists, never in neither.
func (c *conn) takeRenamed(src, dst []byte, coll coord.Collection) error {
	var fixes coord.CollectionWrite
	var err error
	for _, it := range list.Items(coll.Elements) {
		var value []byte
		var popped bool
		if value, popped, err = c.takeItem(src, it.Pos, coll.Reset); err != nil {
			break
		}
		switch {
		case !popped:
			fixes.Elements = append(fixes.Elements, lww.Record{Key: itemKey(dst, it.Pos), Tombstone: true})
		case !bytes.Equal(value, it.Value):
			fixes.Elements = append(fixes.Elements, lww.Record{Key: itemKey(dst, it.Pos), Value: value})
		}
	}
	if len(fixes.Elements) > 0 {
		if _, ferr := c.writeCollection(dst, lww.List, coord.Collection{Found: true}, fixes); err == nil {
			err = ferr
		}
	}
	return err
}

// listUsage is MEMORY USAGE of list key, whose header is header: the key and value bytes
// of the header and of each item's record.
func (c *conn) listUsage(key []byte, header lww.Record) {
	items, _, ok := c.readList(key)
	if !ok {
		return
	}
	size := len(key) + len(header.Value)
	for _, it := range items {
		size += len(itemKey(key, it.Pos)) + len(it.Value)
	}
	c.w.Int(int64(size))
}
