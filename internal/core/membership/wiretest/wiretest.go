// Package wiretest fuzzes a membership core's message codec: the check that Ferry's and
// Scuttlebutt's fuzz targets share.
package wiretest

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/kuradb/kura/internal/core/membership"
)

// Unmarshal decodes one message of a core's wire format.
type Unmarshal func(data []byte) (membership.Message, error)

// Fuzz runs f over arbitrary bytes, seeded with the encodings of examples and with raw
// seeds, decoding them as a node decodes a gossip payload from anyone who can connect.
// Decoding must not panic and must fail with membership.ErrMalformed; a message that
// decodes must re-encode to WireSize bytes that decode to the same message, and encode
// to those same bytes again.
func Fuzz(f *testing.F, unmarshal Unmarshal, examples []membership.Message, raw ...[]byte) {
	for _, m := range examples {
		f.Add(membership.Marshal(m))
	}
	for _, data := range raw {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := unmarshal(data)
		if err != nil {
			if !errors.Is(err, membership.ErrMalformed) {
				t.Fatalf("Unmarshal(%x): %v, want ErrMalformed", data, err)
			}
			return
		}
		checkReencodes(t, unmarshal, m)
	})
}

// checkReencodes encodes m, decodes it and encodes the result again. Decoding is not
// byte-exact (a varint may be padded; a bool is true for 1, false for any other byte),
// but encoding is canonical, so the second encoding must equal the first.
func checkReencodes(t *testing.T, unmarshal Unmarshal, m membership.Message) {
	t.Helper()
	enc := membership.Marshal(m)
	if len(enc) != m.WireSize() {
		t.Fatalf("%s: WireSize %d, encoded %d bytes", m.Kind(), m.WireSize(), len(enc))
	}
	again, err := unmarshal(enc)
	if err != nil {
		t.Fatalf("%s %+v: its encoding %x does not decode: %v", m.Kind(), m, enc, err)
	}
	if !reflect.DeepEqual(again, m) {
		t.Fatalf("%s: decodes as\n%+v\nre-encoded, as\n%+v", m.Kind(), m, again)
	}
	if enc2 := membership.Marshal(again); !bytes.Equal(enc2, enc) {
		t.Fatalf("%s: encoded as %x, then as %x", m.Kind(), enc, enc2)
	}
}
