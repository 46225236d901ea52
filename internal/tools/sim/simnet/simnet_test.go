package simnet

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/tools/sim"
)

// echo answers every request with its payload and counts one-way messages.
type echo struct{ oneway chan []byte }

func (e echo) Handle(_ context.Context, _ transport.Peer, _ transport.Kind, payload []byte) ([]byte, error) {
	select {
	case e.oneway <- payload:
	default:
	}
	return payload, nil
}

// twoNodes puts a in DC x and b in DC y, 10 ms apart one way, and starts the driver.
func twoNodes(t *testing.T) (*Network, transport.Endpoint, transport.Endpoint, echo) {
	links, err := sim.NewNetwork([]string{"x", "y"}, sim.LinkFunc(func(from, to string) (sim.LinkSpec, error) {
		return sim.LinkSpec{Latency: 10 * time.Millisecond, BandwidthBps: 1e9}, nil
	}), sim.TCPIPv4, 1)
	if err != nil {
		t.Fatal(err)
	}
	n := New(links, nil)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.Run(stop)
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
		n.Close()
	})
	h := echo{oneway: make(chan []byte, 1)}
	a, err := n.Listen(transport.Config{Self: transport.Peer{ID: "a", DC: "x"}, Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	b, err := n.Listen(transport.Config{Self: transport.Peer{ID: "b", DC: "y"}, Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	return n, a, b, h
}

var kind = transport.RegisterKind(250, "simnet_test")

// TestCallsCutsAndClosedNodes: a call takes a round trip and finds its peer by id or by
// address alone; a one-way cut loses requests until their deadline; a closed node's
// calls are refused at once when the network says so, and lost otherwise.
func TestCallsCutsAndClosedNodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, a, b, _ := twoNodes(t)
		call := func(to transport.Peer) (time.Duration, error) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			start := time.Now()
			got, err := a.Call(ctx, to, kind, []byte("ping"))
			if err == nil && string(got) != "ping" {
				t.Fatalf("answer %q", got)
			}
			// To the millisecond: the links add microseconds of transmission.
			return time.Since(start).Round(time.Millisecond), err
		}
		if took, err := call(b.Self()); err != nil || took != 20*time.Millisecond {
			t.Errorf("call b: %v after %v, want an answer after 20ms", err, took)
		}
		if took, err := call(transport.AnyNodeAt(b.Addr())); err != nil || took != 20*time.Millisecond {
			t.Errorf("call b by address: %v after %v, want an answer after 20ms", err, took)
		}
		if rtt, ok := a.RTT("b"); !ok || rtt.Round(time.Millisecond) != 20*time.Millisecond {
			t.Errorf("RTT(b) = %v, %v; want 20ms", rtt, ok)
		}
		n.Cut("a", "b")
		if took, err := call(b.Self()); !errors.Is(err, context.DeadlineExceeded) || took != time.Second {
			t.Errorf("call across a cut: %v after %v, want the deadline after 1s", err, took)
		}
		n.Mend("a", "b")
		b.Close()
		if took, err := call(b.Self()); !errors.Is(err, context.DeadlineExceeded) || took != time.Second {
			t.Errorf("call to a closed node: %v after %v, want it lost until the deadline", err, took)
		}
		n.SetRefuseClosed(true)
		if took, err := call(b.Self()); !errors.Is(err, transport.ErrUnreachable) || took != 10*time.Millisecond {
			t.Errorf("call to a closed node that refuses: %v after %v, want unreachable after 10ms", err, took)
		}
	})
}

// TestSendAndRestart: a one-way message reaches its handler; a node closed and listened
// for again is back at the same address.
func TestSendAndRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, a, b, h := twoNodes(t)
		if err := a.Send(context.Background(), b.Self(), kind, []byte("hello")); err != nil {
			t.Fatal(err)
		}
		if got := <-h.oneway; string(got) != "hello" {
			t.Errorf("one-way message %q", got)
		}
		if _, err := n.Listen(transport.Config{Self: transport.Peer{ID: "b", DC: "y"}, Handler: h}); err == nil {
			t.Error("a second Listen of a running node succeeded")
		}
		b.Close()
		b2, err := n.Listen(transport.Config{Self: transport.Peer{ID: "b", DC: "y"}, Handler: h})
		if err != nil || b2.Addr() != b.Addr() {
			t.Fatalf("restart: %v, address %q, want %q", err, b2.Addr(), b.Addr())
		}
		if err := b.Send(context.Background(), a.Self(), kind, nil); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("send from the closed endpoint: %v, want ErrClosed", err)
		}
	})
}
