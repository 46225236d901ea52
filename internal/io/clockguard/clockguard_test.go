package clockguard

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kuradb/kura/hlc"
)

// epoch is the fake wall clock's start: any fixed instant will do.
var epoch = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// fakeWall is a wall clock the test sets. The guard's monotonic clock stands still
// (Config.Elapsed), so the offsets it reports are exact however slowly the test runs.
type fakeWall struct {
	mu  sync.Mutex
	now time.Time
}

func (w *fakeWall) Now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

func (w *fakeWall) jump(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = w.now.Add(d)
}

func newGuard(others int, measure func()) (*Guard, *fakeWall) {
	wall := &fakeWall{now: epoch}
	g := New(Config{Clock: hlc.NewClock(wall.Now), Wall: wall.Now, Elapsed: func() time.Duration { return 0 }, Others: func() int { return others }, Measure: measure})
	return g, wall
}

// peerAt is a sample: the peer's clock is offset from this node's, read with uncertainty.
type peerAt struct {
	offset, uncertainty time.Duration
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		others  int
		peers   []peerAt
		refused string // a substring of the refusal; empty: accepted
	}{
		{name: "alone", others: 0},
		{name: "peers never measured", others: 2, refused: "has not compared its clock"},
		{name: "all close", others: 3, peers: []peerAt{{10 * time.Millisecond, 0}, {-20 * time.Millisecond, 0}, {0, 0}}},
		{name: "one far peer is its problem", others: 3, peers: []peerAt{{30 * time.Second, 0}, {0, 0}, {time.Millisecond, 0}}},
		{name: "half far is not a majority", others: 2, peers: []peerAt{{30 * time.Second, 0}, {0, 0}}},
		{name: "majority ahead: this node is behind", others: 3, peers: []peerAt{{30 * time.Second, 0}, {30 * time.Second, 0}, {0, 0}}, refused: "30s behind"},
		{name: "majority behind: this node is ahead", others: 3, peers: []peerAt{{-30 * time.Second, 0}, {-30 * time.Second, 0}, {-30 * time.Second, 0}}, refused: "30s ahead of"},
		{name: "a lone peer far away", others: 1, peers: []peerAt{{2 * time.Second, 0}}, refused: "2s behind"},
		{name: "doubt is not evidence", others: 1, peers: []peerAt{{700 * time.Millisecond, 300 * time.Millisecond}}},
		{name: "beyond doubt", others: 1, peers: []peerAt{{900 * time.Millisecond, 300 * time.Millisecond}}, refused: "900ms behind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, wall := newGuard(tt.others, nil)
			for i, p := range tt.peers {
				g.Sample(string(rune('a'+i)), wall.Now().Add(p.offset), wall.Now(), p.uncertainty)
			}
			err := g.Check()
			switch {
			case tt.refused == "" && err != nil:
				t.Fatalf("Check = %v, want nil", err)
			case tt.refused != "" && (!errors.Is(err, ErrClockOffset) || !strings.Contains(err.Error(), tt.refused)):
				t.Fatalf("Check = %v, want ErrClockOffset saying %q", err, tt.refused)
			}
			if _, err := g.Stamp(); (err == nil) != (tt.refused == "") {
				t.Errorf("Stamp error %v disagrees with Check", err)
			}
		})
	}
}

// TestMeasureBeforeFirstStamp: the first stamp of a node with peers measures them instead
// of refusing, once, however many writes ask at the same time.
func TestMeasureBeforeFirstStamp(t *testing.T) {
	var g *Guard
	var wall *fakeWall
	calls := 0
	g, wall = newGuard(2, func() {
		calls++
		g.Sample("a", wall.Now(), wall.Now(), 0)
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := g.Stamp(); err != nil {
				t.Errorf("Stamp = %v", err)
			}
		}()
	}
	wg.Wait()
	if calls != 1 {
		t.Errorf("Measure called %d times, want 1", calls)
	}
}

// TestWallJumpIsSeenWithoutNewSamples: the guard follows peers' clocks with the monotonic
// clock, so a jump of this node's wall clock after the last sample is refused at once.
func TestWallJumpIsSeenWithoutNewSamples(t *testing.T) {
	g, wall := newGuard(3, nil)
	for _, peer := range []string{"a", "b", "c"} {
		g.Sample(peer, wall.Now(), wall.Now(), time.Millisecond)
	}
	if _, err := g.Stamp(); err != nil {
		t.Fatalf("Stamp before the jump = %v", err)
	}
	wall.jump(30 * time.Second)
	if _, err := g.Stamp(); !errors.Is(err, ErrClockOffset) {
		t.Fatalf("Stamp after a 30 s jump = %v, want ErrClockOffset", err)
	}
	if offset, peers := g.Offset(); peers != 3 || offset < 29*time.Second || offset > 31*time.Second {
		t.Errorf("Offset = %v against %d peers, want about +30s against 3", offset, peers)
	}
	wall.jump(-30 * time.Second)
	if _, err := g.Stamp(); err != nil {
		t.Errorf("Stamp once the clock is back = %v", err)
	}
}

// TestRefusalIsLoggedOnce: the log says when the node starts refusing writes and when it
// stops, not at every write it refuses.
func TestRefusalIsLoggedOnce(t *testing.T) {
	var log strings.Builder
	wall := &fakeWall{now: epoch}
	g := New(Config{Clock: hlc.NewClock(wall.Now), Wall: wall.Now, Elapsed: func() time.Duration { return 0 }, Others: func() int { return 3 },
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	for _, peer := range []string{"a", "b", "c"} {
		g.Sample(peer, wall.Now(), wall.Now(), time.Millisecond)
	}
	wall.jump(30 * time.Second)
	for range 5 {
		if _, err := g.Stamp(); !errors.Is(err, ErrClockOffset) {
			t.Fatalf("Stamp after a 30 s jump = %v, want ErrClockOffset", err)
		}
	}
	wall.jump(-30 * time.Second)
	for range 5 {
		if _, err := g.Stamp(); err != nil {
			t.Fatalf("Stamp once the clock is back = %v", err)
		}
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "30s ahead of its peers") ||
		!strings.Contains(lines[1], "level=INFO") || !strings.Contains(lines[1], "coordinating writes") {
		t.Fatalf("log:\n%s\nwant one WARN when refusing starts and one INFO when it ends", log.String())
	}
}

// TestAdmit: a timestamp further ahead of the cluster's clock than the bound is refused,
// judged by the cluster's clock, not this node's.
func TestAdmit(t *testing.T) {
	g, wall := newGuard(2, nil)
	// This node runs 10 s behind its peers: the cluster's clock is epoch + 10 s.
	g.Sample("a", wall.Now().Add(10*time.Second), wall.Now(), 0)
	g.Sample("b", wall.Now().Add(10*time.Second), wall.Now(), 0)
	tests := []struct {
		name  string
		ahead time.Duration // of this node's wall clock
		ok    bool
	}{
		{"this node's now", 0, true},
		{"the cluster's now", 10 * time.Second, true},
		{"within the bound of the cluster", 10*time.Second + 400*time.Millisecond, true},
		{"beyond the bound of the cluster", 11 * time.Second, false},
		{"a minute ahead", time.Minute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := g.Observe(hlc.FromTime(wall.Now().Add(tt.ahead)))
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrClockOffset)) {
				t.Errorf("Observe = %v, want ok %v", err, tt.ok)
			}
		})
	}
	// The admitted timestamps pulled this node's clock along: its next stamp follows them,
	// though its guard refuses to stamp while it is behind.
	if _, err := g.Stamp(); !errors.Is(err, ErrClockOffset) {
		t.Errorf("Stamp of a node 10 s behind = %v, want ErrClockOffset", err)
	}
}

// TestAdmitAllowsForDoubt: as Check, Admit refuses a timestamp only when it is beyond the
// bound whatever the sampling's error, the median peer's sample's uncertainty.
func TestAdmitAllowsForDoubt(t *testing.T) {
	tests := []struct {
		name  string
		ahead time.Duration // of the cluster's clock as sampled
		ok    bool
	}{
		{"within the bound", 400 * time.Millisecond, true},
		{"beyond the bound, within doubt", 700 * time.Millisecond, true},
		{"beyond the bound and the doubt", 900 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, wall := newGuard(3, nil)
			// The peers' clocks read 10 s ahead of this node's, the median's give or take
			// 300 ms, the others' more.
			for i, uncertainty := range []time.Duration{100, 300, 50} {
				g.Sample(string(rune('a'+i)), wall.Now().Add(10*time.Second+time.Duration(i)), wall.Now(), uncertainty*time.Millisecond)
			}
			err := g.Admit(hlc.FromTime(wall.Now().Add(10*time.Second + tt.ahead)))
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrClockOffset)) {
				t.Errorf("Admit = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// TestObserveBeforeMeasuring judges by this node's own clock.
func TestObserveBeforeMeasuring(t *testing.T) {
	g, wall := newGuard(0, nil)
	if err := g.Observe(hlc.FromTime(wall.Now().Add(100 * time.Millisecond))); err != nil {
		t.Errorf("Observe within the bound = %v", err)
	}
	if err := g.Observe(hlc.FromTime(wall.Now().Add(5 * time.Second))); !errors.Is(err, ErrClockOffset) {
		t.Errorf("Observe 5 s ahead = %v, want ErrClockOffset", err)
	}
}

func TestStatusReportsTimestampsAhead(t *testing.T) {
	g, wall := newGuard(1, nil)
	g.Sample("a", wall.Now(), wall.Now(), 0)
	if _, err := g.Stamp(); err != nil {
		t.Fatal(err)
	}
	if st := g.Status(); !st.OK || st.Peers != 1 || st.AheadMax != 0 {
		t.Errorf("Status = %+v, want ok against 1 peer, nothing ahead", st)
	}
	wall.jump(20 * time.Second)
	if _, err := g.Stamp(); err == nil {
		t.Fatal("Stamp 20 s ahead succeeded")
	}
	// A timestamp stored before the guard existed, say: Admit records what it lets in.
	if err := g.Admit(hlc.FromTime(epoch.Add(300 * time.Millisecond))); err != nil {
		t.Fatal(err)
	}
	st := g.Status()
	if st.OK || !strings.Contains(st.Refusal, "ahead of") {
		t.Errorf("Status = %+v, want refusing, with the reason", st)
	}
	if st.AheadMax < 250*time.Millisecond || st.AheadMax > 350*time.Millisecond {
		t.Errorf("AheadMax = %v, want about 300ms", st.AheadMax)
	}
}
