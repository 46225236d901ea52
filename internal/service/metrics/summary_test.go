package metrics

import (
	"math"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
)

func TestRequestsMergeFrontEndsPerOpAndLevel(t *testing.T) {
	r := New(Config{})
	r.Observe("resp", "get", consistency.Quorum, time.Millisecond, nil)
	r.Observe("grpc", "get", consistency.Quorum, 3*time.Millisecond, nil)
	r.Observe("grpc", "put", consistency.Quorum, time.Millisecond, nil)
	r.Observe("grpc", "get", consistency.One, time.Millisecond, nil)
	r.Observe("grpc", "cas", consistency.Serial, time.Millisecond, nil)

	got := r.Requests()
	want := []struct {
		level, op string
		count     uint64
	}{
		{"ONE", "get", 1}, {"QUORUM", "get", 2}, {"QUORUM", "put", 1}, {"SERIAL", "cas", 1},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d series %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Level != w.level || g.Op != w.op || g.Count != w.count {
			t.Errorf("series %d = %s %s x%d, want %s %s x%d", i, g.Level, g.Op, g.Count, w.level, w.op, w.count)
		}
		if last := g.Buckets[len(g.Buckets)-1]; last.Count != g.Count {
			t.Errorf("%s %s: last bucket counts %d of %d requests", g.Level, g.Op, last.Count, g.Count)
		}
	}
	if sum := got[1].SumSeconds; math.Abs(sum-0.004) > 1e-9 {
		t.Errorf("QUORUM get latency sum %v, want 0.004", sum)
	}
}

func TestRequestsQuantile(t *testing.T) {
	// Buckets at 1, 2 and 4 ms holding 10, 10 and 20 requests.
	h := Requests{Count: 40, Buckets: []Bucket{{0.001, 10}, {0.002, 20}, {0.004, 40}}}
	tests := []struct {
		name string
		s    Requests
		q    float64
		want float64
		ok   bool
	}{
		{"inside the first bucket, from 0", h, 0.125, 0.0005, true},
		{"at a bound", h, 0.5, 0.002, true},
		{"inside a later bucket", h, 0.75, 0.003, true},
		{"slower than the last bound", Requests{Count: 50, Buckets: h.Buckets}, 0.99, 0.004, true},
		{"no request", Requests{Buckets: h.Buckets}, 0.5, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.s.Quantile(tt.q)
			if ok != tt.ok || math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("Quantile(%v) = %v, %v; want %v, %v", tt.q, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestRequestsSinceIsTheWindowsHistogram(t *testing.T) {
	r := New(Config{})
	r.Observe("resp", "get", consistency.One, 100*time.Millisecond, nil)
	before := r.Requests()[0]
	r.Observe("resp", "get", consistency.One, 100*time.Microsecond, nil)
	window := r.Requests()[0].Since(before)
	if window.Count != 1 {
		t.Fatalf("window counts %d requests, want 1", window.Count)
	}
	// Only the fast request is in the window: its median is under 1 ms, although the
	// node's whole history has a median near 100 ms.
	if p50, ok := window.Quantile(0.5); !ok || p50 > 0.001 {
		t.Errorf("window p50 = %v, %v; want under 1 ms", p50, ok)
	}
	if empty := window.Since(window); empty.Count != 0 {
		t.Errorf("a summary since itself counts %d", empty.Count)
	}
}
