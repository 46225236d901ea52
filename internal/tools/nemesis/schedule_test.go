package nemesis

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var fiveNodes = []Member{{"n1", "dc1"}, {"n2", "dc1"}, {"n3", "dc1"}, {"n4", "dc2"}, {"n5", "dc2"}}

func TestPlanIsReproducibleFromTheSeed(t *testing.T) {
	a := Plan(42, fiveNodes, Kinds, time.Minute)
	if len(a) == 0 {
		t.Fatal("no fault in a minute")
	}
	if b := Plan(42, fiveNodes, Kinds, time.Minute); !reflect.DeepEqual(a, b) {
		t.Errorf("the same seed gave two schedules:\n%v\n%v", a, b)
	}
	if c := Plan(43, fiveNodes, Kinds, time.Minute); reflect.DeepEqual(a, c) {
		t.Error("seeds 42 and 43 gave the same schedule")
	}
}

func TestPlanKeepsFaultsApartAndInsideTheRun(t *testing.T) {
	for seed := range int64(50) {
		run := 30 * time.Second
		plan := Plan(seed, fiveNodes, []Kind{Kill, Partition}, run)
		end := time.Duration(0)
		for _, f := range plan {
			if f.At < end+gapMin && end > 0 || f.At < quiet {
				t.Errorf("seed %d: %v starts at %v, the previous fault healed at %v", seed, f, f.At, end)
			}
			end = f.At + f.For
			if end > run-quiet {
				t.Errorf("seed %d: %v heals at %v, after the run's quiet end", seed, f, end)
			}
			if f.Kind != Kill && f.Kind != Partition {
				t.Errorf("seed %d: %v is of a kind not asked for", seed, f)
			}
		}
	}
}

func TestDraw(t *testing.T) {
	ids := []string{"n1", "n2", "n3", "n4", "n5"}
	// Every variant of every kind, over enough seeds to meet each.
	seen := map[string]bool{}
	for seed := range int64(300) {
		for _, k := range Kinds {
			f := Plan(seed, fiveNodes, []Kind{k}, 10*time.Second)[0]
			seen[string(f.Kind)+" "+f.Variant] = true
			switch {
			case f.Kind == Kill && f.Variant == "all" && !slices.Equal(f.Nodes, ids),
				f.Variant == "majority" && len(f.Nodes) != 3,
				f.Variant == "one" && len(f.Nodes) != 1:
				t.Errorf("%v acts on %v", f, f.Nodes)
			case f.Kind == Clock && (f.Variant == "back") != (f.Offset < 0):
				t.Errorf("%v has offset %v", f, f.Offset)
			case f.Kind == Partition:
				checkCut(t, f)
			}
			if injected := slices.Sorted(maps.Keys(f.apiFaults())); !f.Kind.Process() && (len(injected) == 0 || !slices.Equal(injected, f.Nodes)) {
				t.Errorf("%v injects through the API on %v, acts on %v", f, injected, f.Nodes)
			}
		}
	}
	want := []string{"kill one", "kill majority", "kill all", "pause one", "pause majority", "wipe one",
		"partition node", "partition dc", "partition bridge", "loss all", "delay all", "clock forward", "clock back"}
	for _, v := range want {
		if !seen[v] {
			t.Errorf("never drew %s", v)
		}
	}
}

// checkCut: a partition cuts both ways, and a bridge node cuts nobody while both halves
// cut each other.
func checkCut(t *testing.T, f Fault) {
	t.Helper()
	for n, peers := range f.Cut {
		for _, p := range peers {
			if strings.HasPrefix(p, "dc:") {
				continue
			}
			if !slices.Contains(f.Cut[p], n) {
				t.Errorf("%v: %s cuts %s, not the other way round", f, n, p)
			}
		}
	}
	if f.Variant == "bridge" && len(f.Cut) != len(fiveNodes)-1 {
		t.Errorf("%v: %d nodes cut, want every node but the bridge", f, len(f.Cut))
	}
}

func TestPlanNeedsTwoDCsForADCPartition(t *testing.T) {
	oneDC := []Member{{"n1", "dc1"}, {"n2", "dc1"}, {"n3", "dc1"}}
	for seed := range int64(100) {
		if f := Plan(seed, oneDC, []Kind{Partition}, 10*time.Second)[0]; f.Variant == "dc" {
			t.Fatalf("seed %d: a DC partition in a single DC: %v", seed, f)
		}
	}
}

func TestParseKinds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Kind
		err  bool
	}{
		{in: "all", want: Kinds},
		{in: "none"},
		{in: "kill,pause,partition", want: []Kind{Kill, Pause, Partition}},
		{in: "kill, kill", want: []Kind{Kill}},
		{in: "kill,meteor", err: true},
	} {
		got, err := ParseKinds(tc.in)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("ParseKinds(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestDefaultReplication(t *testing.T) {
	for _, tc := range []struct {
		members []Member
		want    string
	}{
		{fiveNodes, "dc1=2,dc2=1"},
		{[]Member{{"n1", "dc1"}, {"n2", "dc1"}, {"n3", "dc2"}}, "dc1=2,dc2=1"},
		{[]Member{{"n1", "dc1"}, {"n2", "dc2"}, {"n3", "dc3"}}, "dc1=1,dc2=1,dc3=1"},
	} {
		if got := DefaultReplication(tc.members); got != tc.want {
			t.Errorf("DefaultReplication(%v) = %s, want %s", tc.members, got, tc.want)
		}
	}
}
