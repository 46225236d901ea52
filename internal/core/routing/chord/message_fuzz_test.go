package chord

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// FuzzUnmarshal decodes arbitrary bytes as a Chord message, as a node decodes the payload
// of a chord frame. Decoding must not panic and must fail with ErrMalformed. A message
// that decodes must encode to WireSize bytes; decoding is not byte-exact (a varint may be
// padded, a field may be present with its zero value, which encoding leaves out), but
// encoding is canonical: the encoding decodes to a message that encodes to the same bytes
// and decodes to itself.
func FuzzUnmarshal(f *testing.F) {
	a := Peer{ID: 1, Name: "tokyo-1", DC: "tokyo"}
	b := Peer{ID: 1 << 60, Name: "saopaulo-7", DC: "saopaulo"}
	for _, m := range []Message{
		{Type: MsgFindSuccessor, From: a, Seq: 7, Key: ^ID(0), Origin: b, Purpose: PurposeFinger, Finger: 63, Hops: 5, InterDCHops: 1, Final: true, Path: []ID{1, 2, 3}},
		{Type: MsgFoundSuccessor, From: b, Seq: 7, Key: 9, Origin: a, Hops: 200, Owner: b, Peers: []Peer{a, b}},
		{Type: MsgNeighbors, Layer: LayerLocal, From: b, Seq: 2, Pred: a, Peers: []Peer{a}},
	} {
		f.Add(m.Marshal())
	}
	f.Add(hugeList())
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Unmarshal(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Unmarshal(%x): %v, want ErrMalformed", data, err)
			}
			return
		}
		enc := m.Marshal()
		if len(enc) != m.WireSize() {
			t.Fatalf("%v: WireSize %d, encoded %d bytes", m, m.WireSize(), len(enc))
		}
		again, err := Unmarshal(enc)
		if err != nil {
			t.Fatalf("%+v: its encoding %x does not decode: %v", m, enc, err)
		}
		enc2 := again.Marshal()
		if !bytes.Equal(enc2, enc) {
			t.Fatalf("%+v: encoded as %x, decoded and encoded again as %x", m, enc, enc2)
		}
		if third, err := Unmarshal(enc2); err != nil || !reflect.DeepEqual(third, again) {
			t.Fatalf("%+v decodes as %+v, %v", again, third, err)
		}
	})
}
