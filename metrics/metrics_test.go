package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/coord"
	"github.com/kuradb/kura/schema"
)

func TestObserveCountsRequestsLatencyAndErrors(t *testing.T) {
	r := New(Config{})
	r.Observe("resp", "get", consistency.One, time.Millisecond, nil)
	r.Observe("resp", "get", consistency.One, 2*time.Millisecond, nil)
	r.Observe("resp", "get", consistency.Quorum, time.Millisecond, &coord.UnavailableError{Level: consistency.Quorum})
	r.Observe("grpc", "put", consistency.All, time.Second, status.Error(codes.DeadlineExceeded, "slow"))

	got := gather(t, r.registry) // label values in the order of the label names

	tests := []struct {
		name, labels string
		want         float64
	}{
		{"kura_requests_total", "resp/ONE/get", 2},
		{"kura_requests_total", "resp/QUORUM/get", 1},
		{"kura_requests_total", "grpc/ALL/put", 1},
		{"kura_request_duration_seconds", "resp/ONE/get", 2},
		{"kura_request_duration_seconds", "grpc/ALL/put", 1},
		{"kura_request_errors_total", "resp/unavailable/get", 1},
		{"kura_request_errors_total", "grpc/timeout/put", 1},
	}
	for _, tt := range tests {
		if v := got[tt.name][tt.labels]; v != tt.want {
			t.Errorf("%s{%s} = %v, want %v", tt.name, tt.labels, v, tt.want)
		}
	}
	if n := len(got["kura_request_errors_total"]); n != 2 {
		t.Errorf("%d error series, want 2", n)
	}
}

func TestErrorKind(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("put: %w", coord.ErrInvalidArgument), "invalid_argument"},
		{fmt.Errorf("%w: MOST", consistency.ErrUnknownLevel), "invalid_argument"},
		{fmt.Errorf("%w: bad name", schema.ErrInvalidKeyspace), "invalid_argument"},
		{fmt.Errorf("%w \"x\"", schema.ErrNoKeyspace), "no_keyspace"},
		{&coord.UnavailableError{}, "unavailable"},
		{&coord.TimeoutError{}, "timeout"},
		{context.DeadlineExceeded, "timeout"},
		{context.Canceled, "canceled"},
		{errors.New("disk on fire"), "internal"},
		{status.Error(codes.InvalidArgument, "x"), "invalid_argument"},
		{status.Error(codes.NotFound, "x"), "no_keyspace"},
		{status.Error(codes.Unavailable, "x"), "unavailable"},
		{status.Error(codes.DeadlineExceeded, "x"), "timeout"},
		{status.Error(codes.Canceled, "x"), "canceled"},
		{status.Error(codes.Internal, "x"), "internal"},
	}
	for _, tt := range tests {
		if got := ErrorKind(tt.err); got != tt.want {
			t.Errorf("ErrorKind(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}

func TestHandlerServesTheExpositionFormat(t *testing.T) {
	r := New(Config{Gauges: func() Gauges { return Gauges{MembersAlive: 3} }})
	r.Observe("resp", "scan", consistency.One, time.Millisecond, nil)
	server := httptest.NewServer(r.Handler())
	defer server.Close()
	resp, err := http.Get(server.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the output does not parse: %v", err)
	}
	for _, name := range []string{"kura_requests_total", "kura_request_duration_seconds", "kura_members", "go_goroutines", "process_cpu_seconds_total"} {
		if _, ok := families[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
}
