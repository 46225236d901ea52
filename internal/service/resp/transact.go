package resp

import (
	"errors"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// The commands that read a key before they write it (SET NX, XX, GET or KEEPTTL,
// GETDEL, GETSET, GETEX with an option, DEL's count, INCR and the like, APPEND, SETRANGE,
// EXPIRE and the like, PERSIST, RENAME, COPY, MSETNX) run as lightweight transactions
// (coord.Coordinator.Update): a Paxos round among the key's replicas makes the read and
// the write one atomic step, however many clients race through however many nodes. A
// plain SET, SETEX, MSET or DEL of keys nobody counts stays one last-writer-wins write.
// Inside EXEC, every command is part of the transaction's update function: their reads
// and writes go to the transaction's records instead (txView, multi.go).

// redisError is a transaction function's refusal worded as a Redis error reply (a value
// that is not an integer, an overflow), answered as it is.
type redisError string

func (e redisError) Error() string { return string(e) }

// serialLevel is the level of the connection's transactions: LOCAL_SERIAL when its level
// keeps to the coordinator's DC, so that the rounds stay inside it, SERIAL otherwise.
func (c *conn) serialLevel() consistency.Level {
	switch c.level {
	case consistency.LocalOne, consistency.LocalQuorum, consistency.LocalSerial:
		return consistency.LocalSerial
	}
	return consistency.Serial
}

// transact runs fn on key as a lightweight transaction, reported to Observe as "cas".
// fn sees an emptied collection (settle) as absent: a transaction that finds a
// collection's header stops without writing, its members are read (Backend.HasMembers),
// and it runs again, taking that header, if it is still the one checked, for absent when
// the collection held no member. A header newer than the one checked (an add since) is
// taken as it is. So a transaction on a string key costs what it did, and one on a
// collection's header a round more.
func (c *conn) transact(key []byte, fn coord.UpdateFunc) (coord.UpdateResult, error) {
	if c.txn != nil {
		return c.txn.update(key, fn)
	}
	var checked lww.Record // the header whose members were read, once they were (read)
	var read, emptied, absent bool
	settled := func(cur lww.Record, found bool) (lww.Record, bool, error) {
		_, collection := coord.MemberKind(cur.Type)
		absent = false
		switch {
		case !found || !collection || element.IsKey(key):
		case !read:
			return lww.Record{}, false, collectionHeader{cur}
		case emptied && cur.Timestamp == checked.Timestamp && cur.Type == checked.Type:
			absent = true
			return fn(lww.Record{}, false)
		}
		return fn(cur, found)
	}
	res, err := c.runUpdate(key, settled)
	var header collectionHeader
	if errors.As(err, &header) {
		start, level := time.Now(), c.collectionLevel()
		has, hasErr := c.s.cfg.Backend.HasMembers(c.ctx, c.keyspace, key, header.rec.Type, level)
		c.observe("scan", level, start, hasErr)
		if hasErr != nil {
			return coord.UpdateResult{}, hasErr
		}
		checked, read, emptied = header.rec, true, !has
		res, err = c.runUpdate(key, settled)
	}
	if err == nil && absent {
		res.Previous, res.PreviousFound = lww.Record{}, false
	}
	return res, err
}

// collectionHeader stops the first round of a transaction (transact) that found
// collection header rec, before fn runs: whether it holds a member is read first.
type collectionHeader struct{ rec lww.Record }

func (collectionHeader) Error() string {
	return "resp: a collection's header, whose members are read before the transaction decides"
}

// runUpdate runs fn on key as one lightweight transaction. A round stopped at a
// collection's header is reported as a success: it is no failure of the cluster's.
func (c *conn) runUpdate(key []byte, fn coord.UpdateFunc) (coord.UpdateResult, error) {
	start := time.Now()
	serial := c.serialLevel()
	res, err := c.s.cfg.Backend.Update(c.ctx, c.keyspace, key, serial, fn)
	observed := err
	if errors.As(err, new(collectionHeader)) {
		observed = nil
	}
	c.observe("cas", serial, start, observed)
	return res, err
}

// serialGet reads key linearizably: a prepare round at the connection's serial level,
// which completes any transaction left in progress on the key. An emptied collection is
// absent (settle).
func (c *conn) serialGet(key []byte) (lww.Record, bool, error) {
	if c.txn != nil {
		return c.txn.get(key)
	}
	rec, found, err := c.serialHeader(key)
	return c.settle(key, rec, found, err)
}

// serialHeader is serialGet of key's own record as it is, an emptied collection's
// header too: WATCH compares it with the one EXEC's round reads.
func (c *conn) serialHeader(key []byte) (lww.Record, bool, error) {
	start := time.Now()
	serial := c.serialLevel()
	rec, found, err := c.s.cfg.Backend.Get(c.ctx, c.keyspace, key, serial)
	c.observe("get", serial, start, err)
	return rec, found, err
}

// replyTransactError answers a failed transaction: a redisError as it is, any other
// error by its class.
func (c *conn) replyTransactError(err error) {
	var reply redisError
	if errors.As(err, &reply) {
		c.w.Error(string(reply))
		return
	}
	c.w.Error(errorReply(err))
}

// writeIf is the transaction function that writes next when cond holds of the current
// value (found reports a live one), and leaves the key alone otherwise.
func writeIf(cond func(cur lww.Record, found bool) bool, next func(cur lww.Record, found bool) lww.Record) coord.UpdateFunc {
	return func(cur lww.Record, found bool) (lww.Record, bool, error) {
		if !cond(cur, found) {
			return lww.Record{}, false, nil
		}
		return next(cur, found), true, nil
	}
}

// deleteIfFound deletes the key when it holds a value: GETDEL, and DEL when its count
// matters.
var deleteIfFound = writeIf(
	func(_ lww.Record, found bool) bool { return found },
	func(lww.Record, bool) lww.Record { return lww.Record{Tombstone: true} },
)

// expiryOf turns a deadline in Unix milliseconds into a record's ExpiresAt; 0 stays 0.
func expiryOf(unixMs int64) hlc.Timestamp {
	if unixMs == 0 {
		return 0
	}
	return hlc.FromTime(time.UnixMilli(unixMs))
}
