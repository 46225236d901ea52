package membership

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// The helpers below give every core the same compact encoding: unsigned
// varints for numbers and lengths, and length-prefixed strings. Each Append
// has a Size twin so that WireSize never has to encode.

// UvarintSize is the encoded length of v as an unsigned varint.
func UvarintSize(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// AppendUvarint appends v as an unsigned varint.
func AppendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

// StringSize is the encoded length of s: its length as a varint, then s.
func StringSize(s string) int { return UvarintSize(uint64(len(s))) + len(s) }

// AppendString appends s with its length.
func AppendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// AppendUint64 appends v as 8 little-endian bytes (for hashes, which do not
// shrink as varints).
func AppendUint64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

// Decoder reads what the Append helpers wrote. The first error sticks: later
// reads return zero values, and Err reports it, so callers check once.
type Decoder struct {
	buf []byte
	err error
}

// NewDecoder reads from data.
func NewDecoder(data []byte) *Decoder { return &Decoder{buf: data} }

// Err is the first decoding error, wrapping ErrMalformed.
func (d *Decoder) Err() error { return d.err }

// fail records the first error.
func (d *Decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", ErrMalformed, what)
	}
}

// Byte reads one byte.
func (d *Decoder) Byte() byte {
	if d.err != nil || len(d.buf) < 1 {
		d.fail("byte")
		return 0
	}
	v := d.buf[0]
	d.buf = d.buf[1:]
	return v
}

// Uvarint reads an unsigned varint.
func (d *Decoder) Uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.fail("varint")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

// Count reads a varint element count and checks it against the bytes left,
// given that each element takes at least minBytes, so a corrupt count cannot
// make the caller allocate a huge slice.
func (d *Decoder) Count(minBytes int) int {
	n := d.Uvarint()
	if d.err != nil {
		return 0
	}
	if minBytes < 1 {
		minBytes = 1
	}
	if n > uint64(len(d.buf)/minBytes) {
		d.fail("count")
		return 0
	}
	return int(n)
}

// String reads a length-prefixed string.
func (d *Decoder) String() string {
	n := d.Uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.buf)) {
		d.fail("string length")
		return ""
	}
	s := string(d.buf[:n])
	d.buf = d.buf[n:]
	return s
}

// Uint64 reads 8 little-endian bytes.
func (d *Decoder) Uint64() uint64 {
	if d.err != nil || len(d.buf) < 8 {
		d.fail("uint64")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.buf)
	d.buf = d.buf[8:]
	return v
}

// Finish reports an error if bytes are left over or reading failed.
func (d *Decoder) Finish() error {
	if d.err == nil && len(d.buf) != 0 {
		d.fail(fmt.Sprintf("trailing %d bytes", len(d.buf)))
	}
	return d.err
}
