package zset

import (
	"math"
	"slices"
)

// Aggregate is how ZUNION and ZINTER combine one member's scores: SUM, MIN or MAX.
type Aggregate int

// The aggregates, Sum Redis's default.
const (
	Sum Aggregate = iota
	Min
	Max
)

// Op is a combination of sorted sets: union, intersection or difference.
type Op int

// The combinations of ZUNION, ZINTER and ZDIFF.
const (
	Union Op = iota
	Inter
	Diff
)

// Combine returns the members of op over sets (each in Redis's order), with each set's
// scores multiplied by its weight (nil: every weight 1; Diff takes the first set's
// scores as they are) and a member's scores combined by agg, in Redis's order. As in
// Redis, a product or a sum that is NaN (inf times 0, inf plus -inf) counts as 0.
func Combine(op Op, sets [][]Member, weights []float64, agg Aggregate) []Member {
	scores := map[string]float64{}
	counts := map[string]int{} // the sets a member was found in so far
	for i, set := range sets {
		for _, m := range set {
			name := string(m.Name)
			switch {
			case op == Diff && i > 0:
				delete(scores, name)
			case op == Inter && counts[name] != i:
				// Absent from an earlier set: never in the intersection.
			default:
				score := m.Score
				if weights != nil && op != Diff {
					if score *= weights[i]; math.IsNaN(score) {
						score = 0
					}
				}
				if cur, seen := scores[name]; seen {
					score = aggregate(agg, cur, score)
				}
				scores[name] = score
				counts[name]++
			}
		}
	}
	out := make([]Member, 0, len(scores))
	for name, score := range scores {
		if op != Inter || counts[name] == len(sets) {
			out = append(out, Member{Name: []byte(name), Score: score})
		}
	}
	slices.SortFunc(out, compare)
	return out
}

// aggregate combines two scores of one member.
func aggregate(agg Aggregate, a, b float64) float64 {
	switch agg {
	case Min:
		return min(a, b)
	case Max:
		return max(a, b)
	}
	if sum := a + b; !math.IsNaN(sum) {
		return sum
	}
	return 0
}
