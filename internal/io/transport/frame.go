package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// A frame is a fixed header followed by the payload:
//
//	payload length u32 | kind u8 | type u8 | request id u64     (big endian)
//
// The length covers the payload only; MaxFrameBytes bounds header + payload. The header,
// the frame types hello and refuse, the version at the start of a hello and the refusal
// keep their encoding in every protocol version: they are how two nodes find out that
// their versions differ.
const frameHeaderBytes = 4 + 1 + 1 + 8

// frameType says what a frame is for; exactly one type per frame.
type frameType uint8

const (
	// frameRequest asks for a response with the same request id.
	frameRequest frameType = iota + 1
	// frameResponse carries a handler's result.
	frameResponse
	// frameError carries a handler's error message instead of a result.
	frameError
	// frameOneway is a request nobody answers (gossip).
	frameOneway
	// frameHello is the dialer's first frame: its protocol version and its Peer, so the
	// receiver knows whether it can talk to it and in which DC it is. From protocol
	// version 4 on, an acceptor answers a hello it accepts with a frame of this type too:
	// the acceptance (encodeAcceptance).
	frameHello
	// frameRefuse is an acceptor's only frame to a dialer whose protocol version it does
	// not speak: the acceptor's version, so that the dialer can say what went wrong.
	frameRefuse
)

// stampBytes is the size of the wall-clock stamp that starts the payload of every
// response and error frame (protocol version 2 on): the responder's wall time in
// microseconds since the Unix epoch, a signed u64 (big endian). With the call's round
// trip, it lets the caller measure the responder's clock against its own at no extra
// message (Config.Clocks).
const stampBytes = 8

// stamped reports whether frames of typ carry a wall-clock stamp.
func (typ frameType) stamped() bool { return typ == frameResponse || typ == frameError }

// unstamp splits a response or error payload into the responder's wall time and the rest.
func unstamp(payload []byte) (time.Time, []byte, error) {
	if len(payload) < stampBytes {
		return time.Time{}, nil, fmt.Errorf("%w: response of %d bytes has no wall-clock stamp", errMalformed, len(payload))
	}
	return time.UnixMicro(int64(binary.BigEndian.Uint64(payload))), payload[stampBytes:], nil
}

// errMalformed marks frames that break the protocol; the connection carrying one is closed.
var errMalformed = errors.New("transport: malformed frame")

// frameHeader is a decoded header.
type frameHeader struct {
	payloadBytes uint32
	kind         Kind
	typ          frameType
	id           uint64
}

// encodeFrame returns header and payload in one buffer, a copy the caller may not change,
// so that the payload the caller passed may be reused once Send or Call returns.
func encodeFrame(typ frameType, kind Kind, id uint64, payload []byte) []byte {
	frame := make([]byte, frameHeaderBytes+len(payload))
	putHeader(frame, typ, kind, id, len(payload))
	copy(frame[frameHeaderBytes:], payload)
	return frame
}

// encodeStampedFrame is encodeFrame for a response or error: the payload starts with the
// responder's wall time.
func encodeStampedFrame(typ frameType, kind Kind, id uint64, wall time.Time, payload []byte) []byte {
	frame := make([]byte, frameHeaderBytes+stampBytes+len(payload))
	putHeader(frame, typ, kind, id, stampBytes+len(payload))
	binary.BigEndian.PutUint64(frame[frameHeaderBytes:], uint64(wall.UnixMicro()))
	copy(frame[frameHeaderBytes+stampBytes:], payload)
	return frame
}

// putHeader writes a frame header at the start of frame.
func putHeader(frame []byte, typ frameType, kind Kind, id uint64, payloadBytes int) {
	binary.BigEndian.PutUint32(frame[0:4], uint32(payloadBytes))
	frame[4] = byte(kind)
	frame[5] = byte(typ)
	binary.BigEndian.PutUint64(frame[6:14], id)
}

// readFrame reads one frame, checking the header before it allocates the payload so that
// a header declaring a huge length costs nothing, and one declaring a length within the
// limit costs what was sent (readPayload).
func readFrame(r io.Reader, maxFrameBytes int) (frameHeader, []byte, error) {
	var raw [frameHeaderBytes]byte
	if _, err := io.ReadFull(r, raw[:]); err != nil {
		return frameHeader{}, nil, err
	}
	h := frameHeader{
		payloadBytes: binary.BigEndian.Uint32(raw[0:4]),
		kind:         Kind(raw[4]),
		typ:          frameType(raw[5]),
		id:           binary.BigEndian.Uint64(raw[6:14]),
	}
	if h.typ < frameRequest || h.typ > frameRefuse {
		return frameHeader{}, nil, fmt.Errorf("%w: unknown frame type %d%s", errMalformed, h.typ, foreignProtocol(raw[:]))
	}
	if frameBytes := uint64(frameHeaderBytes) + uint64(h.payloadBytes); frameBytes > uint64(maxFrameBytes) {
		return frameHeader{}, nil, fmt.Errorf("%w: frame of %d bytes exceeds the limit of %d%s: %w",
			errMalformed, frameBytes, maxFrameBytes, foreignProtocol(raw[:]), ErrFrameTooLarge)
	}
	payload, err := readPayload(r, int(h.payloadBytes))
	if err != nil {
		return frameHeader{}, nil, err
	}
	return h, payload, nil
}

// foreignProtocol names the protocol a peer that is no kura node speaks, from the first
// bytes it sent, and what the operator likely mixed up: a seed given as another node's
// client, Redis or HTTP port is the common mistake. It is empty when the bytes look like
// nothing it knows.
func foreignProtocol(head []byte) string {
	const notKura = ": the peer speaks %s, not kura's internode protocol: is it %s rather than a node's --listen address?"
	switch {
	case head[3] == 0x04 && head[5]&0x7f == 0 && head[6] == 0 && head[7] == 0 && head[8] == 0:
		// An HTTP/2 server's first frame is its SETTINGS (type 4) on stream 0.
		return fmt.Sprintf(notKura, "HTTP/2 (gRPC)", "a node's --client port")
	case bytes.HasPrefix(head, []byte("PRI * HTTP/2")):
		// An HTTP/2 client's preface: the dialer is a gRPC client such as kura status.
		return ": the peer speaks HTTP/2 (a gRPC client), not kura's internode protocol: was a client given a node's --listen address in place of its --client?"
	case bytes.HasPrefix(head, []byte("HTTP/")):
		return fmt.Sprintf(notKura, "HTTP/1", "a node's --http admin port")
	case head[0] == 0x15 && head[1] == 0x03:
		// Only a node without TLS reads a peer's bytes unencrypted: the peer expects TLS.
		return ": the peer speaks TLS and this node does not (give every node --tls-cert, --tls-key and --tls-ca, or none)"
	case bytes.IndexByte([]byte("+-:$*"), head[0]) >= 0:
		return fmt.Sprintf(notKura, "the Redis protocol", "a node's --resp port")
	}
	return ""
}

// payloadChunkBytes is how far ahead of the bytes received readPayload allocates.
const payloadChunkBytes = 64 << 10

// readPayload reads an n-byte payload into a buffer that starts at payloadChunkBytes and
// doubles as the bytes arrive: anyone who can connect may send a header, before any hello,
// and one declaring the largest frame allowed must not cost that much memory per
// connection unless its bytes are sent. An end of input is io.ErrUnexpectedEOF: the
// header came before it.
func readPayload(r io.Reader, n int) ([]byte, error) {
	payload := make([]byte, min(n, payloadChunkBytes))
	read := 0
	for {
		m, err := io.ReadFull(r, payload[read:])
		read += m
		switch {
		case errors.Is(err, io.EOF):
			return nil, io.ErrUnexpectedEOF
		case err != nil:
			return nil, err
		case read == n:
			return payload, nil
		}
		payload = append(payload, make([]byte, min(read, n-read))...)
	}
}

// A hello payload is the dialer's protocol version, then its Peer:
//
//	version u16 | id len u16 | id | dc len u16 | dc | addr len u16 | addr     (big endian)
//
// The version comes first and keeps its encoding in every version, so that a node can
// read any peer's version however the rest of that peer's hello looks.
func encodeHello(version uint16, p Peer) []byte {
	buf := binary.BigEndian.AppendUint16(nil, version)
	for _, field := range []string{p.ID, p.DC, p.Addr} {
		buf = binary.BigEndian.AppendUint16(buf, uint16(len(field)))
		buf = append(buf, field...)
	}
	return buf
}

// decodeHelloVersion splits a hello payload into the dialer's version and the rest, which
// only decodePeer of a node speaking that version can parse.
func decodeHelloVersion(buf []byte) (version uint16, rest []byte, err error) {
	if len(buf) < 2 {
		return 0, nil, fmt.Errorf("%w: hello truncated", errMalformed)
	}
	return binary.BigEndian.Uint16(buf), buf[2:], nil
}

// decodePeer parses the Peer that follows the version in a hello payload; the id must be
// present and nothing may follow addr.
func decodePeer(buf []byte) (Peer, error) {
	var fields [3]string
	for i := range fields {
		if len(buf) < 2 {
			return Peer{}, fmt.Errorf("%w: hello truncated", errMalformed)
		}
		n := int(binary.BigEndian.Uint16(buf))
		buf = buf[2:]
		if len(buf) < n {
			return Peer{}, fmt.Errorf("%w: hello truncated", errMalformed)
		}
		fields[i] = string(buf[:n])
		buf = buf[n:]
	}
	if len(buf) != 0 {
		return Peer{}, fmt.Errorf("%w: %d stray bytes after hello", errMalformed, len(buf))
	}
	if fields[0] == "" {
		return Peer{}, fmt.Errorf("%w: hello without a peer id", errMalformed)
	}
	return Peer{ID: fields[0], DC: fields[1], Addr: fields[2]}, nil
}

// acceptanceFrom is the first protocol version whose acceptor answers a hello of that
// version with an acceptance, so that the dialer knows the version of the connection
// before it sends anything on it. An acceptor of version 3 answers nothing when it
// accepts, so a hello of version 3 gets no acceptance from any node.
const acceptanceFrom = 4

// An acceptance payload is the version the acceptor speaks on the connection, a u16 (big
// endian): the one the dialer's hello named.
func encodeAcceptance(version uint16) []byte { return binary.BigEndian.AppendUint16(nil, version) }

// decodeAcceptance returns the version an acceptance names.
func decodeAcceptance(buf []byte) (uint16, error) {
	if len(buf) != 2 {
		return 0, fmt.Errorf("%w: acceptance of %d bytes, want 2", errMalformed, len(buf))
	}
	return binary.BigEndian.Uint16(buf), nil
}

// errorCodesFrom is the first protocol version whose error frames carry an ErrorCode.
const errorCodesFrom = 4

// An error payload, after the wall-clock stamp, is the handler's error message; from
// protocol version 4 on (errorCodesFrom) it starts with the error's code:
//
//	code u16 | message     (big endian)
//
// so that the caller knows what the error is without reading its text.
func encodeErrorPayload(version uint16, code ErrorCode, msg string) []byte {
	if version < errorCodesFrom {
		return []byte(msg)
	}
	return append(binary.BigEndian.AppendUint16(nil, uint16(code)), msg...)
}

// decodeErrorPayload returns the RemoteError an error payload (without its stamp) of
// the given protocol version carries.
func decodeErrorPayload(version uint16, buf []byte) (*RemoteError, error) {
	if version < errorCodesFrom {
		return &RemoteError{Msg: string(buf)}, nil
	}
	if len(buf) < 2 {
		return nil, fmt.Errorf("%w: error of %d bytes has no code", errMalformed, len(buf))
	}
	return &RemoteError{Code: ErrorCode(binary.BigEndian.Uint16(buf)), Coded: true, Msg: string(buf[2:])}, nil
}

// A refusal payload is the refusing node's protocol version, a u16 (big endian). Nodes of
// every version must understand it, so it never changes.
const refusalBytes = 2

// encodeRefusal returns the payload of a refusal from a node speaking version.
func encodeRefusal(version uint16) []byte {
	return binary.BigEndian.AppendUint16(nil, version)
}

// decodeRefusal returns the version of the node that refused.
func decodeRefusal(buf []byte) (uint16, error) {
	if len(buf) != refusalBytes {
		return 0, fmt.Errorf("%w: refusal of %d bytes, want %d", errMalformed, len(buf), refusalBytes)
	}
	return binary.BigEndian.Uint16(buf), nil
}
