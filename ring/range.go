package ring

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
