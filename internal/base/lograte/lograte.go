// Package lograte keeps a warning that repeats from filling a node's log: a peer that
// dials a node with the wrong protocol, or a seed that is the wrong port, fails the
// same way every second for as long as nobody fixes it. A Limiter lets through the
// first line of each source, the next line as soon as the reason changes, and otherwise
// one line per interval that counts the ones it held back.
package lograte

import (
	"log/slog"
	"net"
	"sync"
	"time"
)

// DefaultInterval is the reminder interval of the node's limiters: often enough that a
// fault still going on is seen in a tail of the log, seldom enough to stay a few lines.
const DefaultInterval = time.Minute

// sourcesMax bounds the sources a Limiter remembers, so that connections from ever new
// addresses cannot grow it without end; when full, it forgets them all and starts again,
// which costs at most one more line per source.
const sourcesMax = 4096

// Limiter decides which lines of a repeating warning to log. It is safe for concurrent
// use; the zero value is not usable, use New.
type Limiter struct {
	interval time.Duration
	mu       sync.Mutex
	sources  map[string]*source
}

type source struct {
	reason string
	logged time.Time // when the last line was let through
	held   int       // lines held back since
}

// New returns a Limiter that lets a source's unchanged reason through once per interval.
func New(interval time.Duration) *Limiter {
	return &Limiter{interval: interval, sources: map[string]*source{}}
}

// Allow reports whether the line with reason from source, at now, is to be logged, and
// if so how many lines of that source it held back since the last one it let through.
// A source given as host:port counts as its host: each connection of a peer comes from
// another port.
func (l *Limiter) Allow(from, reason string, now time.Time) (ok bool, held int) {
	if host, _, err := net.SplitHostPort(from); err == nil {
		from = host
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.sources[from]
	switch {
	case s == nil:
		if len(l.sources) >= sourcesMax {
			clear(l.sources)
		}
		l.sources[from] = &source{reason: reason, logged: now}
		return true, 0
	case s.reason != reason || now.Sub(s.logged) >= l.interval:
		held = s.held
		*s = source{reason: reason, logged: now}
		return true, held
	}
	s.held++
	return false, 0
}

// Warn logs msg at warning level with args, if Allow lets reason from source through at
// this time; a line after some were held back says how many (held_back).
func (l *Limiter) Warn(log *slog.Logger, from, reason, msg string, args ...any) {
	ok, held := l.Allow(from, reason, time.Now())
	if !ok {
		return
	}
	if held > 0 {
		args = append(args, "held_back", held)
	}
	log.Warn(msg, args...)
}
