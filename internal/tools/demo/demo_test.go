package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestDemoRunsMixedWorkloadAcrossDCs(t *testing.T) {
	r, err := Run(context.Background(), Options{Duration: 1500 * time.Millisecond, Keys: 100, ClientsPerDC: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops == 0 || r.Errors != 0 || r.InterDCBytes == 0 {
		t.Fatalf("ops %d, errors %d (%v), inter-DC bytes %d; want ops > 0, no errors, some inter-DC bytes", r.Ops, r.Errors, r.FirstErrors, r.InterDCBytes)
	}
	for _, level := range DefaultLevels() {
		l, ok := r.ByConsistency[level.String()]
		if !ok || l.Ops == 0 || l.LatencyMsP50 <= 0 || l.LatencyMsP99 < l.LatencyMsP50 {
			t.Errorf("%v: %+v; want ops and ordered percentiles", level, l)
		}
	}
	// Levels that must cross the emulated WAN cannot be faster than its shortest link.
	if one, all := r.ByConsistency["ONE"], r.ByConsistency["ALL"]; all.LatencyMsP50 < 2*20 || all.LatencyMsP50 < one.LatencyMsP50 {
		t.Errorf("ALL p50 %.2f ms, ONE p50 %.2f ms: ALL must wait for the farthest DC", all.LatencyMsP50, one.LatencyMsP50)
	}

	var js bytes.Buffer
	if err := json.NewEncoder(&js).Encode(r); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"ops"`, `"errors"`, `"duration_s"`, `"interdc_bytes"`, `"by_consistency"`, `"latency_ms_p50"`, `"latency_ms_p99"`} {
		if !strings.Contains(js.String(), field) {
			t.Errorf("JSON lacks %s: %s", field, js.String())
		}
	}
	var summary bytes.Buffer
	r.WriteSummary(&summary)
	if !strings.Contains(summary.String(), "LOCAL_QUORUM") {
		t.Errorf("summary lacks the level table:\n%s", summary.String())
	}
}
