package explore

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
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
		rf := map[string]int{}
		for _, part := range strings.Split(s.Replication, ",") {
			dc, n, _ := strings.Cut(part, "=")
			rf[dc], _ = strconv.Atoi(n)
		}
		m := replay(s)
		for _, st := range s.steps() {
			switch {
			case st.Do == "decommission" && st.Short:
				short++
				if n := m.started(st.Node, st.At); n >= rf[m.dcOf[st.Node]] {
					t.Errorf("seed %d: %s drawn short, but %d other nodes of %s have started by then (replication %s)\n%s", seed, st, n, m.dcOf[st.Node], s.Replication, s)
				}
			case st.Do == "decommission", st.Do == "kill" && m.removed[st.Node]:
				leaves++
				if n := m.sure(st.Node, st.At); n < rf[m.dcOf[st.Node]] {
					t.Errorf("seed %d: %s leaves %d other nodes sure to own ranges in %s (replication %s)\n%s", seed, st, n, m.dcOf[st.Node], s.Replication, s)
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
