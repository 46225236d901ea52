package erasure

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestParseReadsBackTheHeader(t *testing.T) {
	code, err := New(5, 3)
	if err != nil {
		t.Fatal(err)
	}
	value := []byte("a value of twenty-six byte")
	chunks, err := code.Encode(value, 0x0102030405060708)
	if err != nil {
		t.Fatal(err)
	}
	for i, raw := range chunks {
		if len(raw) != code.ChunkBytes(len(value)) {
			t.Fatalf("chunk %d is %d bytes, want %d", i, len(raw), code.ChunkBytes(len(value)))
		}
		c, err := Parse(raw)
		if err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		want := Chunk{Index: i, M: 5, K: 3, Length: len(value), Timestamp: 0x0102030405060708}
		c.Shard = nil
		if fmt.Sprint(c) != fmt.Sprint(want) {
			t.Fatalf("chunk %d parsed as %+v, want %+v", i, c, want)
		}
		if ts, ok := HeaderTimestamp(raw); !ok || ts != want.Timestamp {
			t.Fatalf("chunk %d: HeaderTimestamp = %x, %v; want %x", i, ts, ok, want.Timestamp)
		}
	}
	if _, ok := HeaderTimestamp(chunks[0][:HeaderBytes-1]); ok {
		t.Fatal("HeaderTimestamp read a timestamp from a chunk shorter than its header")
	}
	// The data shards are the value itself, in order, zero-padded.
	var joined []byte
	for _, raw := range chunks[:3] {
		joined = append(joined, raw[HeaderBytes:]...)
	}
	if !bytes.Equal(joined[:len(value)], value) || !bytes.Equal(joined[len(value):], make([]byte, len(joined)-len(value))) {
		t.Fatalf("data shards %q do not lay out the value %q", joined, value)
	}
}

func TestParseCatchesEveryFlippedBit(t *testing.T) {
	code, err := New(3, 2)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := code.Encode([]byte("checksummed"), 42)
	if err != nil {
		t.Fatal(err)
	}
	raw := chunks[2]
	for bit := 0; bit < len(raw)*8; bit++ {
		damaged := bytes.Clone(raw)
		damaged[bit/8] ^= 1 << (bit % 8)
		if _, err := Parse(damaged); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("bit %d flipped: err = %v, want ErrCorrupt", bit, err)
		}
	}
}

func TestParseRejectsMalformedChunks(t *testing.T) {
	code, err := New(3, 2)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := code.Encode([]byte("value"), 7)
	if err != nil {
		t.Fatal(err)
	}
	// resealed rewrites a header field and recomputes the checksum, so that only the
	// header's sanity checks can catch it.
	resealed := func(edit func(raw []byte)) []byte {
		raw := bytes.Clone(chunks[0])
		edit(raw)
		putHeader(raw, int(raw[1]), int(raw[2]), int(raw[3]), int(raw[4])<<24|int(raw[5])<<16|int(raw[6])<<8|int(raw[7]), 7)
		return raw
	}
	tests := []struct {
		name string
		raw  []byte
	}{
		{"empty", nil},
		{"header only, cut short", chunks[0][:HeaderBytes-1]},
		{"shard cut short", chunks[0][:len(chunks[0])-1]},
		{"unknown version", func() []byte { raw := bytes.Clone(chunks[0]); raw[0] = 9; return raw }()},
		{"index past m", resealed(func(raw []byte) { raw[3] = 3 })},
		{"k above m", resealed(func(raw []byte) { raw[2] = 4 })},
		{"k of zero", resealed(func(raw []byte) { raw[2] = 0 })},
		{"length that does not match the shard", resealed(func(raw []byte) { raw[7] = 200 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse(tt.raw); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestShardBytes(t *testing.T) {
	tests := []struct{ length, k, want int }{
		{0, 4, 1}, {1, 4, 1}, {4, 4, 1}, {5, 4, 2}, {10240, 4, 2560}, {10240, 3, 3414}, {10240, 7, 1463},
	}
	for _, tt := range tests {
		if got := ShardBytes(tt.length, tt.k); got != tt.want {
			t.Errorf("ShardBytes(%d, %d) = %d, want %d", tt.length, tt.k, got, tt.want)
		}
	}
}
