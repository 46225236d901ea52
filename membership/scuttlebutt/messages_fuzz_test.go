package scuttlebutt

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/kuradb/kura/membership"
)

// FuzzUnmarshal decodes arbitrary bytes as a Scuttlebutt message, as a node decodes a gossip
// payload from anyone who can connect. Decoding must not panic and must fail with
// membership.ErrMalformed; a message that decodes must re-encode to WireSize bytes that
// decode to the same message, and encode to those same bytes again.
func FuzzUnmarshal(f *testing.F) {
	for _, m := range exampleMessages() {
		f.Add(membership.Marshal(m))
	}
	// A list declaring more entries than its bytes could hold, and a padded varint.
	f.Add([]byte{typeSyn, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{typeSyn, 1, 1, 'a', 0x80, 0x00, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Unmarshal(data)
		if err != nil {
			if !errors.Is(err, membership.ErrMalformed) {
				t.Fatalf("Unmarshal(%x): %v, want ErrMalformed", data, err)
			}
			return
		}
		checkReencodes(t, m)
	})
}

// checkReencodes encodes m, decodes it and encodes the result again. Decoding is not
// byte-exact (a varint may be padded), but encoding is canonical, so the second encoding must equal the first.
func checkReencodes(t *testing.T, m membership.Message) {
	t.Helper()
	enc := membership.Marshal(m)
	if len(enc) != m.WireSize() {
		t.Fatalf("%s: WireSize %d, encoded %d bytes", m.Kind(), m.WireSize(), len(enc))
	}
	again, err := Unmarshal(enc)
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
