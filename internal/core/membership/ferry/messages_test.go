package ferry

import (
	"errors"
	"reflect"
	"testing"

	"github.com/kuradb/kura/internal/core/membership"
)

// exampleMessages returns one message of every type, with and without optional parts:
// the round-trip test's cases and the fuzz test's seeds.
func exampleMessages() []membership.Message {
	state := membership.EndpointState{ID: "a7", Generation: 1700000123, Heartbeat: 4,
		App: []membership.AppValue{{Key: "dc", Value: "a", Version: 2}, {Key: "status", Value: "normal", Version: 3}}}
	return []membership.Message{
		&Summary{Sums: []DCSum{{DC: "a", Count: 500, Hash: 0xfeedface}}, Hot: []Delta{{State: state, DeadAt: 3}}, Reply: true},
		&Summary{},
		&Buckets{DCs: []DCBuckets{{DC: "b", Hashes: []uint64{1, 2, 3}}}},
		&Digests{Buckets: []BucketRef{{DC: "a", Index: 31}}, Entries: []Digest{{ID: "a7", Generation: 9, MaxVersion: 4, Dead: true}}},
		&Deltas{Entries: []Delta{{State: state}}, Requests: []Digest{{ID: "b1"}}},
		&Push{Entries: []Delta{{State: state}}},
		&Heartbeat{Generation: 1700000000, MaxVersion: 12, Stop: true},
		&Probe{Seq: 77},
		&ProbeAck{Seq: 77, Monitored: true},
		&ProbeReq{Target: "a3", Seq: 78},
		&IndirectAck{Target: "a3", Seq: 78, Alive: true},
		&IndirectAck{Target: "a3", Seq: 78},
		&Suspect{ID: "a3", Generation: 1700000000, Seq: 78},
		&Join{State: state},
		&Welcome{Entries: []Delta{{State: state}, {State: state, DeadAt: 9}}},
		&Redirect{Gateways: []Delta{{State: state}}},
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

func TestSteadyStateMessagesAreSmall(t *testing.T) {
	// What every node sends every round must not grow with n, nor with the
	// number of DCs: a round's summary carries one total (see Core.total),
	// and it and a heartbeat stay under 20 bytes whatever the cluster size.
	sum := &Summary{Sums: []DCSum{{Count: 1 << 20, Hash: ^uint64(0)}}}
	hb := &Heartbeat{Generation: 1 << 40, MaxVersion: 1 << 20}
	for _, m := range []membership.Message{sum, hb} {
		if m.WireSize() > 20 {
			t.Fatalf("%s is %d bytes", m.Kind(), m.WireSize())
		}
	}
	// The per-DC sums answer a total that differs: O(DCs), not O(n).
	full := &Summary{Sums: []DCSum{{DC: "dc1", Count: 1 << 20, Hash: ^uint64(0)}, {DC: "dc2", Count: 1 << 20, Hash: ^uint64(0)}}}
	if full.WireSize() > 40 {
		t.Fatalf("per-DC summary of two DCs is %d bytes", full.WireSize())
	}
}

func TestUnmarshalRejectsGarbage(t *testing.T) {
	for _, data := range [][]byte{nil, {0}, {200}, {typeProbe}, append(membership.Marshal(&Probe{Seq: 1}), 7)} {
		if _, err := Unmarshal(data); !errors.Is(err, membership.ErrMalformed) {
			t.Fatalf("Unmarshal(%x): err = %v, want ErrMalformed", data, err)
		}
	}
}
