package explore

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/consistency"
)

// TestGenerateDecommissions replays the membership of many seeds' schedules from their
// steps: every decommission and removal must leave its DC at least its replication
// among the nodes sure to own ranges then, every decommission drawn short of replicas
// must be short even counting every node started in its DC by then, and a few of them
// must be drawn.
func TestGenerateDecommissions(t *testing.T) {
	var leaves, short int
	for seed := uint64(1); seed <= 3000; seed++ {
		s := Generate(seed)
		m := replay(s)
		for _, st := range s.steps() {
			lo, hi := rfAt(s, m.dcOf[st.Node], st.At)
			switch {
			case st.Do == "decommission" && st.Short:
				short++
				if n := m.started(st.Node, st.At); n >= lo {
					t.Errorf("seed %d: %s drawn short, but %d other nodes of %s have started by then (replication %s, at least %d there then)\n%s", seed, st, n, m.dcOf[st.Node], s.Replication, lo, s)
				}
			case st.Do == "decommission", st.Do == "kill" && m.removed[st.Node]:
				leaves++
				if n := m.sure(st.Node, st.At); n < hi {
					t.Errorf("seed %d: %s leaves %d other nodes sure to own ranges in %s (replication %s, up to %d there then)\n%s", seed, st, n, m.dcOf[st.Node], s.Replication, hi, s)
				}
			}
		}
	}
	t.Logf("%d decommissions and removals, %d decommissions short of replicas", leaves, short)
	// One in ten decommissions is drawn short when a node can be: a few dozen of these
	// seeds' thousands of leaves.
	if short == 0 || short*5 > leaves {
		t.Errorf("%d decommissions drawn short of replicas beside %d decommissions and removals, want a few in ten", short, leaves)
	}
}

// rfAt returns the fewest and the most copies the schedule's keyspace may place in dc
// at time at: its first replication, or that of any alter (not one short of nodes)
// begun by then, since each may be refused.
func rfAt(s Schedule, dc string, at time.Duration) (lo, hi int) {
	lo, hi = copiesIn(s.Replication, dc), copiesIn(s.Replication, dc)
	for _, st := range s.steps() {
		if st.Do == "alter" && !st.Short && st.At <= at {
			n := copiesIn(st.Replication, dc)
			lo, hi = min(lo, n), max(hi, n)
		}
	}
	return lo, hi
}

// copiesIn returns the copies replication ("dc1=2,dc2=1") places in dc.
func copiesIn(replication, dc string) int {
	for _, part := range strings.Split(replication, ",") {
		if name, n, _ := strings.Cut(part, "="); name == dc {
			copies, _ := strconv.Atoi(n)
			return copies
		}
	}
	return 0
}

// TestGenerateAlters replays many seeds' schedules: each kind of change of replication
// must be drawn, every alter within what its DCs' first nodes still members then hold
// (at most three copies a DC, some DC with copies, no DC dropped under a level that
// keeps to the coordinator's DC), each followed by a settle, and every alter drawn
// short of nodes must ask some DC for more copies than nodes started in it by then.
func TestGenerateAlters(t *testing.T) {
	kinds := []struct {
		name  string
		is    func(before, after int) bool
		drawn int
	}{
		{name: "raise a DC's copies", is: func(before, after int) bool { return before > 0 && after > before }},
		{name: "lower a DC's copies", is: func(before, after int) bool { return after > 0 && after < before }},
		{name: "add a DC", is: func(before, after int) bool { return before == 0 && after > 0 }},
		{name: "drop a DC", is: func(before, after int) bool { return before > 0 && after == 0 }},
	}
	var alters, short int
	for seed := uint64(1); seed <= 3000; seed++ {
		s := Generate(seed)
		m := replay(s)
		current := s.Replication
		for _, a := range s.Actions {
			st := a.Steps[0]
			if st.Do != "alter" {
				continue
			}
			if st.Short {
				short++
				if !slices.ContainsFunc(s.DCs, func(dc string) bool { return copiesIn(st.Replication, dc) > m.startedIn(dc, st.At) }) {
					t.Errorf("seed %d: %s drawn short of nodes, but every DC has started as many nodes by then\n%s", seed, st, s)
				}
				continue
			}
			alters++
			if len(a.Steps) != 2 || a.Steps[1].Do != "settle" || a.Steps[1].At <= st.At {
				t.Errorf("seed %d: %s is not followed by a settle: %v", seed, st, a.Steps)
			}
			copies := 0
			for _, dc := range s.DCs {
				before, after := copiesIn(current, dc), copiesIn(st.Replication, dc)
				copies += after
				if most := min(3, m.firstIn(dc, st.At)); after > most {
					t.Errorf("seed %d: %s asks %d copies of %s, whose first nodes still members then are %d (at most 3 drawn)\n%s", seed, st, after, dc, most, s)
				}
				if after == 0 && before > 0 && s.Serial == consistency.LocalSerial {
					t.Errorf("seed %d: %s drops %s under %s, whose reads there have no local replica\n%s", seed, st, dc, s.Level, s)
				}
				for i := range kinds {
					if kinds[i].is(before, after) {
						kinds[i].drawn++
					}
				}
			}
			if copies == 0 {
				t.Errorf("seed %d: %s leaves no copy\n%s", seed, st, s)
			}
			current = st.Replication
		}
	}
	t.Logf("%d alters, %d short of nodes", alters, short)
	for _, k := range kinds {
		if k.drawn == 0 {
			t.Errorf("no alter drawn to %s", k.name)
		}
	}
	// One in ten alters is drawn short of nodes.
	if short == 0 || short*5 > alters {
		t.Errorf("%d alters drawn short of nodes beside %d others, want about one in ten", short, alters)
	}
}

// membership is a schedule's nodes as its steps start and take them off.
type membership struct {
	dcOf    map[string]string
	from    map[string]time.Duration // its start; a replacement's, its target's
	gone    map[string]time.Duration // decommissioned, or killed to be removed
	removed map[string]bool
}

func replay(s Schedule) membership {
	m := membership{dcOf: map[string]string{}, from: map[string]time.Duration{}, gone: map[string]time.Duration{}, removed: map[string]bool{}}
	for _, n := range s.Nodes {
		m.dcOf[n.ID] = n.DC
	}
	steps := s.steps()
	for _, st := range steps {
		if st.Do == "remove" {
			m.removed[st.Target] = true
		}
	}
	for _, st := range steps {
		switch {
		case st.Do == "start":
			m.dcOf[st.Spec.ID], m.from[st.Spec.ID] = st.Spec.DC, st.At
		case st.Do == "decommission" && !st.Short, st.Do == "kill" && m.removed[st.Node]:
			m.gone[st.Node] = st.At
		}
	}
	// A replacement takes its target's place: counted as one node from the target's start.
	for _, st := range steps {
		if st.Do == "start" && st.Spec.Replace != "" {
			m.from[st.Spec.ID] = m.from[st.Spec.Replace]
			delete(m.dcOf, st.Spec.Replace)
		}
	}
	return m
}

// sure counts the nodes of id's DC other than id that surely own ranges at time at.
func (m membership) sure(id string, at time.Duration) int {
	n := 0
	for other, dc := range m.dcOf {
		gone, ok := m.gone[other]
		from := m.from[other]
		if from > 0 {
			from += joinWindow
		}
		if other != id && dc == m.dcOf[id] && from <= at && (!ok || gone > at) {
			n++
		}
	}
	return n
}

// startedIn counts the nodes of dc started by time at, gone or not.
func (m membership) startedIn(dc string, at time.Duration) int {
	n := 0
	for id, other := range m.dcOf {
		if other == dc && m.from[id] <= at {
			n++
		}
	}
	return n
}

// firstIn counts dc's first nodes (started before the chaos; a replacement counts as
// its target) still members at time at.
func (m membership) firstIn(dc string, at time.Duration) int {
	n := 0
	for id, other := range m.dcOf {
		gone, ok := m.gone[id]
		if other == dc && m.from[id] == 0 && (!ok || gone > at) {
			n++
		}
	}
	return n
}

// started counts the nodes of id's DC other than id started by time at.
func (m membership) started(id string, at time.Duration) int {
	n := 0
	for other, dc := range m.dcOf {
		if other != id && dc == m.dcOf[id] && m.from[other] <= at {
			n++
		}
	}
	return n
}

// TestDownsShortDecommission: a decommission drawn short of replicas is refused, so it
// takes its node down at no time; one drawn to be accepted takes it off for good.
func TestDownsShortDecommission(t *testing.T) {
	s := Schedule{Actions: []Action{
		{Name: "decommission short of replicas", Steps: []Step{{At: time.Second, Do: "decommission", Node: "n2", Short: true}}},
		{Name: "decommission", Steps: []Step{{At: 2 * time.Second, Do: "decommission", Node: "n3"}}},
	}}
	downs := s.downs()
	if got := fmt.Sprint(downs["n2"]); got != "[]" {
		t.Errorf("n2's downs = %s, want none", got)
	}
	if len(downs["n3"]) != 1 || downs["n3"][0].from != 2*time.Second {
		t.Errorf("n3's downs = %v, want one from 2s for good", downs["n3"])
	}
}
