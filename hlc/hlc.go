// Package hlc implements a hybrid logical clock: timestamps that follow wall-clock
// time closely yet never go backwards and order every causally related event,
// so last-writer-wins replicas agree on which write is the latest.
package hlc

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/base/assert"
)

// logicalBits is the width of the logical counter in the low bits of a Timestamp.
const logicalBits = 16

// wallMillisMax is the largest wall time, in milliseconds since the Unix epoch, that
// fits in the 48 high bits of a Timestamp (about the year 10889).
const wallMillisMax = math.MaxUint64 >> logicalBits

// Timestamp is a hybrid logical timestamp: the 48 high bits hold wall-clock
// milliseconds since the Unix epoch, the 16 low bits a logical counter. Comparing two
// Timestamps as integers orders them. The zero Timestamp means "none".
type Timestamp uint64

// FromTime returns the Timestamp of t with logical counter 0. Times before the Unix
// epoch map to 0 and times beyond the 48-bit range to the largest wall time.
func FromTime(t time.Time) Timestamp {
	wallMillis := t.UnixMilli()
	switch {
	case wallMillis < 0:
		wallMillis = 0
	case uint64(wallMillis) > wallMillisMax:
		wallMillis = wallMillisMax
	}
	return Timestamp(uint64(wallMillis) << logicalBits)
}

// WallTime returns the wall-clock part of t, at millisecond precision.
func (t Timestamp) WallTime() time.Time {
	return time.UnixMilli(int64(t >> logicalBits))
}

// Logical returns the logical counter of t, which orders events within one millisecond.
func (t Timestamp) Logical() uint16 {
	return uint16(t)
}

// String formats t as "<wall milliseconds>.<logical>", e.g. "1700000000123.5".
func (t Timestamp) String() string {
	return fmt.Sprintf("%d.%d", uint64(t>>logicalBits), t.Logical())
}

// Clock issues hybrid logical timestamps. It is safe for concurrent use.
type Clock struct {
	now func() time.Time

	mu   sync.Mutex
	last Timestamp
}

// NewClock returns a Clock reading physical time from now (time.Now when nil).
func NewClock(now func() time.Time) *Clock {
	if now == nil {
		now = time.Now
	}
	return &Clock{now: now}
}

// Now returns a timestamp greater than every one this clock has issued or observed.
// When physical time has not moved past the last timestamp, the logical counter is
// incremented; its overflow carries into the wall part, keeping Now strictly increasing.
func (c *Clock) Now() Timestamp {
	return c.Update(0)
}

// Update merges a timestamp received from another node (the HLC receive rule) and
// returns the new local time, which is greater than both remote and every timestamp
// issued before. It accepts any remote value: the node's clock guard (package
// clockguard) refuses a timestamp too far ahead before it gets here.
func (c *Clock) Update(remote Timestamp) Timestamp {
	physical := FromTime(c.now())
	c.mu.Lock()
	defer c.mu.Unlock()
	// Because the logical counter sits in the low bits, the HLC rule reduces to taking
	// the largest of: physical time, one past the last timestamp, one past the remote.
	next := max(physical, c.last+1, remote+1)
	if assert.Enabled { // guarded: boxing two timestamps would cost every call
		assert.That(next > c.last, "hlc: timestamp %s not after the previous %s: a clock never goes back", next, c.last)
	}
	c.last = next
	return next
}
