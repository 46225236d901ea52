package ferry

import (
	"testing"

	"github.com/kuradb/kura/internal/core/membership/wiretest"
)

// FuzzUnmarshal decodes arbitrary bytes as a Ferry message (see wiretest.Fuzz).
func FuzzUnmarshal(f *testing.F) {
	wiretest.Fuzz(f, Unmarshal, exampleMessages(),
		// A list declaring more entries than its bytes could hold, and a bool byte other
		// than 0 or 1.
		[]byte{typePush, 0xff, 0xff, 0xff, 0xff, 0x0f},
		[]byte{typeProbeAck, 1, 2})
}
