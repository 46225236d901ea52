package coord_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/coord"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		want  coord.ErrorClass
		label string
	}{
		{"no error", nil, coord.ClassOK, "ok"},
		{"invalid argument", fmt.Errorf("put: %w", coord.ErrInvalidArgument), coord.ClassInvalidArgument, "invalid_argument"},
		{"unknown level", fmt.Errorf("%w: MOST", consistency.ErrUnknownLevel), coord.ClassInvalidArgument, "invalid_argument"},
		{"invalid keyspace name", fmt.Errorf("%w: bad name", schema.ErrInvalidKeyspace), coord.ClassInvalidArgument, "invalid_argument"},
		{"no keyspace", fmt.Errorf("%w \"x\"", schema.ErrNoKeyspace), coord.ClassNoKeyspace, "no_keyspace"},
		{"unavailable", &coord.UnavailableError{Level: consistency.Quorum}, coord.ClassUnavailable, "unavailable"},
		{"coordinator timeout", &coord.TimeoutError{Level: consistency.All}, coord.ClassTimeout, "timeout"},
		{"lightweight transaction under contention", &coord.ContentionError{Level: consistency.Serial, Rounds: 16}, coord.ClassTimeout, "timeout"},
		{"lightweight transaction of unknown outcome", &coord.UnknownOutcomeError{Level: consistency.LocalSerial, Cause: coord.ErrInvalidArgument},
			coord.ClassTimeout, "timeout"},
		{"caller's deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), coord.ClassTimeout, "timeout"},
		{"canceled", context.Canceled, coord.ClassCanceled, "canceled"},
		{"answer full", fmt.Errorf("%w: 64 MiB of values", coord.ErrAnswerFull), coord.ClassAnswerFull, "answer_full"},
		{"anything else", errors.New("disk on fire"), coord.ClassInternal, "internal"},
		// A malformed request is reported as such even when a deadline also passed.
		{"invalid before timeout", errors.Join(coord.ErrInvalidArgument, context.DeadlineExceeded), coord.ClassInvalidArgument, "invalid_argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := coord.Classify(tt.err)
			if got != tt.want {
				t.Errorf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
			}
			if got.String() != tt.label {
				t.Errorf("Classify(%v).String() = %q, want %q", tt.err, got.String(), tt.label)
			}
		})
	}
}
