package transport

import (
	"encoding/binary"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/kuradb/kura/topology"
)

func TestMalformedFramesCloseOnlyTheirConnection(t *testing.T) {
	server := startNode(t, Config{Self: Peer{ID: "server"}})
	client := startNode(t, Config{Self: Peer{ID: "client"}})
	ctx := testContext(t)
	// This connection is up before the garbage arrives and must stay up.
	if _, err := client.Call(ctx, server.Self(), kindEcho, nil); err != nil {
		t.Fatalf("Call: %v", err)
	}
	hello := encodeFrame(frameHello, kindHello, 0, encodePeer(Peer{ID: "raw", DC: "x"}))
	withLength := func(frame []byte, payloadBytes uint32) []byte {
		binary.BigEndian.PutUint32(frame, payloadBytes)
		return frame
	}
	tests := []struct {
		name  string
		bytes []byte
	}{
		{"HTTP instead of a hello", []byte("GET / HTTP/1.1\r\nHost: kura\r\n\r\n")},
		{"request before hello", encodeFrame(frameRequest, kindEcho, 1, []byte("hi"))},
		{"hello without an id", encodeFrame(frameHello, kindHello, 0, encodePeer(Peer{DC: "x"}))},
		{"hello declaring 1 GiB", withLength(encodeFrame(frameHello, kindHello, 0, nil), 1<<30)},
		{"request declaring 1 GiB", append(hello, withLength(encodeFrame(frameRequest, kindEcho, 1, nil), 1<<30)...)},
		{"unknown frame type", append(hello, encodeFrame(frameHello+1, kindEcho, 1, nil)...)},
		{"second hello", append(hello, hello...)},
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
			raw.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, err := raw.Read(make([]byte, 1))
			if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("server kept the connection open (read %d bytes, %v)", n, err)
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

func TestJitterKeepsConnectionOrder(t *testing.T) {
	client := startNode(t, Config{Self: Peer{ID: "client"}})
	spec := topology.LinkSpec{Latency: time.Millisecond, Jitter: 50 * time.Millisecond}
	near, far := net.Pipe()
	defer near.Close()
	defer far.Close()
	c := newConn(client.Transport, near, nil, Peer{ID: "peer"}, newWANLink(spec, 1, "", ""), true)
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
