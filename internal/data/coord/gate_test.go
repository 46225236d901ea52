package coord

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestHoldWritesWaitsForWritesInFlightAndHoldsNewOnes runs the gate in a synctest
// bubble, so that "still waiting" is checked once every goroutine is blocked, not after
// a sleep: a hold begins only once the write stamped before it is answered, a write that
// comes during the hold waits until the release, one whose deadline passes first fails
// as a timeout, and a second hold is refused.
func TestHoldWritesWaitsForWritesInFlightAndHoldsNewOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &Coordinator{gate: newWriteGate()}
		ctx := context.Background()
		if err := c.gate.enter(ctx); err != nil { // a write stamped before the hold
			t.Fatal(err)
		}
		var release func()
		held := make(chan error, 1)
		go func() {
			var err error
			release, err = c.HoldWrites(ctx)
			held <- err
		}()
		synctest.Wait()
		select {
		case err := <-held:
			t.Fatalf("HoldWrites returned (%v) with a write in flight", err)
		default:
		}
		c.gate.exit()
		if err := <-held; err != nil {
			t.Fatal(err)
		}

		if _, err := c.HoldWrites(ctx); !errors.Is(err, ErrHeld) {
			t.Fatalf("second HoldWrites: %v, want ErrHeld", err)
		}
		entered := make(chan error, 1)
		go func() { entered <- c.gate.enter(ctx) }()
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := c.gate.enter(short); !errors.Is(err, ErrTimeout) {
			t.Fatalf("a write whose deadline passes during the hold: %v, want ErrTimeout", err)
		}
		select {
		case err := <-entered:
			t.Fatalf("a write passed the gate (%v) during the hold", err)
		default:
		}
		release()
		if err := <-entered; err != nil {
			t.Fatal(err)
		}
		c.gate.exit()
		if c.gate.inflight.Load() != 0 {
			t.Fatalf("%d writes registered after every one exited", c.gate.inflight.Load())
		}
		release() // a second release is harmless
		again, err := c.HoldWrites(ctx)
		if err != nil {
			t.Fatalf("HoldWrites after the release: %v", err)
		}
		again()
	})
}

// TestHoldWritesGivesUpWhenItsContextEnds: a hold whose writes in flight are not
// answered before its deadline fails and holds nothing.
func TestHoldWritesGivesUpWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &Coordinator{gate: newWriteGate()}
		if err := c.gate.enter(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := c.HoldWrites(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("HoldWrites: %v, want the deadline's error", err)
		}
		if err := c.gate.enter(context.Background()); err != nil {
			t.Fatalf("a write after the failed hold: %v", err)
		}
	})
}
