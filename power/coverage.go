package power

import (
	"slices"
	"strings"

	"github.com/kuradb/kura/ring"
)

// Coverage checks the rule that lets a node sleep: every range keeps an awake replica,
// so every key stays readable and writable (reads go to an awake replica, writes for a
// sleeping one are offloaded). It holds the distinct replica sets of a placement, each
// with the number of ranges it serves. It is immutable and safe for concurrent use.
type Coverage struct {
	sets   []replicaSet
	byNode map[string][]int // a node id -> the indexes of the sets it is in
}

// replicaSet is one distinct replica set and how many ranges have it.
type replicaSet struct {
	members []string // sorted, distinct
	ranges  int
}

// NewCoverage returns the coverage of sets, one replica set (node ids) per range; sets
// repeated across ranges, and ids repeated within a set, are merged.
func NewCoverage(sets [][]string) *Coverage {
	c := &Coverage{byNode: map[string][]int{}}
	index := map[string]int{} // a set's members joined -> its index in c.sets
	for _, set := range sets {
		members := slices.Compact(slices.Sorted(slices.Values(set)))
		// Ids never hold NUL, so the join names one set.
		key := strings.Join(members, "\x00")
		if i, ok := index[key]; ok {
			c.sets[i].ranges++
			continue
		}
		index[key] = len(c.sets)
		for _, id := range members {
			c.byNode[id] = append(c.byNode[id], len(c.sets))
		}
		c.sets = append(c.sets, replicaSet{members: members, ranges: 1})
	}
	return c
}

// SetsOf returns the node ids of every range's replica set on p, in ring order, for
// NewCoverage.
func SetsOf(p *ring.Placement) [][]string {
	placed := p.Sets()
	sets := make([][]string, len(placed))
	for i, members := range placed {
		sets[i] = make([]string, len(members))
		for j, m := range members {
			sets[i][j] = m.ID
		}
	}
	return sets
}

// Uncovered returns how many ranges have no awake replica when the nodes asleep says
// are asleep. A range with no replicas at all counts.
func (c *Coverage) Uncovered(asleep func(id string) bool) int {
	uncovered := 0
	for _, s := range c.sets {
		if !slices.ContainsFunc(s.members, func(id string) bool { return !asleep(id) }) {
			uncovered += s.ranges
		}
	}
	return uncovered
}

// CanSleep reports whether candidate may fall asleep, with the nodes asleep says are
// asleep: whether every range it holds keeps another awake replica. A range that is
// uncovered already and that candidate does not hold does not forbid it: candidate's
// sleep does not make it worse.
func (c *Coverage) CanSleep(asleep func(id string) bool, candidate string) bool {
	for _, i := range c.byNode[candidate] {
		others := slices.ContainsFunc(c.sets[i].members, func(id string) bool { return id != candidate && !asleep(id) })
		if !others {
			return false
		}
	}
	return true
}

// SafeSleepers answers "how many of these nodes may sleep at once" for the nodes for
// which sleepable is true, all of them awake to begin with. A set member that is not in
// nodes counts as one that cannot sleep.
//
// guaranteed is the largest k such that ANY k sleepable nodes may sleep together with
// every range covered. A replica set is lost exactly when all its members sleep. If a
// set has only sleepable members and m of them, the k sleepable nodes that include
// those m (and any others, for k > m) lose it, so k < m. If a set has a member that
// cannot sleep, no choice loses it. So guaranteed = min(number of sleepable nodes,
// min over the sets made only of sleepable nodes of their size − 1), and 0 when a range
// has no replica. With plain consistent hashing and replication factor r (every node
// sleepable) that is r − 1; once every set keeps a tier-0 member, it is every
// sleepable node.
//
// chosen is one maximal group that may sleep at once, built greedily in id order: each
// sleepable node joins when CanSleep allows it with those chosen before. Maximal means
// no other sleepable node can join it; it is not necessarily the largest such group,
// which is a hitting-set problem.
func (c *Coverage) SafeSleepers(nodes []string, sleepable func(id string) bool) (guaranteed int, chosen []string) {
	isCandidate := map[string]bool{}
	for _, id := range nodes {
		isCandidate[id] = sleepable(id)
	}
	var candidates []string
	for id, ok := range isCandidate {
		if ok {
			candidates = append(candidates, id)
		}
	}
	slices.Sort(candidates)
	guaranteed = len(candidates)
	for _, s := range c.sets {
		if !slices.ContainsFunc(s.members, func(id string) bool { return !isCandidate[id] }) {
			guaranteed = min(guaranteed, max(len(s.members)-1, 0))
		}
	}
	asleep := map[string]bool{}
	isAsleep := func(id string) bool { return asleep[id] }
	for _, id := range candidates {
		if c.CanSleep(isAsleep, id) {
			asleep[id] = true
			chosen = append(chosen, id)
		}
	}
	return guaranteed, chosen
}
