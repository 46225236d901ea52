package membership

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzDecoder runs the Decoder's reads over arbitrary bytes. The input's first byte says
// how many of the next bytes are a program, one read per byte, and the rest is the buffer
// the program reads. No read may panic or run past the buffer; Count must never promise
// more elements than the bytes left could hold; the first error must stick; and the
// values read, appended again with the Append helpers, must read back the same.
func FuzzDecoder(f *testing.F) {
	f.Add([]byte{3, opString, opUvarint, opUint64, 2, 'h', 'i', 0x80, 0x01, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{2, opCount | 3<<3, opByte, 0xff, 0xff, 0xff, 0xff, 0x0f, 1})
	f.Add([]byte{2, opString, opByte, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{1, opUvarint, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		n := min(int(data[0]), len(data)-1)
		program, buf := data[1:1+n], data[1+n:]
		d := NewDecoder(buf)
		var values []any
		for _, op := range program {
			before := len(d.buf)
			failed := d.Err() != nil
			v := run(d, op)
			if failed && !reflect.ValueOf(v).IsZero() {
				t.Fatalf("op %#x after an error read %v, want a zero value", op, v)
			}
			if failed && d.Err() == nil {
				t.Fatalf("op %#x cleared the decoder's error", op)
			}
			if len(d.buf) > before {
				t.Fatalf("op %#x grew the buffer from %d to %d bytes", op, before, len(d.buf))
			}
			if count, ok := v.(int); ok && op&7 == opCount && d.Err() == nil {
				if minBytes := max(int(op>>3), 1); count*minBytes > len(d.buf) {
					t.Fatalf("Count(%d) = %d with %d bytes left", minBytes, count, len(d.buf))
				}
			}
			values = append(values, v)
		}
		if err := d.Finish(); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("Finish: %v, want ErrMalformed", err)
		}
		if d.Err() != nil {
			return
		}
		// Every read succeeded: encode what was read and read it again.
		var enc []byte
		for i, op := range program {
			switch v := values[i].(type) {
			case byte:
				enc = append(enc, v)
			case uint64:
				if op&7 == opUvarint {
					enc = AppendUvarint(enc, v)
				} else {
					enc = AppendUint64(enc, v)
				}
			case int:
				enc = AppendUvarint(enc, uint64(v))
			case string:
				enc = AppendString(enc, v)
			}
		}
		// Padding keeps the Counts valid: they are checked against the bytes left.
		enc = append(enc, make([]byte, len(buf))...)
		again := NewDecoder(enc)
		for i, op := range program {
			if v := run(again, op); v != values[i] {
				t.Fatalf("op %#x read %v, then %v from the re-encoding", op, values[i], v)
			}
		}
	})
}

// The reads of FuzzDecoder's programs, in a program byte's low 3 bits (5 to 7 read a
// Uint64 too); Count takes its minBytes from the high 5.
const (
	opByte = iota
	opUvarint
	opCount
	opString
	opUint64
)

// run performs one read of a FuzzDecoder program.
func run(d *Decoder, op byte) any {
	switch op & 7 {
	case opByte:
		return d.Byte()
	case opUvarint:
		return d.Uvarint()
	case opCount:
		return d.Count(int(op >> 3))
	case opString:
		return d.String()
	default:
		return d.Uint64()
	}
}

// FuzzEndpointState decodes arbitrary bytes as one endpoint state, the part of gossip
// messages that carries a node's address, DC and status. Decoding must not panic, must
// fail with ErrMalformed, and a state that decodes must re-encode to WireSize bytes that
// decode to the same state.
func FuzzEndpointState(f *testing.F) {
	local := NewLocalState(Config{ID: "tokyo-1", DC: "tokyo", Addr: "127.0.0.1:7101", Generation: 1700000000,
		AppState: map[string]string{"tokens": "1,2,3"}})
	f.Add(local.AppendTo(nil))
	f.Add((&EndpointState{ID: "x"}).AppendTo(nil))
	f.Add([]byte{1, 'x', 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f}) // more app values than bytes
	f.Fuzz(func(t *testing.T, data []byte) {
		d := NewDecoder(data)
		s := DecodeEndpointState(d)
		if err := d.Finish(); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodeEndpointState(%x): %v, want ErrMalformed", data, err)
			}
			return
		}
		enc := s.AppendTo(nil)
		if len(enc) != s.WireSize() {
			t.Fatalf("WireSize %d, encoded %d bytes", s.WireSize(), len(enc))
		}
		d = NewDecoder(enc)
		if again := DecodeEndpointState(d); d.Finish() != nil || !reflect.DeepEqual(again, s) {
			t.Fatalf("state %+v re-encoded decodes as %+v (%v)", s, again, d.Err())
		}
	})
}
