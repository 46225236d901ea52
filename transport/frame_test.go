package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	kind := RegisterKind(206, "test_frame")
	tests := []struct {
		name    string
		typ     frameType
		id      uint64
		payload []byte
	}{
		{"empty request", frameRequest, 1, nil},
		{"response", frameResponse, 1 << 40, []byte("value")},
		{"error", frameError, 7, []byte("boom")},
		{"one-way", frameOneway, 0, bytes.Repeat([]byte{0xab}, 5000)},
		{"hello", frameHello, 0, encodePeer(Peer{ID: "n1", DC: "tokyo", Addr: "127.0.0.1:1"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame := encodeFrame(tt.typ, kind, tt.id, tt.payload)
			if len(frame) != frameHeaderBytes+len(tt.payload) {
				t.Fatalf("frame is %d bytes, want %d", len(frame), frameHeaderBytes+len(tt.payload))
			}
			h, payload, err := readFrame(bytes.NewReader(frame), len(frame))
			if err != nil {
				t.Fatalf("readFrame: %v", err)
			}
			want := frameHeader{payloadBytes: uint32(len(tt.payload)), kind: kind, typ: tt.typ, id: tt.id}
			if h != want {
				t.Errorf("header = %+v, want %+v", h, want)
			}
			if !bytes.Equal(payload, tt.payload) {
				t.Errorf("payload = %q, want %q", payload, tt.payload)
			}
		})
	}
}

func TestReadFrameErrors(t *testing.T) {
	header := func(payloadBytes uint32, typ frameType) []byte {
		frame := encodeFrame(typ, 1, 1, nil)
		binary.BigEndian.PutUint32(frame, payloadBytes)
		return frame
	}
	tests := []struct {
		name  string
		input []byte
		want  error
	}{
		{"nothing", nil, io.EOF},
		{"truncated header", header(0, frameRequest)[:9], io.ErrUnexpectedEOF},
		{"frame type 0", header(0, 0), errMalformed},
		{"unknown frame type", header(0, frameHello+1), errMalformed},
		{"1 GiB declared", header(1<<30, frameRequest), ErrFrameTooLarge},
		{"one byte over the limit", header(1024-frameHeaderBytes+1, frameRequest), ErrFrameTooLarge},
		{"truncated payload", append(header(10, frameRequest), "short"...), io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := readFrame(bytes.NewReader(tt.input), 1024)
			if !errors.Is(err, tt.want) {
				t.Errorf("readFrame error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestPeerCodec(t *testing.T) {
	peer := Peer{ID: "tokyo-1", DC: "tokyo", Addr: "127.0.0.1:7101"}
	got, err := decodePeer(encodePeer(peer))
	if err != nil || got != peer {
		t.Fatalf("decodePeer(encodePeer(%+v)) = %+v, %v", peer, got, err)
	}
	encoded := encodePeer(peer)
	tests := []struct {
		name  string
		input []byte
		want  string
	}{
		{"empty", nil, "truncated"},
		{"cut in a length", encoded[:1], "truncated"},
		{"cut in a field", encoded[:5], "truncated"},
		{"stray bytes", append(encodePeer(peer), 0), "stray"},
		{"no id", encodePeer(Peer{DC: "tokyo"}), "without a peer id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodePeer(tt.input)
			if !errors.Is(err, errMalformed) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("decodePeer error = %v, want errMalformed containing %q", err, tt.want)
			}
		})
	}
}
