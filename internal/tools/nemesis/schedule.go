package nemesis

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/kuradb/kura/api/kurav1"
)

// Kind is a family of faults; the schedule picks a variant of it each time.
type Kind string

// The fault families.
const (
	// Kill is kill -9 of one node, a majority or all of them; healing restarts them on
	// their data dirs.
	Kill Kind = "kill"
	// Pause is SIGSTOP of one node or a majority; healing sends SIGCONT.
	Pause Kind = "pause"
	// Partition cuts one node from the others, one DC from the others, or the cluster in
	// two halves that a bridge node still joins (both ways, through Admin.SetFaults).
	Partition Kind = "partition"
	// Loss drops a share of every node's frames to its peers.
	Loss Kind = "loss"
	// Delay delays every node's frames to its peers.
	Delay Kind = "delay"
	// Clock moves one node's wall clock forward or back.
	Clock Kind = "clock"
	// Wipe kills one node, deletes its data dir, restarts it empty and repairs it.
	Wipe Kind = "wipe"
)

// Kinds lists every fault family, in the order "all" means.
var Kinds = []Kind{Kill, Pause, Partition, Loss, Delay, Clock, Wipe}

// Process reports whether the fault needs processes the harness started (signals, data
// dirs); the others go through the admin API and work on an attached cluster too.
func (k Kind) Process() bool { return k == Kill || k == Pause || k == Wipe }

// ParseKinds parses --faults: "all", "none" or a comma-separated list of families.
func ParseKinds(s string) ([]Kind, error) {
	switch s {
	case "all":
		return slices.Clone(Kinds), nil
	case "none", "":
		return nil, nil
	}
	var kinds []Kind
	for name := range strings.SplitSeq(s, ",") {
		k := Kind(strings.TrimSpace(name))
		if !slices.Contains(Kinds, k) {
			return nil, fmt.Errorf("unknown fault %q (want all, none, or some of %s)", name, joinKinds(Kinds))
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds, nil
}

func joinKinds(kinds []Kind) string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ",")
}

// Member is one node of the cluster under test.
type Member struct {
	ID string `json:"id"`
	DC string `json:"dc"`
}

// Fault is one scheduled fault: what it does to which nodes, when it starts and how long
// it lasts before it heals.
type Fault struct {
	Kind    Kind
	Variant string   // "one", "majority", "all"; "node", "dc", "bridge"; "forward", "back"
	Nodes   []string // the nodes acted on (for a partition, those that cut peers)
	// Cut lists, per node, the peers (ids or "dc:NAME") it drops frames to and from.
	Cut map[string][]string
	// Loss, Delay and Offset are the link and clock faults' sizes.
	Loss   float64
	Delay  time.Duration
	Offset time.Duration
	At     time.Duration // after the workload starts
	For    time.Duration
}

// String describes the fault for the progress lines and the history.
func (f Fault) String() string {
	nodes := strings.Join(f.Nodes, ",")
	switch f.Kind {
	case Partition:
		var sides []string
		for _, n := range slices.Sorted(maps.Keys(f.Cut)) {
			sides = append(sides, n+"-/-"+strings.Join(f.Cut[n], "+"))
		}
		return fmt.Sprintf("partition %s: %s", f.Variant, strings.Join(sides, " "))
	case Loss:
		return fmt.Sprintf("loss %.0f%% on %s", 100*f.Loss, nodes)
	case Delay:
		return fmt.Sprintf("delay %v on %s", f.Delay, nodes)
	case Clock:
		return fmt.Sprintf("clock %s %v on %s", f.Variant, f.Offset, nodes)
	}
	return fmt.Sprintf("%s %s %s", f.Kind, f.Variant, nodes)
}

// apiFaults returns the faults each node must inject for f through Admin.SetFaults;
// empty for process faults.
func (f Fault) apiFaults() map[string]*kurav1.Faults {
	out := map[string]*kurav1.Faults{}
	switch f.Kind {
	case Partition:
		for n, peers := range f.Cut {
			out[n] = &kurav1.Faults{Partitioned: peers}
		}
	case Loss:
		for _, n := range f.Nodes {
			out[n] = &kurav1.Faults{Links: []*kurav1.LinkFault{{Target: "*", Loss: f.Loss}}}
		}
	case Delay:
		for _, n := range f.Nodes {
			out[n] = &kurav1.Faults{Links: []*kurav1.LinkFault{{Target: "*", DelayMs: f.Delay.Milliseconds()}}}
		}
	case Clock:
		for _, n := range f.Nodes {
			out[n] = &kurav1.Faults{ClockOffsetMs: f.Offset.Milliseconds()}
		}
	}
	return out
}

// The schedule's timing: a fault lasts faultMin plus up to faultJitter, and the next
// starts gapMin plus up to gapJitter after it healed. The first starts after a quiet
// second, so the history begins with acknowledged writes, and the last heals a second
// before the workload ends.
const (
	faultMin    = 2 * time.Second
	faultJitter = 2 * time.Second
	gapMin      = time.Second
	gapJitter   = time.Second
	quiet       = time.Second
)

// Plan draws the faults of a run from seed: the same seed, members, kinds and duration
// give the same schedule. Faults do not overlap.
func Plan(seed int64, members []Member, kinds []Kind, run time.Duration) []Fault {
	if len(kinds) == 0 || len(members) == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6e656d65736973)) // "nemesis"
	jitter := func(d time.Duration) time.Duration { return time.Duration(rng.Int64N(int64(d))) }
	var faults []Fault
	at := quiet + jitter(gapJitter)
	for {
		length := faultMin + jitter(faultJitter)
		if at+length > run-quiet {
			return faults
		}
		f := draw(rng, kinds[rng.IntN(len(kinds))], members)
		f.At, f.For = at, length
		faults = append(faults, f)
		at += length + gapMin + jitter(gapJitter)
	}
}

// draw picks a variant of kind and its targets.
func draw(rng *rand.Rand, kind Kind, members []Member) Fault {
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.ID
	}
	shuffled := slices.Clone(ids)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	majority := shuffled[:len(ids)/2+1]
	one := shuffled[:1]
	f := Fault{Kind: kind}
	switch kind {
	case Kill:
		f.Variant = pick(rng, "one", "majority", "all")
		f.Nodes = map[string][]string{"one": one, "majority": majority, "all": ids}[f.Variant]
	case Pause:
		f.Variant = pick(rng, "one", "majority")
		f.Nodes = map[string][]string{"one": one, "majority": majority}[f.Variant]
	case Wipe:
		f.Variant, f.Nodes = "one", one
	case Partition:
		f.Cut = partition(rng, &f, members, shuffled)
		f.Nodes = slices.Sorted(maps.Keys(f.Cut))
	case Loss:
		f.Variant, f.Nodes = "all", ids
		f.Loss = 0.1 + 0.3*rng.Float64()
	case Delay:
		f.Variant, f.Nodes = "all", ids
		f.Delay = 50*time.Millisecond + time.Duration(rng.IntN(250))*time.Millisecond
	case Clock:
		f.Variant, f.Nodes = pick(rng, "forward", "back"), one
		f.Offset = 250*time.Millisecond + time.Duration(rng.IntN(4750))*time.Millisecond
		if f.Variant == "back" {
			f.Offset = -f.Offset
		}
	}
	f.Nodes = slices.Sorted(slices.Values(f.Nodes)) // a copy: the variants share shuffled
	return f
}

// partition picks a partition the cluster allows (a DC needs two DCs, a bridge three
// nodes) and returns, per node, the peers it cuts.
func partition(rng *rand.Rand, f *Fault, members []Member, shuffled []string) map[string][]string {
	dcs := map[string][]string{}
	for _, m := range members {
		dcs[m.DC] = append(dcs[m.DC], m.ID)
	}
	variants := []string{"node"}
	if len(dcs) > 1 {
		variants = append(variants, "dc")
	}
	if len(members) >= 3 {
		variants = append(variants, "bridge")
	}
	f.Variant = pick(rng, variants...)
	cut := map[string][]string{}
	apart := func(a, b []string) {
		for _, n := range a {
			cut[n] = append(cut[n], b...)
		}
		for _, n := range b {
			cut[n] = append(cut[n], a...)
		}
	}
	switch f.Variant {
	case "node":
		apart(shuffled[:1], shuffled[1:])
	case "dc":
		names := slices.Sorted(maps.Keys(dcs))
		dc := names[rng.IntN(len(names))]
		for _, other := range names {
			if other == dc {
				continue
			}
			for _, n := range dcs[dc] {
				cut[n] = append(cut[n], "dc:"+other)
			}
			for _, n := range dcs[other] {
				cut[n] = append(cut[n], "dc:"+dc)
			}
		}
	case "bridge":
		// The bridge (shuffled[0]) talks to both halves, which do not talk to each other.
		half := (len(shuffled) - 1) / 2
		apart(shuffled[1:1+half], shuffled[1+half:])
	}
	for n := range cut {
		slices.Sort(cut[n])
	}
	return cut
}

func pick(rng *rand.Rand, options ...string) string { return options[rng.IntN(len(options))] }
