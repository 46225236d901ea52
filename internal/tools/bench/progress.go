package bench

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// The pace of progress lines. Written to a log (stderr not a terminal), a line goes out
// when the bench moved on and progressEvery has passed since the last one, or after
// progressQuiet without news, so a run of minutes writes dozens of lines, not thousands;
// on a terminal one line is rewritten in place every progressRedraw.
const (
	progressEvery  = 5 * time.Second
	progressQuiet  = 15 * time.Second
	progressRedraw = time.Second
)

// Progress tells, on the bench's progress writer (stderr), how far a bench is: the share
// of its work done, the time elapsed and an estimate of the time left, with what it is
// doing now:
//
//	routing   50%  elapsed 0:42  left ~0:42  chord: 100 nodes, 1,000 lookups
//
// The estimate assumes the work left goes at the pace of the work done; a bench measures
// its work in units of about equal cost (runs weighted by their size, lookups, requests).
// Its methods are safe for concurrent use.
type Progress struct {
	w     io.Writer
	tty   bool
	name  string
	total float64
	start time.Time
	now   func() time.Time

	mu       sync.Mutex
	done     float64
	doneAt   time.Time // when done last grew
	status   string
	news     bool // the status changed since the last line
	lastLine time.Time
	finished bool

	stop    chan struct{}
	stopped chan struct{}
}

// StartProgress starts reporting a bench's progress through total units of work; the
// caller reports units done with Add and calls Done at the end, error or not.
func (e Env) StartProgress(name string, total float64) *Progress {
	return newProgress(e.Progress, name, total, time.Now)
}

// newProgress is StartProgress with a clock of the caller's.
func newProgress(w io.Writer, name string, total float64, now func() time.Time) *Progress {
	p := &Progress{w: w, tty: isTerminal(w), name: name, total: total, now: now,
		stop: make(chan struct{}), stopped: make(chan struct{})}
	p.start = now()
	p.doneAt = p.start
	if w == nil {
		close(p.stopped)
		return p
	}
	every := progressQuiet
	if p.tty {
		every = progressRedraw
	}
	// A long step reports no units; the ticker keeps its elapsed time and estimate
	// moving, so the reader sees the bench alive.
	go func() {
		defer close(p.stopped)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-tick.C:
				p.mu.Lock()
				if p.tty || p.now().Sub(p.lastLine) >= progressQuiet {
					p.writeLocked()
				}
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// Add records units of work done and, unless format is empty, what the bench does now.
func (p *Progress) Add(units float64, format string, args ...any) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if units > 0 {
		p.done = min(p.total, p.done+units)
		p.doneAt = p.now()
	}
	if format != "" {
		p.status = fmt.Sprintf(format, args...)
	}
	p.news = true
	if p.lastLine.IsZero() || p.tty || p.done >= p.total || p.now().Sub(p.lastLine) >= progressEvery {
		p.writeLocked()
	}
}

// Done stops the reporting, writing the last state if the reader has not seen it.
func (p *Progress) Done() {
	p.mu.Lock()
	if p.finished {
		p.mu.Unlock()
		return
	}
	p.finished = true
	close(p.stop)
	p.mu.Unlock()
	<-p.stopped
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.news || p.tty {
		p.writeLocked()
	}
	if p.tty {
		fmt.Fprintln(p.w)
	}
}

// writeLocked writes the current state: a line, or on a terminal the line rewritten.
func (p *Progress) writeLocked() {
	now := p.now()
	p.lastLine, p.news = now, false
	line := p.lineLocked(now)
	if p.tty {
		// A line rewritten in place must not wrap.
		if r := []rune(line); len(r) > MaxWidth {
			line = string(r[:MaxWidth-1]) + "…"
		}
		fmt.Fprint(p.w, clearLine+line)
		return
	}
	fmt.Fprintln(p.w, line)
}

// lineLocked is the state at now, as a line.
func (p *Progress) lineLocked(now time.Time) string {
	elapsed := now.Sub(p.start)
	left := "?"
	if p.done >= p.total {
		left = "0:00"
	} else if p.done > 0 {
		// The pace of the units done, less the time spent since on the next ones; a step
		// that outlasts the estimate leaves it unknown.
		estimate := time.Duration(float64(p.doneAt.Sub(p.start)) * (p.total - p.done) / p.done)
		if rest := estimate - now.Sub(p.doneAt); rest > 0 {
			left = "~" + clock(rest)
		}
	}
	pct := 100.0
	if p.total > 0 {
		pct = 100 * p.done / p.total
	}
	line := fmt.Sprintf("%s %4.0f%%  elapsed %s  left %s", p.name, pct, clock(elapsed), left)
	if p.status != "" {
		line += "  " + p.status
	}
	return line
}

// clock writes a duration as m:ss, or h:mm:ss from an hour on.
func clock(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// clearLine returns a terminal's cursor to the start of its line and erases the line, so
// that the progress line is rewritten in place and an event line replaces it.
const clearLine = "\r\x1b[K"

// isTerminal reports whether w is a terminal (a character device), where the progress
// line is rewritten in place rather than appended.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressLine is the prefix Progressf writes before an event line: on a terminal the
// progress line is erased first, and redrawn by the next update below the event.
func progressLine(w io.Writer) string {
	if isTerminal(w) {
		return clearLine
	}
	return ""
}
