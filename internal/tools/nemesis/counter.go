package nemesis

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/kuradb/kura/consistency"
)

// checkCounters: the increments of each counter key (lightweight transactions) and its
// serial reads are linearizable. No two acknowledged increments return the same value;
// an operation invoked after another was answered observes no smaller value (an
// increment a larger one), which orders each client's own observations too; and a read
// returns no more than the increments that may have happened (acknowledged or
// indeterminate, not failed) invoked before it answered. A value below an acknowledged
// one, or an increment's equal to it, is allowed, and counted apart, when the serial level
// acknowledged the increment on one copy and a disk was wiped (or a node lost for good)
// after: the copy may have gone with it.
func checkCounters(h *history, c *Counts) Verdict {
	keys := slices.Sorted(maps.Keys(h.counters))
	v := newVerdict("counter", len(keys) > 0)
	if !v.Checked {
		v.Summary = "not checked: the history has no increments"
		return *v
	}
	var acked, failed, unknown, reads, wiped int
	finals := make([]string, 0, len(keys))
	for _, key := range keys {
		var obs []observation
		var possible []*op // the increments that may have happened
		byValue := map[int]*op{}
		for _, o := range h.counters[key] {
			switch {
			case o.F == Incr && o.status == TypeFail:
				failed++
			case o.F == Incr && o.status == TypeInfo:
				unknown++
				possible = append(possible, o)
			case o.F == Incr:
				acked++
				possible = append(possible, o)
			case o.status == TypeOK:
				reads++
			}
			if o.status != TypeOK {
				continue
			}
			n, err := counterValue(o)
			if err != nil {
				v.violation("%s: %v", key, err)
				continue
			}
			obs = append(obs, observation{op: o, value: n})
			if o.F != Incr {
				continue
			}
			if other := byValue[n]; other != nil {
				// The increment answered first may rest on one copy that was wiped (or
				// lost with its node) after: the next one may then count from before it.
				first := other
				if o.complete.Before(other.complete) {
					first = o
				}
				if h.wipedAfter(first) && h.serialOneCopy(first) {
					wiped++
				} else {
					v.violation("%s: increments op %d (client %d) and op %d (client %d) both returned %d", key, other.Op, other.Client, o.Op, o.Client, n)
				}
			}
			byValue[n] = o
		}
		wiped += h.counterOrder(key, obs, v)
		for _, r := range obs {
			if r.op.F != Get {
				continue
			}
			if most := invokedBefore(possible, r.op); r.value > most {
				v.violation("%s: read %d (op %d), yet only %d increments that may have happened were invoked before it answered", key, r.value, r.op.Op, most)
			}
		}
		if last := lastRead(obs); last != nil {
			finals = append(finals, fmt.Sprintf("%s=%d", key, last.value))
		}
	}
	c.Counter = v.Violations
	v.Summary = fmt.Sprintf("%d counters (last read %v): %d increments acknowledged, %d failed, %d indeterminate, %d serial reads; %d violations",
		len(keys), finals, acked, failed, unknown, reads, v.Violations)
	if wiped > 0 {
		v.Summary += fmt.Sprintf(" (and %d values below or equal to an increment acknowledged on one copy and wiped after, allowed)", wiped)
	}
	return *v
}

// observation is an acknowledged increment's result or a read's value of one counter.
type observation struct {
	op    *op
	value int
}

// counterValue is what an acknowledged increment returned or a read found: absent reads
// as 0.
func counterValue(o *op) (int, error) {
	if o.F == Get && !o.Found {
		return 0, nil
	}
	n, err := strconv.Atoi(o.Value)
	if err != nil || (o.F == Incr && n < 1) {
		return 0, fmt.Errorf("%s (op %d) returned %q, no count", o.F, o.Op, o.Value)
	}
	return n, nil
}

// counterOrder checks that every observation of key invoked after another one was
// answered is no smaller (an increment's strictly larger), and returns how many were
// allowed smaller (an increment's equal) by a wipe. It sweeps the observations in order of their answers
// against each one's invoke, so that each is held to the largest answered before it.
func (h *history) counterOrder(key string, obs []observation, v *Verdict) (wiped int) {
	answered := slices.Clone(obs)
	slices.SortStableFunc(answered, func(a, b observation) int { return a.op.complete.Compare(b.op.complete) })
	invoked := slices.Clone(obs)
	slices.SortStableFunc(invoked, func(a, b observation) int { return a.op.invoke.Compare(b.op.invoke) })
	var largest *observation
	i := 0
	for _, o := range invoked {
		// In virtual time, operations of one instant are concurrent: only one answered
		// strictly before o was invoked binds it.
		for ; i < len(answered) && answered[i].op.complete.Before(o.op.invoke); i++ {
			if largest == nil || answered[i].value > largest.value {
				largest = &answered[i]
			}
		}
		if largest == nil {
			continue
		}
		switch {
		case o.value > largest.value, o.value == largest.value && o.op.F == Get:
			continue
		case (o.value < largest.value || o.value == largest.value && o.op.F == Incr) &&
			largest.op.F == Incr && h.wipedAfter(largest.op) && h.serialOneCopy(largest.op):
			wiped++
			continue
		}
		v.violation("%s: %s (op %d, client %d) returned %d, invoked after %s (op %d, client %d) returned %d",
			key, o.op.F, o.op.Op, o.op.Client, o.value, largest.op.F, largest.op.Op, largest.op.Client, largest.value)
	}
	return wiped
}

// invokedBefore counts the increments among possible invoked before o answered.
func invokedBefore(possible []*op, o *op) int {
	n := 0
	for _, inc := range possible {
		if inc.invoke.Before(o.complete) || inc.invoke.Equal(o.complete) {
			n++
		}
	}
	return n
}

// lastRead is the read of obs invoked last, nil when there is none.
func lastRead(obs []observation) *observation {
	var last *observation
	for i, o := range obs {
		if o.op.F == Get && (last == nil || !o.op.invoke.Before(last.op.invoke)) {
			last = &obs[i]
		}
	}
	return last
}

// serialOneCopy reports whether the run's serial level acknowledged o, coordinated by its
// node, once a single acceptor accepted it (LOCAL_SERIAL in a DC of one replica), under
// any of the run's replications.
func (h *history) serialOneCopy(o *op) bool {
	levels, err := h.levelsOn()
	if err != nil || h.meta.Serial == "" {
		return false
	}
	serial, err := consistency.Parse(h.meta.Serial)
	if err != nil {
		return false
	}
	dc := ""
	for i, node := range h.meta.Nodes {
		if node == o.Node && i < len(h.meta.DCs) {
			dc = h.meta.DCs[i]
		}
	}
	for _, on := range levels {
		if serial.Require(on.rf, dc).Total <= 1 {
			return true
		}
	}
	return false
}
