package experiment

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// rowByProtocol returns the result's row for a protocol.
func rowByProtocol(t *testing.T, res Result, protocol string) Row {
	t.Helper()
	for _, row := range res.Rows {
		if row.Protocol == protocol {
			return row
		}
	}
	t.Fatalf("no row for %s in %+v", protocol, res.Rows)
	return Row{}
}

// TestExperimentPaperScale is the acceptance run: 2 × 500 nodes, 10,000 uniform
// lookups, no churn. It takes tens of seconds of CPU, so -short skips it; how long it
// takes is not asserted, since that depends on what else the machine runs.
func TestExperimentPaperScale(t *testing.T) {
	if testing.Short() {
		t.Skip("paper scale: 2 × 500 nodes, 10,000 lookups per protocol")
	}
	res, err := RunExperiment(Config{
		DCs: []DCSize{{"tokyo", 500}, {"saopaulo", 500}}, Lookups: 10_000, Seed: 1,
		MaintenanceWindow: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range res.Rows {
		t.Logf("%+v", row)
	}
	t.Logf("reduction %+v, lower bound %.3f, %.1f s", res.Reduction, res.InterDCHopsLowerBoundMean, res.WallSeconds)
	for _, row := range res.Rows {
		if row.CorrectFraction != 1 || row.Lookups != 10_000 {
			t.Errorf("%s: %d lookups, correct %.4f; want 10000 all correct", row.Protocol, row.Lookups, row.CorrectFraction)
		}
	}
	mlchord := rowByProtocol(t, res, "mlchord")
	if mlchord.InterDCHopsMax > 1 || mlchord.InterDCHopsMean != res.InterDCHopsLowerBoundMean {
		t.Errorf("mlchord inter-DC hops mean %.4f max %d; want the lower bound %.4f, max 1",
			mlchord.InterDCHopsMean, mlchord.InterDCHopsMax, res.InterDCHopsLowerBoundMean)
	}
	if paper := rowByProtocol(t, res, "mlchord-paper"); paper.InterDCHopsMax != 2 {
		t.Errorf("mlchord-paper inter-DC hops max %d; the rule as printed crosses twice", paper.InterDCHopsMax)
	}
	if r := res.Reduction; r.InterDCHopsMean < 0.74 || r.HopsMean < 0.30 || r.LatencyMsMean < 0.5 {
		t.Errorf("reduction %+v; want inter-DC hops ≥ 0.74, hops ≥ 0.30, latency ≥ 0.5", r)
	}
}

// TestExperimentThreeDCs: the bound holds for any number of DCs of unequal sizes.
func TestExperimentThreeDCs(t *testing.T) {
	res, err := RunExperiment(Config{
		DCs: []DCSize{{"a", 200}, {"b", 300}, {"c", 500}}, Lookups: 3000, Seed: 2,
		MaintenanceWindow: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	mlchord := rowByProtocol(t, res, "mlchord")
	t.Logf("%+v", mlchord)
	if mlchord.InterDCHopsMax > 1 || mlchord.CorrectFraction != 1 || mlchord.InterDCHopsMean != res.InterDCHopsLowerBoundMean {
		t.Errorf("mlchord %+v; want all correct, at most 1 inter-DC hop, mean at the bound %.4f", mlchord, res.InterDCHopsLowerBoundMean)
	}
}

// TestExperimentChurn runs the protocols on the simulator while 5 % of the nodes are
// replaced per minute (crashes, leaves, joins): lookups still find the true owner.
func TestExperimentChurn(t *testing.T) {
	cfg := Config{
		DCs: []DCSize{{"a", 120}, {"b", 80}}, Lookups: 3000, Seed: 3, ChurnPerMinute: 0.05,
		LookupsPerSecond: 20,
	}
	res, err := RunExperiment(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range res.Rows {
		t.Logf("%+v", row)
		if row.CorrectFraction < 0.999 {
			t.Errorf("%s: correct %.4f under churn, want ≥ 0.999", row.Protocol, row.CorrectFraction)
		}
		if row.Protocol != "onehop" && (row.MaintenanceBpsPerNode <= 0 || row.MaintenanceInterDCBpsPerNode <= 0) {
			t.Errorf("%s: no maintenance traffic measured", row.Protocol)
		}
	}
	if mlchord := rowByProtocol(t, res, "mlchord"); mlchord.InterDCHopsMean > 1.05*res.InterDCHopsLowerBoundMean {
		t.Errorf("mlchord under churn: %.3f inter-DC hops, want within 5 %% of the bound %.3f", mlchord.InterDCHopsMean, res.InterDCHopsLowerBoundMean)
	}
}

// TestExperimentDeterministic: the same seed gives the same figures.
func TestExperimentDeterministic(t *testing.T) {
	cfg := Config{DCs: []DCSize{{"a", 30}, {"b", 20}}, Lookups: 300, Seed: 4, ChurnPerMinute: 0.1, LookupsPerSecond: 10}
	first, err := RunExperiment(cfg)
	if err != nil {
		t.Fatal(err)
	}
	second, err := RunExperiment(cfg)
	if err != nil {
		t.Fatal(err)
	}
	first.WallSeconds, second.WallSeconds = 0, 0
	if !reflect.DeepEqual(first, second) {
		t.Errorf("two runs differ:\n%+v\n%+v", first, second)
	}
}

func TestExperimentRejects(t *testing.T) {
	tests := map[string]Config{
		"no DCs":        {Lookups: 1},
		"one node":      {DCs: []DCSize{{"a", 1}}, Lookups: 1},
		"empty DC":      {DCs: []DCSize{{"a", 5}, {"b", 0}}, Lookups: 1},
		"no lookups":    {DCs: []DCSize{{"a", 5}}},
		"churn over 1":  {DCs: []DCSize{{"a", 5}}, Lookups: 1, ChurnPerMinute: 2},
		"unnamed DC":    {DCs: []DCSize{{"", 5}}, Lookups: 1},
		"negative rate": {DCs: []DCSize{{"a", 5}}, Lookups: 1, LookupsPerSecond: -1},
	}
	for name, cfg := range tests {
		if _, err := RunExperiment(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: error %v, want ErrBadConfig", name, err)
		}
	}
}
