package transport

import (
	"sync"
	"sync/atomic"
)

// Flow is one direction of traffic of one message kind between two DCs.
type Flow struct {
	FromDC string
	ToDC   string
	Kind   Kind
}

// Counter counts messages and the bytes they took on the wire (frame header + payload;
// TCP/IP headers are not counted).
type Counter struct {
	Messages uint64
	Bytes    uint64
}

// Stats counts frames per Flow at the sender, at the moment a frame is handed to the
// socket. It is safe for concurrent use; the zero value is ready. Several transports may
// share one Stats to see a whole in-process cluster's traffic.
type Stats struct {
	mu    sync.RWMutex
	pairs map[dcPair]*kindCounters
	// sendQueueRefused counts frames refused with ErrSendQueueFull.
	sendQueueRefused atomic.Uint64
}

// SendQueueRefused returns how many frames were refused because a peer's send queue was
// full (ErrSendQueueFull).
func (s *Stats) SendQueueRefused() uint64 {
	return s.sendQueueRefused.Load()
}

// dcPair is one direction between two DCs.
type dcPair struct {
	fromDC, toDC string
}

// kindCounters holds one counter per possible Kind, so that counting a frame is two
// atomic adds with no map lookup: a connection resolves its DC pair once.
type kindCounters [256]struct {
	messages, bytes atomic.Uint64
}

// NewStats returns empty counters.
func NewStats() *Stats {
	return &Stats{}
}

// counters returns the counters of one DC pair, creating them on first use.
func (s *Stats) counters(fromDC, toDC string) *kindCounters {
	pair := dcPair{fromDC, toDC}
	s.mu.RLock()
	counters, ok := s.pairs[pair]
	s.mu.RUnlock()
	if ok {
		return counters
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if counters, ok := s.pairs[pair]; ok {
		return counters
	}
	if s.pairs == nil {
		s.pairs = make(map[dcPair]*kindCounters)
	}
	counters = new(kindCounters)
	s.pairs[pair] = counters
	return counters
}

// add counts one frame of the given size.
func (c *kindCounters) add(kind Kind, frameBytes int) {
	c[kind].messages.Add(1)
	c[kind].bytes.Add(uint64(frameBytes))
}

// Snapshot returns every flow that carried at least one message.
func (s *Stats) Snapshot() map[Flow]Counter {
	snapshot := make(map[Flow]Counter)
	s.each(func(flow Flow, counter Counter) {
		snapshot[flow] = counter
	})
	return snapshot
}

// InterDCBytes sums the bytes of all flows between distinct DCs: the WAN traffic the
// papers measure.
func (s *Stats) InterDCBytes() uint64 {
	var total uint64
	s.each(func(flow Flow, counter Counter) {
		if flow.FromDC != flow.ToDC {
			total += counter.Bytes
		}
	})
	return total
}

// Total sums all flows.
func (s *Stats) Total() Counter {
	var total Counter
	s.each(func(_ Flow, counter Counter) {
		total.Messages += counter.Messages
		total.Bytes += counter.Bytes
	})
	return total
}

// each calls visit for every flow with at least one message.
func (s *Stats) each(visit func(Flow, Counter)) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for pair, counters := range s.pairs {
		for kind := range counters {
			messages := counters[kind].messages.Load()
			if messages == 0 {
				continue
			}
			visit(Flow{FromDC: pair.fromDC, ToDC: pair.toDC, Kind: Kind(kind)},
				Counter{Messages: messages, Bytes: counters[kind].bytes.Load()})
		}
	}
}
