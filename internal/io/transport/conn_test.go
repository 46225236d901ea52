package transport

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/io/topology"
)

func TestMalformedFramesCloseOnlyTheirConnection(t *testing.T) {
	server := startNode(t, Config{Self: Peer{ID: "server"}})
	client := startNode(t, Config{Self: Peer{ID: "client"}})
	ctx := testContext(t)
	// This connection is up before the garbage arrives and must stay up.
	if _, err := client.Call(ctx, server.Self(), kindEcho, nil); err != nil {
		t.Fatalf("Call: %v", err)
	}
	hello := encodeFrame(frameHello, kindHello, 0, encodeHello(ProtocolVersion, Peer{ID: "raw", DC: "x"}))
	withLength := func(frame []byte, payloadBytes uint32) []byte {
		binary.BigEndian.PutUint32(frame, payloadBytes)
		return frame
	}
	tests := []struct {
		name  string
		bytes []byte
	}{
		{"HTTP instead of a hello", []byte(httpRequest)},
		{"gRPC instead of a hello", []byte(http2Preface)},
		{"request before hello", encodeFrame(frameRequest, kindEcho, 1, []byte("hi"))},
		{"hello without an id", encodeFrame(frameHello, kindHello, 0, encodeHello(ProtocolVersion, Peer{DC: "x"}))},
		{"hello cut in the version", encodeFrame(frameHello, kindHello, 0, []byte{0})},
		{"hello with stray bytes", encodeFrame(frameHello, kindHello, 0, append(encodeHello(ProtocolVersion, Peer{ID: "raw"}), 0))},
		{"hello declaring 1 GiB", withLength(encodeFrame(frameHello, kindHello, 0, nil), 1<<30)},
		{"request declaring 1 GiB", append(hello, withLength(encodeFrame(frameRequest, kindEcho, 1, nil), 1<<30)...)},
		{"unknown frame type", append(hello, encodeFrame(frameRefuse+1, kindEcho, 1, nil)...)},
		{"second hello", append(hello, hello...)},
		{"refusal from a dialer", append(hello, encodeFrame(frameRefuse, kindHello, 0, encodeRefusal(ProtocolVersion))...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := net.Dial("tcp", server.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			if _, err := raw.Write(tt.bytes); err != nil {
				t.Fatalf("write: %v", err)
			}
			// The server may answer the first hello with its acceptance before it reads
			// what breaks the protocol: read up to the end of the connection.
			raw.SetReadDeadline(time.Now().Add(5 * time.Second))
			if got, err := io.ReadAll(raw); errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("server kept the connection open (read %d bytes, %v)", len(got), err)
			}
			if got, err := client.Call(ctx, server.Self(), kindEcho, []byte("ok")); err != nil || string(got) != "ok" {
				t.Errorf("Call after the bad connection = %q, %v", got, err)
			}
		})
	}
	if hellos := client.Stats().Snapshot()[Flow{Kind: kindHello}].Messages; hellos != 1 {
		t.Errorf("client dialed %d times, want 1: its connection was disturbed", hellos)
	}
}

// What clients of other protocols send first on connecting to the internode port by
// mistake: an HTTP/1.1 request, and the preface of HTTP/2, which gRPC speaks.
const (
	httpRequest  = "GET / HTTP/1.1\r\nHost: kura\r\n\r\n"
	http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
)

func TestReadHelloErrors(t *testing.T) {
	server := startNode(t, Config{Self: Peer{ID: "server"}})
	tests := []struct {
		name  string
		bytes []byte
		want  string
	}{
		{"HTTP", []byte(httpRequest), "is the peer a kura node?"},
		{"gRPC", []byte(http2Preface), "is the peer a kura node?"},
		{"request first", encodeFrame(frameRequest, kindEcho, 1, nil), "want hello"},
		{"hello frame cut short", encodeFrame(frameHello, kindHello, 0, encodeHello(ProtocolVersion, Peer{ID: "raw"}))[:frameHeaderBytes+3], "reading hello"},
		{"hello cut in the version", encodeFrame(frameHello, kindHello, 0, []byte{0}), "hello truncated"},
		{"hello cut in the peer", encodeFrame(frameHello, kindHello, 0, encodeHello(ProtocolVersion, Peer{ID: "raw"})[:4]), "hello truncated"},
		{"hello with stray bytes", encodeFrame(frameHello, kindHello, 0, append(encodeHello(ProtocolVersion, Peer{ID: "raw"}), 0)), "stray bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			near, far := net.Pipe()
			defer near.Close()
			go func() {
				// The whole input, then the end of the connection: a short frame must not
				// leave readHello waiting for the rest.
				far.Write(tt.bytes)
				far.Close()
			}()
			_, _, _, err := server.readHello(near)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("readHello error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestRefusalOnTheWire plays a dialer of the next protocol version by hand: the acceptor
// must answer its hello with a refusal naming its own version, discard what follows, and
// hang up only after the dialer does, so that no reset overtakes the refusal.
func TestRefusalOnTheWire(t *testing.T) {
	server := startNode(t, Config{Self: Peer{ID: "server"}})
	raw, err := net.Dial("tcp", server.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	hello := encodeFrame(frameHello, kindHello, 0, encodeHello(ProtocolVersion+1, Peer{ID: "future"}))
	message := encodeFrame(frameOneway, kindNotify, 0, []byte("unheard"))
	if _, err := raw.Write(append(hello, message...)); err != nil {
		t.Fatalf("write: %v", err)
	}
	// The deadline only keeps a broken acceptor from hanging the test.
	raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	h, payload, err := readFrame(raw, 1024)
	if err != nil {
		t.Fatalf("reading the answer to the hello: %v", err)
	}
	if h.typ != frameRefuse || h.kind != kindHello {
		t.Fatalf("answer is a frame of type %d and kind %v, want a refusal", h.typ, h.kind)
	}
	if version, err := decodeRefusal(payload); err != nil || version != ProtocolVersion {
		t.Fatalf("refusal says version %d, %v; want %d", version, err, ProtocolVersion)
	}
	// Until the dialer hangs up the acceptor only listens. A correct acceptor passes this
	// check however slow the machine; a hasty one fails it unless it is slower to close
	// than the wait.
	raw.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := raw.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("after the refusal read %d bytes, %v; want the acceptor to wait for the dialer", n, err)
	}
	if err := raw.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := raw.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("after the refusal read %d bytes, %v; want the acceptor to hang up", n, err)
	}
	select {
	case got := <-server.server.notified:
		t.Errorf("the refused dialer's message was handled: %q", got.payload)
	default:
	}
}

func TestJitterKeepsConnectionOrder(t *testing.T) {
	client := startNode(t, Config{Self: Peer{ID: "client"}})
	spec := topology.LinkSpec{Latency: time.Millisecond, Jitter: 50 * time.Millisecond}
	near, far := net.Pipe()
	defer near.Close()
	defer far.Close()
	c := newConn(client.Transport, near, nil, Peer{ID: "peer"}, newWANLink(spec, 1, "", ""), true, ProtocolVersion)
	for range 100 {
		if err := c.enqueue(frameOneway, kindNotify, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) != 100 {
		t.Fatalf("queued %d frames, want 100", len(c.queue))
	}
	for i := 1; i < len(c.queue); i++ {
		if c.queue[i].deliverAt.Before(c.queue[i-1].deliverAt) {
			t.Fatalf("frame %d is due at %v, before frame %d at %v", i, c.queue[i].deliverAt, i-1, c.queue[i-1].deliverAt)
		}
	}
}
