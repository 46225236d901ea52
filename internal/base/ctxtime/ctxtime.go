// Package ctxtime waits on time under a context: the one wait every background loop of
// a node makes (a ring delay, a gossip round, a retry's pause), ended early when the
// node stops. Its timers are Go's, so that a testing/synctest bubble (the simulator)
// runs them in virtual time.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits d, or less when ctx ends first; it reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
