package gcfloor

import (
	"math"
	"runtime"
	"runtime/metrics"
	"testing"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name        string
		live, floor uint64
		want        int
	}{
		{"small live heap: the floor decides", 16 * mib, 64 * mib, 400},
		{"rounded up, never under the floor", 12 * mib, 64 * mib, 534},
		{"live heap under the runtime's minimum", 1 * mib, 64 * mib, 1600},
		{"live heap past the floor: Go's default", 256 * mib, 64 * mib, DefaultPercent},
		{"live heap equal to the floor", 64 * mib, 64 * mib, DefaultPercent},
		{"no cycle yet", 0, 64 * mib, 1600},
		{"no floor", 16 * mib, 0, DefaultPercent},
		{"a floor past any heap", 16 * mib, math.MaxUint64, math.MaxInt32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Percent(tc.live, tc.floor); got != tc.want {
				t.Errorf("Percent(%d, %d) = %d, want %d", tc.live, tc.floor, got, tc.want)
			}
		})
	}
}

// TestSetFollowsCyclesAndStopRestores runs real collections: the percent must follow
// the live heap from cycle to cycle, and go back to what it was when stopped.
func TestSetFollowsCyclesAndStopRestores(t *testing.T) {
	t.Setenv("GOGC", "") // the tuner stands aside for an operator's GOGC
	before := gogc()
	const floor = 64 << 20
	runtime.GC()
	stop := Set(floor)
	small := gogc() // set at once, from this binary's small live heap
	if small <= 2*DefaultPercent {
		t.Fatalf("GOGC %d after Set with a live heap of %d bytes, want the floor's", small, liveBytes())
	}
	// A live heap of half the floor needs a percent of about 200: only a cycle's
	// cleanup can have set it.
	live := make([]byte, floor/2)
	for cycles := 1; ; cycles++ {
		runtime.GC()
		want := Percent(liveBytes(), floor)
		if got := gogc(); got == want {
			break
		} else if cycles == 10_000 {
			t.Fatalf("after %d cycles GOGC is %d, want %d", cycles, got, want)
		}
		runtime.Gosched()
	}
	runtime.KeepAlive(live)
	stop()
	stop() // a second stop changes nothing
	runtime.GC()
	if got := gogc(); got != before {
		t.Fatalf("after stop GOGC is %d, want %d as before", got, before)
	}
}

func TestSetLeavesAnOperatorsGOGC(t *testing.T) {
	t.Setenv("GOGC", "150")
	before := gogc()
	stop := Set(4 << 30)
	defer stop()
	if got := gogc(); got != before {
		t.Fatalf("GOGC set in the environment: percent moved from %d to %d", before, got)
	}
}

func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

func liveBytes() uint64 {
	s := []metrics.Sample{{Name: liveMetric}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
