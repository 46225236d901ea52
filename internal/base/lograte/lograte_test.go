package lograte

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestLimiter runs one script of lines through a Limiter with an interval of a minute.
func TestLimiter(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type line struct {
		at       time.Duration // after start
		from     string
		reason   string
		wantOK   bool
		wantHeld int
	}
	script := []line{
		{0, "10.0.0.1:5000", "plaintext", true, 0},
		{time.Second, "10.0.0.1:5001", "plaintext", false, 0}, // another port, the same peer
		{2 * time.Second, "10.0.0.1:5002", "plaintext", false, 0},
		{3 * time.Second, "10.0.0.2:5000", "plaintext", true, 0},   // another peer
		{4 * time.Second, "10.0.0.1:5003", "EOF", true, 2},         // the reason changed
		{5 * time.Second, "10.0.0.1:5004", "EOF", false, 0},        //
		{64 * time.Second, "10.0.0.1:5005", "EOF", true, 1},        // a minute on: a reminder
		{65 * time.Second, "any@10.0.0.3:7001", "seed", true, 0},   // a dialed peer's id
		{66 * time.Second, "any@10.0.0.3:7001", "seed", false, 0},  //
		{70 * time.Second, "n4", "refused", true, 0},               // a name with no port
		{71 * time.Second, "n4", "refused", false, 0},              //
		{131 * time.Second, "n4", "refused", true, 1},              //
		{132 * time.Second, "10.0.0.2:6000", "plaintext", true, 0}, // its minute has passed
	}
	l := New(time.Minute)
	for i, s := range script {
		ok, held := l.Allow(s.from, s.reason, start.Add(s.at))
		if ok != s.wantOK || held != s.wantHeld {
			t.Errorf("line %d (%s from %s at %v): Allow = %t, %d; want %t, %d", i, s.reason, s.from, s.at, ok, held, s.wantOK, s.wantHeld)
		}
	}
}

// TestLimiterForgetsWhenFull: connections from ever new addresses do not grow a Limiter
// past sourcesMax; a forgotten source's next line is let through, as a first one.
func TestLimiterForgetsWhenFull(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(time.Minute)
	for i := range sourcesMax + 1 {
		l.Allow(fmt.Sprintf("peer-%d", i), "plaintext", now)
	}
	if len(l.sources) > sourcesMax {
		t.Fatalf("%d sources remembered, want at most %d", len(l.sources), sourcesMax)
	}
	if ok, _ := l.Allow("peer-0", "plaintext", now); !ok {
		t.Error("a forgotten source's line was held back")
	}
}

// TestWarn: the first warning of a source is logged, its repeats are held back, and the
// next line let through counts them.
func TestWarn(t *testing.T) {
	var out strings.Builder
	log := slog.New(slog.NewTextHandler(&out, nil))
	l := New(time.Minute)
	for range 3 {
		err := errors.New("EOF")
		l.Warn(log, "10.0.0.1:5000", err.Error(), "closing", "peer", "p", "err", err)
	}
	err := errors.New("reset")
	l.Warn(log, "10.0.0.1:5001", err.Error(), "closing", "peer", "p", "err", err)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "msg=closing peer=p err=EOF") ||
		!strings.HasSuffix(lines[1], "msg=closing peer=p err=reset held_back=2") {
		t.Errorf("log:\n%s\nwant one line of EOF, then one of reset with held_back=2", out.String())
	}
}
