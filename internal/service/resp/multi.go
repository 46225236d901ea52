package resp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"iter"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
)

// MULTI, EXEC, DISCARD, WATCH and UNWATCH: a transaction over keys of one hash tag, run as
// one lightweight transaction (coord.Coordinator.UpdateBatch, docs/lwt.md). MULTI queues
// commands; EXEC reads every key they and WATCH name in one Paxos round of their
// partition, runs the queue in order against those records as the round's update
// function, and writes what the commands wrote as one batch, chosen whole or not at all.
// The commands run unchanged: their reads and writes go to the transaction's records
// (txView) instead of the coordinator. Only the commands listed in transactional can be
// queued so far; the others are refused when queued, naming them, and the EXEC aborts.

// multiState is a connection's transaction between MULTI and EXEC or DISCARD.
type multiState struct {
	queued []queuedCommand
	// aborted: a command was refused while queueing; EXEC answers EXECABORT.
	aborted bool
}

// queuedCommand is one command MULTI queued, its arguments copied from the reader's.
type queuedCommand struct {
	cmd  *command
	args [][]byte
}

// watchedKey is a key WATCH read: its keyspace, and its live record then (found false:
// absent), whose timestamp EXEC compares, and for a collection the digest of its reset
// point and live elements (elementsDigest), which an element's write changes without
// writing the header (HDEL, SREM, a pop).
type watchedKey struct {
	keyspace string
	key      []byte
	record   lww.Record
	found    bool
	elements uint64
}

// isCollection reports whether w watched a collection.
func (w watchedKey) isCollection() bool {
	return w.found && w.record.Type != lww.String && w.record.Type != lww.Counter
}

// elementsDigest is a digest of a collection's reset point and live element records:
// their keys and timestamps, which any write of an element changes.
func elementsDigest(reset hlc.Timestamp, elems []lww.Record) uint64 {
	h := fnv.New64a()
	var buf []byte
	buf = binary.BigEndian.AppendUint64(buf, uint64(reset))
	for _, e := range elems {
		buf = binary.AppendUvarint(buf, uint64(len(e.Key)))
		buf = append(buf, e.Key...)
		buf = binary.BigEndian.AppendUint64(buf, uint64(e.Timestamp))
	}
	h.Write(buf)
	return h.Sum64()
}

// transactional are the commands that can be queued, by name: the string commands,
// which read and write their keys' records alone, and the commands that touch no key and
// change nothing (INFO, CONFIG GET, COMMAND...), which run at EXEC in their turn as in
// Redis: the update function may run more than once, so a command with a side effect
// outside the transaction's records (CONFIG SET, KURA.KEYSPACE) is not among them. A
// collection's elements are records of their own, and a PN counter's shards another
// node's; commands on them are refused when queued until a transaction covers them.
var transactional = map[string]bool{
	"get": true, "set": true, "setnx": true, "setex": true, "psetex": true, "getset": true, "getdel": true,
	"mget": true, "mset": true, "incr": true, "decr": true, "incrby": true, "decrby": true, "incrbyfloat": true,
	"append": true, "strlen": true, "getrange": true, "substr": true, "setrange": true, "exists": true,
	"del": true, "unlink": true, "ttl": true, "pttl": true, "expire": true, "pexpire": true, "expireat": true,
	"pexpireat": true, "persist": true, "getex": true, "unwatch": true,
	"ping": true, "echo": true, "time": true, "info": true, "config|get": true, "command": true,
	"command|count": true, "command|list": true, "command|info": true, "command|docs": true,
	"command|getkeys": true, "command|getkeysandflags": true, "command|help": true,
	"client|id": true, "client|getname": true, "client|info": true, "client|list": true,
}

// pnIncrements are the commands a connection in PN counter mode (KURA.COUNTERS) runs on
// a counter's shard, outside any transaction: refused when queued in that mode.
var pnIncrements = map[string]bool{"incr": true, "decr": true, "incrby": true, "decrby": true}

// runAfterRound are the commands EXEC runs once, after the transaction's round has
// decided, their replies put in their place among the others': they change the node,
// not records, and the round's function may run more than once.
var runAfterRound = map[string]bool{"config|set": true}

// runsInMulti are the commands that run at once inside MULTI instead of being queued, as
// in Redis.
var runsInMulti = map[string]bool{"exec": true, "discard": true, "multi": true, "watch": true, "quit": true, "reset": true}

// transactionCommands are MULTI's and its kin's entries in the command table.
func transactionCommands() []*command {
	control := []string{"noscript", "loading", "stale", "fast", "allow_busy"}
	return []*command{
		{name: "multi", arity: 1, flags: control, run: multiCommand},
		{name: "exec", arity: 1, flags: []string{"noscript", "loading", "stale", "skip_slowlog"}, run: execCommand},
		{name: "discard", arity: 1, flags: control, run: discardCommand},
		{name: "watch", arity: -2, flags: control, firstKey: 1, lastKey: -1, keyStep: 1, run: watchCommand},
		{name: "unwatch", arity: 1, flags: control, run: unwatchCommand},
	}
}

// refuseInMulti marks the transaction open on c, if any, as aborted: a command was
// refused while queueing (unknown, of the wrong arity, not authenticated), and EXEC must
// run none of them.
func (c *conn) refuseInMulti() {
	if c.multi != nil {
		c.multi.aborted = true
	}
}

// queue queues cmd inside MULTI, answering QUEUED, or refuses a command no transaction
// can run yet, naming it and the ones that can, and a SORT whose patterns form keys
// (sortRefusedInMulti).
func (c *conn) queue(cmd *command, args [][]byte) {
	switch {
	case !transactional[cmd.name] && !c.s.collectionCommands[cmd.name] && !runAfterRound[cmd.name]:
		c.multi.aborted = true
		c.w.Error(fmt.Sprintf("ERR %s cannot run inside a transaction yet; kura's transactions run %s, the hash, set, sorted set and list commands, and SORT", strings.ToUpper(cmd.name), transactionalList()))
	case c.pnCounters && pnIncrements[cmd.name]:
		c.multi.aborted = true
		c.w.Error(fmt.Sprintf("ERR %s in PN counter mode (KURA.COUNTERS) adds to a counter's shard, which cannot run inside a transaction; KURA.COUNTERS EXACT first", strings.ToUpper(cmd.name)))
	case cmd.name == "sort" || cmd.name == "sort_ro":
		if refusal := sortRefusedInMulti(cmd.name, args); refusal != "" {
			c.multi.aborted = true
			c.w.Error(refusal)
			return
		}
		fallthrough
	default:
		c.multi.queued = append(c.multi.queued, queuedCommand{cmd: cmd, args: slices.Clone(args)})
		c.w.SimpleString("QUEUED")
	}
}

// transactionalList names the commands a transaction runs, in upper case and order.
func transactionalList() string {
	names := make([]string, 0, len(transactional)+len(runAfterRound))
	for name := range transactional {
		names = append(names, strings.ToUpper(strings.ReplaceAll(name, "|", " ")))
	}
	for name := range runAfterRound {
		names = append(names, strings.ToUpper(strings.ReplaceAll(name, "|", " ")))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func multiCommand(c *conn, _ [][]byte) {
	if c.multi != nil {
		c.w.Error("ERR MULTI calls can not be nested")
		return
	}
	c.multi = &multiState{}
	c.w.SimpleString("OK")
}

func discardCommand(c *conn, _ [][]byte) {
	if c.multi == nil {
		c.w.Error("ERR DISCARD without MULTI")
		return
	}
	c.endTransaction()
	c.w.SimpleString("OK")
}

// endTransaction leaves MULTI and forgets the watched keys: what EXEC and DISCARD do,
// whatever their outcome, and RESET.
func (c *conn) endTransaction() {
	c.multi, c.watched = nil, nil
}

func unwatchCommand(c *conn, _ [][]byte) {
	if c.txn == nil {
		c.watched = nil // inside EXEC, UNWATCH is too late to matter: EXEC forgets them after
	}
	c.w.SimpleString("OK")
}

// watchCommand is WATCH key [key ...]: each key's record is read linearizably (a serial
// read, which completes any transaction in progress on it), and EXEC runs only if none of
// them changed since. A key watched already keeps the record of its first WATCH.
func watchCommand(c *conn, args [][]byte) {
	if c.multi != nil {
		c.w.Error("ERR WATCH inside MULTI is not allowed")
		return
	}
	var keys [][]byte
	for _, key := range distinct(args[1:]) {
		if !slices.ContainsFunc(c.watched, func(w watchedKey) bool { return w.keyspace == c.keyspace && bytes.Equal(w.key, key) }) {
			keys = append(keys, key)
		}
	}
	read := make([]watchedKey, len(keys))
	err := forEach(len(keys), func(i int) error {
		rec, found, err := c.serialHeader(keys[i])
		read[i] = watchedKey{keyspace: c.keyspace, key: keys[i], record: rec, found: found}
		if err != nil || !read[i].isCollection() {
			return err
		}
		// After the serial read of the header, so that the elements read are at least
		// as new as it.
		coll, err := c.s.cfg.Backend.ReadCollection(c.ctx, c.keyspace, keys[i], c.serialLevel().Commit())
		read[i].elements = elementsDigest(coll.Reset, coll.Elements)
		return err
	})
	if err != nil {
		c.replyTransactError(err)
		return
	}
	c.watched = append(c.watched, read...)
	c.w.SimpleString("OK")
}

// execReply is what one run of the queue answered: each command's reply, written in
// the connection's protocol (nil for a command of runAfterRound, which has not run),
// and how many were errors.
type execReply struct {
	replies [][]byte
	errors  int64
	// elapsed and failed are each command's time and whether it answered an error (1 or
	// 0), for INFO commandstats, which counts the commands EXEC ran as Redis does; they
	// are counted once EXEC answers, as the round may run the queue more than once.
	elapsed []time.Duration
	failed  []int64
	// wakes are the keys pushed to (txView.wakes).
	wakes [][]byte
}

// execCommand is EXEC: EXECABORT when a command was refused while queueing; CROSSSLOT
// when the keys the queue and WATCH name are of more than one hash tag; otherwise the
// queue's replies, in order, or a null array when a watched key changed. A runtime error
// of one command (INCR of a value that is no integer) is its reply, and the others run,
// as in Redis.
func execCommand(c *conn, _ [][]byte) {
	if c.multi == nil {
		c.w.Error("ERR EXEC without MULTI")
		return
	}
	m, watched := c.multi, c.watched
	c.endTransaction()
	if m.aborted {
		c.w.Error("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	var keys, collections [][]byte
	for _, q := range m.queued {
		keys = slices.AppendSeq(keys, keyArgs(q.cmd, q.args))
		if c.s.collectionCommands[q.cmd.name] {
			collections = slices.AppendSeq(collections, keyArgs(q.cmd, q.args))
		}
	}
	for _, w := range watched {
		if w.keyspace != c.keyspace {
			c.w.Error(fmt.Sprintf("ERR kura: key %q was watched in keyspace %s, and EXEC runs in %s: a transaction covers one keyspace", w.key, w.keyspace, c.keyspace))
			return
		}
		keys = append(keys, w.key)
		if w.isCollection() {
			collections = append(collections, w.key)
		}
	}
	keys, collections = distinct(keys), distinct(collections)
	for _, key := range keys[min(1, len(keys)):] {
		if !bytes.Equal(ring.HashTag(key), ring.HashTag(keys[0])) {
			c.w.Error("CROSSSLOT Keys in request don't hash to the same slot")
			return
		}
	}
	out, ran, ok := c.runTransaction(m.queued, watched, keys, collections)
	switch {
	case !ok:
		return
	case !ran:
		c.w.NullArray()
		return
	}
	c.w.ArrayHeader(len(m.queued))
	for i, q := range m.queued {
		if runAfterRound[q.cmd.name] {
			c.lowerName = appendLower(c.lowerName[:0], q.args[0])
			errorsBefore, start := c.w.errorReplies, time.Now()
			q.cmd.run(c, q.args)
			q.cmd.stats.ran(1, time.Since(start), min(c.w.errorReplies-errorsBefore, 1))
			continue
		}
		c.w.raw(out.replies[i])
		q.cmd.stats.ran(1, out.elapsed[i], out.failed[i])
	}
	c.w.errorReplies += out.errors
	for _, key := range out.wakes {
		c.wakeNow(key)
	}
	if c.s.monitors.active() {
		// Redis shows each command EXEC ran, then EXEC; here once the round has decided,
		// since its function may run the queue more than once, and after EXEC's whole
		// reply, which a monitoring connection's own lines must not split.
		for _, q := range m.queued {
			c.s.feedMonitors(c, q.cmd, q.args)
		}
	}
}

// runTransaction runs queued, after checking watched, as one lightweight transaction
// over keys (of one hash tag; collections are those it reads as collections), and
// returns the replies of the round whose writes were chosen. ran is false when a
// watched key changed, so nothing ran; ok is false when the transaction failed, its
// error written.
func (c *conn) runTransaction(queued []queuedCommand, watched []watchedKey, keys, collections [][]byte) (out execReply, ran, ok bool) {
	// Read before the round: a keyspace's transaction instances never change (schema's
	// Transactions and CollectionInstances are fixed at creation). None read, the view
	// refuses what needs them (txView.updateElement).
	ks, _ := c.s.cfg.Backend.Keyspace(c.keyspace)
	run := func(at hlc.Timestamp, cur []coord.KeyRecord) ([]lww.Record, bool, any, error) {
		view := newTxView(at, c.s.cfg.NodeID, ks, cur, collections)
		for _, w := range watched {
			now := view.records[string(w.key)]
			if now.Found != w.found || (w.found && now.Record.Timestamp != w.record.Timestamp) ||
				(w.isCollection() && elementsDigest(now.Reset, now.Elements) != w.elements) {
				return nil, false, nil, nil // changed since WATCH: nothing runs
			}
		}
		reply := c.runQueue(queued, view)
		writes := view.writes()
		return writes, len(writes) > 0, reply, nil
	}
	var reply any
	if len(keys) == 0 {
		// Nothing to read or write (PING, ECHO): no round to run.
		_, _, reply, _ = run(0, nil)
	} else {
		start, serial := time.Now(), c.serialLevel()
		res, err := c.s.cfg.Backend.UpdateBatch(c.ctx, c.keyspace, keys, collections, serial, run)
		c.observe("cas", serial, start, err)
		if err != nil {
			c.replyTransactError(err)
			return execReply{}, false, false
		}
		reply = res.Reply
	}
	out, ran = reply.(execReply)
	return out, ran, true
}

// oneTransaction runs the command args, which moves an element between keys
// (LMOVE, RPOPLPUSH, SMOVE), as a transaction of its keys' partition when it can: outside
// MULTI, both keys of one hash tag, in a keyspace whose transactions run per partition.
// Otherwise the command takes its steps one after the other, the element added to
// destination before it is taken from source, so a failure between the two leaves it in
// both; in one transaction both steps are chosen whole or not at all. done is false when
// it cannot, and the caller runs its steps; otherwise reply is the command's reply, or
// nil when an error reply is written.
func (c *conn) oneTransaction(args [][]byte) (reply []byte, done bool) {
	cmd := c.s.commands[strings.ToLower(string(args[0]))]
	keys := slices.Collect(keyArgs(cmd, args))
	if c.txn != nil || cmd == nil || len(keys) < 2 || !bytes.Equal(ring.HashTag(keys[0]), ring.HashTag(keys[1])) {
		return nil, false
	}
	if ks, err := c.s.cfg.Backend.Keyspace(c.keyspace); err != nil || ks.Transactions != schema.TransactionsPartition {
		return nil, false
	}
	keys = distinct(keys)
	name := bytes.Clone(c.lowerName)
	out, _, ok := c.runTransaction([]queuedCommand{{cmd: cmd, args: args}}, nil, keys, keys)
	c.lowerName = append(c.lowerName[:0], name...) // runQueue named the command it ran
	if !ok {
		return nil, true
	}
	c.w.errorReplies += out.errors
	for _, key := range out.wakes {
		c.wakeNow(key)
	}
	return out.replies[0], true
}

// runQueue runs the queued commands in order against view, each reply written in the
// connection's protocol into a buffer of its own; those of runAfterRound wait.
func (c *conn) runQueue(queued []queuedCommand, view *txView) execReply {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.SetVersion(c.w.Version())
	saved := c.w
	c.w, c.txn = w, view
	defer func() { c.w, c.txn = saved, nil }()
	out := execReply{replies: make([][]byte, len(queued)), elapsed: make([]time.Duration, len(queued)), failed: make([]int64, len(queued))}
	for i, q := range queued {
		if runAfterRound[q.cmd.name] {
			continue
		}
		c.lowerName = appendLower(c.lowerName[:0], q.args[0])
		errorsBefore, start := w.errorReplies, time.Now()
		q.cmd.run(c, q.args)
		out.elapsed[i], out.failed[i] = time.Since(start), min(w.errorReplies-errorsBefore, 1)
		w.Flush() // into buf, which cannot fail
		out.replies[i] = bytes.Clone(buf.Bytes())
		buf.Reset()
	}
	out.errors = w.errorReplies
	out.wakes = view.wakes
	return out
}

// keyArgs yields the keys a command's arguments name: by its getkeys function when its
// key specifications are incomplete (SORT's), by its key specifications when they move
// with the arguments (LMPOP's count of keys), else by its table entry's key positions. Arguments that do not fit the specifications yield none: the command
// refuses them itself when it runs.
func keyArgs(cmd *command, args [][]byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		if find := keyFunctions[cmd.name]; find != nil {
			// SORT's specifications cannot say where STORE's destination is.
			for _, ref := range find(args) {
				if !yield(args[ref.pos]) {
					return
				}
			}
			return
		}
		if specs := redisKeySpecs[cmd.name]; specs.movable() {
			refs, _ := specs.keys(args)
			for _, ref := range refs {
				if !yield(args[ref.pos]) {
					return
				}
			}
			return
		}
		if cmd.firstKey <= 0 {
			return
		}
		last := cmd.lastKey
		if last < 0 {
			last = len(args) + last
		}
		for i := cmd.firstKey; i <= last && i < len(args); i += max(cmd.keyStep, 1) {
			if !yield(args[i]) {
				return
			}
		}
	}
}

// txView is the records of a transaction's keys as its commands see them while EXEC
// runs the queue: read by the round, changed by each command in turn. Commands that run
// their keys in parallel (MSET, DEL) reach it from several goroutines.
type txView struct {
	mu sync.Mutex
	// at is the round's timestamp, which every record written gets (a reset record the
	// point it holds); node names this node in a set add's tag.
	at   hlc.Timestamp
	node string
	// ks is the keyspace's definition: where its transactions run.
	ks      schema.Keyspace
	records map[string]coord.KeyRecord
	// written are the keys written, in the order first written.
	written []string
	// colls are the collections the round read whole, by key (txcollection.go);
	// elemWrites the element records written, by key, and resets the reset points
	// written, by collection key.
	colls      map[string]*txCollection
	elemWrites map[string]lww.Record
	resets     map[string]hlc.Timestamp
	// wakes are the keys pushed to, whose blocked clients EXEC wakes once it has run:
	// as in Redis, they see the transaction whole, never part of it.
	wakes [][]byte
}

// wakeAfter notes that key was pushed to, for the clients blocked on it.
func (v *txView) wakeAfter(key []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !slices.ContainsFunc(v.wakes, func(k []byte) bool { return bytes.Equal(k, key) }) {
		v.wakes = append(v.wakes, key)
	}
}

// newTxView is the view of the records cur a round read at timestamp at in keyspace ks,
// the keys of collections read whole.
func newTxView(at hlc.Timestamp, node string, ks schema.Keyspace, cur []coord.KeyRecord, collections [][]byte) *txView {
	v := &txView{at: at, node: node, ks: ks, records: make(map[string]coord.KeyRecord, len(cur)),
		colls: map[string]*txCollection{}, elemWrites: map[string]lww.Record{}, resets: map[string]hlc.Timestamp{}}
	for _, r := range cur {
		v.records[string(r.Key)] = r
		if slices.ContainsFunc(collections, func(k []byte) bool { return bytes.Equal(k, r.Key) }) {
			coll := &txCollection{reset: r.Reset, elems: make(map[string]lww.Record, len(r.Elements))}
			for _, e := range r.Elements {
				coll.elems[string(e.Key)] = e
			}
			v.colls[string(r.Key)] = coll
		}
	}
	return v
}

// get returns key's record. A PN counter's value is its shards', which the transaction
// did not read: refused.
func (v *txView) get(key []byte) (lww.Record, bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	r, ok := v.recordLocked(key)
	switch {
	case !ok:
		return lww.Record{}, false, fmt.Errorf("resp: key %q is not among the transaction's keys", key)
	case r.Found && r.Record.Type == lww.Counter:
		return lww.Record{}, false, redisError(fmt.Sprintf("ERR kura: key %q is a PN counter, which a transaction does not read", key))
	}
	return r.Record, r.Found, nil
}

// update runs fn on key's record as a transaction would, and keeps what it writes: a
// key's own record, or an element record of a collection the round read
// (updateElement). A PN counter it would replace or delete is refused: its shards are
// outside the transaction. A collection's header it replaces or deletes is kept; its
// caller resets the collection (resetReplaced).
func (v *txView) update(key []byte, fn coord.UpdateFunc) (coord.UpdateResult, error) {
	if element.IsKey(key) {
		return v.updateElement(key, fn)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	r, ok := v.recordLocked(key)
	if !ok {
		return coord.UpdateResult{}, fmt.Errorf("resp: key %q is not among the transaction's keys", key)
	}
	res := coord.UpdateResult{Previous: r.Record, PreviousFound: r.Found}
	next, write, err := fn(r.Record, r.Found)
	switch {
	case err != nil || !write:
		return res, err
	case r.Found && r.Record.Type == lww.Counter:
		return res, redisError(fmt.Sprintf("ERR kura: key %q is a PN counter, whose shards a transaction does not replace or delete", key))
	}
	next.Key, next.Timestamp = key, v.at
	if next.Tombstone {
		next.Value, next.ExpiresAt, next.Type = nil, 0, lww.String
	}
	v.keep(key, next)
	res.Applied, res.Record = true, next
	return res, nil
}

// recordLocked is key's own record as the commands see it, v.mu held: a collection the
// round read whole and that holds no member now is absent, as outside a transaction
// (conn.settle). A collection the round did not read (no collection command names it)
// is taken as it is.
func (v *txView) recordLocked(key []byte) (coord.KeyRecord, bool) {
	r, ok := v.records[string(key)]
	coll, read := v.colls[string(key)]
	if !ok || !r.Found || !read {
		return r, ok
	}
	if !coord.HoldsMembers(r.Record.Type, slices.Collect(maps.Values(coll.elems))) {
		r.Record, r.Found = lww.Record{}, false
	}
	return r, true
}

// keep makes next key's record, written by the transaction; v.mu is held.
func (v *txView) keep(key []byte, next lww.Record) {
	v.records[string(key)] = coord.KeyRecord{Key: key, Record: next, Found: !next.Tombstone}
	if !slices.Contains(v.written, string(key)) {
		v.written = append(v.written, string(key))
	}
}

// writes are the records the commands left: on the keys they wrote, the element records
// they wrote, in key order, and the reset records.
func (v *txView) writes() []lww.Record {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]lww.Record, 0, len(v.written)+len(v.elemWrites)+len(v.resets))
	for _, key := range v.written {
		out = append(out, v.records[key].Record)
	}
	for _, key := range slices.Sorted(maps.Keys(v.elemWrites)) {
		out = append(out, v.elemWrites[key])
	}
	for _, key := range slices.Sorted(maps.Keys(v.resets)) {
		out = append(out, coord.ResetRecord([]byte(key), v.resets[key]))
	}
	return out
}
