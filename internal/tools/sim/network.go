package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// LinkSpec describes the one-way path from one DC to another. It has the same
// fields as topology.LinkSpec so that one converts to the other.
type LinkSpec struct {
	// Latency is the one-way propagation delay.
	Latency time.Duration
	// BandwidthBps is the serialisation rate in bits per second; 0 is unlimited.
	BandwidthBps float64
	// Jitter adds a uniform extra delay in [0, Jitter).
	Jitter time.Duration
	// Loss is the probability in [0, 1] that a message is lost.
	Loss float64
}

// LinkModel gives the link between two DCs (fromDC == toDC: inside one DC).
type LinkModel interface {
	Link(fromDC, toDC string) (LinkSpec, error)
}

// LinkFunc adapts a function to LinkModel.
type LinkFunc func(fromDC, toDC string) (LinkSpec, error)

// Link calls f.
func (f LinkFunc) Link(fromDC, toDC string) (LinkSpec, error) { return f(fromDC, toDC) }

// UniformLinks is a LinkModel with one spec for every link inside a DC and
// another for every link between DCs: enough for most experiments.
type UniformLinks struct {
	Local, Remote LinkSpec
}

// Link returns Local when fromDC == toDC and Remote otherwise.
func (u UniformLinks) Link(fromDC, toDC string) (LinkSpec, error) {
	if fromDC == toDC {
		return u.Local, nil
	}
	return u.Remote, nil
}

// Wire says how a message's encoded size becomes bytes on the wire.
type Wire struct {
	// HeaderBytes is added once per segment.
	HeaderBytes int
	// SegmentPayloadBytes is the largest payload of one segment (the MSS); 0
	// puts every message in one segment whatever its size.
	SegmentPayloadBytes int
}

// TCPIPv4 is the wire of a Linux TCP stream over IPv4 on a 1500-byte MTU:
// 20 bytes of IPv4 header, 20 of TCP and 12 of the timestamp option per
// segment, 1448 bytes of payload per segment. Ethernet framing is not counted.
var TCPIPv4 = Wire{HeaderBytes: 52, SegmentPayloadBytes: 1448}

// Bytes is the wire size of a message of payloadBytes encoded bytes.
func (w Wire) Bytes(payloadBytes int) int {
	segments := 1
	if w.SegmentPayloadBytes > 0 && payloadBytes > w.SegmentPayloadBytes {
		segments = (payloadBytes + w.SegmentPayloadBytes - 1) / w.SegmentPayloadBytes
	}
	return payloadBytes + segments*w.HeaderBytes
}

// Network carries messages between DCs: latency, jitter, loss, bandwidth,
// partitions and byte counters. The Simulator owns one; use it through
// Simulator.Network to partition, heal and read counters.
type Network struct {
	dcs     []string
	dcIndex map[string]int
	links   [][]LinkSpec
	// partitioned[a][b] is true while messages from a to b are blocked.
	partitioned [][]bool
	// linkFree[a][b] is when the directed link between two different DCs
	// has finished sending what it was given.
	linkFree [][]time.Duration
	wire     Wire
	rng      *rand.Rand
	// counters[from][to] maps a message kind to its counter.
	counters [][]map[string]*Counter
}

// NewNetwork returns a network of the given DCs on its own, for drivers that keep their
// own clock and queue (the data path's, in internal/tools/sim/datapath): they call Transmit for every
// message and deliver it at the time it returns. Loss and jitter draw from seed.
func NewNetwork(dcs []string, model LinkModel, wire Wire, seed uint64) (*Network, error) {
	return newNetwork(dcs, model, wire, rand.New(rand.NewPCG(seed, 0)))
}

// Transmit counts one message of payloadBytes from fromDC to toDC sent at now and
// decides its fate, as the Simulator does for its own messages: the time it arrives, or
// dropped (lost, or blocked by a partition). nicFree is the sender's NIC queue, which
// serialises its traffic inside a DC.
func (n *Network) Transmit(now time.Duration, fromDC, toDC, kind string, payloadBytes int, nicFree *time.Duration) (arrive time.Duration, dropped bool, err error) {
	i, ok := n.dcIndex[fromDC]
	if !ok {
		return 0, false, fmt.Errorf("sim: DC %q: %w", fromDC, ErrUnknownDC)
	}
	j, ok := n.dcIndex[toDC]
	if !ok {
		return 0, false, fmt.Errorf("sim: DC %q: %w", toDC, ErrUnknownDC)
	}
	arrive, dropped = n.transmit(now, i, j, kind, payloadBytes, nicFree)
	return arrive, dropped, nil
}

// newNetwork resolves every link of the model for the given DCs.
func newNetwork(dcs []string, model LinkModel, wire Wire, rng *rand.Rand) (*Network, error) {
	if len(dcs) == 0 {
		return nil, fmt.Errorf("sim: %w", ErrNoDCs)
	}
	if model == nil {
		return nil, fmt.Errorf("sim: %w", ErrNoLinkModel)
	}
	n := &Network{
		dcs:         append([]string(nil), dcs...),
		dcIndex:     make(map[string]int, len(dcs)),
		links:       square[LinkSpec](len(dcs)),
		partitioned: square[bool](len(dcs)),
		linkFree:    square[time.Duration](len(dcs)),
		counters:    square[map[string]*Counter](len(dcs)),
		wire:        wire,
		rng:         rng,
	}
	for i, dc := range dcs {
		if _, dup := n.dcIndex[dc]; dup {
			return nil, fmt.Errorf("sim: DC %q listed twice: %w", dc, ErrDuplicateDC)
		}
		n.dcIndex[dc] = i
	}
	for i, from := range dcs {
		for j, to := range dcs {
			spec, err := model.Link(from, to)
			if err != nil {
				return nil, fmt.Errorf("sim: link %s->%s: %w", from, to, err)
			}
			if spec.Loss < 0 || spec.Loss > 1 || spec.Latency < 0 || spec.Jitter < 0 || spec.BandwidthBps < 0 {
				return nil, fmt.Errorf("sim: link %s->%s: %+v: %w", from, to, spec, ErrBadLink)
			}
			n.links[i][j] = spec
			n.counters[i][j] = make(map[string]*Counter)
		}
	}
	return n, nil
}

// square allocates a k×k matrix.
func square[T any](k int) [][]T {
	m := make([][]T, k)
	for i := range m {
		m[i] = make([]T, k)
	}
	return m
}

// DCs lists the network's DCs in the order given to New.
func (n *Network) DCs() []string { return append([]string(nil), n.dcs...) }

// Partition blocks all messages between DCs a and b, both ways.
func (n *Network) Partition(a, b string) error { return n.setPartition(a, b, true) }

// Heal lets messages between DCs a and b through again.
func (n *Network) Heal(a, b string) error { return n.setPartition(a, b, false) }

func (n *Network) setPartition(a, b string, blocked bool) error {
	i, ok := n.dcIndex[a]
	if !ok {
		return fmt.Errorf("sim: DC %q: %w", a, ErrUnknownDC)
	}
	j, ok := n.dcIndex[b]
	if !ok {
		return fmt.Errorf("sim: DC %q: %w", b, ErrUnknownDC)
	}
	n.partitioned[i][j] = blocked
	n.partitioned[j][i] = blocked
	return nil
}

// Counters returns a snapshot of the cumulative traffic counters.
func (n *Network) Counters() Counters {
	out := make(Counters)
	for i, row := range n.counters {
		for j, kinds := range row {
			for kind, c := range kinds {
				out[CounterKey{FromDC: n.dcs[i], ToDC: n.dcs[j], Kind: kind}] = *c
			}
		}
	}
	return out
}

// ResetCounters sets every counter to zero.
func (n *Network) ResetCounters() {
	for _, row := range n.counters {
		for j := range row {
			row[j] = make(map[string]*Counter)
		}
	}
}

// transmit counts one message from DC i to DC j sent at now and decides its
// fate: the time it arrives, or dropped. nicFree is the sender's NIC queue,
// used for traffic inside a DC.
func (n *Network) transmit(now time.Duration, i, j int, kind string, payloadBytes int, nicFree *time.Duration) (arrive time.Duration, dropped bool) {
	wireBytes := n.wire.Bytes(payloadBytes)
	c := n.counters[i][j][kind]
	if c == nil {
		c = &Counter{}
		n.counters[i][j][kind] = c
	}
	c.Messages++
	c.Bytes += int64(wireBytes)
	c.PayloadBytes += int64(payloadBytes)

	spec := n.links[i][j]
	if n.partitioned[i][j] || (spec.Loss > 0 && n.rng.Float64() < spec.Loss) {
		c.DroppedMessages++
		c.DroppedBytes += int64(wireBytes)
		return 0, true
	}
	start := now
	if spec.BandwidthBps > 0 {
		queue := nicFree
		if i != j {
			queue = &n.linkFree[i][j]
		}
		start = max(start, *queue)
		serialise := time.Duration(math.Ceil(float64(wireBytes) * 8 / spec.BandwidthBps * float64(time.Second)))
		start += serialise
		*queue = start
	}
	arrive = start + spec.Latency
	if spec.Jitter > 0 {
		arrive += time.Duration(n.rng.Int64N(int64(spec.Jitter)))
	}
	return arrive, false
}

// countUnroutable records a message addressed to a node the simulator does
// not know: it has no destination DC, so it is counted as dropped inside the
// sender's DC under kind "unroutable:<kind>", where a test can see it.
func (n *Network) countUnroutable(i int, kind string, payloadBytes int) {
	wireBytes := int64(n.wire.Bytes(payloadBytes))
	key := "unroutable:" + kind
	c := n.counters[i][i][key]
	if c == nil {
		c = &Counter{}
		n.counters[i][i][key] = c
	}
	c.Messages++
	c.DroppedMessages++
	c.Bytes += wireBytes
	c.DroppedBytes += wireBytes
	c.PayloadBytes += int64(payloadBytes)
}
