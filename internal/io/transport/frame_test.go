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
		{"hello", frameHello, 0, encodeHello(ProtocolVersion, Peer{ID: "n1", DC: "tokyo", Addr: "127.0.0.1:1"})},
		{"refusal", frameRefuse, 0, encodeRefusal(ProtocolVersion)},
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
		{"unknown frame type", header(0, frameRefuse+1), errMalformed},
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

// A seed given as the wrong port answers in another protocol; the error must say which.
func TestReadFrameNamesForeignProtocols(t *testing.T) {
	tests := []struct {
		name, input, want string
	}{
		{"grpc client port", "\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x05\x00\x00\x40\x00", "HTTP/2 (gRPC)"},
		{"grpc client", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "HTTP/2 (a gRPC client)"},
		{"http admin port", "HTTP/1.1 400 Bad Request\r\n", "--http admin port"},
		{"resp port", "-ERR unknown command 'x'\r\n", "--resp port"},
		{"tls port", "\x15\x03\x03\x00\x02\x02\x46\x00\x00\x00\x00\x00\x00\x00", "TLS"},
		{"garbage", "\x00\x00\x00\x00\x00\x09\x00\x00\x00\x00\x00\x00\x00\x00", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := readFrame(strings.NewReader(tt.input), 1024)
			if !errors.Is(err, errMalformed) {
				t.Fatalf("readFrame error = %v, want errMalformed", err)
			}
			named := strings.Contains(err.Error(), "the peer speaks")
			if tt.want == "" && named || tt.want != "" && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("readFrame error = %q, want it to name %q", err, tt.want)
			}
		})
	}
}

func TestHelloCodec(t *testing.T) {
	peer := Peer{ID: "tokyo-1", DC: "tokyo", Addr: "127.0.0.1:7101"}
	for _, version := range []uint16{ProtocolVersion, ProtocolVersion + 1, 0xffff} {
		gotVersion, rest, err := decodeHelloVersion(encodeHello(version, peer))
		if err != nil || gotVersion != version {
			t.Fatalf("decodeHelloVersion(encodeHello(%d, ...)) = %d, %v", version, gotVersion, err)
		}
		if got, err := decodePeer(rest); err != nil || got != peer {
			t.Fatalf("decodePeer of a version %d hello = %+v, %v; want %+v", version, got, err, peer)
		}
	}
	encoded := encodeHello(ProtocolVersion, peer)
	tests := []struct {
		name  string
		input []byte
		want  string
	}{
		{"empty", nil, "truncated"},
		{"cut in the version", encoded[:1], "truncated"},
		{"version only", encoded[:2], "truncated"},
		{"cut in a length", encoded[:3], "truncated"},
		{"cut in a field", encoded[:7], "truncated"},
		{"cut before addr", encoded[:len(encoded)-len(peer.Addr)-2], "truncated"},
		{"cut in addr", encoded[:len(encoded)-1], "truncated"},
		{"stray bytes", append(encodeHello(ProtocolVersion, peer), 0), "stray"},
		{"no id", encodeHello(ProtocolVersion, Peer{DC: "tokyo"}), "without a peer id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, rest, err := decodeHelloVersion(tt.input)
			if err == nil {
				_, err = decodePeer(rest)
			}
			if !errors.Is(err, errMalformed) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("decoding error = %v, want errMalformed containing %q", err, tt.want)
			}
		})
	}
}

func TestRefusalCodec(t *testing.T) {
	if got, err := decodeRefusal(encodeRefusal(7)); err != nil || got != 7 {
		t.Fatalf("decodeRefusal(encodeRefusal(7)) = %d, %v", got, err)
	}
	tests := []struct {
		name  string
		input []byte
	}{
		{"empty", nil},
		{"truncated", []byte{0}},
		{"stray bytes", append(encodeRefusal(7), 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := decodeRefusal(tt.input); !errors.Is(err, errMalformed) {
				t.Errorf("decodeRefusal(%v) error = %v, want errMalformed", tt.input, err)
			}
		})
	}
}
