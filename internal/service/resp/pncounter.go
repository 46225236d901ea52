package resp

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/collection/counter"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// Conflict-free counters (docs/redis-types.md "Counters", internal/core/collection/counter): INCR and
// its kin on a key of type lww.Counter add to this process's shard of it, one write per
// batch of increments and no Paxos round, where the exact INCR (counters.go) is a
// lightweight transaction. A connection makes a missing key such a counter when its mode
// is PN (KURA.COUNTERS PN, or Config.PNCounters for every new connection); a key that
// exists keeps its type whatever the mode, so that every client of a key increments it
// one way.

// errCounterOp refuses a string command other than the counters' on a PN counter, which
// TYPE calls a string (as the integer a Redis INCR makes), so that the refusal says why.
const errCounterOp = "WRONGTYPE Operation against a key holding a conflict-free (PN) counter: only INCR, INCRBY, DECR, DECRBY, GET, MGET, DEL, EXPIRE and the other whole-key commands apply"

// wrongTypeOf is a string command's refusal of a key of type t: WRONGTYPE, saying why
// for a PN counter.
func wrongTypeOf(t lww.Type) redisError {
	if t == lww.Counter {
		return redisError(errCounterOp)
	}
	return redisError(errWrongType)
}

// errBatchFailed answers the increments of a batch whose leader failed (panicked).
var errBatchFailed = errors.New("resp: the batch of increments this one was in failed")

// errIsCounter is the exact INCR's transaction finding a PN counter: the increment goes
// to its shard instead.
var errIsCounter = errors.New("resp: the key is a PN counter")

// pnCounters is the process's shards: one actor (this node and a number drawn at
// start), one shard per counter key this process incremented. A shard's total is kept
// for the process's life: forgetting it, the next increment would write a smaller total
// over a larger one, losing increments.
type pnCounters struct {
	actor string
	mu    sync.Mutex
	keys  map[pnKeyID]*pnShard
}

type pnKeyID struct{ keyspace, key string }

// pnShard is the actor's shard of one key and the increments waiting for it. One
// goroutine at a time, the leader, reads the counter and writes the shard for a batch of
// waiting increments (a group commit), so that the shard's writes are serialized: each
// write's total includes every earlier one, and its timestamp is later.
type pnShard struct {
	mu      sync.Mutex
	leading bool
	queue   []*pnIncrement
	// total is the shard's total as last written, and at that write's timestamp (zero:
	// never written). A write that failed after it was stamped may have reached a
	// replica, so its total stays: a later write carries it (see runBatch).
	total int64
	at    hlc.Timestamp
	// actors are the writers of the key the last scan of it found, this one among them,
	// and scannedAt when: until actorScanInterval has passed, a batch reads only their
	// records, by point reads (see read).
	actors    []string
	scannedAt time.Time
}

// actorScanInterval is how long a batch reads only the writers a scan of the counter
// found, before it scans again for new ones. A scan costs more than the point reads:
// the shard and the header are rewritten by every batch, and a scan steps over each
// version of them that storage has not compacted yet.
const actorScanInterval = time.Second

// pnIncrement is one INCR waiting for its batch.
type pnIncrement struct {
	step  int64
	level consistency.Level
	done  chan struct{}
	// lead is set when the increment's goroutine is handed the lead rather than answered.
	lead bool
	// The answer: the counter's value after the step, an error reply, an error, or
	// notCounter when the key holds a string (for the exact INCR).
	value      int64
	reply      string
	err        error
	notCounter bool
	answered   bool
}

func newPNCounters(node string) *pnCounters {
	var incarnation [8]byte
	rand.Read(incarnation[:])
	return &pnCounters{actor: counter.Actor(node, binary.BigEndian.Uint64(incarnation[:])), keys: map[pnKeyID]*pnShard{}}
}

func (p *pnCounters) shard(keyspace string, key []byte) *pnShard {
	id := pnKeyID{keyspace, string(key)}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.keys[id]
	if s == nil {
		s = &pnShard{}
		p.keys[id] = s
	}
	return s
}

// countersCommand shows or sets what INCR and its kin make of a missing key on this
// connection: KURA.COUNTERS [EXACT|PN].
func countersCommand(c *conn, args [][]byte) {
	switch {
	case len(args) == 1 && c.pnCounters:
		c.w.SimpleString("PN")
	case len(args) == 1:
		c.w.SimpleString("EXACT")
	case len(args) == 2 && (upper(args[1]) == "PN" || upper(args[1]) == "EXACT"):
		c.pnCounters = upper(args[1]) == "PN"
		c.w.SimpleString("OK")
	case len(args) == 2:
		c.w.Error("ERR KURA.COUNTERS takes EXACT (INCR is a lightweight transaction) or PN (a conflict-free counter)")
	default:
		c.w.Error("ERR wrong number of arguments for 'kura.counters' command")
	}
}

// pnIncr adds step to key's PN counter and answers its value, or reports notCounter when
// the key holds a string, for the exact INCR to answer.
func (c *conn) pnIncr(key []byte, step int64) (notCounter bool) {
	start, level := time.Now(), c.collectionLevel()
	inc := c.s.counters.add(c, key, step, level)
	c.observe("put", level, start, inc.err)
	switch {
	case inc.notCounter:
		return true
	case inc.err != nil:
		c.w.Error(errorReply(inc.err))
	case inc.reply != "":
		c.w.Error(inc.reply)
	default:
		c.w.Int(inc.value)
	}
	return false
}

// add queues an increment of key's shard and waits for its answer, leading the batches
// while it is the first waiting: the leader writes one batch, the one holding its own
// increment, then hands the lead to the first increment still waiting.
func (p *pnCounters) add(c *conn, key []byte, step int64, level consistency.Level) *pnIncrement {
	s := p.shard(c.keyspace, key)
	inc := &pnIncrement{step: step, level: level, done: make(chan struct{})}
	s.mu.Lock()
	s.queue = append(s.queue, inc)
	if s.leading {
		s.mu.Unlock()
		<-inc.done
		if !inc.lead {
			return inc
		}
	} else {
		s.leading = true
		s.mu.Unlock()
	}
	// Leading: the queue's head is this increment. A batch keeps to one level.
	s.mu.Lock()
	var batch, rest []*pnIncrement
	for _, q := range s.queue {
		if q.level == level {
			batch = append(batch, q)
		} else {
			rest = append(rest, q)
		}
	}
	s.queue = rest
	s.mu.Unlock()
	// Deferred, so that a batch that panics (costing its connection, as any command)
	// still answers the others and hands the lead on, rather than stall the key.
	defer func() {
		s.mu.Lock()
		if len(s.queue) > 0 {
			next := s.queue[0]
			next.lead = true
			close(next.done)
		} else {
			s.leading = false
		}
		s.mu.Unlock()
		for _, q := range batch {
			if !q.answered {
				q.err = errBatchFailed
			}
			if q != inc {
				close(q.done)
			}
		}
	}()
	p.runBatch(c, s, key, level, batch)
	for _, q := range batch {
		q.answered = true
	}
	return inc
}

// runBatch reads key's counter, adds the batch's steps to the shard and writes it, with
// the header, and answers each increment the counter's value after its step: the other
// shards as this read found them, plus this shard up to that step.
//
// A write that fails after the coordinator stamped it may have reached a replica: its
// total is kept, and the next write carries it (the failed increments count once, and
// their INCRs were answered an error, as any write whose outcome is unknown). Taking it
// back would let a later, smaller total follow a version a reset may have observed and
// subtracted: the reset would then remove increments that were acknowledged.
func (p *pnCounters) runBatch(c *conn, s *pnShard, key []byte, level consistency.Level, batch []*pnIncrement) {
	// The server's context, not the leader's connection's: the batch answers others too.
	ctx, backend := c.s.ctx, c.s.cfg.Backend
	read, err := p.read(ctx, backend, c.keyspace, key, level, s)
	if err != nil {
		for _, q := range batch {
			q.err = err
		}
		return
	}
	if read.Live && read.Header.Type != lww.Counter {
		for _, q := range batch {
			if read.Header.Type == lww.String {
				q.notCounter = true
			} else {
				q.reply = errWrongType
			}
		}
		return
	}
	steps := make([]int64, len(batch))
	for i, q := range batch {
		steps[i] = q.step
	}
	writer := counter.Writer{Actor: p.actor, Total: s.total, At: s.at}
	plan, err := writer.Increment(key, counter.Read{Live: read.Live, DiedAt: read.DiedAt(), Elements: read.Elements}, steps)
	if err != nil {
		for _, q := range batch {
			q.reply = "ERR " + err.Error()
		}
		return
	}
	for i, q := range batch {
		if plan.Errs[i] != nil {
			q.reply = "ERR " + plan.Errs[i].Error()
		}
		q.value = plan.Values[i]
	}
	if !plan.Write {
		return
	}
	header := lww.Record{Type: lww.Counter}
	if read.Live {
		header.ExpiresAt = read.Header.ExpiresAt
	}
	t, err := backend.WriteCounter(ctx, c.keyspace, key, coord.CounterWrite{
		Header:   &header,
		Elements: []lww.Record{{Key: counter.ShardKey(key, p.actor), Value: counter.EncodeTotal(plan.Total)}},
		Stamped:  plan.Offsets,
	}, level)
	if t != 0 {
		s.total, s.at = plan.Total, t
	}
	if err != nil {
		for _, q := range batch {
			if q.reply == "" {
				q.err = err
			}
		}
	}
}

// read reads key's counter for a batch: the header, and the records of the writers the
// last scan found, by point reads, while that scan is recent and the counter alive;
// otherwise the whole counter, by a scan, which also finds the writers anew. A writer
// new since the scan (a node or process that began incrementing the key) is thus missing
// from the answers of the batches for up to actorScanInterval; GET always scans.
func (p *pnCounters) read(ctx context.Context, backend Backend, keyspace string, key []byte, level consistency.Level, s *pnShard) (coord.CounterRead, error) {
	if s.actors != nil && time.Since(s.scannedAt) < actorScanInterval {
		keys := make([][]byte, 0, 2*len(s.actors))
		for _, a := range s.actors {
			keys = append(keys, counter.ShardKey(key, a), counter.OffsetKey(key, a))
		}
		coll, results, err := backend.ReadElements(ctx, keyspace, key, keys, level)
		if err != nil {
			return coord.CounterRead{}, err
		}
		if coll.Found && coll.Header.Type == lww.Counter {
			read := coord.CounterRead{Header: coll.Header, Found: true, Live: true}
			for _, r := range results {
				if r.Found {
					read.Elements = append(read.Elements, r.Record)
				}
			}
			return read, nil
		}
	}
	read, err := backend.ReadCounter(ctx, keyspace, key, level)
	if err != nil {
		return read, err
	}
	s.actors, s.scannedAt = []string{p.actor}, time.Now()
	for a := range counter.Fold(key, read.Elements) {
		if a != p.actor {
			s.actors = append(s.actors, a)
		}
	}
	return read, nil
}

// counterValue reads key's PN counter at the connection's level and answers its value as
// a bulk string, as GET answers the integer a Redis INCR made.
func (c *conn) counterValue(key []byte) {
	value, ok := c.readCounterValue(key)
	if ok {
		c.w.Bulk(value)
	}
}

// readCounterValue reads key's PN counter: its value in decimal, nil for a key that is
// no counter now; ok is false when the reply (an error) is written already.
func (c *conn) readCounterValue(key []byte) (value []byte, ok bool) {
	start, level := time.Now(), c.collectionLevel()
	read, err := c.s.cfg.Backend.ReadCounter(c.ctx, c.keyspace, key, level)
	c.observe("get", level, start, err)
	if err != nil {
		c.w.Error(errorReply(err))
		return nil, false
	}
	if !read.Live || read.Header.Type != lww.Counter {
		return nil, true
	}
	sum, sumOK := counter.Sum(counter.Fold(key, read.Elements), "")
	if !sumOK {
		c.w.Error("ERR " + counter.ErrSum.Error())
		return nil, false
	}
	return strconv.AppendInt(nil, sum, 10), true
}

// resetCounter removes every shard of key's PN counter that a read finds, as of the
// version read, after a DEL or another command replaced the counter: increments the
// read did not see survive it (an observed-remove reset).
func (c *conn) resetCounter(key []byte) error {
	start, level := time.Now(), c.collectionLevel()
	read, err := c.s.cfg.Backend.ReadCounter(c.ctx, c.keyspace, key, level)
	if err == nil {
		offsets := counter.Reset(key, counter.Fold(key, read.Elements), "", 0)
		if len(offsets) > 0 {
			_, err = c.s.cfg.Backend.WriteCounter(c.ctx, c.keyspace, key, coord.CounterWrite{Stamped: offsets}, level)
		}
	}
	c.observe("put", level, start, err)
	return err
}
