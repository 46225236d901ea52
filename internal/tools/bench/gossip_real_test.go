package bench

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/core/membership"
	"github.com/kuradb/kura/internal/io/topology"
	"github.com/kuradb/kura/internal/io/transport"
	"github.com/kuradb/kura/internal/service/membership/driver"
)

func TestRealGossipAgreesWithSim(t *testing.T) {
	var progress bytes.Buffer
	o := gossipOptions{protocols: []string{"scuttlebutt", "ferry"}, sizes: []int{6}, dcs: 2, seed: 1, real: true,
		realInterval: 30 * time.Millisecond, schedule: tinySchedule}
	r, err := runGossip(context.Background(), Env{Progress: &progress}, o)
	if err != nil {
		t.Fatal(err)
	}
	rows := r.Rows.([]GossipRow)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want sim and real for each protocol", len(rows))
	}
	for i := 1; i < len(rows); i += 2 {
		x := rows[i]
		if x.Source != "real" || x.TotalDiffPct == nil || x.TransportFrameBps == nil || x.RoundsRunPct == nil || x.TotalBps <= 0 {
			t.Fatalf("row %+v is not a real row with its comparison", x)
		}
		// The real run keeps to the wall clock: on a machine too busy to run its 30 ms
		// rounds (CI's, loaded), the drivers miss rounds, and then timeouts, not the
		// protocol, decide joins, detections and traffic. The comparison is made when
		// the drivers ran nearly every round, and said why not otherwise.
		if *x.RoundsRunPct < 90 {
			t.Logf("%s: drivers ran %.0f %% of the rounds (machine busy): real and sim not compared", x.Protocol, *x.RoundsRunPct)
			continue
		}
		// A 20-round window of 6 nodes leaves room for chance (which peer a
		// round picks); the full bench's longer window is what the 15 % of
		// issue 3 is judged on.
		if math.Abs(*x.TotalDiffPct) > 25 || math.Abs(*x.InterDCDiffPct) > 35 {
			t.Errorf("%s: real differs from sim by %.1f %% total, %.1f %% inter-DC:\nsim  %+v\nreal %+v", x.Protocol, *x.TotalDiffPct, *x.InterDCDiffPct, rows[i-1], x)
		}
		if x.JoinsUnconverged != 0 || x.FailuresUndetected != 0 {
			t.Errorf("%s: %d joins unconverged, %d failures undetected", x.Protocol, x.JoinsUnconverged, x.FailuresUndetected)
		}
	}
	if !strings.Contains(progress.String(), "real ferry n=6: done") || !strings.Contains(r.Scale, "30ms") {
		t.Errorf("progress or scale does not tell about the real run:\n%s\n%s", progress.String(), r.Scale)
	}
}

func TestSimWireBytes(t *testing.T) {
	for _, tc := range []struct {
		c    transport.Counter
		want float64
	}{
		{transport.Counter{}, 0},
		{transport.Counter{Messages: 1, Bytes: 14 + 30}, 30 + 52},
		{transport.Counter{Messages: 10, Bytes: 10*14 + 1000}, 1000 + 10*52},
	} {
		if got := simWireBytes(tc.c); got != tc.want {
			t.Errorf("simWireBytes(%+v) = %v, want %v", tc.c, got, tc.want)
		}
	}
}

func TestRealGossipLinks(t *testing.T) {
	l := realGossipLinks{remote: 5 * time.Millisecond, loss: 0.01}
	for _, tc := range []struct {
		from, to string
		want     topology.LinkSpec
	}{
		{"dc1", "dc1", topology.LinkSpec{Loss: 0.01}},
		{"dc1", "dc2", topology.LinkSpec{Latency: 5 * time.Millisecond, Loss: 0.01}},
		{"dc1", "", topology.LinkSpec{}},
	} {
		if got, err := l.Link(tc.from, tc.to); err != nil || got != tc.want {
			t.Errorf("Link(%q, %q) = %+v, %v; want %+v", tc.from, tc.to, got, err, tc.want)
		}
	}
}

func TestRealObserver(t *testing.T) {
	o := newRealObserver(3, 20)
	change := func(kind membership.EventKind, about int) driver.Change {
		return driver.Change{Event: membership.Event{Kind: kind, ID: gossipNodeID(about)}}
	}
	for i := range 3 {
		o.started(i, time.Now())
	}
	// Node 2 knows both others, but node 0 has not learned of node 2.
	o.onChange(1, change(membership.EventJoined, 0))
	o.onChange(0, change(membership.EventJoined, 1))
	o.onChange(2, change(membership.EventJoined, 0))
	o.onChange(2, change(membership.EventJoined, 1))
	o.onChange(1, change(membership.EventJoined, 2))
	o.onChange(1, change(membership.EventJoined, 2)) // a repeat counts once
	if _, _, unconverged := o.joinTimes(); unconverged != 1 {
		t.Fatalf("%d joins unconverged, want 1 (node 2)", unconverged)
	}
	o.onChange(0, change(membership.EventJoined, 2))
	if _, _, unconverged := o.joinTimes(); unconverged != 0 {
		t.Fatalf("%d joins unconverged, want 0", unconverged)
	}

	o.onChange(0, change(membership.EventSuspect, 1)) // before the window: not counted
	o.setSteady(true)
	o.onChange(0, change(membership.EventDead, 1))
	o.setSteady(false)
	if got := o.falseSuspicions(); got != 1 {
		t.Fatalf("%d false suspicions, want 1", got)
	}

	o.kill([]int{2}, time.Now())
	o.onChange(0, change(membership.EventDead, 2))
	o.onChange(0, change(membership.EventDead, 2))
	if o.allDetected() {
		t.Fatal("detected before node 1 saw it")
	}
	o.onChange(1, change(membership.EventSuspect, 2)) // a suspicion is not a verdict
	o.onChange(1, change(membership.EventDead, 2))
	if _, _, undetected := o.detectTimes(); !o.allDetected() || undetected != 0 {
		t.Fatalf("undetected %d after every survivor saw the death", undetected)
	}
	if got := o.falseSuspicions(); got != 1 {
		t.Fatalf("deaths of a killed node counted as false suspicions: %d", got)
	}
}
