package simcluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/kuradb/kura/membership/scuttlebutt"
	"github.com/kuradb/kura/sim"
)

func TestZZPerf(t *testing.T) {
	n := 500
	c, err := New(Config{Protocol: scuttlebutt.Protocol, Seed: 1, DCs: []string{"a", "b"},
		Links: sim.UniformLinks{Local: sim.LinkSpec{Latency: 200 * time.Microsecond}, Remote: sim.LinkSpec{Latency: 50 * time.Millisecond}},
		Wire:  sim.TCPIPv4, Seeds: []string{"n0000", "n0001"}})
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
	for _, k := range w.Keys() {
		t.Logf("%v %+v", k, w[k])
	}
}
