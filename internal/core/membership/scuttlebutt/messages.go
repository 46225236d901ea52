package scuttlebutt

import (
	"fmt"

	"github.com/kuradb/kura/internal/core/membership"
)

// Message type bytes, the first byte of every encoded message.
const (
	typeSyn  byte = 1
	typeAck  byte = 2
	typeAck2 byte = 3
)

// Digest is what a node knows of one endpoint: generation and highest
// version. A SYN carries one for every endpoint, which is why Scuttlebutt's
// traffic grows as n² (paper 001).
type Digest struct {
	ID         string
	Generation uint64
	MaxVersion uint64
}

func (d *Digest) wireSize() int {
	return membership.StringSize(d.ID) + membership.UvarintSize(d.Generation) + membership.UvarintSize(d.MaxVersion)
}

func (d *Digest) appendTo(b []byte) []byte {
	b = membership.AppendString(b, d.ID)
	b = membership.AppendUvarint(b, d.Generation)
	return membership.AppendUvarint(b, d.MaxVersion)
}

func decodeDigest(d *membership.Decoder) Digest {
	return Digest{ID: d.String(), Generation: d.Uvarint(), MaxVersion: d.Uvarint()}
}

// Syn opens an exchange: the sender's digest of every endpoint it knows,
// sorted by ID.
type Syn struct {
	Digests []Digest
}

// Ack answers a Syn: digests the receiver wants (its own version in
// MaxVersion) and states the sender lacks.
type Ack struct {
	Requests []Digest
	States   []membership.EndpointState
}

// Ack2 closes the exchange: the states the Ack requested.
type Ack2 struct {
	States []membership.EndpointState
}

// Kind is "syn".
func (*Syn) Kind() string { return "syn" }

// Kind is "ack".
func (*Ack) Kind() string { return "ack" }

// Kind is "ack2".
func (*Ack2) Kind() string { return "ack2" }

func digestsSize(ds []Digest) int {
	n := membership.UvarintSize(uint64(len(ds)))
	for i := range ds {
		n += ds[i].wireSize()
	}
	return n
}

func appendDigests(b []byte, ds []Digest) []byte {
	b = membership.AppendUvarint(b, uint64(len(ds)))
	for i := range ds {
		b = ds[i].appendTo(b)
	}
	return b
}

func decodeDigests(d *membership.Decoder) []Digest {
	n := d.Count(3)
	if n == 0 {
		return nil
	}
	ds := make([]Digest, n)
	for i := range ds {
		ds[i] = decodeDigest(d)
	}
	return ds
}

func statesSize(ss []membership.EndpointState) int {
	n := membership.UvarintSize(uint64(len(ss)))
	for i := range ss {
		n += ss[i].WireSize()
	}
	return n
}

func appendStates(b []byte, ss []membership.EndpointState) []byte {
	b = membership.AppendUvarint(b, uint64(len(ss)))
	for i := range ss {
		b = ss[i].AppendTo(b)
	}
	return b
}

func decodeStates(d *membership.Decoder) []membership.EndpointState {
	n := d.Count(4)
	if n == 0 {
		return nil
	}
	ss := make([]membership.EndpointState, n)
	for i := range ss {
		ss[i] = membership.DecodeEndpointState(d)
	}
	return ss
}

// WireSize is the encoded size.
func (m *Syn) WireSize() int { return 1 + digestsSize(m.Digests) }

// WireSize is the encoded size.
func (m *Ack) WireSize() int { return 1 + digestsSize(m.Requests) + statesSize(m.States) }

// WireSize is the encoded size.
func (m *Ack2) WireSize() int { return 1 + statesSize(m.States) }

// AppendTo appends the encoding.
func (m *Syn) AppendTo(b []byte) []byte { return appendDigests(append(b, typeSyn), m.Digests) }

// AppendTo appends the encoding.
func (m *Ack) AppendTo(b []byte) []byte {
	return appendStates(appendDigests(append(b, typeAck), m.Requests), m.States)
}

// AppendTo appends the encoding.
func (m *Ack2) AppendTo(b []byte) []byte { return appendStates(append(b, typeAck2), m.States) }

// Unmarshal decodes a Scuttlebutt message.
func Unmarshal(data []byte) (membership.Message, error) {
	d := membership.NewDecoder(data)
	var m membership.Message
	switch t := d.Byte(); t {
	case typeSyn:
		m = &Syn{Digests: decodeDigests(d)}
	case typeAck:
		m = &Ack{Requests: decodeDigests(d), States: decodeStates(d)}
	case typeAck2:
		m = &Ack2{States: decodeStates(d)}
	default:
		if d.Err() != nil {
			return nil, fmt.Errorf("scuttlebutt: %w", d.Err())
		}
		return nil, fmt.Errorf("scuttlebutt: %w: message type %d", membership.ErrMalformed, t)
	}
	if err := d.Finish(); err != nil {
		return nil, fmt.Errorf("scuttlebutt: %s: %w", m.Kind(), err)
	}
	return m, nil
}
