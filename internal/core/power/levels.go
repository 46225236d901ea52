package power

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/core/ring"
)

// AllKeyspaces is the key of Levels that stands for every keyspace not named.
const AllKeyspaces = "*"

// DefaultLevel is what a keyspace nobody declared is taken to be used at: EACH_QUORUM,
// which needs a quorum of a range's replicas awake in every DC. That covers every
// level but ALL (QUORUM, LOCAL_QUORUM from any DC, SERIAL, LOCAL_SERIAL, ONE, LOCAL_ONE
// and TWO on three replicas), so an application that never told the cluster its levels
// loses no request to a sleep unless it reads at ALL.
const DefaultLevel = consistency.EachQuorum

// ErrInvalidLevels marks a declaration ParseLevels rejects.
var ErrInvalidLevels = errors.New("power: invalid level declaration")

// Levels declares the consistency levels each keyspace is read and written at, the sleep
// rule's input (docs/power.md): keyspace name, or AllKeyspaces, to its levels. A node
// is not put to sleep when a range of a keyspace would then have too few awake replicas
// for one of its levels. The zero value declares nothing: every keyspace at
// DefaultLevel.
type Levels map[string][]consistency.Level

// ParseLevels reads a declaration as --power-levels writes it: comma-separated
// "keyspace=LEVEL" items, "*" for every keyspace not named, a keyspace named more than
// once used at each of its levels ("app=QUORUM,app=LOCAL_QUORUM,*=ONE"). Empty declares
// nothing.
func ParseLevels(s string) (Levels, error) {
	l := Levels{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		ks, name, ok := strings.Cut(item, "=")
		ks = strings.TrimSpace(ks)
		if !ok || ks == "" {
			return nil, fmt.Errorf("%w: %q is not keyspace=LEVEL (or *=LEVEL)", ErrInvalidLevels, item)
		}
		level, err := consistency.Parse(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalidLevels, ks, err)
		}
		if !slices.Contains(l[ks], level) {
			l[ks] = append(l[ks], level)
		}
	}
	return l, nil
}

// String writes l as ParseLevels reads it, keyspaces and levels sorted, so that equal
// declarations gossip equal text.
func (l Levels) String() string {
	var items []string
	for _, ks := range slices.Sorted(maps.Keys(l)) {
		levels := slices.Clone(l[ks])
		slices.Sort(levels)
		for _, level := range levels {
			items = append(items, ks+"="+level.String())
		}
	}
	return strings.Join(items, ",")
}

// For returns the levels keyspace is used at: its own, else AllKeyspaces', else
// DefaultLevel.
func (l Levels) For(keyspace string) []consistency.Level {
	if levels, ok := l[keyspace]; ok {
		return levels
	}
	if levels, ok := l[AllKeyspaces]; ok {
		return levels
	}
	return []consistency.Level{DefaultLevel}
}

// LevelsFor returns the levels keyspace is used at by every declaration of decls
// together (each node of the cluster declares its own): the union of what each says.
// A node whose declaration is weaker never lets a sleep cost what another's needs.
func LevelsFor(decls []Levels, keyspace string) []consistency.Level {
	var all []consistency.Level
	for _, d := range decls {
		for _, level := range d.For(keyspace) {
			if !slices.Contains(all, level) {
				all = append(all, level)
			}
		}
	}
	if len(decls) == 0 {
		all = Levels(nil).For(keyspace)
	}
	slices.Sort(all)
	return all
}

// Shortfall is a range that a node's sleep would leave with fewer awake replicas than a
// level of its keyspace needs: why the node may not sleep.
type Shortfall struct {
	// Keyspace and Range name the range; ShortOfAwake leaves them for its caller.
	Keyspace string
	Range    ring.Range
	// Index is the range's position in the sets ShortOfAwake was given.
	Index int
	Level consistency.Level
	// DC is the datacenter whose replicas were counted, for a level that counts per DC
	// (LOCAL_*, EACH_QUORUM, ALL); "" when the level counts the range's replicas in all.
	DC       string
	Awake    int // the range's replicas (in DC, if named) awake once the node sleeps
	Needed   int // what Level needs of them
	Replicas int // the range's replicas (in DC, if named)
}

// String says which range falls short, of what, for an operator.
func (s Shortfall) String() string {
	return "keyspace " + s.Keyspace + ", " + s.rangeString()
}

// rangeString is String without the keyspace.
func (s Shortfall) rangeString() string {
	where := ""
	if s.DC != "" {
		where = " in " + s.DC
	}
	return fmt.Sprintf("range (%d, %d]: %d of its %d replicas%s would be awake, %v needs %d",
		s.Range.Start, s.Range.End, s.Awake, s.Replicas, where, s.Level, s.Needed)
}

// ShortOfAwake is the sleep rule: it returns every range among sets (every range's
// replica set, as ring.Placement.Sets gives them) that candidate's sleep would leave
// with fewer awake replicas than one of levels needs, one Shortfall per range (its first
// level short), in ring order; none when candidate may sleep. awake says which other
// nodes serve reads (the candidate counts as asleep, whatever awake says of it).
//
// Only ranges candidate holds are checked: its sleep changes no other. A level counts
// as a read at that level would: LOCAL_ONE, LOCAL_QUORUM and LOCAL_SERIAL from a
// coordinator in each DC that holds replicas of the range, the others as
// consistency.Level.Require says. Writes need nothing more: a sleeping replica's writes
// go to its holder, whose acknowledgement counts for it. A level that the range could
// not serve with every replica awake (TWO on one replica) is not the sleep's doing, and
// forbids nothing.
func ShortOfAwake(sets [][]ring.Member, levels []consistency.Level, candidate string, awake func(id string) bool) []Shortfall {
	without := func(id string) bool { return id != candidate && awake(id) }
	holds := func(set []ring.Member) bool {
		return slices.ContainsFunc(set, func(m ring.Member) bool { return m.ID == candidate })
	}
	return shortRanges(sets, levels, holds, without)
}

// Short returns every range among sets that has fewer awake replicas than one of levels
// needs with the nodes awake now, one Shortfall per range (its first level short), in
// ring order: what a stricter declaration, or a replica failed beside a sleeper, leaves.
// It counts as ShortOfAwake does, with no candidate.
func Short(sets [][]ring.Member, levels []consistency.Level, awake func(id string) bool) []Shortfall {
	return shortRanges(sets, levels, func([]ring.Member) bool { return true }, awake)
}

// shortRanges returns the ranges among sets that check selects and that fall short of
// levels with the replicas awake says.
func shortRanges(sets [][]ring.Member, levels []consistency.Level, check func([]ring.Member) bool, awake func(id string) bool) []Shortfall {
	var out []Shortfall
	for i, set := range sets {
		if !check(set) {
			continue
		}
		if s, short := rangeShort(set, levels, awake); short {
			s.Index = i
			out = append(out, s)
		}
	}
	return out
}

// rangeShort returns the first of levels that the replica set falls short of with the
// replicas awake says, as ShortOfAwake counts it.
func rangeShort(set []ring.Member, levels []consistency.Level, awake func(id string) bool) (Shortfall, bool) {
	replicas, up := count(set, awake)
	for _, level := range levels {
		for _, dc := range coordinatorDCs(level, replicas) {
			need := level.Require(replicas, dc)
			if !need.Satisfied(replicas) || need.Satisfied(up) {
				continue
			}
			s := Shortfall{Level: level, Needed: need.Total, Awake: total(up), Replicas: total(replicas)}
			for _, d := range slices.Sorted(maps.Keys(need.PerDC)) {
				if up[d] < need.PerDC[d] {
					s.DC, s.Awake, s.Needed, s.Replicas = d, up[d], need.PerDC[d], replicas[d]
					break
				}
			}
			return s, true
		}
	}
	return Shortfall{}, false
}

// count returns a replica set's replicas per DC, and those of them awake.
func count(set []ring.Member, awake func(id string) bool) (replicas, up map[string]int) {
	replicas, up = map[string]int{}, map[string]int{}
	for _, m := range set {
		replicas[m.DC]++
		if awake(m.ID) {
			up[m.DC]++
		}
	}
	return replicas, up
}

// Demand is one keyspace's ranges and the levels it is used at, for ToWake.
type Demand struct {
	Sets   [][]ring.Member // every range's replica set, as ring.Placement.Sets gives them
	Levels []consistency.Level
}

// ToWake returns the sleepers to wake, in the order chosen, so that no range of demands
// is short of its levels (Short) with the nodes awake now: what heals a cluster left
// short by a stricter declaration or a failed replica. The choice is greedy and
// deterministic: each step wakes the sleeper that closes the most of what is missing
// (the replicas short, summed over every range, level and coordinator DC), the lowest
// id among equals, until nothing is missing or no sleeper closes any more of it (the
// rest is down, not asleep). Greedy may wake one more than the fewest in contrived
// cases; exact set cover is exponential in the sleepers.
func ToWake(demands []Demand, awake func(id string) bool, sleepers []string) []string {
	candidates := slices.Sorted(slices.Values(sleepers))
	woken := map[string]bool{}
	now := func(id string) bool { return woken[id] || awake(id) }
	var out []string
	for missing := missingOf(demands, now); missing > 0; {
		best, bestMissing := "", missing
		for _, id := range candidates {
			if woken[id] {
				continue
			}
			woken[id] = true
			if m := missingOf(demands, now); m < bestMissing {
				best, bestMissing = id, m
			}
			delete(woken, id)
		}
		if best == "" {
			break
		}
		woken[best], missing = true, bestMissing
		out = append(out, best)
	}
	return out
}

// missingOf sums, over every range, level and coordinator DC of demands that the
// range's replicas could serve, the replicas short of the need with the nodes awake
// says: at least how many more would have to wake.
func missingOf(demands []Demand, awake func(id string) bool) int {
	missing := 0
	for _, d := range demands {
		for _, set := range d.Sets {
			replicas, up := count(set, awake)
			for _, level := range d.Levels {
				for _, dc := range coordinatorDCs(level, replicas) {
					need := level.Require(replicas, dc)
					if !need.Satisfied(replicas) {
						continue
					}
					perDC := 0
					for dc, n := range need.PerDC {
						perDC += max(0, n-up[dc])
					}
					missing += max(need.Total-total(up), perDC)
				}
			}
		}
	}
	return missing
}

// coordinatorDCs returns the DCs whose coordinators a level is counted for: each DC
// holding replicas for the local levels, whose needs depend on the coordinator's DC;
// one, unnamed, for the others.
func coordinatorDCs(level consistency.Level, replicas map[string]int) []string {
	switch level {
	case consistency.LocalOne, consistency.LocalQuorum, consistency.LocalSerial:
		return slices.Sorted(maps.Keys(replicas))
	}
	return []string{""}
}

func total(perDC map[string]int) int {
	n := 0
	for _, k := range perDC {
		n += k
	}
	return n
}

// SleepRefused is the sleep rule's refusal: Node may not sleep, since ShortRanges of
// the Ranges ranges of Shortfall's keyspace, Shortfall's the first of them, would then
// have too few awake replicas.
type SleepRefused struct {
	Node        string
	Shortfall   Shortfall
	ShortRanges int
	Ranges      int
}

func (e *SleepRefused) Error() string {
	return fmt.Sprintf("node %s may not sleep: keyspace %s, %d of its %d ranges would be short of awake replicas, the first %s",
		e.Node, e.Shortfall.Keyspace, e.ShortRanges, e.Ranges, e.Shortfall.rangeString())
}
