package remote

import (
	"bytes"
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/core/erasure"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/data/replica"
)

// TestRecordTypeCrossesTheWire: a record's type survives the internode record both ways
// it is decoded (the generated code, and the scan and read answers' own decoder); a
// record from a node of a build before types, which has no type field, is a string; and
// a type number past what a Type holds decodes to one storage refuses, not to a smaller
// type.
func TestRecordTypeCrossesTheWire(t *testing.T) {
	// The bytes a build from before types sends: fields 1 to 5 only.
	old := protowire.AppendTag(nil, 1, protowire.BytesType)
	old = protowire.AppendBytes(old, []byte("k"))
	old = protowire.AppendTag(old, 2, protowire.BytesType)
	old = protowire.AppendBytes(old, []byte("v"))
	old = protowire.AppendTag(old, 3, protowire.VarintType)
	old = protowire.AppendVarint(old, 7)
	tests := []struct {
		name string
		// wire is the record's message; nil: replica.ToProto(want)'s.
		wire []byte
		want lww.Record
	}{
		{"string", nil, lww.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 7}},
		{"hash header", nil, lww.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 7, Type: lww.Hash}},
		{"expiring list header", nil, lww.Record{Key: []byte("k"), Timestamp: 7, ExpiresAt: 9, Type: lww.List}},
		{"a build from before types", old, lww.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 7}},
		{"type past a byte", protowire.AppendVarint(protowire.AppendTag(old, 6, protowire.VarintType), 0x102),
			lww.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: 7, Type: 0xff}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wire := tt.wire
			if wire == nil {
				var err error
				if wire, err = proto.Marshal(replica.ToProto(tt.want)); err != nil {
					t.Fatal(err)
				}
			}
			var m kurav1.Record
			if err := proto.Unmarshal(wire, &m); err != nil {
				t.Fatal(err)
			}
			if got := replica.FromProto(&m); describeWire(got) != describeWire(tt.want) {
				t.Errorf("FromProto = %s, want %s", describeWire(got), describeWire(tt.want))
			}
			answer := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), wire)
			got, err := decodeScanResponse(answer)
			if err != nil || len(got) != 1 {
				t.Fatalf("decodeScanResponse = %v, %v; want one record", got, err)
			}
			if describeWire(got[0]) != describeWire(tt.want) {
				t.Errorf("decodeScanResponse = %s, want %s", describeWire(got[0]), describeWire(tt.want))
			}
		})
	}
}

// describeWire renders every field of a record that crosses the wire.
func describeWire(r lww.Record) string {
	return fmt.Sprintf("%q=%q@%d tombstone=%t expires=%d type=%d", r.Key, r.Value, r.Timestamp, r.Tombstone, r.ExpiresAt, r.Type)
}

func TestChunkAnswerCarriesTheStoredChunkAlone(t *testing.T) {
	code, err := erasure.New(5, 3)
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("k\x00\x01\x02")
	chunks, err := code.Encode([]byte("a value"), 20)
	if err != nil {
		t.Fatal(err)
	}
	chunk := lww.Record{Key: key, Value: chunks[2], Timestamp: 20}
	tombstone := lww.Record{Key: key, Tombstone: true, Timestamp: 30}
	expiringChunk := lww.Record{Key: key, Value: chunks[2], Timestamp: 20, ExpiresAt: 40}
	expiredTombstone := lww.Record{Key: key, Tombstone: true, Timestamp: 30, ExpiresAt: 40}
	tests := []struct {
		name        string
		rec         lww.Record
		found       bool
		answerBytes int
	}{
		{"absent", lww.Record{}, false, 1},
		{"tombstone: its timestamp", tombstone, true, 1 + 8},
		{"chunk: status byte and the chunk", chunk, true, 1 + len(chunk.Value)},
		{"expiring chunk: its expiry too", expiringChunk, true, 1 + 8 + len(chunk.Value)},
		{"expired tombstone: its timestamp and expiry", expiredTombstone, true, 1 + 8 + 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answer := encodeChunkAnswer(tt.rec, tt.found)
			if len(answer) != tt.answerBytes {
				t.Fatalf("answer of %d bytes, want %d", len(answer), tt.answerBytes)
			}
			rec, found, err := decodeChunkAnswer(key, answer)
			if err != nil || found != tt.found {
				t.Fatalf("decode = found %v, %v; want found %v", found, err, tt.found)
			}
			if found && (!bytes.Equal(rec.Key, key) || !bytes.Equal(rec.Value, tt.rec.Value) || rec.Timestamp != tt.rec.Timestamp || rec.Tombstone != tt.rec.Tombstone || rec.ExpiresAt != tt.rec.ExpiresAt) {
				t.Fatalf("decoded %+v, want %+v", rec, tt.rec)
			}
		})
	}
	malformedAnswers := [][]byte{nil, {chunkAbsent, 0}, {chunkTombstone, 1, 2, 3}, {chunkStoredExpiring + 1},
		{chunkStoredExpiring, 1, 2, 3},                      // shorter than its expiry
		{chunkStoredExpiring, 0, 0, 0, 0, 0, 0, 0, 0},       // a zero expiry
		append([]byte{chunkTombstone}, make([]byte, 16)...), // a zero expiry
		append([]byte{chunkTombstone}, make([]byte, 12)...), // neither a timestamp nor both
	}
	for _, malformed := range malformedAnswers {
		if _, _, err := decodeChunkAnswer(key, malformed); err == nil {
			t.Errorf("decodeChunkAnswer(%v) accepted a malformed answer", malformed)
		}
	}
	// A damaged chunk is passed on as found: the coordinator verifies it.
	damaged := bytes.Clone(chunk.Value)
	damaged[erasure.HeaderBytes] ^= 1
	if _, found, err := decodeChunkAnswer(key, encodeChunkAnswer(lww.Record{Key: key, Value: damaged, Timestamp: 20}, true)); err != nil || !found {
		t.Fatalf("decode of a damaged chunk = found %v, %v", found, err)
	}
}
