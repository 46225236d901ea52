package storage

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cockroachdb/pebble/v2"
)

// pebbleLogger routes Pebble's log lines into slog. Pebble reports routine work
// (flushes, WAL recycling, recovery) through Infof, which would flood a node's log, so
// it goes to Debug; events an operator must see are raised by eventListener instead.
type pebbleLogger struct {
	logger *slog.Logger
}

// Infof logs a routine Pebble message at debug level.
func (l pebbleLogger) Infof(format string, args ...any) {
	l.logger.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

// Errorf logs a Pebble error at error level: Pebble goes on after it (a failed
// deletion of an obsolete file, a corrupt table it reports), and an operator must see it.
func (l pebbleLogger) Errorf(format string, args ...any) {
	l.logger.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf logs Pebble's report of a broken invariant and panics: Pebble assumes Fatalf
// does not return, and continuing could corrupt the store.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.logger.Error(msg, "component", "pebble")
	panic("pebble: " + msg)
}

// eventListener raises the Pebble events that need an operator's attention (failed
// background work, a slow disk, stalled writes) above debug level.
func eventListener(logger *slog.Logger) *pebble.EventListener {
	logAt := func(level slog.Level, msg string, info fmt.Stringer) {
		logger.Log(context.Background(), level, msg, "component", "pebble", "info", info.String())
	}
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			logger.Error("pebble background error", "component", "pebble", "err", err)
		},
		DiskSlow: func(info pebble.DiskSlowInfo) {
			logAt(slog.LevelWarn, "pebble disk slow", info)
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			logAt(slog.LevelWarn, "pebble write stall", info)
		},
	}
}
