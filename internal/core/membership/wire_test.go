package membership

import (
	"errors"
	"math"
	"testing"
)

func TestWireHelpersRoundTrip(t *testing.T) {
	values := []uint64{0, 1, 127, 128, 16383, 16384, 1 << 35, math.MaxUint64}
	strings := []string{"", "a", "n0042", string(make([]byte, 300))}
	var b []byte
	wantSize := 0
	for _, v := range values {
		b = AppendUvarint(b, v)
		wantSize += UvarintSize(v)
	}
	for _, s := range strings {
		b = AppendString(b, s)
		wantSize += StringSize(s)
	}
	b = AppendUint64(b, 0xdeadbeef)
	wantSize += 8
	if len(b) != wantSize {
		t.Fatalf("encoded %d bytes, sizes say %d", len(b), wantSize)
	}
	d := NewDecoder(b)
	for _, v := range values {
		if got := d.Uvarint(); got != v {
			t.Fatalf("uvarint %d, want %d", got, v)
		}
	}
	for _, s := range strings {
		if got := d.String(); got != s {
			t.Fatalf("string %q, want %q", got, s)
		}
	}
	if got := d.Uint64(); got != 0xdeadbeef {
		t.Fatalf("uint64 %x", got)
	}
	if err := d.Finish(); err != nil {
		t.Fatal(err)
	}
}

func TestDecoderErrors(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		read func(d *Decoder)
	}{
		{"empty byte", nil, func(d *Decoder) { d.Byte() }},
		{"truncated varint", []byte{0x80}, func(d *Decoder) { d.Uvarint() }},
		{"string past end", []byte{5, 'a'}, func(d *Decoder) { _ = d.String() }},
		{"count too big", []byte{200, 1}, func(d *Decoder) { d.Count(1) }},
		{"short uint64", []byte{1, 2, 3}, func(d *Decoder) { d.Uint64() }},
		{"trailing bytes", []byte{1, 2}, func(d *Decoder) { d.Byte() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder(tt.data)
			tt.read(d)
			if err := d.Finish(); !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}
