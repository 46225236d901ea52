package ring

import (
	"cmp"
	"slices"
)

// Range is a half-open token range (Start, End], owned by the vnode at End (Cassandra's
// convention). Start == End denotes the whole ring: the one range of a single-vnode ring.
type Range struct {
	Start, End Token
}

// Contains reports whether t lies in the range, including ranges that wrap past the top
// of the ring back to zero.
func (rg Range) Contains(t Token) bool {
	switch {
	case rg.Start == rg.End:
		return true
	case rg.Start < rg.End:
		return rg.Start < t && t <= rg.End
	default:
		return t > rg.Start || t <= rg.End
	}
}

// Fraction returns the share of the key space the range covers, in (0, 1]. It is a float
// because the whole ring's width, 2^64, does not fit in a uint64.
func (rg Range) Fraction() float64 {
	if rg.Start == rg.End {
		return 1
	}
	// Unsigned subtraction wraps, which gives the right width for wrapping ranges too.
	return float64(rg.End-rg.Start) / 0x1p64
}

// Covers reports whether ranges, together, hold every token of the ring. Overlapping or
// repeated ranges are allowed: the tokens are what counts, not the ranges' widths.
func Covers(ranges []Range) bool {
	// Each range as one or two intervals of tokens [from, to], both included.
	type interval struct{ from, to Token }
	const top = ^Token(0)
	intervals := make([]interval, 0, len(ranges)+1)
	for _, rg := range ranges {
		switch {
		case rg.Start == rg.End:
			return true
		case rg.Start < rg.End:
			intervals = append(intervals, interval{rg.Start + 1, rg.End})
		default: // wraps past the top: (Start, top] and [0, End]
			if rg.Start != top {
				intervals = append(intervals, interval{rg.Start + 1, top})
			}
			intervals = append(intervals, interval{0, rg.End})
		}
	}
	slices.SortFunc(intervals, func(a, b interval) int { return cmp.Compare(a.from, b.from) })
	next := Token(0) // the first token not yet known to be covered
	for _, iv := range intervals {
		if iv.from > next {
			return false
		}
		if iv.to >= next {
			if iv.to == top {
				return true
			}
			next = iv.to + 1
		}
	}
	return false
}
