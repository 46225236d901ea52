package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The progress lines of a bench of 4 units: the share done, the time elapsed and the
// estimate of the time left at the pace so far, and no more than a line per
// progressEvery in a log.
func TestProgressLines(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newProgress(&out, "sample", 4, func() time.Time { return now })
	steps := []struct {
		after time.Duration
		units float64
		what  string
	}{
		{0, 0, "starting"},             // the first line goes out
		{time.Second, 0, "warming up"}, // too soon after it: held back
		{9 * time.Second, 1, "one done"},
		{10 * time.Second, 1, "two done"}, // too soon again
		{20 * time.Second, 1, "three done"},
		{21 * time.Second, 1, "all done"}, // the end always goes out
	}
	start := now
	for _, s := range steps {
		now = start.Add(s.after)
		p.Add(s.units, "%s", s.what)
	}
	p.Done()
	want := []string{
		"sample    0%  elapsed 0:00  left ?  starting",
		"sample   25%  elapsed 0:09  left ~0:27  one done",
		"sample   75%  elapsed 0:20  left ~0:07  three done",
		"sample  100%  elapsed 0:21  left 0:00  all done",
	}
	if got := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("progress lines:\n%s\nwant:\n%s", out.String(), strings.Join(want, "\n"))
	}
}

// Done writes the last state when the bench stopped short of the end (an error), once.
func TestProgressDoneWritesLastState(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newProgress(&out, "sample", 10, func() time.Time { return now })
	p.Add(1, "first")
	now = now.Add(time.Second)
	p.Add(1, "second")
	p.Done()
	p.Done()
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 2 || !strings.HasSuffix(lines[1], "second") {
		t.Errorf("progress lines:\n%s\nwant the first and, at Done, the second", out.String())
	}
	(Env{}).StartProgress("silent", 1).Done() // no writer: nothing to write, nothing left running
}
