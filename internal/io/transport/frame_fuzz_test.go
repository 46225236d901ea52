package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime/metrics"
	"testing"
	"testing/iotest"
)

// Reading any input may allocate fuzzAllocSlackBytes, plus fuzzAllocPerByte per input
// byte: a payload costs its own bytes once more while it grows, and the allocator counts
// small objects a span at a time.
const (
	fuzzAllocSlackBytes = 1 << 20
	fuzzAllocPerByte    = 8
)

// FuzzReadFrame reads a stream of frames from arbitrary bytes, under the default frame
// limit and under a small one, as an acceptor reads whatever a stranger sends. Reading must
// not panic, must stop with an end of input or a malformed frame, must allocate in
// proportion to the bytes sent whatever length a header declares, and every frame it
// returns must re-encode to exactly the bytes it was read from. Hello and refusal payloads
// go on to their decoders, whose results must re-encode the same way.
func FuzzReadFrame(f *testing.F) {
	peer := Peer{ID: "tokyo-1", DC: "tokyo", Addr: "127.0.0.1:7101"}
	hello := encodeFrame(frameHello, kindHello, 0, encodeHello(ProtocolVersion, peer))
	request := encodeFrame(frameRequest, 2, 7, []byte("payload"))
	declares := func(payloadBytes uint32, typ frameType) []byte {
		frame := encodeFrame(typ, 2, 1, nil)
		binary.BigEndian.PutUint32(frame, payloadBytes)
		return frame
	}
	for _, seed := range [][]byte{
		hello,
		append(append(append([]byte{}, hello...), request...), encodeFrame(frameOneway, 6, 0, nil)...),
		encodeFrame(frameRefuse, kindHello, 0, encodeRefusal(ProtocolVersion+1)),
		encodeFrame(frameResponse, 3, 1<<40, bytes.Repeat([]byte{0xab}, 300)),
		encodeFrame(frameError, 3, 9, []byte("boom")),
		declares(1<<32-1, frameRequest),                             // 4 GiB declared
		declares(DefaultMaxFrameBytes-frameHeaderBytes, frameHello), // the largest frame allowed, never sent
		declares(0, 0),
		declares(0, frameRefuse+1),
		hello[:frameHeaderBytes+3],                        // truncated hello
		append(hello[:len(hello):len(hello)], 0xff, 0x00), // garbage after a hello
		[]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
		[]byte("*1\r\n$4\r\nPING\r\n"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, maxFrameBytes := range []int{DefaultMaxFrameBytes, 1 << 10} {
			before := heapAllocBytes()
			frames, err := readFrames(data, maxFrameBytes)
			if allocated := heapAllocBytes() - before; allocated > fuzzAllocSlackBytes+fuzzAllocPerByte*uint64(len(data)) {
				t.Fatalf("limit %d: reading %d bytes allocated %d bytes", maxFrameBytes, len(data), allocated)
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, errMalformed) {
				t.Fatalf("limit %d: reading ended with %v, want an end of input or a malformed frame", maxFrameBytes, err)
			}
			for _, fr := range frames {
				if frameHeaderBytes+len(fr.payload) > maxFrameBytes {
					t.Fatalf("frame of %d payload bytes read under a limit of %d", len(fr.payload), maxFrameBytes)
				}
				if enc := encodeFrame(fr.h.typ, fr.h.kind, fr.h.id, fr.payload); !bytes.Equal(enc, fr.raw) {
					t.Fatalf("frame %+v re-encodes as %x, was read from %x", fr.h, enc, fr.raw)
				}
				switch fr.h.typ {
				case frameHello:
					checkHello(t, fr.payload)
				case frameRefuse:
					checkRefusal(t, fr.payload)
				}
			}
		}
	})
}

// FuzzDecodeHello gives arbitrary payloads to the hello and refusal decoders: they must
// not panic, must fail with errMalformed, and what they decode must re-encode to the
// payload it came from.
func FuzzDecodeHello(f *testing.F) {
	for _, seed := range [][]byte{
		encodeHello(ProtocolVersion, Peer{ID: "tokyo-1", DC: "tokyo", Addr: "127.0.0.1:7101"}),
		encodeHello(0xffff, Peer{ID: "x"}),
		encodeRefusal(ProtocolVersion),
		{0, 1, 0xff, 0xff, 'a'},  // an id declaring 65535 bytes
		{0, 1, 0, 0, 0, 0, 0, 0}, // no id
		nil,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		checkHello(t, payload)
		checkRefusal(t, payload)
	})
}

// checkHello decodes a hello payload and re-encodes what it decoded.
func checkHello(t *testing.T, payload []byte) {
	t.Helper()
	version, rest, err := decodeHelloVersion(payload)
	if err != nil {
		if !errors.Is(err, errMalformed) {
			t.Fatalf("decodeHelloVersion(%x): %v, want errMalformed", payload, err)
		}
		return
	}
	peer, err := decodePeer(rest)
	if err != nil {
		if !errors.Is(err, errMalformed) {
			t.Fatalf("decodePeer(%x): %v, want errMalformed", rest, err)
		}
		return
	}
	if peer.ID == "" {
		t.Fatalf("decodePeer(%x) accepted a hello without an id", rest)
	}
	if enc := encodeHello(version, peer); !bytes.Equal(enc, payload) {
		t.Fatalf("hello %d %+v re-encodes as %x, was decoded from %x", version, peer, enc, payload)
	}
}

// checkRefusal decodes a refusal payload and re-encodes what it decoded.
func checkRefusal(t *testing.T, payload []byte) {
	t.Helper()
	version, err := decodeRefusal(payload)
	if err != nil {
		if !errors.Is(err, errMalformed) {
			t.Fatalf("decodeRefusal(%x): %v, want errMalformed", payload, err)
		}
		return
	}
	if enc := encodeRefusal(version); !bytes.Equal(enc, payload) {
		t.Fatalf("refusal %d re-encodes as %x, was decoded from %x", version, enc, payload)
	}
}

// readFrame's result, with the bytes it was read from.
type fuzzFrame struct {
	h       frameHeader
	payload []byte
	raw     []byte
}

// readFrames reads frames from data until readFrame fails, and returns them with the
// error that stopped it.
func readFrames(data []byte, maxFrameBytes int) ([]fuzzFrame, error) {
	src := bytes.NewReader(data)
	var frames []fuzzFrame
	for {
		start := len(data) - src.Len()
		h, payload, err := readFrame(src, maxFrameBytes)
		if err != nil {
			if errors.Is(err, io.EOF) && start != len(data) {
				return frames, errors.New("io.EOF in the middle of a frame")
			}
			return frames, err
		}
		frames = append(frames, fuzzFrame{h: h, payload: payload, raw: data[start : len(data)-src.Len()]})
	}
}

// heapAllocBytes returns the bytes allocated on the heap so far. The runtime counts small
// objects a span at a time, hence the slack in the bound above.
func heapAllocBytes() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// TestReadFrameGrowsPayloadAsBytesArrive reads payloads larger than the first chunk
// readPayload allocates, one byte per read as a slow peer sends them, and one cut short.
func TestReadFrameGrowsPayloadAsBytesArrive(t *testing.T) {
	for _, size := range []int{payloadChunkBytes, payloadChunkBytes + 1, 3*payloadChunkBytes + 5} {
		payload := bytes.Repeat([]byte("kura"), size/4+1)[:size]
		frame := encodeFrame(frameRequest, 2, 1, payload)
		_, got, err := readFrame(iotest.OneByteReader(bytes.NewReader(frame)), DefaultMaxFrameBytes)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("payload of %d bytes: read %d bytes, %v", size, len(got), err)
		}
		if _, _, err := readFrame(bytes.NewReader(frame[:len(frame)-1]), DefaultMaxFrameBytes); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("payload of %d bytes cut short by one: %v, want io.ErrUnexpectedEOF", size, err)
		}
	}
}
