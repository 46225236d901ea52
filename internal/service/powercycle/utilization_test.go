package powercycle

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/core/power"
)

// TestMeterCPU measures a node's utilization from its CPU time in virtual time, and checks
// that its own meter draws what the linear model says, and that a peer's meter follows
// the utilization the peer gossips.
func TestMeterCPU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tc := newTestCluster(t, map[string]int{"n0": 0, "n1": 1}, "n0", "simple=1", "", nil)
		var used atomic.Int64 // nanoseconds of CPU time
		p, err := New(Config{ID: "n0", Profile: "s4", Cores: 2,
			CPUTime: func() time.Duration { return time.Duration(used.Load()) }}, Parts{Directory: tc.dir, Gossip: tc})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		p.MeterCPU(t.Context()) // the first reading
		time.Sleep(LoadWindow)
		used.Add(int64(LoadWindow)) // one of the two cores busy over the window
		p.MeterCPU(context.Background())
		if got := tc.appState["utilization"]; got != "0.500" {
			t.Errorf("gossiped utilization %q, want 0.500", got)
		}
		time.Sleep(10 * time.Second)
		s4 := power.S4
		busy := s4.ActiveWatts + (s4.PeakWatts-s4.ActiveWatts)*0.5
		want := s4.ActiveWatts*LoadWindow.Seconds() + busy*10
		watts, joules := p.Energy("n0", time.Now())
		if math.Abs(joules-want) > 1e-6 || watts != busy {
			t.Errorf("n0 draws %v W, %v J since %v; want %v W, %v J", watts, joules, start, busy, want)
		}

		// n1 gossips that it is fully busy: n0's meter of it draws the peak.
		p.Observe(membership.Member{ID: "n1", AppState: map[string]string{"utilization": "1"}}, true)
		if watts, _ := p.Energy("n1", time.Now()); watts != s4.PeakWatts {
			t.Errorf("n1 draws %v W in n0's meter, want the peak %v", watts, s4.PeakWatts)
		}
	})
}
