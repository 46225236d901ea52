package scuttlebutt

import (
	"testing"

	"github.com/kuradb/kura/internal/core/membership/wiretest"
)

// FuzzUnmarshal decodes arbitrary bytes as a Scuttlebutt message (see wiretest.Fuzz).
func FuzzUnmarshal(f *testing.F) {
	wiretest.Fuzz(f, Unmarshal, exampleMessages(),
		// A list declaring more entries than its bytes could hold, and a padded varint.
		[]byte{typeSyn, 0xff, 0xff, 0xff, 0xff, 0x0f},
		[]byte{typeSyn, 1, 1, 'a', 0x80, 0x00, 0})
}
