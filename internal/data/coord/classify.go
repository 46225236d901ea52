package coord

import (
	"context"
	"errors"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/schema"
)

// ErrorClass is the kind of failure a request met, as every front end reports it: the
// gRPC API's status code, the Redis front end's error code and the errors metric's label
// all derive from the one class, so that they agree on what went wrong.
type ErrorClass int

// The classes, from Classify.
const (
	// ClassOK: no error.
	ClassOK ErrorClass = iota
	// ClassInvalidArgument: the request itself is malformed (ErrInvalidArgument, an
	// unknown consistency level, an invalid keyspace name); retrying cannot help.
	ClassInvalidArgument
	// ClassNoKeyspace: the request names a keyspace that does not exist.
	ClassNoKeyspace
	// ClassUnavailable: too few live replicas for the level (ErrUnavailable); nothing was
	// written.
	ClassUnavailable
	// ClassTimeout: the level's replies did not arrive in time (ErrTimeout), or the
	// caller's deadline passed; a write may still have reached some replicas.
	ClassTimeout
	// ClassCanceled: the caller gave up on the request.
	ClassCanceled
	// ClassAnswerFull: the answer to a request for many keys or records would pass the
	// node's bound (ErrAnswerFull); asking for fewer is answered.
	ClassAnswerFull
	// ClassInternal: anything else, such as a storage failure.
	ClassInternal
)

// Classify returns the class of a request's error; nil is ClassOK. It looks through
// wrapping with errors.Is, so a front end may wrap the coordinator's error and still be
// classified by it.
func Classify(err error) ErrorClass {
	switch {
	case err == nil:
		return ClassOK
	case errors.Is(err, ErrInvalidArgument), errors.Is(err, consistency.ErrUnknownLevel), errors.Is(err, schema.ErrInvalidKeyspace):
		return ClassInvalidArgument
	case errors.Is(err, schema.ErrNoKeyspace):
		return ClassNoKeyspace
	case errors.Is(err, ErrUnavailable):
		return ClassUnavailable
	case errors.Is(err, ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout
	case errors.Is(err, context.Canceled):
		return ClassCanceled
	case errors.Is(err, ErrAnswerFull):
		return ClassAnswerFull
	}
	return ClassInternal
}

// String is the class's label in the errors metric (kura_request_errors_total's kind).
func (c ErrorClass) String() string {
	switch c {
	case ClassOK:
		return "ok"
	case ClassInvalidArgument:
		return "invalid_argument"
	case ClassNoKeyspace:
		return "no_keyspace"
	case ClassUnavailable:
		return "unavailable"
	case ClassTimeout:
		return "timeout"
	case ClassCanceled:
		return "canceled"
	case ClassAnswerFull:
		return "answer_full"
	}
	return "internal"
}
