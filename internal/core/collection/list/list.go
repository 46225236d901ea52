// Package list holds the merge rule of Redis lists stored as one record per item
// (docs/redis-types.md, "Lists"): an item's position is a byte string that sorts in
// list order, so the element records of a list, read in key order, are the list. A
// position is chosen by the writer from the positions it read (before the head for
// LPUSH, after the tail for RPUSH, between two neighbours for LINSERT) and ends with the
// writer's stamp, so two writers that choose the same place at once still make two
// distinct positions, ordered the same on every replica. The package does no I/O: the
// Redis front end (resp) and the simulator's driver both call it.
//
// A position is one or more levels, each
//
//	index (8 bytes) | fraction | 0x00 | direction (1 byte) | time (8 bytes) | writer (8 bytes)
//
// index is a signed integer stored big-endian with its sign bit flipped, so that byte
// order is numeric order: pushes step it by one, which keeps positions short however
// long a queue runs. fraction is a base-255 fraction in the bytes 0x01..0xFF (0x01 the
// digit zero) without a trailing zero digit, so byte order is numeric order and there is
// always a fraction between two others; 0x00 ends it. direction says how time is kept:
// an LPUSH stores the bitwise complement of its time, so of two concurrent LPUSHes the
// later sorts first (nearer the head it was pushed to), and an RPUSH or LINSERT its time,
// so of two RPUSHes the later sorts last. A level parses one way only, so no level is a
// prefix of another, and a position that starts with a whole level sorts after it: that
// is how a place between two positions whose first levels tie is found, by a level of
// its own after the lower one (as Logoot's identifiers grow).
package list

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"

	"github.com/kuradb/kura/internal/core/element"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
)

// Stamp identifies a writer's push: its HLC timestamp and the writer (a node's id for
// positions, unique among writers). Two pushes with different stamps never make the
// same position; one push of several items gives each its own index.
type Stamp struct {
	Time   hlc.Timestamp
	Writer uint64
}

// End is an end of a list.
type End int

const (
	// Head is the left end: LPUSH, LPOP.
	Head End = iota
	// Tail is the right end: RPUSH, RPOP.
	Tail
)

// The direction byte of a level.
const (
	dirHead byte = 0x01 // time stored complemented: later is nearer the head
	dirTail byte = 0x02 // time stored as it is: later is nearer the tail
)

// The layout of a level.
const (
	indexBytes = 8
	stampBytes = 1 + 8 + 8 // direction, time, writer
	fracEnd    = 0x00
	digitZero  = 0x01
)

// ErrExhausted is returned for a push past the last index at the head: 2^63 LPUSHes on
// one list, which no list reaches.
var ErrExhausted = errors.New("list: no position left before the head")

// level is a position's level, parsed.
type level struct {
	index int64
	frac  []byte // canonical: digits 0x01..0xFF, no trailing digitZero
	size  int    // bytes of the level in its position
}

// parseLevel parses the first level of pos; ok is false when pos does not start with one.
func parseLevel(pos []byte) (l level, ok bool) {
	if len(pos) < indexBytes+1+stampBytes {
		return level{}, false
	}
	l.index = int64(binary.BigEndian.Uint64(pos) ^ (1 << 63))
	end := bytes.IndexByte(pos[indexBytes:], fracEnd)
	if end < 0 {
		return level{}, false
	}
	l.frac = pos[indexBytes : indexBytes+end]
	l.size = indexBytes + end + 1 + stampBytes
	if len(pos) < l.size || (len(l.frac) > 0 && l.frac[len(l.frac)-1] == digitZero) {
		return level{}, false
	}
	if dir := pos[indexBytes+end+1]; dir != dirHead && dir != dirTail {
		return level{}, false
	}
	return l, true
}

// Valid reports whether pos is a position this package makes: one or more levels.
func Valid(pos []byte) bool {
	if len(pos) == 0 {
		return false
	}
	for len(pos) > 0 {
		l, ok := parseLevel(pos)
		if !ok {
			return false
		}
		pos = pos[l.size:]
	}
	return true
}

// appendLevel appends a level to dst.
func appendLevel(dst []byte, index int64, frac []byte, dir byte, s Stamp) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(index)^(1<<63))
	dst = append(dst, frac...)
	dst = append(dst, fracEnd, dir)
	t := uint64(s.Time)
	if dir == dirHead {
		t = ^t
	}
	dst = binary.BigEndian.AppendUint64(dst, t)
	return binary.BigEndian.AppendUint64(dst, s.Writer)
}

// Push returns n positions pushed at end beyond edge, the list's item at that end (nil
// for an empty list), in the order the items are pushed: for Head each before the one
// pushed before it, as LPUSH a b c leaves c first; for Tail each after it.
func Push(end End, edge []byte, n int, s Stamp) ([][]byte, error) {
	out := make([][]byte, 0, n)
	for range n {
		var pos []byte
		var err error
		if end == Head {
			pos, err = before(edge, s)
		} else {
			pos = after(edge, s)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, pos)
		edge = pos
	}
	return out, nil
}

// after is a top-level position after every position whose first level is hi's or
// before (hi nil: the first position of an empty list).
func after(lo []byte, s Stamp) []byte {
	if lo == nil {
		return appendLevel(nil, 0, nil, dirTail, s)
	}
	l, _ := parseLevel(lo)
	if l.index < math.MaxInt64 {
		return appendLevel(nil, l.index+1, nil, dirTail, s)
	}
	return appendLevel(nil, l.index, fracBetween(l.frac, nil), dirTail, s)
}

// before is a top-level position before hi (nil: the first position of an empty list).
func before(hi []byte, s Stamp) ([]byte, error) {
	if hi == nil {
		return appendLevel(nil, 0, nil, dirHead, s), nil
	}
	l, _ := parseLevel(hi)
	switch {
	case l.index > math.MinInt64:
		return appendLevel(nil, l.index-1, nil, dirHead, s), nil
	case len(l.frac) > 0:
		return appendLevel(nil, l.index, fracBetween(nil, l.frac), dirHead, s), nil
	}
	return nil, ErrExhausted
}

// Between returns a position strictly between lo and hi, which must be valid positions
// with lo < hi; nil lo is before the head, nil hi after the tail. LINSERT takes it
// between the pivot and its neighbour.
func Between(lo, hi []byte, s Stamp) ([]byte, error) {
	if (lo != nil && !Valid(lo)) || (hi != nil && !Valid(hi)) {
		return nil, errors.New("list: not a position")
	}
	switch {
	case hi == nil:
		return after(lo, s), nil
	case lo == nil:
		return before(hi, s)
	case bytes.Compare(lo, hi) >= 0:
		return nil, errors.New("list: positions out of order")
	}
	l, _ := parseLevel(lo)
	h, _ := parseLevel(hi)
	switch {
	case h.index-l.index >= 2 || (h.index > 0 && l.index < 0):
		// Halfway; the difference, which may pass MaxInt64, is taken unsigned.
		return appendLevel(nil, l.index+int64((uint64(h.index)-uint64(l.index))/2), nil, dirTail, s), nil
	case l.index < h.index:
		return appendLevel(nil, l.index, fracBetween(l.frac, nil), dirTail, s), nil
	case !bytes.Equal(l.frac, h.frac):
		return appendLevel(nil, l.index, fracBetween(l.frac, h.frac), dirTail, s), nil
	}
	// The first levels tie on index and fraction (two writers chose one place): the new
	// position is lo's first level followed by a position after the rest of lo, and,
	// when hi starts with that same level, before the rest of hi. A level is never a
	// prefix of another, so it sorts after lo and before hi.
	first := lo[:l.size]
	loRest := lo[l.size:]
	if len(loRest) == 0 {
		loRest = nil
	}
	var hiRest []byte
	if bytes.Equal(first, hi[:h.size]) {
		hiRest = hi[h.size:]
	}
	rest, err := Between(loRest, hiRest, s)
	if err != nil {
		return nil, err
	}
	return append(append([]byte(nil), first...), rest...), nil
}

// fracBetween returns the canonical fraction strictly between a and b (a < b; a empty
// is zero, b nil is one): David Greenspan's midpoint for fractional indexing, in base
// 255 with digits 0x01..0xFF.
func fracBetween(a, b []byte) []byte {
	if b != nil {
		n := 0
		for n < len(b) && digit(a, n) == b[n] {
			n++
		}
		if n > 0 {
			rest := a[min(n, len(a)):]
			return append(append([]byte(nil), b[:n]...), fracBetween(rest, b[n:])...)
		}
	}
	da, db := int(digit(a, 0)), 0x100
	if b != nil {
		db = int(b[0])
	}
	if db-da > 1 {
		return []byte{byte((da + db) / 2)}
	}
	if b != nil && len(b) > 1 {
		return []byte{b[0]}
	}
	return append([]byte{byte(da)}, fracBetween(a[min(1, len(a)):], nil)...)
}

// digit is fraction a's digit i, zero past its end.
func digit(a []byte, i int) byte {
	if i < len(a) {
		return a[i]
	}
	return digitZero
}

// Item is a list item as read: its position and its value.
type Item struct {
	Pos, Value []byte
}

// Items folds a list's element records into its items, in list order: the records of
// kind element.ListItem whose position is valid (the read has left out the dead ones).
// Every replica's records give the same order, since it is the positions' byte order.
func Items(recs []lww.Record) []Item {
	items := make([]Item, 0, len(recs))
	for _, rec := range recs {
		if _, kind, pos, ok := element.Parse(rec.Key); ok && kind == element.ListItem && Valid(pos) {
			items = append(items, Item{Pos: pos, Value: rec.Value})
		}
	}
	slices.SortFunc(items, func(a, b Item) int { return bytes.Compare(a.Pos, b.Pos) })
	return items
}

// Span is the items [from, to) that Redis's start and stop (inclusive, negative from the
// tail) name in a list of n items, as LRANGE and LTRIM read them; empty when from >= to.
func Span(n int, start, stop int64) (from, to int) {
	size := int64(n)
	if start < 0 {
		start = max(size+start, 0)
	}
	if stop < 0 {
		stop = size + stop
	}
	if start > stop || start >= size {
		return 0, 0
	}
	return int(start), int(min(stop, size-1)) + 1
}

// Index is the item that Redis's index i (negative from the tail) names in a list of n
// items; ok is false when there is none.
func Index(n int, i int64) (int, bool) {
	if i < 0 {
		i += int64(n)
	}
	if i < 0 || i >= int64(n) {
		return 0, false
	}
	return int(i), true
}

// Edge is the position of the item at end of items (in list order), the edge a push
// there goes beyond; nil for an empty list.
func Edge(items []Item, end End) []byte {
	switch {
	case len(items) == 0:
		return nil
	case end == Tail:
		return items[len(items)-1].Pos
	}
	return items[0].Pos
}

// Take is the pop rule, a lightweight transaction's function on an item's record: delete
// it if it is still there in the list's life after reset (the list's reset point), and
// leave it alone otherwise, when another pop took it first. Of two pops of one item,
// through any nodes, the transaction lets one delete it; the other moves on.
func Take(reset hlc.Timestamp) func(cur lww.Record, found bool) (lww.Record, bool, error) {
	return func(cur lww.Record, found bool) (lww.Record, bool, error) {
		if !found || cur.Timestamp <= reset {
			return lww.Record{}, false, nil
		}
		return lww.Record{Tombstone: true}, true, nil
	}
}
