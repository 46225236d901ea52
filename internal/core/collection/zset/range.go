package zset

import (
	"bytes"
	"errors"
	"math"
	"strconv"
)

// Redis's answers to a malformed range.
const (
	ErrScoreRange = "ERR min or max is not a float"
	ErrLexRange   = "ERR min or max not valid string range item"
)

// ScoreRange is a range of scores, as ZRANGEBYSCORE's min and max give it.
type ScoreRange struct {
	Min, Max                   float64
	MinExclusive, MaxExclusive bool
}

// ParseScoreRange parses min and max as Redis's zslParseRange does: a float, or "(" and a
// float for an exclusive bound; inf and -inf included, NaN refused. Like strtod there, a
// bound past a double's range is taken as infinite.
func ParseScoreRange(min, max []byte) (ScoreRange, bool) {
	var r ScoreRange
	var okMin, okMax bool
	r.Min, r.MinExclusive, okMin = parseScoreBound(min)
	r.Max, r.MaxExclusive, okMax = parseScoreBound(max)
	return r, okMin && okMax
}

func parseScoreBound(b []byte) (score float64, exclusive, ok bool) {
	if exclusive = len(b) > 0 && b[0] == '('; exclusive {
		b = b[1:]
	}
	if len(b) == 0 || bytes.IndexByte(b, '_') >= 0 {
		return 0, false, false
	}
	score, err := strconv.ParseFloat(string(b), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false, false
	}
	return score, exclusive, !math.IsNaN(score)
}

// Contains reports whether score is in the range.
func (r ScoreRange) Contains(score float64) bool {
	return r.aboveMin(score) && r.belowMax(score)
}

func (r ScoreRange) aboveMin(score float64) bool {
	if r.MinExclusive {
		return score > r.Min
	}
	return score >= r.Min
}

func (r ScoreRange) belowMax(score float64) bool {
	if r.MaxExclusive {
		return score < r.Max
	}
	return score <= r.Max
}

// LexRange is a range of members, as ZRANGEBYLEX's min and max give it.
type LexRange struct {
	min, max lexBound
}

// lexBound is one end of a LexRange: "-" (below every member), "+" (above every one), or
// a member, inclusive ("[") or exclusive ("(").
type lexBound struct {
	member         []byte
	negInf, posInf bool
	exclusive      bool
}

// ParseLexRange parses min and max as Redis's zslParseLexRange does.
func ParseLexRange(min, max []byte) (LexRange, bool) {
	lo, okMin := parseLexBound(min)
	hi, okMax := parseLexBound(max)
	return LexRange{min: lo, max: hi}, okMin && okMax
}

func parseLexBound(b []byte) (lexBound, bool) {
	switch {
	case len(b) == 0:
		return lexBound{}, false
	case string(b) == "-":
		return lexBound{negInf: true}, true
	case string(b) == "+":
		return lexBound{posInf: true}, true
	case b[0] == '(':
		return lexBound{member: b[1:], exclusive: true}, true
	case b[0] == '[':
		return lexBound{member: b[1:]}, true
	}
	return lexBound{}, false
}

// Contains reports whether member is in the range.
func (r LexRange) Contains(member []byte) bool {
	return r.aboveMin(member) && r.belowMax(member)
}

func (r LexRange) aboveMin(member []byte) bool {
	switch b := r.min; {
	case b.negInf:
		return true
	case b.posInf:
		return false
	case b.exclusive:
		return bytes.Compare(member, b.member) > 0
	default:
		return bytes.Compare(member, b.member) >= 0
	}
}

func (r LexRange) belowMax(member []byte) bool {
	switch b := r.max; {
	case b.posInf:
		return true
	case b.negInf:
		return false
	case b.exclusive:
		return bytes.Compare(member, b.member) < 0
	default:
		return bytes.Compare(member, b.member) <= 0
	}
}

// Ranks returns the members of ZRANGE's start and stop ranks (0 the first, -1 the last;
// from the end with rev), in the order answered, as Redis normalizes them: an index
// below the first is the first, past the last the last, and a range that ends before it
// starts is empty.
func Ranks(members []Member, start, stop int64, rev bool) []Member {
	n := int64(len(members))
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	start = max(start, 0)
	if start > stop || start >= n {
		return nil
	}
	stop = min(stop, n-1)
	if !rev {
		return members[start : stop+1]
	}
	out := make([]Member, 0, stop-start+1)
	for i := n - 1 - start; i >= n-1-stop; i-- {
		out = append(out, members[i])
	}
	return out
}

// Select returns the members keep accepts, in order (reversed with rev), after skipping
// offset of them and at most count (every one for a negative count); a negative offset
// selects none, as in Redis's LIMIT.
func Select(members []Member, keep func(Member) bool, rev bool, offset, count int64) []Member {
	var out []Member
	if offset < 0 {
		return nil
	}
	for i := range members {
		if count >= 0 && int64(len(out)) >= count {
			break
		}
		m := members[i]
		if rev {
			m = members[len(members)-1-i]
		}
		if !keep(m) {
			continue
		}
		if offset > 0 {
			offset--
			continue
		}
		out = append(out, m)
	}
	return out
}

// Rank returns member's rank (0 the lowest score; the highest with rev).
func Rank(members []Member, member []byte, rev bool) (int, bool) {
	for i, m := range members {
		if bytes.Equal(m.Name, member) {
			if rev {
				return len(members) - 1 - i, true
			}
			return i, true
		}
	}
	return 0, false
}
