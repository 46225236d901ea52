package experiment

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/core/membership"
)

func TestFitQuadraticRecoversTheCurve(t *testing.T) {
	ns := []int{10, 50, 100, 200, 500, 1000}
	ts := make([]float64, len(ns))
	for i, n := range ns {
		ts[i] = PaperA*float64(n*n) + PaperB*float64(n)
	}
	a, b := FitQuadratic(ns, ts)
	if math.Abs(a-PaperA) > 1e-6 || math.Abs(b-PaperB) > 1e-3 {
		t.Fatalf("fit a=%v b=%v, want %v %v", a, b, PaperA, PaperB)
	}
	if a, b := FitQuadratic([]int{5}, []float64{1}); a != 0 || b != 0 {
		t.Fatalf("one point must not fit a curve: a=%v b=%v", a, b)
	}
}

// small is a quick sweep: 40 s of joins compressed into 4 s, a 20 s window.
func small(protocols ...string) Config {
	return Config{
		Protocols: protocols, Sizes: []int{20, 40}, Seed: 3,
		BatchInterval: 500 * time.Millisecond, WindowStart: 30 * time.Second, WindowEnd: 50 * time.Second,
		Kills: 2, DetectTimeout: 90 * time.Second,
	}
}

func TestSweepMeasuresBothProtocols(t *testing.T) {
	var phases []string
	cfg := small("scuttlebutt", "ferry")
	cfg.Progress = func(p Progress) {
		if p.N == 20 && p.Protocol == "ferry" {
			phases = append(phases, p.Phase)
		}
	}
	res, err := RunExperiment(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 4 || len(res.Fits) != 2 || res.Scale == "" {
		t.Fatalf("result shape: %d rows, %d fits", len(res.Rows), len(res.Fits))
	}
	phases = slices.Compact(phases)
	if want := []string{"joining", "steady", "detecting", "done"}; !slices.Equal(phases, want) {
		t.Fatalf("progress phases %v, want %v", phases, want)
	}
	type key struct {
		protocol string
		n        int
	}
	byKey := map[key]Row{}
	for _, r := range res.Rows {
		byKey[key{r.Protocol, r.N}] = r
		if r.TotalBps <= 0 || r.PerNodeBps*float64(r.N) != r.TotalBps || r.InterDCBps >= r.TotalBps {
			t.Fatalf("%s n=%d: implausible traffic %+v", r.Protocol, r.N, r)
		}
		if r.JoinsUnconverged != 0 || r.FailuresUndetected != 0 || r.FalseSuspicions != 0 {
			t.Fatalf("%s n=%d: %+v", r.Protocol, r.N, r)
		}
		if r.FailureDetectionSP50 <= 0 || r.JoinConvergenceSMax < r.JoinConvergenceSP50 {
			t.Fatalf("%s n=%d: timings %+v", r.Protocol, r.N, r)
		}
	}
	sb, fe := byKey[key{"scuttlebutt", 40}], byKey[key{"ferry", 40}]
	if fe.TotalBps >= sb.TotalBps || fe.InterDCBps*5 >= sb.InterDCBps {
		t.Fatalf("ferry %v/%v bps is not well below scuttlebutt %v/%v", fe.TotalBps, fe.InterDCBps, sb.TotalBps, sb.InterDCBps)
	}
	// Scuttlebutt's per-node cost grows with n; Ferry's does not.
	if sb.PerNodeBps <= byKey[key{"scuttlebutt", 20}].PerNodeBps {
		t.Fatal("scuttlebutt per-node traffic did not grow with n")
	}
}

func TestCrossDCFailuresAreDetectedWithinTheBound(t *testing.T) {
	cfg := small("scuttlebutt", "ferry")
	cfg.CrossDC = true
	var phases []string
	cfg.Progress = func(p Progress) {
		if p.N == 40 && p.Protocol == "ferry" {
			phases = append(phases, p.Phase)
		}
	}
	res, err := RunExperiment(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"joining", "steady", "detecting", "cross-dc joining", "cross-dc steady", "dark dc", "lone node", "done"}; !slices.Equal(slices.Compact(phases), want) {
		t.Fatalf("phases %v, want %v", phases, want)
	}
	lone := map[string][]float64{}
	for _, r := range res.Rows {
		if r.DarkDCDetectionSMax == nil || *r.CrossDCUndetected != 0 || *r.LoneDCFalseSuspicions != 0 || *r.LoneDCInterDCBps <= 0 {
			t.Fatalf("%s n=%d: cross-DC columns %+v", r.Protocol, r.N, r)
		}
		lone[r.Protocol] = append(lone[r.Protocol], *r.LoneDCInterDCBps)
		if r.Protocol != "ferry" {
			continue
		}
		// The monitors' bound: conviction within 8.3 s of the crash, a
		// couple of rounds to reach everyone at these sizes.
		for what, s := range map[string]float64{"dark DC": *r.DarkDCDetectionSMax, "lone node": *r.LoneNodeDetectionS, "inside a DC": r.FailureDetectionSMax} {
			if s <= 0 || s > 11 {
				t.Errorf("ferry n=%d: %s detected everywhere after %.1f s", r.N, what, s)
			}
		}
	}
	// Ferry's WAN traffic with the extra DC does not depend on n;
	// Scuttlebutt's grows with it.
	if f := lone["ferry"]; f[0] != f[1] {
		t.Errorf("ferry's inter-DC traffic with a lone DC: %v", f)
	}
	if sb := lone["scuttlebutt"]; sb[1] < 2*sb[0] {
		t.Errorf("scuttlebutt's inter-DC traffic with a lone DC: %v", sb)
	}
}

func TestSameSeedSameResult(t *testing.T) {
	cfg := small("ferry")
	cfg.CrossDC = true
	a, err := RunExperiment(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := RunExperiment(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Rows {
		a.Rows[i].WallS, b.Rows[i].WallS = 0, 0
		if !reflect.DeepEqual(a.Rows[i], b.Rows[i]) {
			t.Fatalf("row %d differs:\n%+v\n%+v", i, a.Rows[i], b.Rows[i])
		}
	}
}

func TestBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want error
	}{
		{"unknown protocol", Config{Protocols: []string{"paxos"}, Sizes: []int{10}}, membership.ErrUnknownProtocol},
		{"window backwards", Config{WindowStart: 300 * time.Second, WindowEnd: 200 * time.Second}, ErrBadConfig},
		{"joins into the window", Config{BatchInterval: time.Minute}, ErrBadConfig},
		{"too few nodes", Config{Sizes: []int{3}}, ErrBadConfig},
		{"loss of one", Config{Loss: 1}, ErrBadConfig},
		{"cross-DC with one DC", Config{DCs: 1, CrossDC: true}, ErrBadConfig},
		{"warm with no joiners", Config{Protocols: []string{"ferry"}, Warm: true}, ErrBadConfig},
		{"warm joins into the window", Config{Protocols: []string{"ferry"}, Warm: true, Joiners: 5, JoinAt: 250 * time.Second}, ErrBadConfig},
		{"warm with cross-DC", Config{Protocols: []string{"ferry"}, Warm: true, Joiners: 5, CrossDC: true}, ErrBadConfig},
		{"warm with every node joining", Config{Protocols: []string{"ferry"}, Sizes: []int{20}, Warm: true, Joiners: 20}, ErrBadConfig},
		{"warm leaves a DC empty", Config{Protocols: []string{"ferry"}, Sizes: []int{20}, DCs: 2, Warm: true, Joiners: 19}, ErrBadConfig},
		{"warm scuttlebutt", Config{Protocols: []string{"scuttlebutt"}, Sizes: []int{20}, Warm: true, Joiners: 5}, membership.ErrBadConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := RunExperiment(context.Background(), tt.cfg); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDealDCs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n, dcs  int
		weights []int
		sizes   []int
		firsts  []int
	}{
		{"round robin", 7, 3, nil, []int{3, 2, 2}, []int{0, 1, 2}},
		{"equal weights deal as round robin", 6, 3, []int{1, 1, 1}, []int{2, 2, 2}, []int{0, 1, 2}},
		{"unequal", 1000, 5, []int{35, 25, 20, 12, 8}, []int{350, 250, 200, 120, 80}, nil},
		{"interleaved", 100, 2, []int{3, 1}, []int{75, 25}, []int{0, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := dealDCs(tc.n, tc.dcs, tc.weights)
			if got := d.sizes(tc.dcs); !slices.Equal(got, tc.sizes) {
				t.Errorf("sizes %v, want %v", got, tc.sizes)
			}
			if tc.firsts != nil && !slices.Equal(d.firsts(tc.dcs), tc.firsts) {
				t.Errorf("firsts %v, want %v", d.firsts(tc.dcs), tc.firsts)
			}
			if tc.weights != nil {
				// Any prefix is within one node per DC of the proportions.
				total := 0
				for _, w := range tc.weights {
					total += w
				}
				for end := 1; end <= tc.n; end++ {
					for dc, got := range d[:end].sizes(tc.dcs) {
						want := float64(end*tc.weights[dc]) / float64(total)
						if math.Abs(float64(got)-want) > 1 {
							t.Fatalf("first %d nodes: DC %d has %d, proportion %.1f", end, dc, got, want)
						}
					}
				}
			}
		})
	}
}

func TestCanceledExperimentStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := Config{Protocols: []string{"ferry"}, Sizes: []int{20}, Seed: 1}
	if _, err := RunExperiment(ctx, cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// warmSmall is a Warm run: 60 nodes in 3 unequal DCs, 40 started converged
// and 20 joining at 2 s, 1 % loss.
func warmSmall() Config {
	return Config{
		Protocols: []string{"ferry"}, Sizes: []int{60}, DCs: 3, DCWeights: []int{3, 2, 1}, Loss: 0.01, Seed: 5,
		Warm: true, Joiners: 20, JoinAt: 2 * time.Second, WindowStart: 15 * time.Second, WindowEnd: 25 * time.Second,
		Kills: 2, DetectTimeout: 30 * time.Second,
	}
}

// TestWarmRunTimesTheJoiners: a Warm run times the joins of its joiners
// only (the others know each other from the start), and measures the
// steady window and the kills as a batched start does, the same from the
// same seed.
func TestWarmRunTimesTheJoiners(t *testing.T) {
	var phases []string
	cfg := warmSmall()
	var lastSecond time.Duration
	cfg.Progress = func(p Progress) {
		phases = append(phases, p.Phase)
		if p.Phase == "steady" {
			lastSecond = p.VirtualTime
		}
	}
	a, err := RunExperiment(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"converged start", "joining", "steady", "detecting", "done"}; !slices.Equal(slices.Compact(phases), want) {
		t.Fatalf("phases %v, want %v", phases, want)
	}
	// The steady window is told every virtual second, not only when it starts.
	if want := cfg.WindowEnd - time.Second; lastSecond != want {
		t.Fatalf("the steady phase was last told at %v, want %v", lastSecond, want)
	}
	r := a.Rows[0]
	if r.Joiners != 20 || r.JoinsUnconverged != 0 || r.JoinConvergenceSP50 <= 0 || r.JoinConvergenceSMax > 10 {
		t.Errorf("joins: %d joiners, %d unconverged, p50 %v s, max %v s", r.Joiners, r.JoinsUnconverged, r.JoinConvergenceSP50, r.JoinConvergenceSMax)
	}
	if r.FailuresUndetected != 0 || r.FailureDetectionSMax > 5 || r.FalseSuspicionsTotal != 0 {
		t.Errorf("detection: %d undetected, max %v s, %d false suspicions", r.FailuresUndetected, r.FailureDetectionSMax, r.FalseSuspicionsTotal)
	}
	if r.TotalBps <= 0 || r.InterDCBps <= 0 || len(r.WANLinks) != 3 {
		t.Errorf("traffic: total %v, inter-DC %v, links %v", r.TotalBps, r.InterDCBps, r.WANLinks)
	}
	b, err := RunExperiment(context.Background(), warmSmall())
	if err != nil {
		t.Fatal(err)
	}
	a.Rows[0].WallS, b.Rows[0].WallS = 0, 0
	if !reflect.DeepEqual(a.Rows[0], b.Rows[0]) {
		t.Fatalf("same seed, different rows:\n%+v\n%+v", a.Rows[0], b.Rows[0])
	}
}

// TestNodeIndexReadsNodeID: nodeIndex inverts nodeID and refuses every other string, as
// the map it replaces did.
func TestNodeIndexReadsNodeID(t *testing.T) {
	for _, i := range []int{0, 7, 42, 999, 9999, 10000, 123456} {
		if got, ok := nodeIndex(nodeID(i)); !ok || got != i {
			t.Errorf("nodeIndex(%q) = %d, %v; want %d", nodeID(i), got, ok, i)
		}
	}
	for _, id := range []string{"", "n", "n1", "n042", "n00042", "x0042", "n00a1", "N0042", "n0042 ", "n99999999999999999999"} {
		if i, ok := nodeIndex(id); ok {
			t.Errorf("nodeIndex(%q) = %d; want no node", id, i)
		}
	}
}
