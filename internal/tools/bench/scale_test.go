package bench

import (
	"bytes"
	"context"
	"flag"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestScaleBenchTinyRun(t *testing.T) {
	var progress bytes.Buffer
	o := scaleOptions{sizes: []int{60}, routingSizes: []int{120}, dcWeights: []int{3, 2, 1}, loss: 0.01, lookups: 300,
		seed: 1, memoryLimit: scaleMemoryLimit, schedule: tinySchedule}
	r, err := runScale(context.Background(), Env{Progress: &progress}, o)
	if err != nil {
		t.Fatal(err)
	}
	rows := r.Rows.([]ScaleRow)
	var got []string
	for _, row := range rows {
		got = append(got, row.Part+" "+row.Protocol)
		if row.WallS <= 0 || row.CPUS <= 0 || row.PeakRSSBytes == 0 || row.PeakHeapBytes == 0 {
			t.Errorf("%s %s: wall %v s, CPU %v s, peak RSS %d, peak heap %d", row.Part, row.Protocol, row.WallS, row.CPUS, row.PeakRSSBytes, row.PeakHeapBytes)
		}
		switch row.Part {
		case scalePartGossip:
			if row.Nodes != 60 || len(row.DCNodes) != 3 || row.DCNodes[0] != 30 || row.DCNodes[2] != 10 {
				t.Errorf("gossip: %d nodes dealt %v, want 30+20+10", row.Nodes, row.DCNodes)
			}
			if len(row.WANLinks) != 3 || *row.WANLinkBpsMax <= 0 || *row.InterDCBps <= 0 || *row.InterDCBps >= *row.TotalBps {
				t.Errorf("gossip traffic: total %v, inter-DC %v, links %+v", *row.TotalBps, *row.InterDCBps, row.WANLinks)
			}
			if *row.FailureDetectionSP50 <= 0 || *row.FalseSuspicions != 0 {
				t.Errorf("gossip detection: p50 %v s, false suspicions %d", *row.FailureDetectionSP50, *row.FalseSuspicions)
			}
		default:
			if *row.CorrectFraction != 1 || *row.HopsMean <= 0 {
				t.Errorf("%s %s n=%d: correct %v, hops %v", row.Part, row.Protocol, row.Nodes, *row.CorrectFraction, *row.HopsMean)
			}
			if row.Protocol == "mlchord" && *row.InterDCHopsMax > 1 {
				t.Errorf("%s mlchord n=%d crossed %d times", row.Part, row.Nodes, *row.InterDCHopsMax)
			}
		}
	}
	want := "gossip ferry, routing onehop, routing chord, routing mlchord, routing onehop, routing chord, routing mlchord"
	if strings.Join(got, ", ") != want {
		t.Fatalf("rows %q, want %q", strings.Join(got, ", "), want)
	}
	if r.Summary["mlchord_interdc_hops_max_at_120"] == nil || r.Summary["wall_s_at_60"] == nil || r.Summary["cpu_s_at_60"] == nil {
		t.Errorf("summary %v", r.Summary)
	}
	if err := r.Plot(filepath.Join(t.TempDir(), "scale.png")); err != nil {
		t.Fatal(err)
	}
}

// TestScaleBenchWarmRun: a warm gossip run reports its joiners and the
// figures a cold run's row leaves out, and its report says how it started.
func TestScaleBenchWarmRun(t *testing.T) {
	schedule := scaleWarmSchedule
	schedule.Joiners, schedule.JoinAt, schedule.WindowStart, schedule.WindowEnd = 10, 2*time.Second, 15*time.Second, 25*time.Second
	o := scaleOptions{sizes: []int{60}, dcWeights: []int{3, 2, 1}, loss: 0.01, lookups: 300, seed: 1, memoryLimit: scaleMemoryLimit, schedule: schedule}
	r, err := runScale(context.Background(), Env{}, o)
	if err != nil {
		t.Fatal(err)
	}
	g := r.Rows.([]ScaleRow)[0]
	if g.Part != scalePartGossip || g.Joiners == nil || *g.Joiners != 10 || *g.JoinsUnconverged != 0 || *g.FailuresUndetected != 0 ||
		*g.JoinConvergenceSP50 <= 0 || *g.FalseSuspicions != 0 {
		t.Fatalf("warm gossip row %+v", g)
	}
	if !strings.Contains(r.Scale, "started converged") || !strings.Contains(r.Scale, "10 nodes joining") {
		t.Errorf("scale %q", r.Scale)
	}
}

func TestScaleBenchFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--nodes", "0"},
		{"--dc-weights", "5"},
		{"--loss", "1"},
		{"--lookups", "0"},
		{"--nodes", "30"}, // fewer than 10 a DC
		{"--routing-nodes", "x"},
		{"--memory-limit", "10"},
		{"--joiners", "0"},
		{"--nodes", "100", "--joiners", "51"}, // most start converged
		{"--cold", "--joiners", "10"},         // a cold start has every node join
	} {
		fs := flag.NewFlagSet("scale", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		run := setupScale(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if _, err := run(context.Background(), Env{}); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}
