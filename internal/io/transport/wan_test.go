package transport

import (
	"testing"
	"time"

	"github.com/kuradb/kura/internal/io/topology"
)

func TestNewWANLinkNoEmulation(t *testing.T) {
	if link := newWANLink(topology.LinkSpec{}, 1, "a", "b"); link != nil {
		t.Errorf("newWANLink(zero spec) = %+v, want nil", link)
	}
}

func TestWANLinkSchedule(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	type frame struct {
		at    time.Duration // handed over at t0 + at
		bytes int
		want  time.Duration // delivered at t0 + want
	}
	tests := []struct {
		name   string
		spec   topology.LinkSpec
		frames []frame
	}{
		{
			name:   "latency is pipelined",
			spec:   topology.LinkSpec{Latency: 30 * ms},
			frames: []frame{{0, 1000, 30 * ms}, {0, 1000, 30 * ms}, {5 * ms, 1000, 35 * ms}},
		},
		{
			// 1000 bytes at 800 kbps hold the link 10 ms each.
			name:   "bandwidth serialises",
			spec:   topology.LinkSpec{BandwidthBps: 800e3},
			frames: []frame{{0, 1000, 10 * ms}, {0, 1000, 20 * ms}, {0, 500, 25 * ms}},
		},
		{
			name:   "bandwidth then latency",
			spec:   topology.LinkSpec{Latency: 100 * ms, BandwidthBps: 800e3},
			frames: []frame{{0, 1000, 110 * ms}, {0, 1000, 120 * ms}},
		},
		{
			name:   "idle link starts at once",
			spec:   topology.LinkSpec{Latency: 100 * ms, BandwidthBps: 800e3},
			frames: []frame{{0, 1000, 110 * ms}, {50 * ms, 1000, 160 * ms}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			link := newWANLink(tt.spec, 1, "a", "b")
			for i, f := range tt.frames {
				deliverAt, drop := link.schedule(t0.Add(f.at), f.bytes, true)
				if drop {
					t.Fatalf("frame %d dropped with no loss configured", i)
				}
				if got := deliverAt.Sub(t0); got != f.want {
					t.Errorf("frame %d delivered at +%v, want +%v", i, got, f.want)
				}
			}
		})
	}
}

func TestWANLinkJitter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	spec := topology.LinkSpec{Latency: 10 * time.Millisecond, Jitter: 5 * time.Millisecond}
	link := newWANLink(spec, 7, "a", "b")
	replay := newWANLink(spec, 7, "a", "b")
	distinct := make(map[time.Duration]bool)
	for i := range 200 {
		deliverAt, _ := link.schedule(t0, 100, true)
		delay := deliverAt.Sub(t0)
		if delay < spec.Latency || delay >= spec.Latency+spec.Jitter {
			t.Fatalf("frame %d delay %v outside [%v, %v)", i, delay, spec.Latency, spec.Latency+spec.Jitter)
		}
		if again, _ := replay.schedule(t0, 100, true); !again.Equal(deliverAt) {
			t.Fatalf("frame %d: same seed gave %v then %v", i, delay, again.Sub(t0))
		}
		distinct[delay] = true
	}
	if len(distinct) < 100 {
		t.Errorf("only %d distinct delays in 200 frames: jitter is not random", len(distinct))
	}
}

func TestWANLinkLoss(t *testing.T) {
	t0 := time.Unix(1000, 0)
	link := newWANLink(topology.LinkSpec{Loss: 0.25, BandwidthBps: 8e3}, 3, "a", "b")
	const frames = 4000
	dropped := 0
	for range frames {
		if _, drop := link.schedule(t0, 1, true); drop {
			dropped++
		}
	}
	if dropped < frames/5 || dropped > frames*3/10 {
		t.Errorf("dropped %d of %d frames at loss 0.25", dropped, frames)
	}
	// Only frames that were sent used bandwidth: 1 byte at 8 kbps is 1 ms each.
	if got, want := link.freeAt.Sub(t0), time.Duration(frames-dropped)*time.Millisecond; got != want {
		t.Errorf("link busy for %v, want %v", got, want)
	}
	for range 100 {
		if _, drop := link.schedule(t0, 1, false); drop {
			t.Fatal("a frame that is not droppable was dropped")
		}
	}
}
