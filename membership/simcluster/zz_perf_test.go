package simcluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/kuradb/kura/membership"
	"github.com/kuradb/kura/membership/ferry"
	"github.com/kuradb/kura/sim"
)

func TestZZPerf(t *testing.T) {
	n := 1000
	evs := map[string]int{}
	c, err := New(Config{Protocol: ferry.Protocol, Seed: 1, DCs: []string{"a", "b"},
		Links: sim.UniformLinks{Local: sim.LinkSpec{Latency: 200 * time.Microsecond}, Remote: sim.LinkSpec{Latency: 50 * time.Millisecond}},
		Wire:  sim.TCPIPv4, Seeds: []string{"n0000", "n0001"}, OnEvent: func(now time.Duration, obs string, e membership.Event) {
			if now > 200*time.Second && now < 201*time.Second {
				evs[fmt.Sprint(e.Kind, " ", e.ID, " ", e.Key, "=", e.Value)]++
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for b := 0; b < 10; b++ {
		for i := b * n / 10; i < (b+1)*n/10; i++ {
			dc := "a"
			if i%2 == 1 {
				dc = "b"
			}
			if err := c.Start(fmt.Sprintf("n%04d", i), dc); err != nil {
				t.Fatal(err)
			}
		}
		c.Sim().RunFor(10 * time.Second)
	}
	c.Sim().RunUntil(200 * time.Second)
	before := c.Sim().Network().Counters()
	c.Sim().RunUntil(300 * time.Second)
	w := c.Sim().Network().Counters().Sub(before)
	t.Logf("wall %v total %.0f bps interdc %.0f bps; disagreement %q", time.Since(start), float64(w.Total().Bytes)*8/100, float64(w.InterDC().Bytes)*8/100, c.Disagreement())
	t.Log(evs)
	for _, k := range w.Keys() {
		t.Logf("%v %+v", k, w[k])
	}
}
