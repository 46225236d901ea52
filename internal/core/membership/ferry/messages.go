package ferry

import (
	"fmt"

	"github.com/kuradb/kura/internal/core/membership"
)

// Message type bytes, the first byte of every encoded message.
const (
	typeSummary byte = iota + 1
	typeBuckets
	typeDigests
	typeDeltas
	typePush
	typeHeartbeat
	typeProbe
	typeProbeAck
	typeJoin
	typeWelcome
	typeRedirect
	typeProbeReq
	typeIndirectAck
	typeSuspect
)

// DCSum is the constant-size summary of what a node knows about one DC: how
// many members and the XOR of their entry hashes.
type DCSum struct {
	DC    string
	Count uint64
	Hash  uint64
}

// Delta is one member's state, or the part of it the receiver lacks, with
// the version at which the member was declared dead (0: never).
type Delta struct {
	State  membership.EndpointState
	DeadAt uint64
	// hint names the member in the sender's table and, when the delta is
	// the whole of a version (Core.delta), that version (0: none).
	hint hint
}

// Digest names one member's entry: generation, highest version, dead flag.
type Digest struct {
	ID         string
	Generation uint64
	MaxVersion uint64
	Dead       bool
	// hint names the member and its version in the sender's table.
	hint hint
}

// hint names a member by number, and a version by index, in the Table of
// the core that made the message. A receiver sharing that table (the cores
// of a simulated cluster) uses them instead of looking the member's ID up
// and reading its version: the same index in the same table is the same
// state. A hint is not encoded: a decoded message has none (its table is
// nil), and a receiver trusts it only when table is its own.
type hint struct {
	table *Table
	num   int32
	ver   uint32
}

// BucketRef names one bucket of one DC.
type BucketRef struct {
	DC    string
	Index uint64
}

// DCBuckets is the bucket hashes of one DC.
type DCBuckets struct {
	DC     string
	Hashes []uint64
}

// Summary opens an anti-entropy exchange: per-DC sums (O(#DCs), not O(n)),
// plus a few recently learned changes pushed along (rumour mongering).
// Reply asks for an answer even when nothing differs (gateways use it to
// know the remote DC is reachable).
type Summary struct {
	Sums  []DCSum
	Hot   []Delta
	Reply bool
}

// Buckets answers a Summary whose sums differ: the bucket hashes of each
// DC that differs. Empty when everything matched and Reply was asked.
type Buckets struct {
	DCs []DCBuckets
}

// Digests lists the sender's entries in the buckets that differ.
type Digests struct {
	Buckets []BucketRef
	Entries []Digest
}

// Deltas carries entries the receiver lacks and requests for entries the
// sender lacks (each with the sender's version).
type Deltas struct {
	Entries  []Delta
	Requests []Digest
}

// Push carries fresh changes to a DC's gateways, and from a gateway to the
// gateways of the other DCs.
type Push struct {
	Entries []Delta
}

// Heartbeat goes every round to each of a node's monitors. It carries the
// sender's generation and highest version so a monitor can name exactly
// which state it declares dead. Stop tells the monitor to stop watching.
type Heartbeat struct {
	Generation uint64
	MaxVersion uint64
	Stop       bool
}

// Probe asks a silent node whether it is alive.
type Probe struct {
	Seq uint64
}

// ProbeAck answers a Probe; Monitored tells whether the prober is still one
// of the sender's monitors.
type ProbeAck struct {
	Seq       uint64
	Monitored bool
}

// ProbeReq asks a member to probe Target for the sender (SWIM's
// ping-req): a monitor whose direct probe went unanswered asks a few members
// of its DC at once, so that one lossy link does not make a live node
// suspect.
type ProbeReq struct {
	Target string
	Seq    uint64
}

// IndirectAck tells a monitor, for its probe Seq, that Target is alive: a
// member it asked (ProbeReq) got Target's answer, or another monitor of
// Target, still hearing it, contradicts the sender's Suspect, or Target
// answers a Suspect about itself. Without Alive it is only a member's
// receipt of a ProbeReq (Lifeguard's nack): a monitor that gets no receipt
// from any member it asked may be cut off itself, and doubts its own links
// before it suspects anyone.
type IndirectAck struct {
	Target string
	Seq    uint64
	Alive  bool
}

// Suspect tells the other monitors of a node (and the node itself) that
// the sender suspects it: its probes, direct and indirect, went unanswered.
// A monitor that suspects the node too convicts it at once; one that still
// hears it, and the node itself, answer with an IndirectAck for Seq.
type Suspect struct {
	ID         string
	Generation uint64
	Seq        uint64
}

// Join asks a seed to admit the sender.
type Join struct {
	State membership.EndpointState
}

// Welcome admits a joining node: the full state (once per join, not per
// round).
type Welcome struct {
	Entries []Delta
}

// Redirect sends a joining node to members of its own DC, so the full state
// does not cross a DC link. It carries those members' states, not just their
// IDs: the joiner knows nobody yet and needs their addresses to reach them.
type Redirect struct {
	Gateways []Delta
}

// Kind is "summary".
func (*Summary) Kind() string { return "summary" }

// Kind is "buckets".
func (*Buckets) Kind() string { return "buckets" }

// Kind is "digests".
func (*Digests) Kind() string { return "digests" }

// Kind is "deltas".
func (*Deltas) Kind() string { return "deltas" }

// Kind is "push".
func (*Push) Kind() string { return "push" }

// Kind is "heartbeat".
func (*Heartbeat) Kind() string { return "heartbeat" }

// Kind is "probe".
func (*Probe) Kind() string { return "probe" }

// Kind is "probe-ack".
func (*ProbeAck) Kind() string { return "probe-ack" }

// Kind is "probe-req".
func (*ProbeReq) Kind() string { return "probe-req" }

// Kind is "indirect-ack".
func (*IndirectAck) Kind() string { return "indirect-ack" }

// Kind is "suspect".
func (*Suspect) Kind() string { return "suspect" }

// Kind is "join".
func (*Join) Kind() string { return "join" }

// Kind is "welcome".
func (*Welcome) Kind() string { return "welcome" }

// Kind is "redirect".
func (*Redirect) Kind() string { return "redirect" }

// codec of a list of T: size, append and decode of one element.
type codec[T any] struct {
	size     func(*T) int
	append   func([]byte, *T) []byte
	decode   func(*membership.Decoder) T
	minBytes int
}

func (c codec[T]) listSize(xs []T) int {
	n := membership.UvarintSize(uint64(len(xs)))
	for i := range xs {
		n += c.size(&xs[i])
	}
	return n
}

func (c codec[T]) appendList(b []byte, xs []T) []byte {
	b = membership.AppendUvarint(b, uint64(len(xs)))
	for i := range xs {
		b = c.append(b, &xs[i])
	}
	return b
}

func (c codec[T]) decodeList(d *membership.Decoder) []T {
	n := d.Count(c.minBytes)
	if n == 0 {
		return nil
	}
	xs := make([]T, n)
	for i := range xs {
		xs[i] = c.decode(d)
	}
	return xs
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

var (
	sumCodec = codec[DCSum]{
		size: func(s *DCSum) int { return membership.StringSize(s.DC) + membership.UvarintSize(s.Count) + 8 },
		append: func(b []byte, s *DCSum) []byte {
			return membership.AppendUint64(membership.AppendUvarint(membership.AppendString(b, s.DC), s.Count), s.Hash)
		},
		decode:   func(d *membership.Decoder) DCSum { return DCSum{DC: d.String(), Count: d.Uvarint(), Hash: d.Uint64()} },
		minBytes: 10,
	}
	deltaCodec = codec[Delta]{
		size: func(x *Delta) int { return x.hint.stateSize(&x.State) + membership.UvarintSize(x.DeadAt) },
		append: func(b []byte, x *Delta) []byte {
			return membership.AppendUvarint(x.State.AppendTo(b), x.DeadAt)
		},
		decode: func(d *membership.Decoder) Delta {
			return Delta{State: membership.DecodeEndpointState(d), DeadAt: d.Uvarint()}
		},
		minBytes: 5,
	}
	digestCodec = codec[Digest]{
		size: func(x *Digest) int {
			return membership.StringSize(x.ID) + membership.UvarintSize(x.Generation) + membership.UvarintSize(x.MaxVersion) + 1
		},
		append: func(b []byte, x *Digest) []byte {
			b = membership.AppendUvarint(membership.AppendString(b, x.ID), x.Generation)
			return append(membership.AppendUvarint(b, x.MaxVersion), boolByte(x.Dead))
		},
		decode: func(d *membership.Decoder) Digest {
			return Digest{ID: d.String(), Generation: d.Uvarint(), MaxVersion: d.Uvarint(), Dead: d.Byte() == 1}
		},
		minBytes: 4,
	}
	bucketRefCodec = codec[BucketRef]{
		size: func(x *BucketRef) int { return membership.StringSize(x.DC) + membership.UvarintSize(x.Index) },
		append: func(b []byte, x *BucketRef) []byte {
			return membership.AppendUvarint(membership.AppendString(b, x.DC), x.Index)
		},
		decode:   func(d *membership.Decoder) BucketRef { return BucketRef{DC: d.String(), Index: d.Uvarint()} },
		minBytes: 2,
	}
	hashCodec = codec[uint64]{
		size:     func(*uint64) int { return 8 },
		append:   func(b []byte, x *uint64) []byte { return membership.AppendUint64(b, *x) },
		decode:   func(d *membership.Decoder) uint64 { return d.Uint64() },
		minBytes: 8,
	}
	dcBucketsCodec = codec[DCBuckets]{
		size: func(x *DCBuckets) int { return membership.StringSize(x.DC) + hashCodec.listSize(x.Hashes) },
		append: func(b []byte, x *DCBuckets) []byte {
			return hashCodec.appendList(membership.AppendString(b, x.DC), x.Hashes)
		},
		decode: func(d *membership.Decoder) DCBuckets {
			return DCBuckets{DC: d.String(), Hashes: hashCodec.decodeList(d)}
		},
		minBytes: 2,
	}
)

// WireSize is the encoded size.
func (m *Summary) WireSize() int { return 2 + sumCodec.listSize(m.Sums) + deltaCodec.listSize(m.Hot) }

// AppendTo appends the encoding.
func (m *Summary) AppendTo(b []byte) []byte {
	b = sumCodec.appendList(append(b, typeSummary), m.Sums)
	return append(deltaCodec.appendList(b, m.Hot), boolByte(m.Reply))
}

// WireSize is the encoded size.
func (m *Buckets) WireSize() int { return 1 + dcBucketsCodec.listSize(m.DCs) }

// AppendTo appends the encoding.
func (m *Buckets) AppendTo(b []byte) []byte {
	return dcBucketsCodec.appendList(append(b, typeBuckets), m.DCs)
}

// WireSize is the encoded size.
func (m *Digests) WireSize() int {
	return 1 + bucketRefCodec.listSize(m.Buckets) + digestCodec.listSize(m.Entries)
}

// AppendTo appends the encoding.
func (m *Digests) AppendTo(b []byte) []byte {
	return digestCodec.appendList(bucketRefCodec.appendList(append(b, typeDigests), m.Buckets), m.Entries)
}

// WireSize is the encoded size.
func (m *Deltas) WireSize() int {
	return 1 + deltaCodec.listSize(m.Entries) + digestCodec.listSize(m.Requests)
}

// AppendTo appends the encoding.
func (m *Deltas) AppendTo(b []byte) []byte {
	return digestCodec.appendList(deltaCodec.appendList(append(b, typeDeltas), m.Entries), m.Requests)
}

// WireSize is the encoded size.
func (m *Push) WireSize() int { return 1 + deltaCodec.listSize(m.Entries) }

// AppendTo appends the encoding.
func (m *Push) AppendTo(b []byte) []byte {
	return deltaCodec.appendList(append(b, typePush), m.Entries)
}

// WireSize is the encoded size.
func (m *Heartbeat) WireSize() int {
	return 2 + membership.UvarintSize(m.Generation) + membership.UvarintSize(m.MaxVersion)
}

// AppendTo appends the encoding.
func (m *Heartbeat) AppendTo(b []byte) []byte {
	b = membership.AppendUvarint(append(b, typeHeartbeat), m.Generation)
	return append(membership.AppendUvarint(b, m.MaxVersion), boolByte(m.Stop))
}

// WireSize is the encoded size.
func (m *Probe) WireSize() int { return 1 + membership.UvarintSize(m.Seq) }

// AppendTo appends the encoding.
func (m *Probe) AppendTo(b []byte) []byte {
	return membership.AppendUvarint(append(b, typeProbe), m.Seq)
}

// WireSize is the encoded size.
func (m *ProbeAck) WireSize() int { return 2 + membership.UvarintSize(m.Seq) }

// AppendTo appends the encoding.
func (m *ProbeAck) AppendTo(b []byte) []byte {
	return append(membership.AppendUvarint(append(b, typeProbeAck), m.Seq), boolByte(m.Monitored))
}

// WireSize is the encoded size.
func (m *ProbeReq) WireSize() int {
	return 1 + membership.StringSize(m.Target) + membership.UvarintSize(m.Seq)
}

// AppendTo appends the encoding.
func (m *ProbeReq) AppendTo(b []byte) []byte {
	return membership.AppendUvarint(membership.AppendString(append(b, typeProbeReq), m.Target), m.Seq)
}

// WireSize is the encoded size.
func (m *IndirectAck) WireSize() int {
	return 2 + membership.StringSize(m.Target) + membership.UvarintSize(m.Seq)
}

// AppendTo appends the encoding.
func (m *IndirectAck) AppendTo(b []byte) []byte {
	b = membership.AppendUvarint(membership.AppendString(append(b, typeIndirectAck), m.Target), m.Seq)
	return append(b, boolByte(m.Alive))
}

// WireSize is the encoded size.
func (m *Suspect) WireSize() int {
	return 1 + membership.StringSize(m.ID) + membership.UvarintSize(m.Generation) + membership.UvarintSize(m.Seq)
}

// AppendTo appends the encoding.
func (m *Suspect) AppendTo(b []byte) []byte {
	b = membership.AppendUvarint(membership.AppendString(append(b, typeSuspect), m.ID), m.Generation)
	return membership.AppendUvarint(b, m.Seq)
}

// WireSize is the encoded size.
func (m *Join) WireSize() int { return 1 + m.State.WireSize() }

// AppendTo appends the encoding.
func (m *Join) AppendTo(b []byte) []byte { return m.State.AppendTo(append(b, typeJoin)) }

// WireSize is the encoded size.
func (m *Welcome) WireSize() int { return 1 + deltaCodec.listSize(m.Entries) }

// AppendTo appends the encoding.
func (m *Welcome) AppendTo(b []byte) []byte {
	return deltaCodec.appendList(append(b, typeWelcome), m.Entries)
}

// WireSize is the encoded size.
func (m *Redirect) WireSize() int { return 1 + deltaCodec.listSize(m.Gateways) }

// AppendTo appends the encoding.
func (m *Redirect) AppendTo(b []byte) []byte {
	return deltaCodec.appendList(append(b, typeRedirect), m.Gateways)
}

// Unmarshal decodes a Ferry message.
func Unmarshal(data []byte) (membership.Message, error) {
	d := membership.NewDecoder(data)
	var m membership.Message
	switch t := d.Byte(); t {
	case typeSummary:
		m = &Summary{Sums: sumCodec.decodeList(d), Hot: deltaCodec.decodeList(d), Reply: d.Byte() == 1}
	case typeBuckets:
		m = &Buckets{DCs: dcBucketsCodec.decodeList(d)}
	case typeDigests:
		m = &Digests{Buckets: bucketRefCodec.decodeList(d), Entries: digestCodec.decodeList(d)}
	case typeDeltas:
		m = &Deltas{Entries: deltaCodec.decodeList(d), Requests: digestCodec.decodeList(d)}
	case typePush:
		m = &Push{Entries: deltaCodec.decodeList(d)}
	case typeHeartbeat:
		m = &Heartbeat{Generation: d.Uvarint(), MaxVersion: d.Uvarint(), Stop: d.Byte() == 1}
	case typeProbe:
		m = &Probe{Seq: d.Uvarint()}
	case typeProbeAck:
		m = &ProbeAck{Seq: d.Uvarint(), Monitored: d.Byte() == 1}
	case typeProbeReq:
		m = &ProbeReq{Target: d.String(), Seq: d.Uvarint()}
	case typeIndirectAck:
		m = &IndirectAck{Target: d.String(), Seq: d.Uvarint(), Alive: d.Byte() == 1}
	case typeSuspect:
		m = &Suspect{ID: d.String(), Generation: d.Uvarint(), Seq: d.Uvarint()}
	case typeJoin:
		m = &Join{State: membership.DecodeEndpointState(d)}
	case typeWelcome:
		m = &Welcome{Entries: deltaCodec.decodeList(d)}
	case typeRedirect:
		m = &Redirect{Gateways: deltaCodec.decodeList(d)}
	default:
		if d.Err() != nil {
			return nil, fmt.Errorf("ferry: %w", d.Err())
		}
		return nil, fmt.Errorf("ferry: %w: message type %d", membership.ErrMalformed, t)
	}
	if err := d.Finish(); err != nil {
		return nil, fmt.Errorf("ferry: %s: %w", m.Kind(), err)
	}
	return m, nil
}
