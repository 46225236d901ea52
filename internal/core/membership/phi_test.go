package membership

import (
	"math"
	"testing"
	"time"
)

// steady feeds n heartbeats every interval starting at 0; returns the last.
func steady(w *ArrivalWindow, m PhiModel, n int, interval time.Duration) time.Duration {
	var at time.Duration
	for i := range n {
		at = time.Duration(i) * interval
		w.Report(at, m)
	}
	return at
}

func TestPhiExponentialLikeCassandra(t *testing.T) {
	m := CassandraPhi
	var w ArrivalWindow
	last := steady(&w, m, 1001, time.Second)
	// 1000 one-second intervals and the bootstrap half second in a window of
	// 1000: the mean is within a millisecond of one second, so phi(t) is
	// t/ln10 and Cassandra convicts after 8·ln10 ≈ 18.4 s of silence.
	tests := []struct {
		silence time.Duration
		convict bool
	}{
		{time.Second, false},
		{18 * time.Second, false},
		{19 * time.Second, true},
	}
	for _, tt := range tests {
		phi := w.Phi(last+tt.silence, m)
		if want := tt.silence.Seconds() / math.Ln10; math.Abs(phi-want) > 0.01 {
			t.Fatalf("phi after %v = %.3f, want %.3f", tt.silence, phi, want)
		}
		if got := w.Convicted(last+tt.silence, m); got != tt.convict {
			t.Fatalf("convicted after %v = %v, want %v", tt.silence, got, tt.convict)
		}
	}
}

func TestPhiNormalWithPause(t *testing.T) {
	m := PhiModel{Normal: true, MinStdDev: 250 * time.Millisecond, AcceptablePause: 2 * time.Second,
		Threshold: 8, FirstInterval: time.Second, WindowSamples: 100}
	var w ArrivalWindow
	last := steady(&w, m, 200, time.Second)
	tests := []struct {
		silence time.Duration
		convict bool
	}{
		{time.Second, false},
		{3 * time.Second, false}, // two lost heartbeats: mean + pause, phi ≈ 0.3
		{4 * time.Second, false},
		{5 * time.Second, true},
	}
	prev := -1.0
	for _, tt := range tests {
		phi := w.Phi(last+tt.silence, m)
		if phi <= prev {
			t.Fatalf("phi must grow with silence: %.3f after %v, %.3f before", phi, tt.silence, prev)
		}
		prev = phi
		if got := w.Convicted(last+tt.silence, m); got != tt.convict {
			t.Fatalf("convicted after %v = %v (phi %.2f), want %v", tt.silence, got, phi, tt.convict)
		}
	}
}

func TestPhiBeforeFirstHeartbeat(t *testing.T) {
	var w ArrivalWindow
	if phi := w.Phi(time.Hour, CassandraPhi); phi != 0 {
		t.Fatalf("phi with no heartbeat = %v, want 0", phi)
	}
}
