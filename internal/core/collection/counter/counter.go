// Package counter is the merge rule of kura's conflict-free counters (PN-counters,
// docs/redis-types.md "Counters"): which records an increment and a reset write, and how
// a read folds a counter key's element records into its value. It does no I/O: the
// Redis front end and the simulator's data path both call it.
//
// A counter is a header (the key's own record, of type lww.Counter) and element records
// of kind element.CounterShard, two per actor (one writer of one process life):
//
//   - its shard, "s" + actor: the actor's cumulative signed total, rewritten by every
//     increment. The actor's writes are serialized and never take an increment back, so
//     the newest version of a shard includes every older one, and last-writer-wins loses
//     nothing.
//   - its offset, "d" + actor: the part of the shard that a reset (DEL, or the
//     re-creation of a dead key) observed and removed: the shard's total as read, stamped
//     with that shard version's timestamp, so that of two resets the one that observed
//     the later version, with the larger total, wins by last-writer-wins.
//
// The counter's value is the sum over the actors of shard minus offset. A reset removes
// only what it observed: an increment it did not see survives it (an observed-remove
// reset, as Redis Enterprise's counters do).
package counter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
)

// The first byte of a counter element's suffix: which of the actor's two records it is.
const (
	shardMark  = 's'
	offsetMark = 'd'
)

// totalBytes is the size of a shard's or an offset's value.
const totalBytes = 8

// Actor names the one writer of a shard: a node and the incarnation of its process, a
// number drawn at random when the process starts. A process's first increment of a key
// thus needs no read of an earlier shard (it starts at zero), and a node wiped and
// restarted never writes over what an earlier life of it wrote.
func Actor(node string, incarnation uint64) string {
	return fmt.Sprintf("%s/%016x", node, incarnation)
}

// ShardKey is the key of actor's shard of counter key.
func ShardKey(key []byte, actor string) []byte {
	return element.Key(key, element.CounterShard, append([]byte{shardMark}, actor...))
}

// OffsetKey is the key of actor's offset in counter key.
func OffsetKey(key []byte, actor string) []byte {
	return element.Key(key, element.CounterShard, append([]byte{offsetMark}, actor...))
}

// EncodeTotal is the value of a shard or an offset holding total: 8 bytes, big-endian
// two's complement.
func EncodeTotal(total int64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, totalBytes), uint64(total))
}

// DecodeTotal reads a value EncodeTotal wrote; ok is false for any other.
func DecodeTotal(value []byte) (total int64, ok bool) {
	if len(value) != totalBytes {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(value)), true
}

// Shard is what a read found of one actor's records.
type Shard struct {
	// Total is the shard's total as of its version At; zero with At zero when the read
	// found an offset but no shard.
	Total int64
	At    hlc.Timestamp
	// Offset is the part of the shard a reset removed, as of the shard version OffsetAt
	// (zero: none).
	Offset   int64
	OffsetAt hlc.Timestamp
}

// Fold gathers counter key's element records by actor. Records that are not a counter
// element of key, tombstones and values of the wrong size are left out: a reader skips
// what it cannot read rather than guess a total.
func Fold(key []byte, recs []lww.Record) map[string]Shard {
	shards := map[string]Shard{}
	for _, rec := range recs {
		coll, kind, suffix, ok := element.Parse(rec.Key)
		if !ok || kind != element.CounterShard || string(coll) != string(key) || len(suffix) < 1 || rec.Tombstone {
			continue
		}
		total, ok := DecodeTotal(rec.Value)
		if !ok {
			continue
		}
		actor := string(suffix[1:])
		s := shards[actor]
		switch suffix[0] {
		case shardMark:
			s.Total, s.At = total, rec.Timestamp
		case offsetMark:
			s.Offset, s.OffsetAt = total, rec.Timestamp
		default:
			continue
		}
		shards[actor] = s
	}
	return shards
}

// Sum is the counter's value: the sum over every actor but skip (none when empty) of its
// shard minus its offset. ok is false when the sum leaves int64, which concurrent
// increments in several datacenters can make it do although each was checked against
// what its node knew.
func Sum(shards map[string]Shard, skip string) (sum int64, ok bool) {
	for actor, s := range shards {
		if actor == skip {
			continue
		}
		if sum, ok = Add(sum, s.Live()); !ok {
			return 0, false
		}
	}
	return sum, true
}

// Live is the shard's part of the counter: its total less what a reset removed. An
// offset of a later version than the shard read (the read found an older version on
// another replica than the reset did) leaves zero, the shard's part as of the newest
// version known. A difference that leaves int64 (no writer checked against it) is zero.
func (s Shard) Live() int64 {
	if s.OffsetAt > s.At {
		return 0
	}
	if s.Offset == math.MinInt64 {
		return 0
	}
	live, ok := Add(s.Total, -s.Offset)
	if !ok {
		return 0
	}
	return live
}

// Add returns a+b and whether it stays in int64.
func Add(a, b int64) (int64, bool) {
	c := a + b
	if (b > 0 && c < a) || (b < 0 && c > a) {
		return 0, false
	}
	return c, true
}

// Offset is the record that removes the first total of actor's shard of counter key,
// as of that shard's version at: a reset that observed it.
func Offset(key []byte, actor string, total int64, at hlc.Timestamp) lww.Record {
	return lww.Record{Key: OffsetKey(key, actor), Value: EncodeTotal(total), Timestamp: at}
}

// Reset returns the offsets that remove every shard a read found, each as of the
// version read, except skip's (the caller's own, which it removes from what it holds in
// memory) and those already removed as of that version. A shard whose version is after
// through (nonzero) is left alone: written after the key's death, it belongs to the new
// life.
func Reset(key []byte, shards map[string]Shard, skip string, through hlc.Timestamp) []lww.Record {
	var offsets []lww.Record
	for actor, s := range shards {
		if actor == skip || s.At == 0 || s.OffsetAt >= s.At || (through != 0 && s.At > through) {
			continue
		}
		offsets = append(offsets, Offset(key, actor, s.Total, s.At))
	}
	return offsets
}

// ErrSum reports shards that sum past int64 (see Sum).
var ErrSum = errors.New("the counter's shards sum past a 64-bit integer")

// ErrOverflow reports a step that would take the counter past int64.
var ErrOverflow = errors.New("increment or decrement would overflow")

// Writer is an actor's shard of one counter key as the actor's process holds it: the
// total it last wrote, and that write's timestamp (zero: never written). A write that
// failed once stamped counts as written: it may have reached a replica.
type Writer struct {
	Actor string
	Total int64
	At    hlc.Timestamp
}

// Read is what a read of a counter key found: whether its header is a live counter,
// when it died if not (CounterRead.DiedAt: zero for every element), and its elements.
type Read struct {
	Live     bool
	DiedAt   hlc.Timestamp
	Elements []lww.Record
}

// Batch is what a batch of increments writes and answers.
type Batch struct {
	// Values are the counter after each step, in order; Errs the step's refusal
	// (ErrOverflow) instead, and the step is not applied.
	Values []int64
	Errs   []error
	// Write reports whether anything is to be written: the shard holding Total, and the
	// Offsets, with the header. Nothing is when the counter is live and no step changes it.
	Write   bool
	Total   int64
	Offsets []lww.Record
}

// Increment plans w's write of steps to counter key, as read found it: the shard's new
// total, and each step's answer, the counter after it (the other shards as read, plus
// w's through that step). On a key that is not live it starts a new life: offsets for
// every shard of the earlier one (written up to its death), w's own whole total among
// them when w wrote it up to the death.
// ErrSum refuses the whole batch.
func (w Writer) Increment(key []byte, read Read, steps []int64) (Batch, error) {
	shards := Fold(key, read.Elements)
	var b Batch
	ownOffset := int64(0)
	if own := shards[w.Actor]; own.OffsetAt != 0 {
		ownOffset = own.Offset
	}
	if !read.Live {
		b.Offsets = Reset(key, shards, w.Actor, read.DiedAt)
		shards = Fold(key, append(append([]lww.Record(nil), read.Elements...), b.Offsets...))
		// w's own shard too only up to the death, as the others': a total written after
		// it (its header not among what this read found) is the new life's.
		if w.At != 0 && (read.DiedAt == 0 || w.At <= read.DiedAt) {
			b.Offsets = append(b.Offsets, Offset(key, w.Actor, w.Total, w.At))
			ownOffset = w.Total
		}
	}
	others, ok := Sum(shards, w.Actor)
	ownLive, ok2 := Add(w.Total, -ownOffset)
	value, ok3 := Add(others, ownLive)
	if !ok || !ok2 || !ok3 || ownOffset == math.MinInt64 {
		return Batch{}, ErrSum
	}
	added := int64(0)
	b.Values, b.Errs = make([]int64, len(steps)), make([]error, len(steps))
	for i, step := range steps {
		next, ok := Add(value, step)
		if !ok {
			b.Errs[i] = ErrOverflow
			continue
		}
		value, added, b.Values[i] = next, added+step, next
	}
	if b.Total, ok = Add(w.Total, added); !ok {
		return Batch{}, ErrSum
	}
	b.Write = added != 0 || !read.Live
	return b, nil
}
