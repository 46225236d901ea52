package coord

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
)

// writeGate lets a cluster snapshot hold the writes this coordinator stamps (HoldWrites):
// while held, a write waits before it is stamped, and the hold begins only once every
// write stamped before it has been answered. A write passes it with two atomic adds and
// no lock: enter registers the write, then looks for a hold; HoldWrites sets the hold,
// then looks at the writes registered. Go's atomics are sequentially consistent, so one
// of the two always sees the other: either the write backs out and waits, or the hold
// waits for the write.
type writeGate struct {
	hold     atomic.Pointer[gateHold]
	inflight atomic.Int64
	// wake tells a hold waiting for the writes in flight that one was answered.
	wake chan struct{}
}

// gateHold is one hold of the gate; released is closed when it ends.
type gateHold struct {
	released chan struct{}
}

func newWriteGate() *writeGate {
	return &writeGate{wake: make(chan struct{}, 1)}
}

// enter registers a write about to be stamped, after waiting out a hold; exit must
// follow once the write is answered. It fails, registering nothing, when ctx ends first.
func (g *writeGate) enter(ctx context.Context) error {
	for {
		if h := g.hold.Load(); h != nil {
			select {
			case <-h.released:
			case <-ctx.Done():
				return fmt.Errorf("%w: writes are held while a cluster snapshot is taken (kura snapshot create --all), and this one's deadline passed first: %w", ErrTimeout, ctx.Err())
			}
			continue
		}
		g.inflight.Add(1)
		if g.hold.Load() == nil {
			return nil
		}
		g.exit() // a hold began meanwhile: step back so that it can begin
	}
}

// exit ends a write registered by enter.
func (g *writeGate) exit() {
	if g.inflight.Add(-1) == 0 && g.hold.Load() != nil {
		select {
		case g.wake <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// ErrHeld refuses a second hold of a coordinator's writes.
var ErrHeld = errors.New("writes are held already")

// HoldWrites makes this coordinator's writes wait before they are stamped, and returns
// once every write it stamped before has been answered (acknowledged or failed):
// together with this node's clock read then, every write it ever acknowledges is either
// stamped before that reading or after release is called. It fails, holding nothing,
// when ctx ends first, and refuses a second hold (ErrHeld). The writes that wait end
// with their own deadlines.
func (c *Coordinator) HoldWrites(ctx context.Context) (release func(), err error) {
	h := &gateHold{released: make(chan struct{})}
	if !c.gate.hold.CompareAndSwap(nil, h) {
		return nil, ErrHeld
	}
	release = func() {
		if c.gate.hold.CompareAndSwap(h, nil) {
			close(h.released)
		}
	}
	for c.gate.inflight.Load() != 0 {
		select {
		case <-c.gate.wake:
		case <-ctx.Done():
			release()
			return nil, fmt.Errorf("writes in flight were not answered in time: %w", ctx.Err())
		}
	}
	return release, nil
}
