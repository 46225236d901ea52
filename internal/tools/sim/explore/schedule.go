// Package explore searches the space of a cluster's life: from a seed it draws a
// cluster (two or three DCs, three to nine nodes, a keyspace with its replication and a
// consistency level), a client workload, and operator actions and faults at random
// times — joins (several at once too), decommissions (one in ten short of replicas, to be
// refused), removals, replacements, aborts of
// a dead joiner, graceful restarts (of the seedless first node too), kills, wiped disks,
// partitions between DCs, one-way cuts between nodes, and changes of the keyspace's
// replication (kura keyspace alter: one in ten asking more copies of a DC than it has
// nodes, to be refused; each followed by --settle should it be cut short) — runs it on real nodes in
// virtual time (internal/tools/sim/lifecycle), heals every fault, lets the cluster settle, and judges
// the history with the pure checker of package nemesis and the explorer's own liveness
// checks. A seed that fails is shrunk to the fewest actions that still fail.
//
// Run it inside a testing/synctest bubble (synctest.Test in tests, internal/tools/sim/bubble in
// kura simulate).
package explore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/tools/sim/lifecycle"
)

// Schedule is one run's plan: the cluster, the workload's level and the operator's
// actions and faults at their times.
type Schedule struct {
	Seed        uint64
	DCs         []string
	Nodes       []lifecycle.NodeSpec // started first, in order, README-style
	Replication string               // of keyspace "app", e.g. "dc1=2,dc2=1"
	Level       consistency.Level    // of every read and write
	Actions     []Action             // in order of their first step
	// Chaos is how long the workload runs with actions; Settle how long the healed
	// cluster runs before the checks.
	Chaos, Settle time.Duration
	// Serial is the level of the counters' increments and reads: LOCAL_SERIAL, through
	// dc1's nodes only, when Level keeps to the coordinator's DC, SERIAL otherwise.
	Serial consistency.Level
}

// Action is one operator action or fault: one or more steps (a kill and the restart
// after it), shrunk away together.
type Action struct {
	Name  string
	Steps []Step
}

// Step is one thing done to the cluster at a time into the chaos.
type Step struct {
	At time.Duration
	// Do is one of: start (a new node, with Spec), stop (SIGTERM), kill (-9), restart
	// (with the command it was last started with), wipe (its disk; it is down),
	// decommission, remove (Node removes Target), partition and heal (DCs Node and
	// Target), cut and mend (Node to Target, one way), skew (Node's clock by Offset;
	// 0 ends it), alter (keyspace app's replication to Replication, through Node), settle
	// (through Node, once no alter runs, should one have left the keyspace moving).
	Do          string
	Node        string
	Target      string
	Spec        lifecycle.NodeSpec
	Offset      time.Duration
	Replication string
	// Short marks a command the planner drew short of nodes, which the node must refuse,
	// changing nothing: a decommission short of replicas
	// (ringchange.DecommissionShortOfReplicas; the node stays a member), or an alter that
	// asks more copies of a DC than it has nodes.
	Short bool
}

func (s Step) String() string {
	switch s.Do {
	case "start":
		var flags []string
		if len(s.Spec.Seeds) > 0 {
			flags = append(flags, "--seeds "+strings.Join(s.Spec.Seeds, ","))
		}
		if s.Spec.Replace != "" {
			flags = append(flags, "--replace "+s.Spec.Replace)
		}
		return strings.TrimSpace(fmt.Sprintf("%v start %s in %s %s", s.At, s.Spec.ID, s.Spec.DC, strings.Join(flags, " ")))
	case "remove":
		return fmt.Sprintf("%v node remove %s (through %s)", s.At, s.Target, s.Node)
	case "partition", "heal":
		return fmt.Sprintf("%v %s %s-%s", s.At, s.Do, s.Node, s.Target)
	case "cut", "mend":
		return fmt.Sprintf("%v %s %s->%s", s.At, s.Do, s.Node, s.Target)
	case "skew":
		return fmt.Sprintf("%v skew %s's clock by %v", s.At, s.Node, s.Offset)
	case "alter":
		short := ""
		if s.Short {
			short = " (more copies than a DC has nodes: to be refused)"
		}
		return fmt.Sprintf("%v keyspace alter app --replication %s (through %s)%s", s.At, s.Replication, s.Node, short)
	case "settle":
		return fmt.Sprintf("%v keyspace alter app --settle (through %s), once no alter runs, if one left app moving", s.At, s.Node)
	}
	if s.Short {
		return fmt.Sprintf("%v %s %s (short of replicas: to be refused)", s.At, s.Do, s.Node)
	}
	return fmt.Sprintf("%v %s %s", s.At, s.Do, s.Node)
}

// String prints the schedule as an operator would read it.
func (s Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %s, keyspace app %s at %s, counters at %s\n", s.Seed, strings.Join(s.DCs, "+"), s.Replication, s.Level, s.Serial)
	for i, n := range s.Nodes {
		seeds := ""
		if len(n.Seeds) > 0 {
			seeds = " --seeds " + strings.Join(n.Seeds, ",")
		}
		fmt.Fprintf(&b, "  start %s in %s%s", n.ID, n.DC, seeds)
		if i < len(s.Nodes)-1 {
			b.WriteString("\n")
		}
	}
	for _, a := range s.Actions {
		fmt.Fprintf(&b, "\n  %s:", a.Name)
		for _, st := range a.Steps {
			fmt.Fprintf(&b, "\n    %s", st)
		}
	}
	return b.String()
}

// steps returns every step of the schedule in time order (actions in order for ties).
func (s Schedule) steps() []Step {
	var all []Step
	for _, a := range s.Actions {
		all = append(all, a.Steps...)
	}
	slices.SortStableFunc(all, func(a, b Step) int { return int(a.At - b.At) })
	return all
}

// without returns the schedule less action i.
func (s Schedule) without(i int) Schedule {
	s.Actions = slices.Delete(slices.Clone(s.Actions), i, i+1)
	return s
}

// plan tracks the membership the actions drawn so far leave, so that later ones are
// drawn among nodes that will exist and keep every DC at least as large as its
// replication.
type plan struct {
	rng *rand.Rand
	// short draws whether a decommission is to be short of replicas, and alters whatever
	// concerns changes of replication, each from a stream of its own so that the other
	// draws stay as they were.
	short, alters *rand.Rand
	dcs           []string
	rf            map[string]int // the keyspace's replication when it is created
	// altered are the changes of replication planned to be possible, in time order; each
	// may still be refused when it runs (a ring change, a node down), which leaves the
	// replication before it.
	altered []alteration
	local   bool // the workload's level keeps to the coordinator's DC

	next  int               // the next new node's number
	dcOf  map[string]string // every node ever planned
	alive map[string]bool   // members (not left or removed) at the end of the actions so far
	busy  map[string]time.Duration
	// from is when each node starts (0 for the first nodes), until when the plan takes it
	// off the ring for good (absent: never), and leaves the decommissions and removals
	// planned to be accepted, each checked by the rule when it runs.
	from, until map[string]time.Duration
	leaves      []leave
	// lossAt are the times of the actions that take a node's disk away for good (a
	// removal, a replacement, a wipe): one such action at a time, as an operator
	// replaces one failed machine at a time. Two at once may take every copy of a range
	// with them.
	lossAt []time.Duration
}

// lossWindow is how long an action that loses a disk holds the cluster: its gap and
// the streaming that follows.
const lossWindow = 60 * time.Second

// takeLoss reserves the loss window from at, or reports false while another action's
// window is open then.
func (p *plan) takeLoss(at time.Duration) bool {
	for _, other := range p.lossAt {
		if at > other-lossWindow && at < other+lossWindow {
			return false
		}
	}
	p.lossAt = append(p.lossAt, at)
	return true
}

// leave is a planned decommission or removal of node id at a time.
type leave struct {
	id string
	at time.Duration
}

// joinWindow is how long after its start the plan counts a new node among its DC's
// replicas: it must have learned the ring and announced its join first.
const joinWindow = 30 * time.Second

// surely reports whether id certainly owns ranges at time at, as the rule counts
// (ringchange.DecommissionShortOfReplicas): one of the first nodes or started a
// joinWindow before, and not taken off by the plan. A node down meanwhile still counts,
// as it keeps its copy.
func (p *plan) surely(id string, at time.Duration) bool {
	start := p.from[id]
	if start > 0 {
		start += joinWindow
	}
	until, gone := p.until[id]
	return start <= at && (!gone || until > at)
}

// keeps reports whether every planned leave still finds at least its DC's replication
// among the nodes that surely own ranges when it runs, besides the node that goes.
func (p *plan) keeps() bool {
	for _, l := range p.leaves {
		n := 0
		for id, dc := range p.dcOf {
			if dc == p.dcOf[l.id] && id != l.id && p.surely(id, l.at) {
				n++
			}
		}
		if _, hi := p.rfAt(p.dcOf[l.id], l.at); n < hi {
			return false
		}
	}
	return true
}

// goes plans id's decommission or removal at time at, which the rule checks when it
// runs; draw checks first that it would keep every DC's replication (wouldKeep).
func (p *plan) goes(id string, at time.Duration) {
	p.until[id], p.alive[id] = at, false
	p.leaves = append(p.leaves, leave{id: id, at: at})
}

// wouldKeep reports whether every planned leave would keep its DC's replication if id
// went at time at too (goes), leaving the plan as it was.
func (p *plan) wouldKeep(id string, at time.Duration) bool {
	until, had := p.until[id]
	p.until[id] = at
	p.leaves = append(p.leaves, leave{id: id, at: at})
	ok := p.keeps()
	p.leaves = p.leaves[:len(p.leaves)-1]
	if had {
		p.until[id] = until
	} else {
		delete(p.until, id)
	}
	return ok
}

// shortAt reports whether the rule must refuse id's decommission at time at: even
// counting every node of its DC started by then, gone or not, fewer than its
// replication would remain.
func (p *plan) shortAt(id string, at time.Duration) bool {
	n := 0
	for other, dc := range p.dcOf {
		if dc == p.dcOf[id] && other != id && p.from[other] <= at {
			n++
		}
	}
	lo, _ := p.rfAt(p.dcOf[id], at)
	return n < lo
}

// alteration is a planned change of replication: from time at, the keyspace may have
// rf (a DC absent has no copies).
type alteration struct {
	at time.Duration
	rf map[string]int
}

// rfAt returns the fewest and the most copies the keyspace may place in dc at time at:
// its first replication, or that of any alter planned by then, since each may be
// refused.
func (p *plan) rfAt(dc string, at time.Duration) (lo, hi int) {
	lo, hi = p.rf[dc], p.rf[dc]
	for _, a := range p.altered {
		if a.at <= at {
			lo, hi = min(lo, a.rf[dc]), max(hi, a.rf[dc])
		}
	}
	return lo, hi
}

// Generate draws the schedule of seed.
func Generate(seed uint64) Schedule {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	s := Schedule{Seed: seed, Chaos: 90 * time.Second, Settle: 60 * time.Second}
	s.DCs = []string{"dc1", "dc2", "dc3"}[:2+rng.IntN(2)]
	p := &plan{rng: rng, short: rand.New(rand.NewPCG(seed, seed^0x5407)), alters: rand.New(rand.NewPCG(seed, seed^0xa17e)), dcs: s.DCs, rf: map[string]int{}, dcOf: map[string]string{}, alive: map[string]bool{},
		busy: map[string]time.Duration{}, from: map[string]time.Duration{}, until: map[string]time.Duration{}}
	total := max(3, len(s.DCs)+rng.IntN(4))
	// The README's layout first (two nodes in dc1, one in dc2), or one node a DC.
	layout := slices.Clone(s.DCs)
	if len(s.DCs) == 2 {
		layout = []string{"dc1", "dc1", "dc2"}
	}
	perDC := map[string]int{}
	for i := range total {
		dc := s.DCs[rng.IntN(len(s.DCs))]
		if i < len(layout) {
			dc = layout[i]
		}
		spec := lifecycle.NodeSpec{ID: p.newID(dc, 0), DC: dc}
		if i > 0 {
			spec.Seeds = []string{"n1"} // n1 is started without seeds
		}
		s.Nodes = append(s.Nodes, spec)
		perDC[dc]++
	}
	var repl []string
	for _, dc := range s.DCs {
		p.rf[dc] = 1 + rng.IntN(min(3, perDC[dc]))
		repl = append(repl, fmt.Sprintf("%s=%d", dc, p.rf[dc]))
	}
	s.Replication = strings.Join(repl, ",")
	levels := []consistency.Level{consistency.Quorum, consistency.Quorum, consistency.LocalQuorum, consistency.One, consistency.All}
	s.Level = levels[rng.IntN(len(levels))]
	s.Serial = serialFor(s.Level)
	p.local = s.Serial == consistency.LocalSerial
	for range 2 + rng.IntN(4) {
		if a, ok := p.draw(s.Chaos); ok {
			s.Actions = append(s.Actions, a)
		}
	}
	// Actions are drawn in no order of time: a join drawn after a decommission short of
	// replicas may start before it in its DC, and the rule would then allow it.
	s.Actions = slices.DeleteFunc(s.Actions, func(a Action) bool {
		return a.Steps[0].Short && !p.shortAt(a.Steps[0].Node, a.Steps[0].At)
	})
	// Alters come last, from their own stream, so that the actions above are those the
	// seed drew before the explorer drew alters; each must keep them as they were drawn.
	s.Actions = append(s.Actions, p.drawAlters(s.Chaos, s.Actions)...)
	slices.SortStableFunc(s.Actions, func(a, b Action) int { return int(a.Steps[0].At - b.Steps[0].At) })
	s.steadySeeds()
	return s
}

// serialFor is the serial level of a workload at level: LOCAL_SERIAL when it keeps to the
// coordinator's DC, as a Redis connection's transactions do, SERIAL otherwise.
func serialFor(level consistency.Level) consistency.Level {
	if level == consistency.LocalQuorum || level == consistency.LocalOne {
		return consistency.LocalSerial
	}
	return consistency.Serial
}

// learnWindow is how long a new node needs its seed: to reach it and learn the cluster
// from it, after which gossip with the others keeps it informed.
const learnWindow = 5 * time.Second

// steadySeeds gives every node an action starts a seed that joined at least learnWindow
// before and stays up and a member until learnWindow after. Actions are drawn in no
// order of time, so the seed the plan chose may be down or gone by then: a new node with
// an empty disk that reaches none of its seeds learns nobody and rightly stays booting,
// which is the schedule's fault, not the node's. Such a start gets the first steady node
// instead, as an operator would name one that is up; when none is steady it keeps its
// seed, and the run falls back on a running node when it starts (runner.withLiveSeed).
func (s *Schedule) steadySeeds() {
	downs := s.downs()
	joined := map[string]time.Duration{} // when each node can serve as a seed
	for _, n := range s.Nodes {
		joined[n.ID] = 0
	}
	for _, st := range s.steps() {
		if st.Do == "start" {
			joined[st.Spec.ID] = st.At + learnWindow
		}
	}
	steady := func(id string, at time.Duration) bool {
		from, ok := joined[id]
		if !ok || from > at {
			return false
		}
		for _, d := range downs[id] {
			if d.from < at+learnWindow && d.until > at {
				return false
			}
		}
		return true
	}
	for i := range s.Actions {
		steps := slices.Clone(s.Actions[i].Steps)
		for j, st := range steps {
			if st.Do != "start" || slices.ContainsFunc(st.Spec.Seeds, func(id string) bool { return steady(id, st.At) }) {
				continue
			}
			for _, n := range s.nodeIDs() {
				if n != st.Spec.ID && steady(n, st.At) {
					steps[j].Spec.Seeds = []string{n}
					break
				}
			}
		}
		s.Actions[i].Steps = steps
	}
}

// down is a time a node is not up, or not a member: from until until (for ever when it
// never comes back).
type down struct{ from, until time.Duration }

// downs returns, by node, the times the schedule takes it down: a kill or stop until the
// restart of the same action, a decommission (not one short of replicas: it is refused),
// a removal or a replacement for good.
func (s Schedule) downs() map[string][]down {
	const forever = time.Duration(1<<63 - 1)
	out := map[string][]down{}
	for _, a := range s.Actions {
		for i, st := range a.Steps {
			switch {
			case st.Do == "kill" || st.Do == "stop":
				d := down{from: st.At, until: forever}
				for _, later := range a.Steps[i+1:] {
					if later.Do == "restart" && later.Node == st.Node {
						d.until = later.At
						break
					}
				}
				out[st.Node] = append(out[st.Node], d)
			case st.Do == "decommission" && !st.Short:
				out[st.Node] = append(out[st.Node], down{from: st.At, until: forever})
			case st.Do == "remove":
				out[st.Target] = append(out[st.Target], down{from: st.At, until: forever})
			case st.Do == "start" && st.Spec.Replace != "":
				out[st.Spec.Replace] = append(out[st.Spec.Replace], down{from: st.At, until: forever})
			}
		}
	}
	return out
}

// nodeIDs returns every node the schedule starts, first nodes first, then in the order
// of their start.
func (s Schedule) nodeIDs() []string {
	var out []string
	for _, n := range s.Nodes {
		out = append(out, n.ID)
	}
	for _, st := range s.steps() {
		if st.Do == "start" {
			out = append(out, st.Spec.ID)
		}
	}
	return out
}

// newID plans a new node in dc, started at time at (0 for the first nodes).
func (p *plan) newID(dc string, at time.Duration) string {
	p.next++
	id := fmt.Sprintf("n%d", p.next)
	p.dcOf[id], p.alive[id], p.from[id] = dc, true, at
	return id
}

// members returns the planned members of dc (every DC when empty), sorted.
func (p *plan) members(dc string) []string {
	var out []string
	for id, alive := range p.alive {
		if alive && (dc == "" || p.dcOf[id] == dc) {
			out = append(out, id)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		var x, y int
		fmt.Sscanf(a, "n%d", &x)
		fmt.Sscanf(b, "n%d", &y)
		return x - y
	})
	return out
}

// pick returns a random planned member that no other action holds at time at, and for
// which fits, when given, holds.
func (p *plan) pick(at time.Duration, fits func(id string) bool) (string, bool) {
	var ok []string
	for _, id := range p.members("") {
		if p.busy[id] > at || fits != nil && !fits(id) {
			continue
		}
		ok = append(ok, id)
	}
	if len(ok) == 0 {
		return "", false
	}
	return ok[p.rng.IntN(len(ok))], true
}

// seedFor is the seed an operator would give a new node: n1, as the README does, or
// another member when n1 is gone.
func (p *plan) seedFor() string {
	if p.alive["n1"] {
		return "n1"
	}
	return p.members("")[0]
}

// draw adds one action at a random time in the chaos.
func (p *plan) draw(chaos time.Duration) (Action, bool) {
	at := time.Duration(p.rng.Int64N(int64(chaos*2/3))) + chaos/10
	gap := func() time.Duration { return time.Duration(2+p.rng.IntN(20)) * time.Second }
	hold := func(id string, until time.Duration) { p.busy[id] = max(p.busy[id], until) }
	switch kind := p.rng.IntN(13); kind {
	case 0, 1: // one or two joins into one DC
		dc := p.dcs[p.rng.IntN(len(p.dcs))]
		a := Action{Name: "join"}
		n := 1 + kind
		if n == 2 {
			a.Name = "two joins at once"
		}
		for range n {
			id := p.newID(dc, at)
			hold(id, at+gap())
			a.Steps = append(a.Steps, Step{At: at, Do: "start", Spec: lifecycle.NodeSpec{ID: id, DC: dc, Seeds: []string{p.seedFor()}}})
		}
		return a, true
	case 2: // decommission: one the rule allows then, or one in ten short of replicas
		if p.short.IntN(10) == 0 {
			// The rule must refuse it, and the node stays a member for the later actions.
			// When no node would be short, one the rule allows is drawn instead.
			if id, ok := p.pick(at, func(id string) bool { return p.surely(id, at) && p.shortAt(id, at) }); ok {
				return Action{Name: "decommission short of replicas", Steps: []Step{{At: at, Do: "decommission", Node: id, Short: true}}}, true
			}
		}
		id, ok := p.pick(at, func(id string) bool { return p.surely(id, at) && p.wouldKeep(id, at) })
		if !ok {
			return Action{}, false
		}
		p.goes(id, at)
		hold(id, chaos*10)
		return Action{Name: "decommission", Steps: []Step{{At: at, Do: "decommission", Node: id}}}, true
	case 3: // kill, then remove through another node
		// Checked at the kill: the nodes that go between it and the removal were checked
		// without this one.
		id, ok := p.pick(at, func(id string) bool { return p.surely(id, at) && p.wouldKeep(id, at) })
		if !ok || !p.takeLoss(at) {
			return Action{}, false
		}
		p.goes(id, at)
		hold(id, chaos*10)
		via := p.seedFor()
		if via == id {
			via = p.members("")[0]
		}
		return Action{Name: "kill and remove", Steps: []Step{{At: at, Do: "kill", Node: id}, {At: at + gap(), Do: "remove", Node: via, Target: id}}}, true
	case 4: // kill, then replace with a new node
		id, ok := p.pick(at, nil)
		if !ok || !p.takeLoss(at) {
			return Action{}, false
		}
		hold(id, chaos*10)
		dc := p.dcOf[id]
		replaceAt := at + gap()
		newID := p.newID(dc, replaceAt)
		// The replacement takes its target's place: the plan counts the target until it
		// counts the new node, so that the DC's count never dips.
		p.alive[id], p.until[id] = false, replaceAt+joinWindow
		hold(newID, chaos*10)
		return Action{Name: "kill and replace", Steps: []Step{{At: at, Do: "kill", Node: id},
			{At: replaceAt, Do: "start", Spec: lifecycle.NodeSpec{ID: newID, DC: dc, Seeds: []string{p.seedFor()}, Replace: id}}}}, true
	case 5: // a joiner dies in its ring delay; its join is aborted
		dc := p.dcs[p.rng.IntN(len(p.dcs))]
		id := p.newID(dc, at)
		p.alive[id], p.until[id] = false, at // joining until removed, yet never surely a replica
		hold(id, chaos*10)
		return Action{Name: "dead joiner removed", Steps: []Step{
			{At: at, Do: "start", Spec: lifecycle.NodeSpec{ID: id, DC: dc, Seeds: []string{p.seedFor()}}},
			{At: at + 2*time.Second, Do: "kill", Node: id},
			{At: at + 2*time.Second + gap(), Do: "remove", Node: p.seedFor(), Target: id}}}, true
	case 6, 7: // graceful restart; n1, the seedless node, half the time
		id := "n1"
		if kind == 7 || !p.alive[id] || p.busy[id] > at {
			var ok bool
			if id, ok = p.pick(at, nil); !ok {
				return Action{}, false
			}
		}
		d := gap()
		hold(id, at+d)
		return Action{Name: "graceful restart", Steps: []Step{{At: at, Do: "stop", Node: id}, {At: at + d, Do: "restart", Node: id}}}, true
	case 8: // kill -9 and restart
		id, ok := p.pick(at, nil)
		if !ok {
			return Action{}, false
		}
		d := gap()
		hold(id, at+d)
		return Action{Name: "kill and restart", Steps: []Step{{At: at, Do: "kill", Node: id}, {At: at + d, Do: "restart", Node: id}}}, true
	case 9: // a lost disk: kill, wipe, restart with the same command
		id, ok := p.pick(at, nil)
		if !ok || !p.takeLoss(at) {
			return Action{}, false
		}
		d := gap()
		hold(id, at+d+30*time.Second)
		return Action{Name: "wiped disk", Steps: []Step{{At: at, Do: "kill", Node: id}, {At: at, Do: "wipe", Node: id}, {At: at + d, Do: "restart", Node: id}}}, true
	case 10: // a partition between two DCs
		i := p.rng.IntN(len(p.dcs))
		j := (i + 1 + p.rng.IntN(len(p.dcs)-1)) % len(p.dcs)
		d := gap()
		return Action{Name: "DC partition", Steps: []Step{{At: at, Do: "partition", Node: p.dcs[i], Target: p.dcs[j]}, {At: at + d, Do: "heal", Node: p.dcs[i], Target: p.dcs[j]}}}, true
	case 12: // a node's clock steps ahead or behind, within the guard's bound or past it
		id, ok := p.pick(at, nil)
		if !ok {
			return Action{}, false
		}
		offsets := []time.Duration{300 * time.Millisecond, -300 * time.Millisecond, 2 * time.Second, -2 * time.Second}
		d := gap()
		hold(id, at+d)
		return Action{Name: "clock skew", Steps: []Step{{At: at, Do: "skew", Node: id, Offset: offsets[p.rng.IntN(len(offsets))]},
			{At: at + d, Do: "skew", Node: id}}}, true
	default: // a one-way cut between two nodes
		members := p.members("")
		if len(members) < 2 {
			return Action{}, false
		}
		a := members[p.rng.IntN(len(members))]
		b := members[p.rng.IntN(len(members))]
		if a == b {
			return Action{}, false
		}
		d := gap()
		return Action{Name: "one-way cut", Steps: []Step{{At: at, Do: "cut", Node: a, Target: b}, {At: at + d, Do: "mend", Node: a, Target: b}}}, true
	}
}

// ParseSeeds reads a range of seeds, "A-B" (or one seed, "A"), A and B from 1.
func ParseSeeds(s string) (from, to uint64, err error) {
	a, b, isRange := strings.Cut(s, "-")
	if !isRange {
		b = a
	}
	from, errA := strconv.ParseUint(strings.TrimSpace(a), 10, 64)
	to, errB := strconv.ParseUint(strings.TrimSpace(b), 10, 64)
	if errA != nil || errB != nil || from == 0 || to < from {
		return 0, 0, fmt.Errorf("seeds %q: want A-B with 1 <= A <= B, e.g. 1-1000", s)
	}
	return from, to, nil
}
