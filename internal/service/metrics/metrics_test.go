package metrics

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/data/coord"
)

func TestObserveCountsRequestsLatencyAndErrors(t *testing.T) {
	r := New(Config{})
	r.Observe("resp", "get", consistency.One, time.Millisecond, nil)
	r.Observe("resp", "get", consistency.One, 2*time.Millisecond, nil)
	r.Observe("resp", "get", consistency.Quorum, time.Millisecond, &coord.UnavailableError{Level: consistency.Quorum})
	r.Observe("grpc", "put", consistency.All, time.Second, fmt.Errorf("put: %w", context.DeadlineExceeded))

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
