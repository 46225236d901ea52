package resp

// Pipelined GETs and plain SETs run together. A client that pipelines commands waits for
// all their replies anyway, and each may cross the network to replicas or wait for a WAL
// sync, so the connection hands a pipeline's run of GETs and plain SETs (SET key value,
// no options, at a non-serial level) to the coordinator as a batch instead of one round
// trip after the other, and answers in the commands' order:
//
//   - the GETs of keys the batch has not SET before them are read first, together
//     (Backend.GetAll: concurrent reads, or one read of local storage where this node is
//     the keys' only replica);
//   - then the SETs are written, in the order sent (Backend.PutAll: one batch with one
//     sync where that keeps their order for every reader, this node the keys' only
//     replica, and otherwise one after the other);
//   - then the GETs of keys the batch SET before them are read, together.
//
// So each key sees the pipeline's commands in the order sent: a GET after a SET of its
// key sees that write (or a later one of another client), a GET before it does not. A
// SET of a key that such a late GET reads would be seen by the GET too early: it starts
// the next batch. What is not kept is the order between different keys, as with
// commands sent on separate connections: a GET of one key may be read before an earlier
// SET of another is written, and two GETs of keys written in order by another client
// may see the second key's new value and the first key's old one. kura promises nothing
// across keys (docs/reliability.md). Every other command runs alone, in order.

import (
	"errors"
	"time"

	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// batchMax bounds the commands of one batch; batchBytesMax stops a batch of writes
// from gathering more than about that many bytes of values.
const (
	batchMax      = 1024
	batchBytesMax = 1 << 20
)

// batched is one command of a batch: a GET of key, or a plain SET of key to value.
type batched struct {
	key, value []byte
	set        bool
	// late marks a GET of a key the batch SETs before it, read after the batch's writes.
	late bool
}

// batchable reports whether args is a command that may join a batch: a GET, or a SET
// without options at a non-serial level. While a connection of the node monitors, none
// does: each command runs, and is shown, in its turn.
func (c *conn) batchable(args [][]byte) bool {
	return !c.s.monitors.active() && c.multi == nil && (c.isRead(args) || c.isPlainSet(args))
}

// isRead reports whether args is a GET that may join a batch.
func (c *conn) isRead(args [][]byte) bool {
	return c.authenticated && len(args) == 2 && c.named(args[0], "get")
}

// isPlainSet reports whether args is a SET without options at a non-serial level, which
// may join a batch.
func (c *conn) isPlainSet(args [][]byte) bool {
	return c.authenticated && len(args) == 3 && !c.level.IsSerial() && c.named(args[0], "set")
}

// named reports whether a command's name is name (lower case), in any case.
func (c *conn) named(arg []byte, name string) bool {
	if len(arg) != len(name) {
		return false
	}
	c.lowerName = appendLower(c.lowerName[:0], arg)
	return string(c.lowerName) == name
}

// collect reads the commands buffered after a batch's first while keep accepts them and
// full does not stop the batch, batchMax commands in all. It holds the first command
// keep refuses (or a too-large command's error) for the caller to run next, and returns
// a read error, which ends the batch after the commands before it are answered.
func (c *conn) collect(keep func(args [][]byte) bool, full func() bool) error {
	for n := 1; n < batchMax && c.r.Buffered() > 0 && !full(); n++ {
		args, err := c.readCommand()
		if errors.Is(err, ErrTooLarge) {
			c.heldErr = err
			return nil
		}
		if err != nil {
			return err
		}
		if len(args) == 0 {
			n--
			continue
		}
		if !keep(args) {
			c.held = args
			return nil
		}
	}
	return nil
}

// runBatch runs first and the GETs and plain SETs buffered after it as one batch (see
// the top of this file) and answers them in order.
func (c *conn) runBatch(first [][]byte) error {
	batch := c.batch[:0]
	defer func() { c.batch = batch[:0] }()
	// setKeys and lateKeys are the keys the batch SETs and those its late GETs read, made
	// only once the batch mixes them: a batch of GETs alone, or of SETs alone, needs none.
	var setKeys, lateKeys map[string]struct{}
	size, sets := 0, 0
	keep := func(args [][]byte) bool {
		switch {
		case c.isRead(args):
			late := sets > 0 && setIn(&setKeys, batch, args[1])
			if late {
				if lateKeys == nil {
					lateKeys = map[string]struct{}{}
				}
				lateKeys[string(args[1])] = struct{}{}
			}
			batch = append(batch, batched{key: args[1], late: late})
		case c.isPlainSet(args):
			if _, read := lateKeys[string(args[1])]; read {
				// A late GET of the batch reads this key: it must not see this SET.
				return false
			}
			if setKeys != nil {
				setKeys[string(args[1])] = struct{}{}
			}
			batch = append(batch, batched{key: args[1], value: args[2], set: true})
			size += len(args[2])
			sets++
		default:
			return false
		}
		return true
	}
	keep(first)
	readErr := c.collect(keep, func() bool { return size >= batchBytesMax })

	var early, late [][]byte
	var writes []lww.Record
	for _, b := range batch {
		switch {
		case b.set:
			writes = append(writes, lww.Record{Key: b.key, Value: b.value})
		case b.late:
			late = append(late, b.key)
		default:
			early = append(early, b.key)
		}
	}
	start := time.Now()
	earlyResults := c.readAll(early)
	readTime := time.Since(start)
	var writeErrs []error
	var writeTime time.Duration
	if len(writes) > 0 {
		start = time.Now()
		writeErrs = c.s.cfg.Backend.PutAll(c.ctx, c.keyspace, writes, c.level)
		writeTime = time.Since(start)
		for _, err := range writeErrs {
			c.observe("put", c.level, start, err)
		}
	}
	start = time.Now()
	lateResults := c.readAll(late)
	readTime += time.Since(start)

	// The last command's name is the connection's latest, for CLIENT LIST.
	other, otherRan, latest, latestRan := "set", len(writes), "get", len(early)+len(late)
	if batch[len(batch)-1].set {
		other, otherRan, latest, latestRan = latest, latestRan, other, otherRan
	}
	if otherRan > 0 {
		c.ran(other, otherRan)
	}
	c.ran(latest, latestRan)
	var getsFailed, setsFailed int64
	for i, b := range batch {
		if i > 0 { // serveConn began the first command's reply
			c.beginReply()
		}
		var r coord.GetResult
		switch {
		case b.set:
			if err := writeErrs[0]; err != nil {
				c.w.Error(errorReply(err))
				setsFailed++
			} else {
				c.w.SimpleString("OK")
			}
			writeErrs = writeErrs[1:]
			continue
		case b.late:
			r, lateResults = lateResults[0], lateResults[1:]
		default:
			r, earlyResults = earlyResults[0], earlyResults[1:]
		}
		if r.Err != nil {
			getsFailed++
		}
		c.replyGet(r.Record, r.Found, r.Err)
	}
	c.s.getCommand.stats.ran(int64(len(early)+len(late)), readTime, getsFailed)
	c.s.setCommand.stats.ran(int64(len(writes)), writeTime, setsFailed)
	if readErr != nil {
		c.beginReply() // the protocol error is answered as the command after the batch
	}
	return readErr
}

// setIn reports whether batch SETs key. The first time it is asked it makes setKeys,
// the keys batch sets, which the caller keeps up to date from then on.
func setIn(setKeys *map[string]struct{}, batch []batched, key []byte) bool {
	if *setKeys == nil {
		*setKeys = map[string]struct{}{}
		for _, b := range batch {
			if b.set {
				(*setKeys)[string(b.key)] = struct{}{}
			}
		}
	}
	_, ok := (*setKeys)[string(key)]
	return ok
}

// readAll reads keys through Backend.GetAll, or alone when there is one. A key GetAll
// did not read, the answer full of the values before it, is read by itself: each GET
// of a pipeline is a command of its own, answered (and metered) as if sent alone.
func (c *conn) readAll(keys [][]byte) []coord.GetResult {
	switch len(keys) {
	case 0:
		return nil
	case 1:
		r := make([]coord.GetResult, 1)
		r[0].Record, r[0].Found, r[0].Err = c.lookup(keys[0])
		return r
	}
	results := c.lookupAll(keys)
	for i := range results {
		if r := &results[i]; errors.Is(r.Err, coord.ErrAnswerFull) {
			r.Record, r.Found, r.Err = c.lookup(keys[i])
		}
	}
	return results
}
