// Package zset is the merge logic of Redis sorted sets stored as element records
// (docs/redis-types.md): which records a command writes, and how a read folds a sorted
// set's element records into its members in order. It does no I/O: the Redis front end
// (resp) and the simulator's driver (internal/tools/sim/datapath) both call it, so the simulator runs
// the rule the server runs.
//
// A member is two records. Its member record (element.SortedMember, suffix the member)
// holds its score, 8 bytes, and is last-writer-wins: of two DCs that set one member's
// score at once, the later write's score wins on every replica, and the member is never
// lost. Its score entry (element.SortedScore, suffix the order-preserving score and the
// member, empty value) puts the member in score order among the keys, for a read of a
// score range. A member whose score changed leaves an entry for the old score, stale:
// the writer that knew the old score tombstones it, but a concurrent writer in another
// DC did not know it. A reader keeps an entry only when the member record holds that
// score.
package zset

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strconv"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
)

// scoreBytes is the size of a score in a member record's value and a score entry's key.
const scoreBytes = 8

// Member is one member of a sorted set with its score.
type Member struct {
	Name  []byte
	Score float64
}

// compare orders members as Redis does: by score, then by the member's bytes.
func compare(a, b Member) int {
	if a.Score != b.Score {
		if a.Score < b.Score {
			return -1
		}
		return 1
	}
	return bytes.Compare(a.Name, b.Name)
}

// MemberKey is the key of sorted set key's member record of member.
func MemberKey(key, member []byte) []byte {
	return element.Key(key, element.SortedMember, member)
}

// ScoreKey is the key of sorted set key's score entry of member at score.
func ScoreKey(key []byte, score float64, member []byte) []byte {
	suffix := binary.BigEndian.AppendUint64(make([]byte, 0, scoreBytes+len(member)), orderBits(score))
	return element.Key(key, element.SortedScore, append(suffix, member...))
}

// orderBits maps a score to 8 bytes whose big-endian order is the scores' order: the
// sign bit set for positive numbers, every bit flipped for negative ones. -0 takes 0's
// bits, since Redis orders the two as equal.
func orderBits(score float64) uint64 {
	if score == 0 {
		score = 0
	}
	bits := math.Float64bits(score)
	if bits&(1<<63) != 0 {
		return ^bits
	}
	return bits | 1<<63
}

// fromOrderBits is orderBits' inverse.
func fromOrderBits(bits uint64) float64 {
	if bits&(1<<63) != 0 {
		return math.Float64frombits(bits &^ (1 << 63))
	}
	return math.Float64frombits(^bits)
}

// ScoreValue is a member record's value holding score: its IEEE 754 bits, big-endian.
func ScoreValue(score float64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, scoreBytes), math.Float64bits(score))
}

// ParseScoreValue returns the score a member record's value holds; ok is false for a
// value ScoreValue cannot return.
func ParseScoreValue(value []byte) (score float64, ok bool) {
	if len(value) != scoreBytes {
		return 0, false
	}
	score = math.Float64frombits(binary.BigEndian.Uint64(value))
	return score, !math.IsNaN(score)
}

// Fold returns the members of a sorted set in Redis's order (score, then member bytes)
// from its live element records in key order (coord.Collection's Elements): a member is
// in the set when its member record is live, with the score that record holds. Score
// entries come in score order already, and one is kept only when its member record
// holds its score; a member whose entry is missing (its writer failed after writing the
// member record, or the entry has not reached the replicas read) is placed by its score
// all the same.
func Fold(recs []lww.Record) []Member {
	scores := map[string]float64{}
	var entries []Member
	for _, rec := range recs {
		_, kind, suffix, ok := element.Parse(rec.Key)
		switch {
		case !ok:
		case kind == element.SortedMember:
			if score, ok := ParseScoreValue(rec.Value); ok {
				scores[string(suffix)] = score
			}
		case kind == element.SortedScore && len(suffix) >= scoreBytes:
			entries = append(entries, Member{Name: suffix[scoreBytes:], Score: fromOrderBits(binary.BigEndian.Uint64(suffix))})
		}
	}
	members := make([]Member, 0, len(scores))
	placed := make(map[string]bool, len(scores))
	for _, e := range entries {
		if score, ok := scores[string(e.Name)]; ok && score == e.Score && !placed[string(e.Name)] {
			placed[string(e.Name)] = true
			members = append(members, Member{Name: e.Name, Score: score})
		}
	}
	if len(placed) == len(scores) {
		return members
	}
	for name, score := range scores {
		if !placed[name] {
			members = append(members, Member{Name: []byte(name), Score: score})
		}
	}
	slices.SortFunc(members, compare)
	return members
}

// Set returns the records that give member of sorted set key the score next: its member
// record and its score entry, and a tombstone of the entry of the score it had when the
// writer read it (had, when found), so that a writer leaves no stale entry of its own.
func Set(key, member []byte, next float64, had float64, found bool) []lww.Record {
	recs := []lww.Record{
		{Key: MemberKey(key, member), Value: ScoreValue(next)},
		{Key: ScoreKey(key, next, member)},
	}
	if found && orderBits(had) != orderBits(next) {
		recs = append(recs, lww.Record{Key: ScoreKey(key, had, member), Tombstone: true})
	}
	return recs
}

// Remove returns the tombstones that remove member, read with score, from sorted set
// key: its member record's and its score entry's.
func Remove(key []byte, m Member) []lww.Record {
	return []lww.Record{
		{Key: MemberKey(key, m.Name), Tombstone: true},
		{Key: ScoreKey(key, m.Score, m.Name), Tombstone: true},
	}
}

// Take is the pop rule (ZPOPMIN, ZMPOP, BZPOPMIN and the like), a lightweight
// transaction's function on the member record of a member read with score: delete it if
// it still holds that score in the sorted set's life after reset (its reset point), and
// leave it alone otherwise, when another pop took it first or a ZADD moved it (it may no
// longer be the lowest or highest). Of two pops of one member, through any nodes, the
// transaction lets one delete it; the other reads again.
func Take(reset hlc.Timestamp, score float64) func(cur lww.Record, found bool) (lww.Record, bool, error) {
	return func(cur lww.Record, found bool) (lww.Record, bool, error) {
		if !found || cur.Timestamp <= reset {
			return lww.Record{}, false, nil
		}
		if had, ok := ParseScoreValue(cur.Value); !ok || had != score {
			return lww.Record{}, false, nil
		}
		return lww.Record{Tombstone: true}, true, nil
	}
}

// AddFlags are ZADD's options.
type AddFlags struct {
	NX, XX, GT, LT, CH, Incr bool
}

// AddOutcome is what ZADD does to one member.
type AddOutcome int

const (
	// Skipped: a condition (NX, XX, GT, LT) left the member as it is; ZADD INCR then
	// answers null.
	Skipped AddOutcome = iota
	// Unchanged: the member keeps the score it has, which is the score asked for.
	Unchanged
	// Added: the member was absent and is added.
	Added
	// Updated: the member's score changes.
	Updated
)

// ErrNaN is Redis's answer when an increment makes a score NaN (inf plus -inf).
const ErrNaN = "ERR resulting score is not a number (NaN)"

// Add decides ZADD's (and ZINCRBY's) change of one member, whose score is cur when
// found, given score (an increment with Incr): the score next to write and what the
// change is. err is Redis's error when an increment makes the score NaN.
func Add(cur float64, found bool, score float64, f AddFlags) (next float64, out AddOutcome, err string) {
	if (found && f.NX) || (!found && f.XX) {
		return cur, Skipped, ""
	}
	next = score
	if f.Incr && found {
		if next = cur + score; math.IsNaN(next) {
			return cur, Skipped, ErrNaN
		}
	}
	switch {
	case !found:
		return next, Added, ""
	case (f.GT && next <= cur) || (f.LT && next >= cur):
		return cur, Skipped, ""
	case next == cur:
		return cur, Unchanged, ""
	}
	return next, Updated, ""
}

// ParseScore parses a score as Redis's getDoubleFromObject does: a float in C's strtod
// syntax (inf, -inf, infinity included), with no space, and neither NaN nor past the
// range of a double. Unlike strtod, a hexadecimal float needs its p exponent (Go's
// syntax).
func ParseScore(b []byte) (float64, bool) {
	if len(b) == 0 || bytes.IndexByte(b, '_') >= 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil && !math.IsNaN(f)
}

// FormatScore formats a score as Redis 7.0 replies it: %.17g, and inf, -inf.
func FormatScore(score float64) string {
	switch {
	case math.IsInf(score, 1):
		return "inf"
	case math.IsInf(score, -1):
		return "-inf"
	}
	return strconv.FormatFloat(score, 'g', 17, 64)
}
