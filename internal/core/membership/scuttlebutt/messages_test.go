package scuttlebutt

import (
	"errors"
	"reflect"
	"testing"

	"github.com/kuradb/kura/internal/core/membership"
)

// exampleMessages returns one message of every type, with and without optional parts:
// the round-trip test's cases and the fuzz test's seeds.
func exampleMessages() []membership.Message {
	state := membership.EndpointState{ID: "n7", Generation: 1700000123, Heartbeat: 44,
		App: []membership.AppValue{{Key: "dc", Value: "a", Version: 2}, {Key: "status", Value: "normal", Version: 3}}}
	return []membership.Message{
		&Syn{},
		&Syn{Digests: []Digest{{ID: "n1", Generation: 1700000000, MaxVersion: 300}, {ID: "n2", Generation: 5}}},
		&Ack{Requests: []Digest{{ID: "n3", Generation: 9, MaxVersion: 1}}, States: []membership.EndpointState{state}},
		&Ack2{States: []membership.EndpointState{state, {ID: "n8", Generation: 1, Heartbeat: 2}}},
	}
}

func TestMessagesRoundTrip(t *testing.T) {
	for _, m := range exampleMessages() {
		t.Run(m.Kind(), func(t *testing.T) {
			b := membership.Marshal(m)
			if len(b) != m.WireSize() {
				t.Fatalf("WireSize %d, encoded %d bytes", m.WireSize(), len(b))
			}
			got, err := Unmarshal(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("round trip:\n got %+v\nwant %+v", got, m)
			}
		})
	}
}

func TestUnmarshalRejectsGarbage(t *testing.T) {
	for _, data := range [][]byte{nil, {99}, {typeSyn, 5}, append(membership.Marshal(&Syn{}), 0)} {
		if _, err := Unmarshal(data); !errors.Is(err, membership.ErrMalformed) {
			t.Fatalf("Unmarshal(%x): err = %v, want ErrMalformed", data, err)
		}
	}
}
