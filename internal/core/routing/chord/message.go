package chord

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Peer names a node: its place on the circle, the name the transport addresses it by, and
// its datacenter, which the ML layer needs to tell local hops from inter-DC ones.
type Peer struct {
	ID   ID
	Name string
	DC   string
}

// IsZero reports whether p names no node (an empty finger or an unknown predecessor).
func (p Peer) IsZero() bool { return p.Name == "" }

// String prints the peer as its identifier followed by its DC, e.g. "12@A".
func (p Peer) String() string {
	if p.IsZero() {
		return "-"
	}
	return p.ID.String() + "@" + p.DC
}

// Layer selects one of a node's two rings: the global ring of all nodes, or the local ring
// of the nodes of its own DC, which only the ML protocols keep.
type Layer uint8

// The two layers of ML-Chord.
const (
	LayerGlobal Layer = iota
	LayerLocal
)

// String names the layer.
func (l Layer) String() string {
	if l == LayerLocal {
		return "local"
	}
	return "global"
}

// MsgType says what a Message asks or answers.
type MsgType uint8

// Message types. A lookup travels as FindSuccessor from hop to hop (recursive routing);
// each receiver acknowledges it to the sender with HopAck so a dead next hop is detected
// and routed around; the owner answers the origin directly with FoundSuccessor.
const (
	MsgFindSuccessor MsgType = iota + 1
	MsgFoundSuccessor
	MsgHopAck
	MsgGetNeighbors // stabilize: ask a successor for its predecessor and successor list
	MsgNeighbors
	MsgNotify // "I (or Pred) might be your predecessor"
	MsgPing   // check_predecessor
	MsgPong
	MsgLeave // graceful leave: hands the leaver's neighbours to its neighbours
)

var msgTypeNames = [...]string{
	MsgFindSuccessor:  "FindSuccessor",
	MsgFoundSuccessor: "FoundSuccessor",
	MsgHopAck:         "HopAck",
	MsgGetNeighbors:   "GetNeighbors",
	MsgNeighbors:      "Neighbors",
	MsgNotify:         "Notify",
	MsgPing:           "Ping",
	MsgPong:           "Pong",
	MsgLeave:          "Leave",
}

// String names the message type; the simulator uses it to label byte counters.
func (t MsgType) String() string {
	if int(t) < len(msgTypeNames) && msgTypeNames[t] != "" {
		return msgTypeNames[t]
	}
	return fmt.Sprintf("MsgType(%d)", uint8(t))
}

// Purpose says why a lookup was started, so the origin knows what to do with the owner.
type Purpose uint8

// Lookup purposes.
const (
	PurposeClient Purpose = iota // a lookup asked for through Node.Lookup
	PurposeJoin                  // a joining node looks for its own successor
	PurposeFinger                // fix_fingers refreshes finger Message.Finger
)

// Message is every message of the protocol, one struct for all types as in etcd's raft:
// each type uses the fields it needs and leaves the rest zero, and the encoding writes only
// the non-zero fields.
type Message struct {
	Type  MsgType
	Layer Layer
	// From is the sender; every message carries it so a receiver learns the sender's DC.
	From Peer
	// Seq identifies a request: the origin's lookup number, or the sender's request number
	// for GetNeighbors and Ping, echoed in the answer.
	Seq uint64
	// Key is the identifier a lookup is for.
	Key ID
	// Origin is the node that started the lookup; the owner answers it directly.
	Origin  Peer
	Purpose Purpose
	// Finger is the finger slot a PurposeFinger lookup refreshes.
	Finger uint8
	// Hops and InterDCHops count the forwarding hops of a lookup so far; in FoundSuccessor
	// and HopAck they are the totals of the request's path. Hops also counts how often a
	// Notify was passed on.
	Hops        int
	InterDCHops int
	// Final marks a forward to the node the sender believes owns Key.
	Final bool
	// Path lists the identifiers a traced lookup visited, origin first.
	Path []ID
	// Owner is the node that owns Key, in FoundSuccessor.
	Owner Peer
	// Pred is a predecessor: the sender's in Neighbors and Leave; in a Notify the sender
	// passes on, the node that may be the receiver's predecessor.
	Pred Peer
	// Peers is a successor list: the sender's in Neighbors and Leave, the owner's in
	// FoundSuccessor (where the store finds replicas).
	Peers []Peer
	// Gateways are the sender's gateways, its nearest node of each DC other than its own,
	// in a global Neighbors of a node that keeps them (Config.KeepGateways).
	Gateways []Peer
}

// Envelope is a message to send and the peer to send it to.
type Envelope struct {
	To  Peer
	Msg Message
}

// ErrMalformed is returned by Unmarshal for bytes that are not an encoded Message.
var ErrMalformed = errors.New("chord: malformed message")

// Presence bits of the optional fields, in encoding order.
const (
	hasSeq = 1 << iota
	hasKey
	hasOrigin
	hasPurpose
	hasHops
	hasInterDCHops
	hasFinal
	hasPath
	hasOwner
	hasPred
	hasPeers
	hasGateways
)

func (m *Message) presence() uint64 {
	var mask uint64
	set := func(bit uint64, present bool) {
		if present {
			mask |= bit
		}
	}
	set(hasSeq, m.Seq != 0)
	set(hasKey, m.Key != 0)
	set(hasOrigin, !m.Origin.IsZero())
	set(hasPurpose, m.Purpose != 0 || m.Finger != 0)
	set(hasHops, m.Hops != 0)
	set(hasInterDCHops, m.InterDCHops != 0)
	set(hasFinal, m.Final)
	set(hasPath, len(m.Path) > 0)
	set(hasOwner, !m.Owner.IsZero())
	set(hasPred, !m.Pred.IsZero())
	set(hasPeers, len(m.Peers) > 0)
	set(hasGateways, len(m.Gateways) > 0)
	return mask
}

// WireSize returns the length of the message's encoding without building it; the
// simulator counts bytes with it.
func (m *Message) WireSize() int {
	mask := m.presence()
	size := 2 + uvarintLen(mask) + peerSize(m.From)
	if mask&hasSeq != 0 {
		size += uvarintLen(m.Seq)
	}
	if mask&hasKey != 0 {
		size += 8
	}
	if mask&hasOrigin != 0 {
		size += peerSize(m.Origin)
	}
	if mask&hasPurpose != 0 {
		size += 2
	}
	if mask&hasHops != 0 {
		size += uvarintLen(uint64(m.Hops))
	}
	if mask&hasInterDCHops != 0 {
		size += uvarintLen(uint64(m.InterDCHops))
	}
	if mask&hasPath != 0 {
		size += uvarintLen(uint64(len(m.Path))) + 8*len(m.Path)
	}
	if mask&hasOwner != 0 {
		size += peerSize(m.Owner)
	}
	if mask&hasPred != 0 {
		size += peerSize(m.Pred)
	}
	if mask&hasPeers != 0 {
		size += peersSize(m.Peers)
	}
	if mask&hasGateways != 0 {
		size += peersSize(m.Gateways)
	}
	return size
}

// Marshal encodes the message: type, layer, a presence mask, the sender, then the present
// fields in a fixed order. Integers are uvarints, identifiers 8 bytes big-endian, strings
// length-prefixed.
func (m *Message) Marshal() []byte {
	mask := m.presence()
	b := make([]byte, 0, m.WireSize())
	b = append(b, byte(m.Type), byte(m.Layer))
	b = binary.AppendUvarint(b, mask)
	b = appendPeer(b, m.From)
	if mask&hasSeq != 0 {
		b = binary.AppendUvarint(b, m.Seq)
	}
	if mask&hasKey != 0 {
		b = binary.BigEndian.AppendUint64(b, uint64(m.Key))
	}
	if mask&hasOrigin != 0 {
		b = appendPeer(b, m.Origin)
	}
	if mask&hasPurpose != 0 {
		b = append(b, byte(m.Purpose), m.Finger)
	}
	if mask&hasHops != 0 {
		b = binary.AppendUvarint(b, uint64(m.Hops))
	}
	if mask&hasInterDCHops != 0 {
		b = binary.AppendUvarint(b, uint64(m.InterDCHops))
	}
	if mask&hasPath != 0 {
		b = binary.AppendUvarint(b, uint64(len(m.Path)))
		for _, id := range m.Path {
			b = binary.BigEndian.AppendUint64(b, uint64(id))
		}
	}
	if mask&hasOwner != 0 {
		b = appendPeer(b, m.Owner)
	}
	if mask&hasPred != 0 {
		b = appendPeer(b, m.Pred)
	}
	if mask&hasPeers != 0 {
		b = appendPeers(b, m.Peers)
	}
	if mask&hasGateways != 0 {
		b = appendPeers(b, m.Gateways)
	}
	return b
}

// Unmarshal decodes what Marshal encoded. It rejects trailing bytes, unknown types and
// layers, and lengths that run past the input, wrapping ErrMalformed.
func Unmarshal(data []byte) (Message, error) {
	d := decoder{buf: data}
	var m Message
	m.Type = MsgType(d.byte())
	m.Layer = Layer(d.byte())
	mask := d.uvarint()
	m.From = d.peer()
	if mask&hasSeq != 0 {
		m.Seq = d.uvarint()
	}
	if mask&hasKey != 0 {
		m.Key = d.id()
	}
	if mask&hasOrigin != 0 {
		m.Origin = d.peer()
	}
	if mask&hasPurpose != 0 {
		m.Purpose = Purpose(d.byte())
		m.Finger = d.byte()
	}
	if mask&hasHops != 0 {
		m.Hops = d.count()
	}
	if mask&hasInterDCHops != 0 {
		m.InterDCHops = d.count()
	}
	m.Final = mask&hasFinal != 0
	if mask&hasPath != 0 {
		n := d.length(8)
		m.Path = make([]ID, n)
		for i := range m.Path {
			m.Path[i] = d.id()
		}
	}
	if mask&hasOwner != 0 {
		m.Owner = d.peer()
	}
	if mask&hasPred != 0 {
		m.Pred = d.peer()
	}
	if mask&hasPeers != 0 {
		m.Peers = d.peers()
	}
	if mask&hasGateways != 0 {
		m.Gateways = d.peers()
	}
	switch {
	case d.err != nil:
		return Message{}, d.err
	case len(d.buf) != 0:
		return Message{}, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(d.buf))
	case m.Type < MsgFindSuccessor || m.Type > MsgLeave:
		return Message{}, fmt.Errorf("%w: unknown type %d", ErrMalformed, m.Type)
	case m.Layer > LayerLocal:
		return Message{}, fmt.Errorf("%w: unknown layer %d", ErrMalformed, m.Layer)
	case mask >= hasGateways<<1:
		return Message{}, fmt.Errorf("%w: unknown fields in mask %#x", ErrMalformed, mask)
	}
	return m, nil
}

// String prints the message compactly for test scripts and logs, sender aside, e.g.
// "FindSuccessor global seq=1 key=14 origin=1@A hops=1 interdc=0".
func (m Message) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s %s", m.Type, m.Layer)
	if m.Seq != 0 {
		fmt.Fprintf(&sb, " seq=%d", m.Seq)
	}
	switch m.Type {
	case MsgFindSuccessor, MsgFoundSuccessor:
		fmt.Fprintf(&sb, " key=%s origin=%s", m.Key, m.Origin)
		if m.Purpose == PurposeJoin {
			sb.WriteString(" join")
		} else if m.Purpose == PurposeFinger {
			fmt.Fprintf(&sb, " finger=%d", m.Finger)
		}
		fmt.Fprintf(&sb, " hops=%d interdc=%d", m.Hops, m.InterDCHops)
	case MsgHopAck:
		fmt.Fprintf(&sb, " origin=%s hops=%d", m.Origin, m.Hops)
	}
	if m.Final {
		sb.WriteString(" final")
	}
	if !m.Owner.IsZero() {
		fmt.Fprintf(&sb, " owner=%s", m.Owner)
	}
	if !m.Pred.IsZero() {
		fmt.Fprintf(&sb, " pred=%s", m.Pred)
	}
	if len(m.Peers) > 0 {
		fmt.Fprintf(&sb, " peers=%s", peerList(m.Peers))
	}
	if len(m.Gateways) > 0 {
		fmt.Fprintf(&sb, " gateways=%s", peerList(m.Gateways))
	}
	if len(m.Path) > 0 {
		fmt.Fprintf(&sb, " path=%s", pathString(m.Path))
	}
	return sb.String()
}

// pathString prints a lookup path as "1 → 10 → 12 → 15", the paper's notation.
func pathString(path []ID) string {
	parts := make([]string, len(path))
	for i, id := range path {
		parts[i] = id.String()
	}
	return strings.Join(parts, " → ")
}

// peerList prints peers as "[3@B 5@A]".
func peerList(peers []Peer) string {
	parts := make([]string, len(peers))
	for i, p := range peers {
		parts[i] = p.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// minPeerSize is the smallest encoding of a peer: its identifier and two empty strings.
const minPeerSize = 10

func peerSize(p Peer) int {
	return 8 + uvarintLen(uint64(len(p.Name))) + len(p.Name) + uvarintLen(uint64(len(p.DC))) + len(p.DC)
}

func peersSize(peers []Peer) int {
	size := uvarintLen(uint64(len(peers)))
	for _, p := range peers {
		size += peerSize(p)
	}
	return size
}

func appendPeers(b []byte, peers []Peer) []byte {
	b = binary.AppendUvarint(b, uint64(len(peers)))
	for _, p := range peers {
		b = appendPeer(b, p)
	}
	return b
}

func appendPeer(b []byte, p Peer) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(p.ID))
	b = binary.AppendUvarint(b, uint64(len(p.Name)))
	b = append(b, p.Name...)
	b = binary.AppendUvarint(b, uint64(len(p.DC)))
	return append(b, p.DC...)
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// decoder reads fields off a buffer and remembers the first error, so Unmarshal reads
// straight through and checks once.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated %s", ErrMalformed, what)
	}
	d.buf = nil
}

func (d *decoder) byte() byte {
	if len(d.buf) < 1 {
		d.fail("byte")
		return 0
	}
	v := d.buf[0]
	d.buf = d.buf[1:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.fail("uvarint")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

// count reads a hop count; counts beyond any real path are malformed.
func (d *decoder) count() int {
	v := d.uvarint()
	if v > 1<<16 {
		d.fail("count")
		return 0
	}
	return int(v)
}

// length reads a list length and checks the input can hold that many items of at least
// itemSize bytes, so a corrupt length cannot make Unmarshal allocate gigabytes.
func (d *decoder) length(itemSize int) int {
	v := d.uvarint()
	if v > uint64(len(d.buf)/itemSize) {
		d.fail("list")
		return 0
	}
	return int(v)
}

func (d *decoder) id() ID {
	if len(d.buf) < 8 {
		d.fail("identifier")
		return 0
	}
	v := binary.BigEndian.Uint64(d.buf)
	d.buf = d.buf[8:]
	return ID(v)
}

func (d *decoder) string() string {
	n := d.length(1)
	s := string(d.buf[:n])
	d.buf = d.buf[n:]
	return s
}

func (d *decoder) peer() Peer {
	return Peer{ID: d.id(), Name: d.string(), DC: d.string()}
}

func (d *decoder) peers() []Peer {
	peers := make([]Peer, d.length(minPeerSize))
	for i := range peers {
		peers[i] = d.peer()
	}
	return peers
}
