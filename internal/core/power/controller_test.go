package power

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/core/ring"
)

// epoch is the tests' time origin.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// at returns the instant seconds after epoch.
func at(seconds float64) time.Time {
	return epoch.Add(time.Duration(seconds * float64(time.Second)))
}

// testConfig is S4 with nodes serving 1000 ops/s within 10 ms: Hold 54 s, and 36 s
// between actions.
func testConfig() ControllerConfig {
	return ControllerConfig{Profile: S4, CapacityOpsPerSecond: 1000, LatencyTarget: 10 * time.Millisecond}
}

func TestNewControllerValidates(t *testing.T) {
	tests := []struct {
		name   string
		change func(*ControllerConfig)
	}{
		{"no profile", func(c *ControllerConfig) { c.Profile = Profile{} }},
		{"negative enter", func(c *ControllerConfig) { c.Profile.Enter = -time.Second }},
		{"negative wake", func(c *ControllerConfig) { c.Profile.Wake = -time.Second }},
		{"no capacity", func(c *ControllerConfig) { c.CapacityOpsPerSecond = 0 }},
		{"NaN capacity", func(c *ControllerConfig) { c.CapacityOpsPerSecond = math.NaN() }},
		{"infinite capacity", func(c *ControllerConfig) { c.CapacityOpsPerSecond = math.Inf(1) }},
		{"no latency target", func(c *ControllerConfig) { c.LatencyTarget = 0 }},
		{"low above high", func(c *ControllerConfig) { c.LowUtilization, c.HighUtilization = 0.8, 0.5 }},
		{"low equal to high", func(c *ControllerConfig) { c.LowUtilization, c.HighUtilization = 0.5, 0.5 }},
		{"negative low", func(c *ControllerConfig) { c.LowUtilization = -0.1 }},
		{"high above one", func(c *ControllerConfig) { c.HighUtilization = 1.5 }},
		{"default high below low", func(c *ControllerConfig) { c.LowUtilization = 0.9 }},
		{"negative hold", func(c *ControllerConfig) { c.Hold = -time.Second }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.change(&cfg)
			if c, err := NewController(cfg); !errors.Is(err, ErrInvalidConfig) || c != nil {
				t.Errorf("NewController = %v, %v; want ErrInvalidConfig", c, err)
			}
		})
	}
}

func TestNewControllerDefaults(t *testing.T) {
	tests := []struct {
		profile Profile
		hold    time.Duration
	}{
		{S4, 54 * time.Second},
		{S1, 6 * time.Second},
	}
	for _, tt := range tests {
		cfg := testConfig()
		cfg.Profile = tt.profile
		c, err := NewController(cfg)
		if err != nil {
			t.Fatal(err)
		}
		got := c.Config()
		if got.HighUtilization != DefaultHighUtilization || got.LowUtilization != DefaultLowUtilization || got.Hold != tt.hold {
			t.Errorf("%s: defaults high %v, low %v, hold %v; want %v, %v, %v", tt.profile.Name,
				got.HighUtilization, got.LowUtilization, got.Hold, DefaultHighUtilization, DefaultLowUtilization, tt.hold)
		}
	}
}

// node returns a candidate in state since sinceSeconds after epoch.
func node(id string, state State, sinceSeconds float64) Candidate {
	return Candidate{ID: id, State: state, Since: at(sinceSeconds)}
}

// step is one sample given to Decide and the action expected: "", "sleep <id>" or
// "wake <id>".
type step struct {
	atSeconds float64
	ops       float64
	p99       time.Duration
	want      string
}

// describe renders Decide's answer as a step's want.
func describe(a Action, ok bool) string {
	switch {
	case !ok:
		return ""
	case a.Sleep:
		return "sleep " + a.Node
	}
	return "wake " + a.Node
}

func TestDecide(t *testing.T) {
	const fast, slow = time.Millisecond, 20 * time.Millisecond
	threeActive := []Candidate{node("a", Active, -7200), node("b", Active, -3600), node("c", Active, -7200)}
	tests := []struct {
		name      string
		nodes     []Candidate
		refused   []string // canSleep is false for these
		steps     []step
		askedOnly []string // when set, canSleep may be asked about these nodes only
	}{
		{"a draining node holds every action",
			[]Candidate{node("a", Active, -100), node("b", Draining, -1), node("c", Asleep, -100)}, nil,
			[]step{{0, 5000, slow, ""}}, nil},
		{"a waking node holds every action",
			[]Candidate{node("a", Active, -100), node("b", Waking, -1), node("c", Asleep, -100)}, nil,
			[]step{{0, 5000, slow, ""}}, nil},
		{"high utilization wakes the node asleep longest",
			[]Candidate{node("a", Active, -900), node("b", Asleep, -100), node("c", Asleep, -200)}, nil,
			[]step{{0, 701, fast, "wake c"}}, nil},
		{"utilization at the threshold wakes nobody",
			[]Candidate{node("a", Active, -900), node("b", Asleep, -100)}, nil,
			[]step{{0, 700, fast, ""}}, nil},
		{"a slow p99 wakes a node at low load",
			[]Candidate{node("a", Active, -900), node("b", Active, -900), node("c", Asleep, -100)}, nil,
			[]step{{0, 100, slow, "wake c"}}, nil},
		{"a node still entering sleep is not woken",
			[]Candidate{node("a", Active, -900), node("b", Asleep, -17)}, nil,
			[]step{{0, 900, fast, ""}, {1, 900, fast, "wake b"}}, nil},
		{"the node that finished entering is woken, not the one entering",
			[]Candidate{node("a", Active, -900), node("b", Asleep, -10), node("c", Asleep, -18)}, nil,
			[]step{{0, 900, fast, "wake c"}}, nil},
		{"equals wake the lowest id",
			[]Candidate{node("a", Active, -900), node("c", Asleep, -100), node("b", Asleep, -100)}, nil,
			[]step{{0, 900, fast, "wake b"}}, nil},
		{"high load with nobody asleep does nothing", threeActive, nil,
			[]step{{0, 2900, slow, ""}}, nil},
		{"a lull sleeps the node active longest after Hold, the highest id among equals", threeActive, nil,
			[]step{{0, 700, fast, ""}, {53, 700, fast, ""}, {54, 700, fast, "sleep c"}}, nil},
		{"a lull must keep the others below the low mark", threeActive, nil,
			[]step{{0, 800, fast, ""}, {54, 800, fast, ""}, {500, 800, fast, ""}}, nil},
		{"a slow p99 is no lull", threeActive, nil,
			[]step{{0, 100, 11 * time.Millisecond, ""}, {54, 100, 11 * time.Millisecond, ""}}, nil},
		{"canSleep refusing the first choice gives the next", threeActive, []string{"c"},
			[]step{{0, 100, fast, ""}, {54, 100, fast, "sleep a"}}, nil},
		{"canSleep refusing everyone sleeps nobody", threeActive, []string{"a", "b", "c"},
			[]step{{0, 100, fast, ""}, {54, 100, fast, ""}, {600, 100, fast, ""}}, nil},
		{"nodes not active are never asked about",
			[]Candidate{node("a", Active, -900), node("b", Active, -800), node("c", Asleep, -800)}, []string{"a"},
			[]step{{0, 100, fast, ""}, {54, 100, fast, "sleep b"}}, []string{"a", "b"}},
		{"a broken lull starts its Hold again", threeActive, nil,
			[]step{{0, 100, fast, ""}, {30, 800, fast, ""}, {60, 100, fast, ""}, {113, 100, fast, ""}, {114, 100, fast, "sleep c"}}, nil},
		{"the last active node never sleeps",
			[]Candidate{node("a", Active, -900), node("b", Asleep, -900)}, nil,
			[]step{{0, 0, fast, ""}, {54, 0, fast, ""}, {600, 0, fast, ""}}, nil},
		{"no node active wakes one even without load",
			[]Candidate{node("a", Asleep, -900)}, nil,
			[]step{{0, 0, fast, "wake a"}}, nil},
		// The nodes are not updated between steps: b is still asleep at 36 s.
		{"wakes wait Enter + Wake for each other",
			[]Candidate{node("a", Active, -900), node("b", Asleep, -900), node("c", Asleep, -800)}, nil,
			[]step{{0, 900, fast, "wake b"}, {35, 900, fast, ""}, {36, 900, fast, "wake b"}}, nil},
		{"the wait after an action does not count towards Hold",
			[]Candidate{node("a", Active, -900), node("b", Active, -900), node("c", Active, -900), node("d", Asleep, -900)}, nil,
			[]step{{0, 2200, fast, "wake d"}, {10, 100, fast, ""}, {40, 100, fast, ""}, {93, 100, fast, ""}, {94, 100, fast, "sleep c"}}, nil},
		{"a sleep waits Enter + Wake before a wake",
			[]Candidate{node("a", Active, -900), node("b", Active, -900), node("c", Asleep, -900)}, nil,
			[]step{{0, 100, fast, ""}, {54, 100, fast, "sleep b"}, {60, 1900, fast, ""}, {90, 1900, fast, "wake c"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewController(testConfig())
			if err != nil {
				t.Fatal(err)
			}
			canSleep := func(id string) bool {
				if tt.askedOnly != nil && !slices.Contains(tt.askedOnly, id) {
					t.Errorf("canSleep asked about %s", id)
				}
				return !slices.Contains(tt.refused, id)
			}
			for _, s := range tt.steps {
				got := describe(c.Decide(Sample{At: at(s.atSeconds), OpsPerSecond: s.ops, LatencyP99: s.p99}, tt.nodes, canSleep))
				if got != s.want {
					t.Fatalf("at %v s (%v ops/s, p99 %v): %q, want %q", s.atSeconds, s.ops, s.p99, got, s.want)
				}
			}
		})
	}
}

// simNode is one node of the simulated cluster.
type simNode struct {
	id    string
	tier  int
	state State
	since time.Time
	until time.Time // when Draining or Waking ends
	meter *Meter
}

// simResult is what a simulated run produced.
type simResult struct {
	actions     []Action
	actedAt     []time.Time
	maxAsleep   int
	asleepAt    map[float64]int // nodes asleep at the seconds asked for
	slowSeconds int             // seconds whose p99 exceeded the target
	joules      float64
	fullJoules  float64       // what every node awake all along would have drawn
	hold        time.Duration // the controller's Hold, defaults filled in
}

// simulate drives a controller through load, one sample a second for the given number of
// seconds, over the 16-node cluster of TestSixteenNodes with 6 tier-0 nodes. A node told
// to sleep drains for 2 s, then sleeps; one told to wake is back Profile.Wake later.
// Each active node serves CapacityOpsPerSecond at 1000 ops/s within 10 ms: the p99 is
// 2 ms / (1 − utilization), which reaches the target at 80 %. It fails the test when the
// controller sleeps a node canSleep refuses, or a range loses its last serving replica.
func simulate(t *testing.T, cfg ControllerConfig, seconds int, load func(second float64) float64, probes []float64) simResult {
	t.Helper()
	c, err := NewController(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const drain = 2 * time.Second
	nodes, sets := sixteenNodes(t, cfg.Profile, 6)
	res := simResult{asleepAt: map[float64]int{}, hold: c.Config().Hold}
	notServing := func(id string) bool {
		i := slices.IndexFunc(nodes, func(n *simNode) bool { return n.id == id })
		return nodes[i].state != Active
	}
	canSleep := func(id string) bool {
		i := slices.IndexFunc(nodes, func(n *simNode) bool { return n.id == id })
		short := len(ShortOfAwake(sets, atOne, id, func(x string) bool { return !notServing(x) })) > 0
		return nodes[i].tier > 0 && !short
	}
	for second := range seconds {
		now := at(float64(second))
		for _, n := range nodes {
			switch {
			case n.state == Draining && !now.Before(n.until):
				n.state, n.since = Asleep, n.until
				n.meter.Set(n.since, Asleep)
			case n.state == Waking && !now.Before(n.until):
				n.state, n.since = Active, n.until
				n.meter.Set(n.since, Active)
			}
		}
		candidates := make([]Candidate, len(nodes))
		active, asleep := 0, 0
		for i, n := range nodes {
			candidates[i] = Candidate{ID: n.id, State: n.state, Since: n.since}
			switch n.state {
			case Active:
				active++
			case Asleep:
				asleep++
			}
		}
		res.maxAsleep = max(res.maxAsleep, asleep)
		if slices.Contains(probes, float64(second)) {
			res.asleepAt[float64(second)] = asleep
		}
		ops := load(float64(second))
		utilization := ops / (float64(active) * cfg.CapacityOpsPerSecond)
		p99 := time.Duration(float64(2*time.Millisecond) / (1 - min(utilization, 0.999)))
		if p99 > cfg.LatencyTarget {
			res.slowSeconds++
		}
		a, ok := c.Decide(Sample{At: now, OpsPerSecond: ops, LatencyP99: p99}, candidates, canSleep)
		if !ok {
			continue
		}
		i := slices.IndexFunc(nodes, func(n *simNode) bool { return n.id == a.Node })
		n := nodes[i]
		switch {
		case a.Sleep && !canSleep(a.Node):
			t.Fatalf("at %d s the controller put %s to sleep, which canSleep refuses", second, a.Node)
		case a.Sleep:
			n.state, n.since, n.until = Draining, now, now.Add(drain)
		case n.state != Asleep:
			t.Fatalf("at %d s the controller woke %s, which is %v", second, a.Node, n.state)
		default:
			n.state, n.since, n.until = Waking, now, now.Add(cfg.Profile.Wake)
		}
		n.meter.Set(now, n.state)
		if !keepsAnAwakeReplica(sets, notServing) {
			t.Fatalf("at %d s, after %+v, a range has no serving replica", second, a)
		}
		res.actions = append(res.actions, a)
		res.actedAt = append(res.actedAt, now)
	}
	end := at(float64(seconds))
	for _, n := range nodes {
		res.joules += n.meter.Joules(end)
	}
	res.fullJoules = float64(len(nodes)) * cfg.Profile.ActiveWatts * float64(seconds)
	return res
}

// sixteenNodes returns the nodes of TestSixteenNodes, alwaysOn of them tier 0, active
// from epoch on and metered with p, and the replica sets of their simple=3 ring.
func sixteenNodes(t *testing.T, p Profile, alwaysOn int) ([]*simNode, [][]ring.Member) {
	t.Helper()
	ids, r := sixteenNodeRing(t, alwaysOn)
	nodes := make([]*simNode, len(ids))
	for i, id := range ids {
		m, _ := r.Member(id)
		nodes[i] = &simNode{id: id, tier: m.Tier, since: epoch, meter: NewMeter(p, epoch)}
	}
	return nodes, r.Placement(ring.Simple(3)).Sets()
}

// dailyLoad is a day compressed into day seconds: 640 ops/s at midnight (second 0),
// peakOps at noon, for 16 nodes of 1000 ops/s: 68 % of them all, which needs all 16
// under the high mark of 70 %.
func dailyLoad(day float64) func(float64) float64 {
	return func(second float64) float64 {
		return 16000 * (0.36 - 0.32*math.Cos(2*math.Pi*second/day))
	}
}

// peakOps is the load at noon, and the load of a spike.
const peakOps = 10880

// flatLoad is a constant load.
func flatLoad(ops float64) func(float64) float64 {
	return func(float64) float64 { return ops }
}

// spikeLoad is 800 ops/s until from, then peakOps.
func spikeLoad(from float64) func(float64) float64 {
	return func(second float64) float64 {
		if second < from {
			return 800
		}
		return peakOps
	}
}

// TestControllerUnderLoad drives the controller through load curves over the
// 16-node cluster: it sleeps at low load down to what coverage allows (the 10 tier-1
// nodes), wakes nodes as the load rises, never acts within Enter + Wake of its last
// action nor sleeps a node within Hold of it, changes direction only as often as the
// load does, and keeps the p99 within the target.
func TestControllerUnderLoad(t *testing.T) {
	const day = 4 * 3600
	tests := []struct {
		name    string
		profile Profile
		seconds int
		load    func(float64) float64
		// asleep is how many nodes must be asleep at given seconds.
		asleep map[float64]int
		// maxAsleep is how many nodes are asleep at most, at some point.
		maxAsleep int
		// turns bounds how often the controller goes from sleeping nodes to waking them
		// or back.
		turns int
		// firstWakeBy, when set, is the second by which the first wake must come.
		firstWakeBy float64
		// slowSeconds bounds the seconds whose p99 exceeds the target.
		slowSeconds int
	}{
		{"S4, one day", S4, day, dailyLoad(day), map[float64]int{day / 2: 0, day - 1: 10}, 10, 2, 0, 0},
		{"S1, one day", S1, day, dailyLoad(day), map[float64]int{day / 2: 0, day - 1: 10}, 10, 2, 0, 0},
		{"S4, flat low load", S4, 3600, flatLoad(800), map[float64]int{3599: 10}, 10, 0, 0, 0},
		{"S4, flat high load", S4, 3600, flatLoad(8000), map[float64]int{3599: 0}, 0, 0, 0, 0},
		// 6 active nodes take peakOps within the target (80 %) once 8 more are awake:
		// one wake per Enter + Wake (36 s) makes that 8 × 36 s of slow answers at most.
		{"S4, a spike at night", S4, 3600, spikeLoad(2000), map[float64]int{1999: 10, 3599: 0}, 10, 1, 2000 + 36, 8 * 36},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Profile = tt.profile
			probes := make([]float64, 0, len(tt.asleep))
			for second := range tt.asleep {
				probes = append(probes, second)
			}
			res := simulate(t, cfg, tt.seconds, tt.load, probes)
			t.Logf("%d actions, at most %d asleep, %.1f %% of the energy of a cluster always awake, %d slow seconds",
				len(res.actions), res.maxAsleep, 100*res.joules/res.fullJoules, res.slowSeconds)
			for second, want := range tt.asleep {
				if got := res.asleepAt[second]; got != want {
					t.Errorf("%d nodes asleep at %v s, want %d", got, second, want)
				}
			}
			if res.maxAsleep != tt.maxAsleep {
				t.Errorf("at most %d nodes asleep, want %d", res.maxAsleep, tt.maxAsleep)
			}
			if res.slowSeconds > tt.slowSeconds {
				t.Errorf("the p99 exceeded the target for %d s, want at most %d", res.slowSeconds, tt.slowSeconds)
			}
			turns := 0
			for i := 1; i < len(res.actions); i++ {
				gap := res.actedAt[i].Sub(res.actedAt[i-1])
				if gap < cfg.Profile.Enter+cfg.Profile.Wake {
					t.Errorf("actions %+v and %+v only %v apart", res.actions[i-1], res.actions[i], gap)
				}
				if res.actions[i].Sleep && gap < res.hold {
					t.Errorf("%+v only %v after %+v, within Hold", res.actions[i], gap, res.actions[i-1])
				}
				if res.actions[i].Sleep != res.actions[i-1].Sleep {
					turns++
				}
			}
			if turns > tt.turns {
				t.Errorf("the controller changed direction %d times, want at most %d", turns, tt.turns)
			}
			if tt.firstWakeBy > 0 {
				i := slices.IndexFunc(res.actions, func(a Action) bool { return !a.Sleep })
				if i < 0 || res.actedAt[i].After(at(tt.firstWakeBy)) {
					t.Errorf("first wake at action %d (%v), want by %v s", i, res.actedAt, tt.firstWakeBy)
				}
			}
			if tt.maxAsleep > 0 && tt.profile == S4 && res.joules >= res.fullJoules {
				t.Errorf("the cluster drew %.0f J, no less than %.0f J awake all along", res.joules, res.fullJoules)
			}
		})
	}
}
