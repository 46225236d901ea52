package storage

import (
	"bytes"
	"errors"
	"github.com/kuradb/kura/internal/core/lww"
	"strings"
	"testing"
)

func TestRecordValidate(t *testing.T) {
	tests := []struct {
		name    string
		r       lww.Record
		wantErr bool
	}{
		{"value", lww.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 1}, false},
		{"empty value and nil key", lww.Record{Timestamp: 1}, false},
		{"tombstone", lww.Record{Key: []byte("k"), Timestamp: 1, Tombstone: true}, false},
		{"zero timestamp", lww.Record{Key: []byte("k"), Value: []byte("v")}, true},
		{"tombstone with value", lww.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 1, Tombstone: true}, true},
		{"typed value", lww.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 1, Type: lww.Hash}, false},
		{"largest known type", lww.Record{Key: []byte("k"), Timestamp: 1, Type: lww.TypeMax}, false},
		{"typed tombstone", lww.Record{Key: []byte("k"), Timestamp: 1, Tombstone: true, Type: lww.Set}, true},
		{"unknown type", lww.Record{Key: []byte("k"), Timestamp: 1, Type: lww.TypeMax + 1}, true},
		{"type past the flag bits", lww.Record{Key: []byte("k"), Timestamp: 1, Type: 0xff}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validateRecord(tt.r)
			if gotErr := errors.Is(err, ErrInvalidRecord); gotErr != tt.wantErr {
				t.Errorf("validateRecord = %v, want ErrInvalidRecord: %t", err, tt.wantErr)
			}
		})
	}
}

func TestValueRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		r    lww.Record
	}{
		{"value", lww.Record{Key: []byte("k"), Value: []byte("hello"), Timestamp: 0x0123456789abcdef}},
		{"binary value", lww.Record{Key: []byte{0, 0xff}, Value: []byte{0, 1, 0xff}, Timestamp: 1}},
		{"empty value", lww.Record{Key: []byte("k"), Timestamp: 2}},
		{"tombstone", lww.Record{Key: []byte("k"), Timestamp: 3, Tombstone: true}},
		{"expiring value", lww.Record{Key: []byte("k"), Value: []byte("hello"), Timestamp: 4, ExpiresAt: 0xfedcba9876543210}},
		{"expiring empty value", lww.Record{Key: []byte("k"), Timestamp: 5, ExpiresAt: 1}},
		{"expired value rewritten as tombstone", lww.Record{Key: []byte("k"), Timestamp: 6, Tombstone: true, ExpiresAt: 7}},
		{"deadline before the write", lww.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 9, ExpiresAt: 8}},
		{"hash header", lww.Record{Key: []byte("k"), Value: []byte("h"), Timestamp: 10, Type: lww.Hash}},
		{"empty set header", lww.Record{Key: []byte("k"), Timestamp: 11, Type: lww.Set}},
		{"expiring list header", lww.Record{Key: []byte("k"), Value: []byte("l"), Timestamp: 12, ExpiresAt: 13, Type: lww.List}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			encoded := encodeValue(tt.r)
			got, err := decodeValue(tt.r.Key, encoded)
			if err != nil {
				t.Fatalf("decodeValue: %v", err)
			}
			if !bytes.Equal(got.Key, tt.r.Key) || !bytes.Equal(got.Value, tt.r.Value) ||
				got.Timestamp != tt.r.Timestamp || got.Tombstone != tt.r.Tombstone || got.ExpiresAt != tt.r.ExpiresAt || got.Type != tt.r.Type {
				t.Errorf("round trip = %+v, want %+v", got, tt.r)
			}
			encoded[len(encoded)-1] ^= 0xff // the decoded record must not alias the input
			if len(tt.r.Value) > 0 && !bytes.Equal(got.Value, tt.r.Value) {
				t.Errorf("decoded value changed with its input buffer")
			}
		})
	}
}

// TestValueEncodingVersions pins the bytes of both versions: a record without expiry
// keeps version 1's layout, so values written before expiry existed decode unchanged,
// and one with an expiry takes version 2, its deadline after the timestamp. A type takes
// bits 1-3 of the flag byte in either version; a string's are zero, so string records
// (every record written before types) keep their bytes.
func TestValueEncodingVersions(t *testing.T) {
	tests := []struct {
		name    string
		r       lww.Record
		encoded []byte
	}{
		{"version 1 value", lww.Record{Key: []byte("k"), Value: []byte("ab"), Timestamp: 0x0102},
			[]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 2, 'a', 'b'}},
		{"version 1 tombstone", lww.Record{Key: []byte("k"), Timestamp: 0x0102, Tombstone: true},
			[]byte{1, 1, 0, 0, 0, 0, 0, 0, 1, 2}},
		{"version 2 value", lww.Record{Key: []byte("k"), Value: []byte("ab"), Timestamp: 0x0102, ExpiresAt: 0x0304},
			[]byte{2, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 3, 4, 'a', 'b'}},
		{"version 2 tombstone", lww.Record{Key: []byte("k"), Timestamp: 0x0102, Tombstone: true, ExpiresAt: 0x0304},
			[]byte{2, 1, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 3, 4}},
		{"version 1 hash", lww.Record{Key: []byte("k"), Value: []byte("ab"), Timestamp: 0x0102, Type: lww.Hash},
			[]byte{1, 0x02, 0, 0, 0, 0, 0, 0, 1, 2, 'a', 'b'}},
		{"version 1 sorted set", lww.Record{Key: []byte("k"), Timestamp: 0x0102, Type: lww.SortedSet},
			[]byte{1, 0x06, 0, 0, 0, 0, 0, 0, 1, 2}},
		{"version 2 list", lww.Record{Key: []byte("k"), Value: []byte("ab"), Timestamp: 0x0102, ExpiresAt: 0x0304, Type: lww.List},
			[]byte{2, 0x08, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 3, 4, 'a', 'b'}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := encodeValue(tt.r); !bytes.Equal(got, tt.encoded) {
				t.Errorf("encodeValue = %x, want %x", got, tt.encoded)
			}
			got, err := decodeValue([]byte("k"), tt.encoded)
			if err != nil {
				t.Fatalf("decodeValue: %v", err)
			}
			if describe(got) != describe(tt.r) || got.ExpiresAt != tt.r.ExpiresAt || got.Type != tt.r.Type {
				t.Errorf("decodeValue = %+v, want %+v", got, tt.r)
			}
		})
	}
}

func TestDecodeValueCorrupt(t *testing.T) {
	valid := encodeValue(lww.Record{Value: []byte("v"), Timestamp: 9})
	expiring := encodeValue(lww.Record{Value: []byte("v"), Timestamp: 9, ExpiresAt: 10})
	tests := []struct {
		name    string
		encoded []byte
	}{
		{"nil", nil},
		{"shorter than header", valid[:valueHeaderSize-1]},
		{"unknown version", append([]byte{3}, valid[1:]...)},
		{"version 2 shorter than its header", expiring[:expiringHeaderSize-1]},
		{"version 2 without expiry", append([]byte{valueVersionExpiring}, valid[1:]...)},
		{"version 2 with a zero expiry", append(append([]byte{valueVersionExpiring}, valid[1:valueHeaderSize]...), make([]byte, 8)...)},
		{"version 2 tombstone with value", append([]byte{valueVersionExpiring, flagTombstone}, expiring[2:]...)},
		{"version 2 unknown flag", append([]byte{valueVersionExpiring, 0x10}, expiring[2:]...)},
		{"unknown flag", append([]byte{valueVersion, 0x10}, valid[2:]...)},
		{"highest flag", append([]byte{valueVersion, 0x80}, valid[2:]...)},
		{"tombstone with value", append([]byte{valueVersion, flagTombstone}, valid[2:]...)},
		{"unknown type", append([]byte{valueVersion, byte(lww.TypeMax+1) << flagTypeShift}, valid[2:]...)},
		{"largest type the bits hold", append([]byte{valueVersion, flagTypeMask}, valid[2:]...)},
		{"typed tombstone", append([]byte{valueVersion, flagTombstone | byte(lww.Hash)<<flagTypeShift}, valid[2:valueHeaderSize]...)},
		{"version 2 typed tombstone", append([]byte{valueVersionExpiring, flagTombstone | byte(lww.List)<<flagTypeShift}, expiring[2:expiringHeaderSize]...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeValue([]byte("the-key"), tt.encoded)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeValue error = %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), "the-key") {
				t.Errorf("error %q does not name the key", err)
			}
		})
	}
}

// FuzzDecodeValue checks decoding arbitrary bytes never panics, and whatever decodes
// re-encodes to the same bytes.
func FuzzDecodeValue(f *testing.F) {
	f.Add(encodeValue(lww.Record{Value: []byte("v"), Timestamp: 9}))
	f.Add(encodeValue(lww.Record{Timestamp: 9, Tombstone: true}))
	f.Add(encodeValue(lww.Record{Value: []byte("v"), Timestamp: 9, ExpiresAt: 10}))
	f.Add(encodeValue(lww.Record{Timestamp: 9, Tombstone: true, ExpiresAt: 10}))
	f.Add(encodeValue(lww.Record{Value: []byte("v"), Timestamp: 9, Type: lww.Hash}))
	f.Add(encodeValue(lww.Record{Value: []byte("v"), Timestamp: 9, ExpiresAt: 10, Type: lww.List}))
	f.Add([]byte{valueVersion})
	f.Add([]byte{valueVersionExpiring})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, encoded []byte) {
		r, err := decodeValue([]byte("k"), encoded)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeValue error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if reencoded := encodeValue(r); !bytes.Equal(reencoded, encoded) {
			t.Fatalf("decode then encode = %x, want %x", reencoded, encoded)
		}
	})
}
