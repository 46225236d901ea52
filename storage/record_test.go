package storage

import (
	"bytes"
	"errors"
	"github.com/kuradb/kura/lww"
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			encoded := encodeValue(tt.r)
			got, err := decodeValue(tt.r.Key, encoded)
			if err != nil {
				t.Fatalf("decodeValue: %v", err)
			}
			if !bytes.Equal(got.Key, tt.r.Key) || !bytes.Equal(got.Value, tt.r.Value) ||
				got.Timestamp != tt.r.Timestamp || got.Tombstone != tt.r.Tombstone {
				t.Errorf("round trip = %+v, want %+v", got, tt.r)
			}
			encoded[len(encoded)-1] ^= 0xff // the decoded record must not alias the input
			if len(tt.r.Value) > 0 && !bytes.Equal(got.Value, tt.r.Value) {
				t.Errorf("decoded value changed with its input buffer")
			}
		})
	}
}

func TestDecodeValueCorrupt(t *testing.T) {
	valid := encodeValue(lww.Record{Value: []byte("v"), Timestamp: 9})
	tests := []struct {
		name    string
		encoded []byte
	}{
		{"nil", nil},
		{"shorter than header", valid[:valueHeaderSize-1]},
		{"unknown version", append([]byte{2}, valid[1:]...)},
		{"unknown flag", append([]byte{valueVersion, 0x02}, valid[2:]...)},
		{"tombstone with value", append([]byte{valueVersion, flagTombstone}, valid[2:]...)},
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
	f.Add([]byte{valueVersion})
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
