package apiserver

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
)

// TestStatusOf: the gRPC code follows the error's class, the message is the coordinator's,
// and the status error still classifies as the error it came from, which the errors
// metric relies on.
func TestStatusOf(t *testing.T) {
	tests := []struct {
		err  error
		code codes.Code
	}{
		{fmt.Errorf("%w: empty key", coord.ErrInvalidArgument), codes.InvalidArgument},
		{fmt.Errorf("%w: MOST", consistency.ErrUnknownLevel), codes.InvalidArgument},
		{fmt.Errorf("%w %q", schema.ErrNoKeyspace, "nope"), codes.NotFound},
		{&coord.UnavailableError{Level: consistency.Two}, codes.Unavailable},
		{&coord.TimeoutError{Level: consistency.All}, codes.DeadlineExceeded},
		{context.DeadlineExceeded, codes.DeadlineExceeded},
		{context.Canceled, codes.Canceled},
		{errors.New("disk on fire"), codes.Internal},
	}
	for _, tt := range tests {
		err := statusOf(tt.err)
		st, ok := status.FromError(err)
		if !ok || st.Code() != tt.code || st.Message() != tt.err.Error() {
			t.Errorf("statusOf(%v) = %v; want code %v and the error's message", tt.err, err, tt.code)
		}
		if got, want := coord.Classify(err), coord.Classify(tt.err); got != want {
			t.Errorf("statusOf(%v) classifies as %v, want %v", tt.err, got, want)
		}
	}
	if statusOf(nil) != nil {
		t.Error("statusOf(nil) is not nil")
	}
}

// TestLevelsMapToTheWire: every level's wire value is the number and name the client
// API gives it, SERIAL and LOCAL_SERIAL included.
func TestLevelsMapToTheWire(t *testing.T) {
	for _, l := range append(consistency.Levels(), consistency.SerialLevels()...) {
		wire := kurav1.Consistency(l)
		if wire.String() != l.String() {
			t.Errorf("level %v is wire value %d, named %v", l, int(l), wire)
		}
		if back, err := levelFromProto(wire); err != nil || back != l {
			t.Errorf("levelFromProto(%v) = %v, %v", wire, back, err)
		}
	}
}
