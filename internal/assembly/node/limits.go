package node

import (
	"cmp"
	"fmt"

	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/io/transport"
)

// requestOverheadBytes is room, beyond a record's key and value, for everything else a
// request or a replica message around them carries: the keyspace name (48 bytes at
// most), timestamps, field tags and lengths, the frame header.
const requestOverheadBytes = 64 << 10

// CheckLimits refuses record limits a node could not honour; Start calls it. A key and a
// value at their limits travel to a replica in one transport frame (and to the node in
// one gRPC message, sized from the same limits), and every node refuses a frame over
// transport.DefaultMaxFrameBytes. Raising the frame size on one node instead would only
// move the failure to its peers, so a value limit that does not fit is refused here.
func CheckLimits(l coord.Limits) error {
	if l.KeyBytesMax < 0 || l.ValueBytesMax < 0 {
		return fmt.Errorf("node: key and value limits must not be negative (key %d, value %d)", l.KeyBytesMax, l.ValueBytesMax)
	}
	defaults := coord.DefaultLimits()
	key, value := cmp.Or(l.KeyBytesMax, defaults.KeyBytesMax), cmp.Or(l.ValueBytesMax, defaults.ValueBytesMax)
	if most := transport.DefaultMaxFrameBytes - requestOverheadBytes - key; value > most {
		return fmt.Errorf("node: a value limit of %d bytes does not fit a replica message: with keys of up to %d bytes, values may have at most %d bytes (a frame carries %d)",
			value, key, most, transport.DefaultMaxFrameBytes)
	}
	return nil
}
