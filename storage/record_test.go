package storage

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/kuradb/kura/hlc"
)

func TestNewer(t *testing.T) {
	value := func(ts hlc.Timestamp, v string) Record { return Record{Value: []byte(v), Timestamp: ts} }
	tombstone := func(ts hlc.Timestamp) Record { return Record{Timestamp: ts, Tombstone: true} }
	tests := []struct {
		name string
		a, b Record
		want bool
	}{
		{"higher timestamp wins", value(2, "a"), value(1, "z"), true},
		{"lower timestamp loses", value(1, "z"), value(2, "a"), false},
		{"higher-timestamp value beats tombstone", value(2, "a"), tombstone(1), true},
		{"higher-timestamp tombstone beats value", tombstone(2), value(1, "a"), true},
		{"equal timestamps: tombstone beats value", tombstone(5), value(5, "zzz"), true},
		{"equal timestamps: value loses to tombstone", value(5, "zzz"), tombstone(5), false},
		{"equal timestamps: larger value wins", value(5, "b"), value(5, "a"), true},
		{"equal timestamps: smaller value loses", value(5, "a"), value(5, "b"), false},
		{"equal timestamps: longer value with same prefix wins", value(5, "ab"), value(5, "a"), true},
		{"identical values do not replace", value(5, "a"), value(5, "a"), false},
		{"identical tombstones do not replace", tombstone(5), tombstone(5), false},
		{"empty value equals nil value", Record{Value: []byte{}, Timestamp: 5}, value(5, ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Newer(tt.a, tt.b); got != tt.want {
				t.Errorf("Newer(%+v, %+v) = %t, want %t", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

// TestNewerConvergesInAnyOrder folds every arrival order of a set of competing writes
// and checks all replicas end on the same record.
func TestNewerConvergesInAnyOrder(t *testing.T) {
	writes := []Record{
		{Value: []byte("b"), Timestamp: 7},
		{Value: []byte("a"), Timestamp: 7},
		{Timestamp: 7, Tombstone: true},
		{Value: []byte("z"), Timestamp: 6},
	}
	want := writes[2]
	var permute func(order []Record, rest []Record)
	permute = func(order []Record, rest []Record) {
		if len(rest) == 0 {
			winner := order[0]
			for _, r := range order[1:] {
				if Newer(r, winner) {
					winner = r
				}
			}
			if winner.Tombstone != want.Tombstone || winner.Timestamp != want.Timestamp || !bytes.Equal(winner.Value, want.Value) {
				t.Errorf("arrival order %v converged to %+v, want %+v", order, winner, want)
			}
			return
		}
		for i := range rest {
			others := append(append([]Record{}, rest[:i]...), rest[i+1:]...)
			permute(append(order, rest[i]), others)
		}
	}
	permute(nil, writes)
}

func TestRecordValidate(t *testing.T) {
	tests := []struct {
		name    string
		r       Record
		wantErr bool
	}{
		{"value", Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 1}, false},
		{"empty value and nil key", Record{Timestamp: 1}, false},
		{"tombstone", Record{Key: []byte("k"), Timestamp: 1, Tombstone: true}, false},
		{"zero timestamp", Record{Key: []byte("k"), Value: []byte("v")}, true},
		{"tombstone with value", Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 1, Tombstone: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.validate()
			if gotErr := errors.Is(err, ErrInvalidRecord); gotErr != tt.wantErr {
				t.Errorf("validate() = %v, want ErrInvalidRecord: %t", err, tt.wantErr)
			}
		})
	}
}

func TestValueRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		r    Record
	}{
		{"value", Record{Key: []byte("k"), Value: []byte("hello"), Timestamp: 0x0123456789abcdef}},
		{"binary value", Record{Key: []byte{0, 0xff}, Value: []byte{0, 1, 0xff}, Timestamp: 1}},
		{"empty value", Record{Key: []byte("k"), Timestamp: 2}},
		{"tombstone", Record{Key: []byte("k"), Timestamp: 3, Tombstone: true}},
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
	valid := encodeValue(Record{Value: []byte("v"), Timestamp: 9})
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
	f.Add(encodeValue(Record{Value: []byte("v"), Timestamp: 9}))
	f.Add(encodeValue(Record{Timestamp: 9, Tombstone: true}))
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
