package resp

import (
	"encoding/binary"
	"strconv"
)

// Redis's compact encodings of a small collection, as RESTORE reads them: the listpack
// (Redis 7.0's hashes, sorted sets and list nodes), the ziplist (the same before 7.0:
// Redis 7.0 restores a 6.2 payload) and the intset (a set of integers). Each is one RDB
// string holding the whole structure; its elements are returned as strings, integers
// in decimal, as Redis's commands answer them. Every check of Redis's deep integrity
// validation (sanitize-dump-payload yes) is made whatever that setting, so a malformed
// structure is refused rather than partly restored.

// The RDB types of the compact encodings.
const (
	rdbTypeListZiplist    = 10 // a list in one ziplist (before Redis 3.2)
	rdbTypeSetIntset      = 11
	rdbTypeZsetZiplist    = 12 // member, score, member, score... (before 7.0)
	rdbTypeHashZiplist    = 13 // field, value, field, value... (before 7.0)
	rdbTypeListQuicklist  = 14 // a list as nodes, each a ziplist (3.2 to 6.2)
	rdbTypeHashListpack   = 16
	rdbTypeZsetListpack   = 17
	rdbTypeListQuicklist2 = 18 // a list as nodes, each a listpack or one plain item (7.0)
)

// A quicklist node's container in RDB_TYPE_LIST_QUICKLIST_2.
const (
	quicklistPlain  = 1 // one item, as a string
	quicklistPacked = 2 // a listpack of items
)

// countUnknown is the element count of a listpack's or ziplist's header that says the
// count did not fit 16 bits: the entries have to be counted.
const countUnknown = 0xffff

// listpackEntries returns the entries of a listpack, or ok false if lp is not exactly
// one: its header's byte count, entry count and end mark, and each entry's encoding and
// back length (the entry's size, which a listpack is walked backwards by) are checked.
func listpackEntries(lp []byte) (entries [][]byte, ok bool) {
	const headerSize = 6
	if len(lp) < headerSize+1 || binary.LittleEndian.Uint32(lp) != uint32(len(lp)) || lp[len(lp)-1] != 0xff {
		return nil, false
	}
	count := binary.LittleEndian.Uint16(lp[4:])
	p := lp[headerSize : len(lp)-1]
	for len(p) > 0 {
		entry, size, ok := listpackEntry(p)
		if !ok {
			return nil, false
		}
		back := appendBacklen(nil, size)
		if len(p) < size+len(back) || string(p[size:size+len(back)]) != string(back) {
			return nil, false
		}
		entries = append(entries, entry)
		p = p[size+len(back):]
	}
	if count != countUnknown && int(count) != len(entries) {
		return nil, false
	}
	return entries, true
}

// listpackEntry decodes the entry p starts with: its value and its size without the
// back length.
func listpackEntry(p []byte) (value []byte, size int, ok bool) {
	str := func(header, n int) ([]byte, int, bool) {
		if n > len(p)-header {
			return nil, 0, false
		}
		return p[header : header+n], header + n, true
	}
	integer := func(n int) ([]byte, int, bool) { // n bytes after the encoding byte
		if len(p) < 1+n {
			return nil, 0, false
		}
		return strconv.AppendInt(nil, leSigned(p[1:1+n]), 10), 1 + n, true
	}
	b := p[0]
	switch {
	case b&0x80 == 0: // 7-bit unsigned integer
		return strconv.AppendInt(nil, int64(b), 10), 1, true
	case b&0xc0 == 0x80: // string of up to 63 bytes
		return str(1, int(b&0x3f))
	case b&0xe0 == 0xc0: // 13-bit signed integer
		if len(p) < 2 {
			return nil, 0, false
		}
		v := int64(uint64(b&0x1f)<<8|uint64(p[1])) << 51 >> 51
		return strconv.AppendInt(nil, v, 10), 2, true
	case b&0xf0 == 0xe0: // string of up to 4095 bytes
		if len(p) < 2 {
			return nil, 0, false
		}
		return str(2, int(b&0x0f)<<8|int(p[1]))
	case b == 0xf0: // string with a 32-bit length
		if len(p) < 5 {
			return nil, 0, false
		}
		return str(5, int(binary.LittleEndian.Uint32(p[1:])))
	case b == 0xf1:
		return integer(2)
	case b == 0xf2:
		return integer(3)
	case b == 0xf3:
		return integer(4)
	case b == 0xf4:
		return integer(8)
	}
	return nil, 0, false // 0xf5 to 0xfe are no encoding; 0xff ends the listpack, not here
}

// appendBacklen appends a listpack entry's back length for an entry of size bytes, as
// Redis's lpEncodeBacklen writes it: 7 bits a byte, most significant first, every byte
// but the first with its top bit set.
func appendBacklen(p []byte, size int) []byte {
	n := 1
	for _, limit := range []int{127, 16382, 2097150, 268435454} { // the largest size of each length
		if size <= limit {
			break
		}
		n++
	}
	for i := n - 1; i >= 0; i-- {
		b := byte(size>>(7*i)) & 0x7f
		if i != n-1 {
			b |= 0x80
		}
		p = append(p, b)
	}
	return p
}

// ziplistEntries returns the entries of a ziplist, or ok false if zl is not exactly
// one: its header's byte count, tail offset and entry count, its end mark, and each
// entry's encoding and previous-entry length are checked.
func ziplistEntries(zl []byte) (entries [][]byte, ok bool) {
	const headerSize = 10
	if len(zl) < headerSize+1 || binary.LittleEndian.Uint32(zl) != uint32(len(zl)) || zl[len(zl)-1] != 0xff {
		return nil, false
	}
	tail := int(binary.LittleEndian.Uint32(zl[4:]))
	count := binary.LittleEndian.Uint16(zl[8:])
	off, last, prevSize := headerSize, headerSize, 0
	for off < len(zl)-1 {
		entry, size, prev, ok := ziplistEntry(zl[off : len(zl)-1])
		if !ok || prev != prevSize {
			return nil, false
		}
		entries = append(entries, entry)
		last, prevSize = off, size
		off += size
	}
	if tail != last || count != countUnknown && int(count) != len(entries) {
		return nil, false
	}
	return entries, true
}

// ziplistEntry decodes the entry p starts with: its value, its whole size and the size
// of the entry before it that it records.
func ziplistEntry(p []byte) (value []byte, size, prev int, ok bool) {
	if len(p) == 0 {
		return nil, 0, 0, false
	}
	head := 1
	prev = int(p[0])
	switch {
	case p[0] == 0xfe:
		if len(p) < 5 {
			return nil, 0, 0, false
		}
		head, prev = 5, int(binary.LittleEndian.Uint32(p[1:]))
	case p[0] == 0xff:
		return nil, 0, 0, false
	}
	if len(p) <= head {
		return nil, 0, 0, false
	}
	b, rest := p[head], p[head+1:]
	str := func(lenBytes, n int) ([]byte, int, int, bool) {
		if n > len(rest)-lenBytes {
			return nil, 0, 0, false
		}
		return rest[lenBytes : lenBytes+n], head + 1 + lenBytes + n, prev, true
	}
	integer := func(n int) ([]byte, int, int, bool) { // a little-endian signed integer of n bytes
		if len(rest) < n {
			return nil, 0, 0, false
		}
		return strconv.AppendInt(nil, leSigned(rest[:n]), 10), head + 1 + n, prev, true
	}
	switch {
	case b>>6 == 0: // string of up to 63 bytes
		return str(0, int(b&0x3f))
	case b>>6 == 1: // string of up to 16383 bytes, its length big-endian
		if len(rest) < 1 {
			return nil, 0, 0, false
		}
		return str(1, int(b&0x3f)<<8|int(rest[0]))
	case b>>6 == 2: // string with a 32-bit big-endian length
		if len(rest) < 4 {
			return nil, 0, 0, false
		}
		return str(4, int(binary.BigEndian.Uint32(rest)))
	case b == 0xfe:
		return integer(1)
	case b == 0xc0:
		return integer(2)
	case b == 0xf0:
		return integer(3)
	case b == 0xd0:
		return integer(4)
	case b == 0xe0:
		return integer(8)
	case b >= 0xf1 && b <= 0xfd: // 0 to 12 in the encoding byte itself
		return strconv.AppendInt(nil, int64(b&0x0f)-1, 10), head + 1, prev, true
	}
	return nil, 0, 0, false
}

// intsetMembers returns the members of an intset, or ok false if is is not exactly one
// holding at least one: its width is 2, 4 or 8 bytes, its length matches its count, and
// its integers are in strictly increasing order, as Redis keeps them.
func intsetMembers(is []byte) (members [][]byte, ok bool) {
	if len(is) < 8 {
		return nil, false
	}
	width := uint64(binary.LittleEndian.Uint32(is))
	count := uint64(binary.LittleEndian.Uint32(is[4:]))
	if width != 2 && width != 4 && width != 8 || count == 0 || uint64(len(is)-8) != width*count {
		return nil, false
	}
	var prev int64
	for i := range count {
		v := leSigned(is[8+i*width : 8+(i+1)*width])
		if i > 0 && v <= prev {
			return nil, false
		}
		prev = v
		members = append(members, strconv.AppendInt(nil, v, 10))
	}
	return members, true
}

// leSigned is the little-endian two's-complement integer of b's 1 to 8 bytes.
func leSigned(b []byte) int64 {
	var u uint64
	for i := len(b) - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	shift := 64 - 8*len(b)
	return int64(u<<shift) >> shift
}
