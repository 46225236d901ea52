package remote

import (
	"bytes"
	"testing"

	"github.com/kuradb/kura/erasure"
	"github.com/kuradb/kura/lww"
)

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
