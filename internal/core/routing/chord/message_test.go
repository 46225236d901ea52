package chord

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

func TestMessageRoundTrip(t *testing.T) {
	a := Peer{ID: 1, Name: "tokyo-1", DC: "tokyo"}
	b := Peer{ID: 1 << 60, Name: "saopaulo-7", DC: "saopaulo"}
	tests := []Message{
		{Type: MsgNotify, From: a},
		{Type: MsgPing, Layer: LayerLocal, From: a, Seq: 300},
		{Type: MsgFindSuccessor, From: a, Seq: 7, Key: ^ID(0), Origin: b, Purpose: PurposeFinger, Finger: 63, Hops: 5, InterDCHops: 1, Final: true, Path: []ID{1, 2, 3}},
		{Type: MsgFoundSuccessor, From: b, Seq: 7, Key: 9, Origin: a, Hops: 200, Owner: b, Peers: []Peer{a, b}},
		{Type: MsgHopAck, From: b, Seq: 1, Origin: a, Hops: 1},
		{Type: MsgNeighbors, Layer: LayerLocal, From: b, Seq: 2, Pred: a, Peers: []Peer{a}},
		{Type: MsgNeighbors, From: b, Seq: 3, Pred: a, Peers: []Peer{a}, Gateways: []Peer{a, b}},
		{Type: MsgLeave, From: a, Pred: b},
	}
	for _, m := range tests {
		data := m.Marshal()
		if len(data) != m.WireSize() {
			t.Errorf("%v: WireSize %d, encoding %d bytes", m, m.WireSize(), len(data))
		}
		got, err := Unmarshal(data)
		if err != nil {
			t.Errorf("%v: %v", m, err)
			continue
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, m)
		}
	}
}

// TestMessageCompact: a forwarded lookup between kura's usual names stays small.
func TestMessageCompact(t *testing.T) {
	p := Peer{ID: NodeID("tokyo-12"), Name: "tokyo-12", DC: "tokyo"}
	m := Message{Type: MsgFindSuccessor, From: p, Seq: 1234, Key: KeyID([]byte("k")), Origin: p, Hops: 3, InterDCHops: 1}
	if size := m.WireSize(); size > 80 {
		t.Errorf("forwarded lookup takes %d bytes, want at most 80", size)
	}
}

func TestUnmarshalRejects(t *testing.T) {
	good := (&Message{Type: MsgNeighbors, From: Peer{ID: 1, Name: "a", DC: "A"}, Seq: 3, Peers: []Peer{{ID: 2, Name: "b", DC: "B"}}}).Marshal()
	tests := map[string][]byte{
		"empty":          nil,
		"truncated":      good[:len(good)-1],
		"trailing bytes": append(append([]byte(nil), good...), 0),
		"unknown type":   append([]byte{99}, good[1:]...),
		"unknown layer":  append([]byte{good[0], 7}, good[2:]...),
		"huge list":      hugeList(),
	}
	for name, data := range tests {
		if _, err := Unmarshal(data); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: error %v, want ErrMalformed", name, err)
		}
	}
}

// hugeList encodes a Neighbors message claiming 2^32 peers in a few bytes.
func hugeList() []byte {
	b := binary.AppendUvarint([]byte{byte(MsgNeighbors), 0}, hasPeers)
	b = appendPeer(b, Peer{ID: 1})
	return binary.AppendUvarint(b, 1<<32)
}

func TestMessageString(t *testing.T) {
	m := Message{Type: MsgFindSuccessor, Seq: 1, Key: 14, Origin: Peer{ID: 1, Name: "n1", DC: "A"}, Hops: 2, Final: true, Path: []ID{1, 10, 12}}
	want := "FindSuccessor global seq=1 key=14 origin=1@A hops=2 interdc=0 final path=1 → 10 → 12"
	if got := m.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := MsgType(42).String(); got != "MsgType(42)" {
		t.Errorf("unknown type prints %q", got)
	}
}
