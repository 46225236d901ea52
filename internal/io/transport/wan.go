package transport

import (
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/io/topology"
)

// LinkModel gives the emulated path between two DCs. *topology.Topology satisfies it.
type LinkModel interface {
	Link(fromDC, toDC string) (topology.LinkSpec, error)
}

// wanLink emulates the path from this transport's DC to one destination DC, shared by all
// connections to that DC, the way netem shapes one interface: bandwidth serialises frames
// (a frame holds the link for bytes*8/bandwidth), latency is then added to each frame
// independently, so many frames are in flight at once.
type wanLink struct {
	spec topology.LinkSpec

	mu     sync.Mutex
	freeAt time.Time  // when the last scheduled frame has left the link
	rng    *rand.Rand // jitter and loss; seeded per link so runs repeat
}

// newWANLink returns nil when spec changes nothing, so connections can skip emulation
// entirely and pay no cost for it.
func newWANLink(spec topology.LinkSpec, seed int64, fromDC, toDC string) *wanLink {
	if spec == (topology.LinkSpec{}) {
		return nil
	}
	pair := fnv.New64a()
	pair.Write([]byte(fromDC + "\x00" + toDC))
	return &wanLink{spec: spec, rng: rand.New(rand.NewPCG(uint64(seed), pair.Sum64()))}
}

// schedule books a frame of frameBytes handed over at now and returns when it reaches the
// peer, or drop = true when the loss model discards it. Only droppable frames (requests and
// one-way messages) are ever lost: losing a hello would break the connection rather than a
// message, and losing a response is indistinguishable to the caller from losing its
// request. A dropped frame uses no bandwidth.
func (l *wanLink) schedule(now time.Time, frameBytes int, droppable bool) (deliverAt time.Time, drop bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if droppable && l.spec.Loss > 0 && l.rng.Float64() < l.spec.Loss {
		return time.Time{}, true
	}
	start := now
	if l.freeAt.After(start) {
		start = l.freeAt
	}
	if l.spec.BandwidthBps > 0 {
		transmit := time.Duration(float64(frameBytes) * 8 / l.spec.BandwidthBps * float64(time.Second))
		l.freeAt = start.Add(transmit)
	} else {
		l.freeAt = start
	}
	deliverAt = l.freeAt.Add(l.spec.Latency)
	if l.spec.Jitter > 0 {
		deliverAt = deliverAt.Add(time.Duration(l.rng.Int64N(int64(l.spec.Jitter))))
	}
	return deliverAt, false
}
