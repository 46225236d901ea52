package apiserver

import (
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/data/coord"
)

// levelFromProto maps the wire level to the coordinator's; unspecified means ONE.
func levelFromProto(c kurav1.Consistency) (consistency.Level, error) {
	if c == kurav1.Consistency_CONSISTENCY_UNSPECIFIED {
		return consistency.One, nil
	}
	return consistency.Parse(c.String())
}

// serialFromProto maps a CompareAndSet's wire level to the coordinator's; unspecified
// means SERIAL.
func serialFromProto(c kurav1.Consistency) (consistency.Level, error) {
	if c == kurav1.Consistency_CONSISTENCY_UNSPECIFIED {
		return consistency.Serial, nil
	}
	return consistency.Parse(c.String())
}

// grpcCodes is the gRPC status code of each error class.
var grpcCodes = map[coord.ErrorClass]codes.Code{
	coord.ClassInvalidArgument: codes.InvalidArgument,
	coord.ClassNoKeyspace:      codes.NotFound,
	coord.ClassUnavailable:     codes.Unavailable,
	coord.ClassTimeout:         codes.DeadlineExceeded,
	coord.ClassCanceled:        codes.Canceled,
	coord.ClassAnswerFull:      codes.ResourceExhausted,
	coord.ClassInternal:        codes.Internal,
}

// statusOf turns a coordinator error into the gRPC status of its class (coord.Classify),
// keeping the message. The status error still wraps err, so that the metrics interceptor
// classifies the request by the coordinator's error, as the Redis front end does, rather
// than by mapping the code back.
func statusOf(err error) error {
	if err == nil {
		return nil
	}
	return &statusError{status: status.New(grpcCodes[coord.Classify(err)], err.Error()), cause: err}
}

// statusError is a gRPC status error that keeps the error it was made from.
type statusError struct {
	status *status.Status
	cause  error
}

func (e *statusError) Error() string { return e.status.Err().Error() }

// GRPCStatus is the status gRPC sends to the client.
func (e *statusError) GRPCStatus() *status.Status { return e.status }

// Unwrap gives errors.Is the coordinator's error.
func (e *statusError) Unwrap() error { return e.cause }

// FailedPrecondition marks err as a ring change refused as it stands (one that cannot
// start or go on now, and says why): the Admin service answers it failed-precondition
// with err's text, where other errors take their class's code.
func FailedPrecondition(err error) error {
	if err == nil {
		return nil
	}
	return &preconditionError{err}
}

type preconditionError struct{ error }

func (e *preconditionError) Unwrap() error { return e.error }

// moveStatus maps a refused ring change to failed-precondition, anything else as usual.
func moveStatus(err error) error {
	if _, refused := errors.AsType[*preconditionError](err); refused {
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	return statusOf(err)
}

// itemStatus is the code and message of one item's error in a GetMany or PutMany answer:
// err is the status error Get or Put would have answered for the item alone.
func itemStatus(err error) (code int32, message string) {
	st := status.Convert(err)
	return int32(st.Code()), st.Message()
}
