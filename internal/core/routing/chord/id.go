package chord

import (
	"strconv"

	"github.com/kuradb/kura/internal/core/ring"
)

// ID is a position on Chord's identifier circle. kura uses the full 64-bit circle (m = 64),
// the same circle as ring.Token, so a DHT owner and a one-hop owner agree on every key.
// Config.IDBits narrows the circle for tests that replay the paper's small examples.
type ID uint64

// Bits is the width of kura's identifier circle: m = 64, so a finger table has 64 slots.
const Bits = 64

// NodeID places a node on the circle: the single vnode token ring.TokensFor derives from
// its name, so the DHT and the store's ring put a node at the same position.
func NodeID(name string) ID {
	return ID(ring.TokensFor(name, 1)[0])
}

// KeyID places a key on the circle with the store's hash partitioner, so a key's DHT owner
// is the node that stores it.
func KeyID(key []byte) ID {
	return ID(ring.HashPartitioner().Token(key))
}

// String prints the identifier in decimal, which keeps the paper's small examples readable.
func (id ID) String() string {
	return strconv.FormatUint(uint64(id), 10)
}

// inOpen reports whether x lies in the open arc (a, b) walking clockwise from a. When a
// equals b the arc is the whole circle except a, as Chord's intervals are defined.
func inOpen(x, a, b ID) bool {
	if a < b {
		return a < x && x < b
	}
	return x > a || x < b
}

// inHalfOpen reports whether x lies in (a, b]. When a equals b the arc is the whole circle:
// a node alone on the ring owns every key.
func inHalfOpen(x, a, b ID) bool {
	return x == b || inOpen(x, a, b)
}

// fingerStart returns the first identifier finger i of id covers: id + 2^i on a circle of
// the given width.
func fingerStart(id ID, i, bits int) ID {
	start := id + ID(1)<<uint(i)
	if bits < Bits {
		start &= ID(1)<<uint(bits) - 1
	}
	return start
}
