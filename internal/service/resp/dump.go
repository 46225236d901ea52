package resp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"math"
	"strconv"
	"time"

	"github.com/kuradb/kura/internal/core/collection/list"
	"github.com/kuradb/kura/internal/core/collection/set"
	"github.com/kuradb/kura/internal/core/collection/zset"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/coord"
)

// DUMP and RESTORE in Redis's own serialization: a payload DUMP writes restores on
// redis-server 7.0, and one redis-server writes restores on kura when it holds a string
// or a collection: in Redis's plain encodings (DUMP writes those for any size) or its
// compact ones for small collections (rdbcompact.go). A payload is the value in
// Redis's RDB encoding (type byte, then the value), the RDB version in two bytes, and
// Redis's CRC-64 (Jones) of all that in eight, both little-endian.

// rdbVersion is Redis 7.0's RDB version, which DUMP writes and RESTORE accepts at most.
const rdbVersion = 10

// The RDB encodings of a string: a length in 6, 14, 32 or 64 bits, or an integer in
// 8, 16 or 32 bits, or LZF-compressed bytes.
const (
	rdbTypeString = 0
	rdbTypeList   = 1 // its length, then each item
	rdbTypeSet    = 2 // its length, then each member
	rdbTypeZset   = 3 // its length, then each member and its score as text (before Redis 4.0)
	rdbTypeHash   = 4 // its length, then each field and its value
	rdbTypeZset2  = 5 // its length, then each member and its score (a little-endian float64)
	rdbLen6       = 0
	rdbLen14      = 1
	rdbLen32      = 0x80
	rdbLen64      = 0x81
	rdbEncoded    = 3
	rdbEncInt8    = 0
	rdbEncInt16   = 1
	rdbEncInt32   = 2
	rdbEncLZF     = 3
)

// crcJones is Redis's CRC-64: the Jones polynomial, reflected, in Go's table form.
var crcJones = crc64.MakeTable(0x95ac9329ac4bc9b5)

// redisCRC64 is Redis's crc64(0, p): initial value 0 and no final inversion, where Go's
// crc64 inverts both.
func redisCRC64(p []byte) uint64 { return ^crc64.Update(math.MaxUint64, crcJones, p) }

// dumpCommand is DUMP key: the key's value in Redis's serialization, null for a missing
// key. A PN counter is refused.
func dumpCommand(c *conn, args [][]byte) {
	rec, found, err := c.lookup(args[1])
	switch {
	case err != nil:
		c.w.Error(errorReply(err))
	case !found:
		c.w.Null()
	case rec.Type == lww.Counter:
		c.w.Error("ERR kura does not DUMP a conflict-free (PN) counter")
	case rec.Type == lww.String:
		c.w.Bulk(dumpString(rec.Value))
	default:
		coll, ok := c.readCollection(args[1], rec.Type)
		switch {
		case !ok:
		case !coll.Found:
			c.w.Null()
		default:
			c.w.Bulk(dumpCollection(rec.Type, coll.Elements))
		}
	}
}

// dumpString is value's DUMP payload, as redis-server 7.0 writes it with rdbcompression
// off (appendRDBString).
func dumpString(value []byte) []byte {
	return withFooter(appendRDBString([]byte{rdbTypeString}, value))
}

// dumpCollection is the DUMP payload of a collection of type typ from its live element
// records, in Redis's plain encoding of the type.
func dumpCollection(typ lww.Type, elems []lww.Record) []byte {
	var p []byte
	switch typ {
	case lww.List:
		items := list.Items(elems)
		p = appendRDBLen([]byte{rdbTypeList}, uint64(len(items)))
		for _, it := range items {
			p = appendRDBString(p, it.Value)
		}
	case lww.Set:
		names := set.Fold(elems).Names()
		p = appendRDBLen([]byte{rdbTypeSet}, uint64(len(names)))
		for _, name := range names {
			p = appendRDBString(p, name)
		}
	case lww.Hash:
		fields := hashFields(elems)
		p = appendRDBLen([]byte{rdbTypeHash}, uint64(len(fields)))
		for _, f := range fields {
			p = appendRDBString(appendRDBString(p, f.name), f.value)
		}
	case lww.SortedSet:
		members := zset.Fold(elems)
		p = appendRDBLen([]byte{rdbTypeZset2}, uint64(len(members)))
		for _, m := range members {
			p = binary.LittleEndian.AppendUint64(appendRDBString(p, m.Name), math.Float64bits(m.Score))
		}
	}
	return withFooter(p)
}

// withFooter appends the RDB version and the checksum to a payload's body.
func withFooter(p []byte) []byte {
	p = binary.LittleEndian.AppendUint16(p, rdbVersion)
	return binary.LittleEndian.AppendUint64(p, redisCRC64(p))
}

// appendRDBString appends value in the RDB's encoding of a string, as redis-server 7.0
// writes it with rdbcompression off: an integer of at most 11 characters in its integer
// encoding, else the bytes after their length. (redis-server compresses a string of more
// than 20 bytes with LZF where that makes it shorter; kura does not, and RESTORE takes
// both.)
func appendRDBString(p, value []byte) []byte {
	if n, err := strconv.ParseInt(string(value), 10, 64); err == nil && len(value) <= 11 &&
		strconv.FormatInt(n, 10) == string(value) && n >= math.MinInt32 && n <= math.MaxInt32 {
		switch {
		case n >= math.MinInt8 && n <= math.MaxInt8:
			return append(p, rdbEncoded<<6|rdbEncInt8, byte(n))
		case n >= math.MinInt16 && n <= math.MaxInt16:
			return binary.LittleEndian.AppendUint16(append(p, rdbEncoded<<6|rdbEncInt16), uint16(n))
		}
		return binary.LittleEndian.AppendUint32(append(p, rdbEncoded<<6|rdbEncInt32), uint32(n))
	}
	return append(appendRDBLen(p, uint64(len(value))), value...)
}

// appendRDBLen appends n in the RDB's length encoding.
func appendRDBLen(p []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(p, rdbLen6<<6|byte(n))
	case n < 1<<14:
		return append(p, rdbLen14<<6|byte(n>>8), byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(p, rdbLen32), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(p, rdbLen64), n)
}

// Errors of a payload, in Redis's words.
var (
	errDumpFooter = errors.New("ERR DUMP payload version or checksum are wrong")
	errDumpFormat = errors.New("ERR Bad data format")
)

// dumped is the value a DUMP payload holds: its type and its strings (a string's one
// value, a list's items in order, a set's or sorted set's members, a hash's fields and
// values by turns), and a sorted set's scores, one per member.
type dumped struct {
	typ     lww.Type
	strings [][]byte
	scores  []float64
}

// undump returns the value a DUMP payload holds. One whose version or checksum is wrong
// is refused, and so are a type kura does not read (a stream, a module's), a compressed
// string that would expand past valueMax bytes (before it is expanded), a malformed or
// empty compact encoding, and a member or field named twice.
func undump(p []byte, valueMax int) (dumped, error) {
	if len(p) < 10 {
		return dumped{}, errDumpFooter
	}
	body, footer := p[:len(p)-10], p[len(p)-10:]
	if binary.LittleEndian.Uint16(footer) > rdbVersion || binary.LittleEndian.Uint64(footer[2:]) != redisCRC64(p[:len(p)-8]) {
		return dumped{}, errDumpFooter
	}
	if len(body) == 0 {
		return dumped{}, errDumpFormat
	}
	r := rdbReader{p: body[1:], valueMax: uint64(valueMax)}
	var d dumped
	switch body[0] {
	case rdbTypeString:
		d = dumped{typ: lww.String, strings: [][]byte{r.string()}}
	case rdbTypeList:
		d = dumped{typ: lww.List, strings: r.strings(1)}
	case rdbTypeSet:
		d = dumped{typ: lww.Set, strings: r.strings(1)}
	case rdbTypeHash:
		d = dumped{typ: lww.Hash, strings: r.strings(2)}
	case rdbTypeZset, rdbTypeZset2:
		d.typ = lww.SortedSet
		readScore := r.binaryScore
		if body[0] == rdbTypeZset {
			readScore = r.textScore
		}
		for n := r.count(); n > 0 && r.err == nil; n-- {
			d.strings = append(d.strings, r.string())
			score := readScore()
			if math.IsNaN(score) {
				r.err = errDumpFormat
			}
			d.scores = append(d.scores, score)
		}
	case rdbTypeSetIntset:
		d = dumped{typ: lww.Set, strings: r.compact(intsetMembers)}
	case rdbTypeHashZiplist, rdbTypeHashListpack:
		d = dumped{typ: lww.Hash, strings: r.pairs(compactDecoder(body[0]))}
	case rdbTypeZsetZiplist, rdbTypeZsetListpack:
		d.typ = lww.SortedSet
		pairs := r.pairs(compactDecoder(body[0]))
		for i := 0; i+1 < len(pairs); i += 2 {
			// Redis writes a score as an integer or as the string %.17g makes (inf too).
			score, err := strconv.ParseFloat(string(pairs[i+1]), 64)
			if err != nil || math.IsNaN(score) {
				r.err = errDumpFormat
			}
			d.strings, d.scores = append(d.strings, pairs[i]), append(d.scores, score)
		}
	case rdbTypeListZiplist:
		d = dumped{typ: lww.List, strings: r.compact(ziplistEntries)}
	case rdbTypeListQuicklist, rdbTypeListQuicklist2:
		d = dumped{typ: lww.List, strings: r.quicklist(body[0] == rdbTypeListQuicklist2)}
	default:
		return dumped{}, fmt.Errorf("ERR kura RESTOREs strings, lists, sets, sorted sets and hashes; the payload holds a value of Redis's RDB type %d", body[0])
	}
	switch {
	case r.err != nil:
		return dumped{}, r.err
	case len(r.p) > 0:
		return dumped{}, errDumpFormat
	case d.typ != lww.String && d.typ != lww.List && !distinctNames(d):
		return dumped{}, errDumpFormat
	}
	return d, nil
}

// distinctNames reports whether no member or field of d is named twice, which Redis's
// serialization of a set, sorted set or hash never writes.
func distinctNames(d dumped) bool {
	step := 1
	if d.typ == lww.Hash {
		step = 2
	}
	seen := make(map[string]bool, len(d.strings)/step)
	for i := 0; i < len(d.strings); i += step {
		if seen[string(d.strings[i])] {
			return false
		}
		seen[string(d.strings[i])] = true
	}
	return true
}

// rdbReader reads the RDB encoding; err is set by the first read that fails.
type rdbReader struct {
	p        []byte
	valueMax uint64
	err      error
}

func (r *rdbReader) take(n uint64) []byte {
	if r.err != nil || n > uint64(len(r.p)) {
		r.err = errDumpFormat
		return nil
	}
	b := r.p[:n]
	r.p = r.p[n:]
	return b
}

// length reads a length, or the kind of a special encoding when encoded is true.
func (r *rdbReader) length() (n uint64, encoded bool) {
	b := r.take(1)
	if b == nil {
		return 0, false
	}
	switch {
	case b[0]>>6 == rdbLen6:
		return uint64(b[0] & 0x3f), false
	case b[0]>>6 == rdbLen14:
		if next := r.take(1); next != nil {
			return uint64(b[0]&0x3f)<<8 | uint64(next[0]), false
		}
	case b[0] == rdbLen32:
		if next := r.take(4); next != nil {
			return uint64(binary.BigEndian.Uint32(next)), false
		}
	case b[0] == rdbLen64:
		if next := r.take(8); next != nil {
			return binary.BigEndian.Uint64(next), false
		}
	case b[0]>>6 == rdbEncoded:
		return uint64(b[0] & 0x3f), true
	default:
		r.err = errDumpFormat
	}
	return 0, false
}

// strings reads a length, then per items that many strings: a collection's in Redis's
// plain encoding.
func (r *rdbReader) strings(per int) [][]byte {
	var out [][]byte // not sized by the length read: the payload may lie about it
	for n := r.count(); n > 0 && r.err == nil; n-- {
		for range per {
			out = append(out, r.string())
		}
	}
	return out
}

// compactDecoder is the decoder of the compact encoding of RDB type typ.
func compactDecoder(typ byte) func([]byte) ([][]byte, bool) {
	if typ == rdbTypeHashZiplist || typ == rdbTypeZsetZiplist {
		return ziplistEntries
	}
	return listpackEntries
}

// compact reads a string holding a compact encoding and returns its elements, of
// which there must be at least one: Redis refuses an empty collection ("Bad data
// format"), never writing one.
func (r *rdbReader) compact(decode func([]byte) ([][]byte, bool)) [][]byte {
	blob := r.string()
	if r.err != nil {
		return nil
	}
	elems, ok := decode(blob)
	if !ok || len(elems) == 0 {
		r.err = errDumpFormat
	}
	return elems
}

// pairs reads a compact encoding of a hash or sorted set: field and value, or member
// and score, by turns.
func (r *rdbReader) pairs(decode func([]byte) ([][]byte, bool)) [][]byte {
	elems := r.compact(decode)
	if len(elems)%2 != 0 {
		r.err = errDumpFormat
	}
	return elems
}

// quicklist reads a list of Redis's quicklist encodings: a count of nodes, each a
// ziplist (RDB_TYPE_LIST_QUICKLIST) or, in Redis 7.0's (RDB_TYPE_LIST_QUICKLIST_2), its
// container then a listpack or one plain item. Empty nodes are skipped, as Redis skips
// them, but the list must hold an item.
func (r *rdbReader) quicklist(v2 bool) [][]byte {
	var items [][]byte
	for n := r.count(); n > 0 && r.err == nil; n-- {
		decode := ziplistEntries
		if v2 {
			switch r.count() {
			case quicklistPlain:
				items = append(items, r.string())
				continue
			case quicklistPacked:
				decode = listpackEntries
			default:
				r.err = errDumpFormat
				return nil
			}
		}
		blob := r.string()
		if r.err != nil {
			return nil
		}
		elems, ok := decode(blob)
		if !ok {
			r.err = errDumpFormat
		}
		items = append(items, elems...)
	}
	if len(items) == 0 {
		r.err = errDumpFormat
	}
	return items
}

// binaryScore reads a sorted set's score as RDB_TYPE_ZSET_2 writes it: a little-endian
// float64.
func (r *rdbReader) binaryScore() float64 {
	if b := r.take(8); b != nil {
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	}
	return 0
}

// textScore reads a sorted set's score as RDB_TYPE_ZSET writes it: a length byte, or
// 253, 254 or 255 for NaN, +inf and -inf, then that many bytes of its decimal text.
func (r *rdbReader) textScore() float64 {
	b := r.take(1)
	if b == nil {
		return 0
	}
	switch b[0] {
	case 253:
		return math.NaN()
	case 254:
		return math.Inf(1)
	case 255:
		return math.Inf(-1)
	}
	text := r.take(uint64(b[0]))
	score, err := strconv.ParseFloat(string(text), 64)
	if r.err == nil && err != nil {
		r.err = errDumpFormat
	}
	return score
}

// count reads a collection's length, which has no special encoding.
func (r *rdbReader) count() uint64 {
	n, encoded := r.length()
	if encoded {
		r.err = errDumpFormat
	}
	return n
}

// string reads a string in any of its encodings.
func (r *rdbReader) string() []byte {
	n, encoded := r.length()
	if !encoded {
		return r.take(n)
	}
	switch n {
	case rdbEncInt8:
		if b := r.take(1); b != nil {
			return strconv.AppendInt(nil, int64(int8(b[0])), 10)
		}
	case rdbEncInt16:
		if b := r.take(2); b != nil {
			return strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(b))), 10)
		}
	case rdbEncInt32:
		if b := r.take(4); b != nil {
			return strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(b))), 10)
		}
	case rdbEncLZF:
		compressed, _ := r.length()
		size, _ := r.length()
		data := r.take(compressed)
		if r.err != nil {
			return nil
		}
		if size > r.valueMax {
			r.err = fmt.Errorf("ERR invalid argument: the payload's string of %d bytes exceeds the limit of %d bytes", size, r.valueMax)
			return nil
		}
		out, ok := lzfDecompress(data, size)
		if !ok {
			r.err = errDumpFormat
		}
		return out
	default:
		r.err = errDumpFormat
	}
	return nil
}

// lzfDecompress expands LZF data (liblzf's format, which Redis compresses strings with)
// to exactly size bytes; ok is false for data that is not that.
func lzfDecompress(in []byte, size uint64) (out []byte, ok bool) {
	if size > uint64(len(in))*264 { // LZF expands a byte to at most 264 (a 3-byte back reference)
		return nil, false
	}
	out = make([]byte, 0, size)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 { // a run of ctrl+1 literal bytes
			n := ctrl + 1
			if i+n > len(in) || uint64(len(out)+n) > size {
				return nil, false
			}
			out = append(out, in[i:i+n]...)
			i += n
			continue
		}
		n := ctrl >> 5 // a back reference: n+2 bytes from an offset
		if n == 7 {
			if i >= len(in) {
				return nil, false
			}
			n += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, false
		}
		ref := len(out) - (ctrl&0x1f)<<8 - int(in[i]) - 1
		i++
		n += 2
		if ref < 0 || uint64(len(out)+n) > size {
			return nil, false
		}
		for j := range n { // byte by byte: the reference may overlap what it writes
			out = append(out, out[ref+j])
		}
	}
	if uint64(len(out)) != size {
		return nil, false
	}
	return out, true
}

// restoreCommand is RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]:
// the value of a DUMP payload written under key, with the deadline ttl milliseconds
// from now (at ttl, a Unix time in milliseconds, with ABSTTL; none for 0). A key that
// exists is refused (BUSYKEY) unless REPLACE. IDLETIME and FREQ are checked as Redis
// checks them and otherwise ignored: kura keeps no access times or counts. The checks
// come in Redis's order: options, an existing key, the TTL, the payload.
func restoreCommand(c *conn, args [][]byte) {
	var replace, absTTL, idle, freq bool
	for i := 4; i < len(args); i++ {
		more := len(args) - i - 1
		switch option := upper(args[i]); {
		case option == "REPLACE":
			replace = true
		case option == "ABSTTL":
			absTTL = true
		case option == "IDLETIME" && more >= 1 && !freq:
			n, ok := parseInt(args[i+1])
			switch {
			case !ok:
				c.w.Error(errNotInt)
				return
			case n < 0:
				c.w.Error("ERR Invalid IDLETIME value, must be >= 0")
				return
			}
			idle = true
			i++
		case option == "FREQ" && more >= 1 && !idle:
			n, ok := parseInt(args[i+1])
			switch {
			case !ok:
				c.w.Error(errNotInt)
				return
			case n < 0 || n > 255:
				c.w.Error("ERR Invalid FREQ value, must be >= 0 and <= 255")
				return
			}
			freq = true
			i++
		default:
			c.w.Error(errSyntax)
			return
		}
	}
	key := args[1]
	if !replace {
		_, found, err := c.get(key)
		switch {
		case err != nil:
			c.w.Error(errorReply(err))
			return
		case found:
			c.w.Error(errBusyKey)
			return
		}
	}
	ttl, ok := parseInt(args[2])
	switch {
	case !ok:
		c.w.Error(errNotInt)
		return
	case ttl < 0:
		c.w.Error("ERR Invalid TTL value, must be >= 0")
		return
	}
	d, err := undump(args[3], c.s.cfg.Limits.ValueBytesMax)
	if err != nil {
		c.w.Error(err.Error())
		return
	}
	now := time.Now()
	deadline := ttl
	if ttl != 0 && !absTTL {
		if ttl > math.MaxInt64-now.UnixMilli() {
			c.w.Error("ERR Invalid TTL value, must be >= 0")
			return
		}
		deadline += now.UnixMilli()
	}
	var applied bool
	if deadline != 0 && deadline <= now.UnixMilli() {
		// Already expired: as Redis, OK and no key.
		applied, err = c.restoreString(key, lww.Record{Tombstone: true}, replace)
	} else if d.typ == lww.String {
		applied, err = c.restoreString(key, lww.Record{Value: d.strings[0], ExpiresAt: expiryOf(deadline)}, replace)
	} else {
		applied, err = c.storeCollection(key, d.typ, expiryOf(deadline), c.restoredElements(key, d), replace)
	}
	switch {
	case err != nil:
		c.replyTransactError(err)
	case !applied:
		c.w.Error(errBusyKey) // set by another client since the check above
	default:
		c.w.SimpleString("OK")
	}
}

// restoreString writes next, a string or a tombstone, to key unless it exists and
// replace is false: applied reports whether it did.
func (c *conn) restoreString(key []byte, next lww.Record, replace bool) (applied bool, err error) {
	res, err := c.transact(key, writeIf(
		func(_ lww.Record, found bool) bool { return replace || !found },
		func(lww.Record, bool) lww.Record { return next }))
	if err == nil {
		err = c.resetReplaced(key, res)
	}
	return res.Applied, err
}

// restoredElements are the element records of collection key holding d, a list's
// items at positions pushed at its tail in order.
func (c *conn) restoredElements(key []byte, d dumped) coord.CollectionWrite {
	var w coord.CollectionWrite
	switch d.typ {
	case lww.List:
		// Positions of an empty list's tail, which Push makes for any count.
		positions, _ := list.Push(list.Tail, nil, len(d.strings), c.listStamp())
		for i, pos := range positions {
			w.Elements = append(w.Elements, lww.Record{Key: itemKey(key, pos), Value: d.strings[i]})
		}
	case lww.Set:
		w.Tagged = set.Set{}.Add(key, d.strings)
	case lww.Hash:
		for i := 0; i < len(d.strings); i += 2 {
			w.Elements = append(w.Elements, lww.Record{Key: fieldKey(key, d.strings[i]), Value: d.strings[i+1]})
		}
	case lww.SortedSet:
		for i, name := range d.strings {
			w.Elements = append(w.Elements, zset.Set(key, name, d.scores[i], 0, false)...)
		}
	}
	return w
}

const errBusyKey = "BUSYKEY Target key name already exists."
