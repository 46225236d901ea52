package storage

import (
	"bytes"
	"errors"
	"github.com/kuradb/kura/internal/core/lww"
	"log/slog"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// captureLogger returns a logger that writes text records at level and above to buf.
func captureLogger(buf *bytes.Buffer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: level}))
}

func TestPebbleLoggerInfoIsDebug(t *testing.T) {
	tests := []struct {
		level    slog.Level
		wantSeen bool
	}{
		{slog.LevelInfo, false},
		{slog.LevelDebug, true},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		pebbleLogger{logger: captureLogger(&buf, tt.level)}.Infof("flushed %d tables", 3)
		if seen := strings.Contains(buf.String(), "flushed 3 tables"); seen != tt.wantSeen {
			t.Errorf("handler at %v saw Infof = %t, want %t (log %q)", tt.level, seen, tt.wantSeen, buf.String())
		}
	}
}

func TestPebbleLoggerFatalfLogsAndPanics(t *testing.T) {
	var buf bytes.Buffer
	defer func() {
		if recover() == nil {
			t.Errorf("Fatalf returned, want a panic")
		}
		if !strings.Contains(buf.String(), "level=ERROR") || !strings.Contains(buf.String(), "broken 7") {
			t.Errorf("log %q lacks the error record", buf.String())
		}
	}()
	pebbleLogger{logger: captureLogger(&buf, slog.LevelInfo)}.Fatalf("broken %d", 7)
}

func TestEventListenerRaisesOperatorEvents(t *testing.T) {
	var buf bytes.Buffer
	listener := eventListener(captureLogger(&buf, slog.LevelInfo))
	listener.BackgroundError(errors.New("compaction failed"))
	listener.WriteStallBegin(pebble.WriteStallBeginInfo{Reason: "memtable count limit reached"})
	for _, want := range []string{"level=ERROR", "compaction failed", "level=WARN", "memtable count limit reached"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log %q lacks %q", buf.String(), want)
		}
	}
}

// TestOpenRoutesPebbleLogsToDebug checks Pebble's messages reach the slog logger,
// and only at debug level, so a node logging at info stays quiet.
func TestOpenRoutesPebbleLogsToDebug(t *testing.T) {
	tests := []struct {
		level       slog.Level
		wantLogging bool
	}{
		{slog.LevelInfo, false},
		{slog.LevelDebug, true},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		dir := t.TempDir()
		for range 2 { // the second open replays the WAL, which Pebble reports
			e, err := Open(Options{Dir: dir, Logger: captureLogger(&buf, tt.level)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Apply("ks", lww.Record{Key: []byte("k"), Timestamp: 1}); err != nil {
				t.Fatal(err)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if logging := strings.Contains(buf.String(), "component=pebble"); logging != tt.wantLogging {
			t.Errorf("handler at %v saw Pebble messages = %t, want %t; log:\n%s", tt.level, logging, tt.wantLogging, buf.String())
		}
	}
}
