package zset

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
)

func TestScoreKeysSortInScoreOrder(t *testing.T) {
	scores := []float64{math.Inf(-1), -math.MaxFloat64, -1e300, -2.5, -1, -math.SmallestNonzeroFloat64, 0, math.SmallestNonzeroFloat64, 0.1, 1, 1.5, 1e300, math.MaxFloat64, math.Inf(1)}
	for i := 1; i < len(scores); i++ {
		lo, hi := ScoreKey([]byte("z"), scores[i-1], []byte("m")), ScoreKey([]byte("z"), scores[i], []byte("m"))
		if bytes.Compare(lo, hi) >= 0 {
			t.Errorf("score entry of %g does not sort before %g's", scores[i-1], scores[i])
		}
		if got := fromOrderBits(orderBits(scores[i])); got != scores[i] {
			t.Errorf("fromOrderBits(orderBits(%g)) = %g", scores[i], got)
		}
	}
	if !bytes.Equal(ScoreKey([]byte("z"), math.Copysign(0, -1), []byte("m")), ScoreKey([]byte("z"), 0, []byte("m"))) {
		t.Error("-0 and 0 have different score entries; Redis orders them as equal")
	}
}

// records builds the live element records of sorted set "z": m=member:score for a member
// record, e=member:score for a score entry.
func records(specs ...string) []lww.Record {
	var recs []lww.Record
	for _, s := range specs {
		kind, rest, _ := strings.Cut(s, "=")
		name, score, _ := strings.Cut(rest, ":")
		f, _ := ParseScore([]byte(score))
		switch kind {
		case "m":
			recs = append(recs, lww.Record{Key: MemberKey([]byte("z"), []byte(name)), Value: ScoreValue(f)})
		case "e":
			recs = append(recs, lww.Record{Key: ScoreKey([]byte("z"), f, []byte(name))})
		}
	}
	// In key order, as a read returns them.
	slices.SortFunc(recs, func(a, b lww.Record) int { return bytes.Compare(a.Key, b.Key) })
	return recs
}

func names(members []Member) string {
	var parts []string
	for _, m := range members {
		parts = append(parts, string(m.Name)+":"+FormatScore(m.Score))
	}
	return strings.Join(parts, " ")
}

func TestFold(t *testing.T) {
	tests := []struct {
		name string
		recs []lww.Record
		want string
	}{
		{"empty", nil, ""},
		{"by score then member", records("m=b:1", "e=b:1", "m=a:1", "e=a:1", "m=c:-inf", "e=c:-inf", "m=d:0.5", "e=d:0.5"), "c:-inf d:0.5 a:1 b:1"},
		// Two DCs set b's score at once: the member record holds the winner, 3, and the
		// other DC's entry at 1 is stale.
		{"stale entry ignored", records("m=a:2", "e=a:2", "m=b:3", "e=b:1", "e=b:3"), "a:2 b:3"},
		// The member record is the truth: an entry not yet read, or never written after
		// ZINCRBY's transaction, leaves the member in the set at its score.
		{"entry missing", records("m=a:2", "e=a:2", "m=b:1"), "b:1 a:2"},
		// An entry whose member was removed (its record's tombstone read, the entry's
		// not) names no member.
		{"entry without member", records("e=gone:0", "m=a:2", "e=a:2"), "a:2"},
		{"malformed score value", []lww.Record{{Key: MemberKey([]byte("z"), []byte("x")), Value: []byte("abc")}}, ""},
	}
	for _, tt := range tests {
		if got := names(Fold(tt.recs)); got != tt.want {
			t.Errorf("%s: Fold = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestSetTombstonesTheOldEntry(t *testing.T) {
	key, m := []byte("z"), []byte("m")
	tests := []struct {
		name       string
		had        float64
		found      bool
		tombstoned bool
	}{
		{"new member", 0, false, false},
		{"same score", 2, true, false},
		{"new score", 1, true, true},
	}
	for _, tt := range tests {
		recs := Set(key, m, 2, tt.had, tt.found)
		if !bytes.Equal(recs[0].Key, MemberKey(key, m)) || !bytes.Equal(recs[0].Value, ScoreValue(2)) || !bytes.Equal(recs[1].Key, ScoreKey(key, 2, m)) {
			t.Errorf("%s: Set wrote %v, want the member record and the entry of score 2", tt.name, recs)
		}
		if got := len(recs) == 3 && recs[2].Tombstone && bytes.Equal(recs[2].Key, ScoreKey(key, tt.had, m)); got != tt.tombstoned {
			t.Errorf("%s: tombstone of the entry at %g: %v, want %v", tt.name, tt.had, got, tt.tombstoned)
		}
	}
}

// TestTake: a pop deletes a member record only while it holds the score the pop read, in
// the sorted set's current life.
func TestTake(t *testing.T) {
	const reset = hlc.Timestamp(10)
	tests := []struct {
		name  string
		cur   lww.Record
		found bool
		taken bool
	}{
		{"there with the score read", lww.Record{Value: ScoreValue(2), Timestamp: 11}, true, true},
		{"popped by another client", lww.Record{}, false, false},
		{"moved by a ZADD", lww.Record{Value: ScoreValue(3), Timestamp: 12}, true, false},
		{"of the life before the reset point", lww.Record{Value: ScoreValue(2), Timestamp: 10}, true, false},
		{"not a score", lww.Record{Value: []byte("x"), Timestamp: 11}, true, false},
	}
	for _, tt := range tests {
		next, write, err := Take(reset, 2)(tt.cur, tt.found)
		if err != nil || write != tt.taken || (write && !next.Tombstone) {
			t.Errorf("%s: Take = %v, %v, %v; want taken %v", tt.name, next, write, err, tt.taken)
		}
	}
	if _, write, _ := Take(reset, 0)(lww.Record{Value: ScoreValue(math.Copysign(0, -1)), Timestamp: 11}, true); !write {
		t.Error("a member read at 0 and holding -0 was not taken: Redis orders the two as one score")
	}
}

func TestAdd(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name     string
		cur      float64
		found    bool
		score    float64
		flags    AddFlags
		wantNext float64
		wantOut  AddOutcome
		wantErr  string
	}{
		{"add", 0, false, 5, AddFlags{}, 5, Added, ""},
		{"update", 1, true, 5, AddFlags{}, 5, Updated, ""},
		{"same score", 5, true, 5, AddFlags{}, 5, Unchanged, ""},
		{"nx existing", 1, true, 5, AddFlags{NX: true}, 1, Skipped, ""},
		{"nx new", 0, false, 5, AddFlags{NX: true}, 5, Added, ""},
		{"xx new", 0, false, 5, AddFlags{XX: true}, 0, Skipped, ""},
		{"xx existing", 1, true, 5, AddFlags{XX: true}, 5, Updated, ""},
		{"gt lower", 6, true, 5, AddFlags{GT: true}, 6, Skipped, ""},
		{"gt higher", 4, true, 5, AddFlags{GT: true}, 5, Updated, ""},
		{"gt adds new", 0, false, 5, AddFlags{GT: true}, 5, Added, ""},
		{"lt higher", 4, true, 5, AddFlags{LT: true}, 4, Skipped, ""},
		{"lt lower", 6, true, 5, AddFlags{LT: true}, 5, Updated, ""},
		{"incr", 1.5, true, 2, AddFlags{Incr: true}, 3.5, Updated, ""},
		{"incr new", 0, false, 2, AddFlags{Incr: true}, 2, Added, ""},
		{"incr gt refused", 1.5, true, -1, AddFlags{Incr: true, GT: true}, 1.5, Skipped, ""},
		{"incr to NaN", inf, true, -inf, AddFlags{Incr: true}, inf, Skipped, ErrNaN},
	}
	for _, tt := range tests {
		next, out, err := Add(tt.cur, tt.found, tt.score, tt.flags)
		if next != tt.wantNext || out != tt.wantOut || err != tt.wantErr {
			t.Errorf("%s: Add = %g, %v, %q; want %g, %v, %q", tt.name, next, out, err, tt.wantNext, tt.wantOut, tt.wantErr)
		}
	}
}

func TestParseAndFormatScore(t *testing.T) {
	tests := []struct {
		in     string
		ok     bool
		format string
	}{
		{"1", true, "1"},
		{"1.5", true, "1.5"},
		{"0.1", true, "0.10000000000000001"},
		{"-2.5e-7", true, "-2.4999999999999999e-07"},
		{"1e20", true, "1e+20"},
		{"123456789012345678", true, "1.2345678901234568e+17"},
		{"inf", true, "inf"},
		{"+inf", true, "inf"},
		{"-Infinity", true, "-inf"},
		{"nan", false, ""},
		{"1e400", false, ""},
		{"", false, ""},
		{" 1", false, ""},
		{"1x", false, ""},
		{"1_000", false, ""},
	}
	for _, tt := range tests {
		f, ok := ParseScore([]byte(tt.in))
		if ok != tt.ok {
			t.Errorf("ParseScore(%q) ok = %v, want %v", tt.in, ok, tt.ok)
			continue
		}
		if ok && FormatScore(f) != tt.format {
			t.Errorf("FormatScore(ParseScore(%q)) = %q, want %q", tt.in, FormatScore(f), tt.format)
		}
	}
}

func TestScoreRange(t *testing.T) {
	tests := []struct {
		min, max string
		ok       bool
		in, out  []float64
	}{
		{"1", "2", true, []float64{1, 1.5, 2}, []float64{0.9, 2.1}},
		{"(1", "(2", true, []float64{1.5}, []float64{1, 2}},
		{"-inf", "+inf", true, []float64{math.Inf(-1), 0, math.Inf(1)}, nil},
		{"(-inf", "(inf", true, []float64{0}, []float64{math.Inf(-1), math.Inf(1)}},
		{"1e400", "inf", true, []float64{math.Inf(1)}, []float64{1e300}},
		{"nan", "1", false, nil, nil},
		{"(", "1", false, nil, nil},
		{"[1", "2", false, nil, nil},
		{"1", "x", false, nil, nil},
	}
	for _, tt := range tests {
		r, ok := ParseScoreRange([]byte(tt.min), []byte(tt.max))
		if ok != tt.ok {
			t.Errorf("ParseScoreRange(%q, %q) ok = %v, want %v", tt.min, tt.max, ok, tt.ok)
			continue
		}
		for _, f := range tt.in {
			if !r.Contains(f) {
				t.Errorf("[%s, %s] does not contain %g", tt.min, tt.max, f)
			}
		}
		for _, f := range tt.out {
			if r.Contains(f) {
				t.Errorf("[%s, %s] contains %g", tt.min, tt.max, f)
			}
		}
	}
}

func TestLexRange(t *testing.T) {
	tests := []struct {
		min, max string
		ok       bool
		in, out  []string
	}{
		{"-", "+", true, []string{"", "a", "zzz"}, nil},
		{"[b", "[d", true, []string{"b", "c", "d"}, []string{"a", "da", "e"}},
		{"(b", "(d", true, []string{"ba", "c"}, []string{"b", "d"}},
		{"+", "-", true, nil, []string{"", "a"}},
		{"[", "(c", true, []string{"", "b"}, []string{"c"}},
		{"b", "[c", false, nil, nil},
		{"", "+", false, nil, nil},
	}
	for _, tt := range tests {
		r, ok := ParseLexRange([]byte(tt.min), []byte(tt.max))
		if ok != tt.ok {
			t.Errorf("ParseLexRange(%q, %q) ok = %v, want %v", tt.min, tt.max, ok, tt.ok)
			continue
		}
		for _, m := range tt.in {
			if !r.Contains([]byte(m)) {
				t.Errorf("%s..%s does not contain %q", tt.min, tt.max, m)
			}
		}
		for _, m := range tt.out {
			if r.Contains([]byte(m)) {
				t.Errorf("%s..%s contains %q", tt.min, tt.max, m)
			}
		}
	}
}

func TestRanksAndSelect(t *testing.T) {
	members := Fold(records("m=a:1", "e=a:1", "m=b:2", "e=b:2", "m=c:3", "e=c:3", "m=d:4", "e=d:4"))
	tests := []struct {
		name string
		got  []Member
		want string
	}{
		{"all", Ranks(members, 0, -1, false), "a:1 b:2 c:3 d:4"},
		{"middle", Ranks(members, 1, 2, false), "b:2 c:3"},
		{"rev", Ranks(members, 0, 1, true), "d:4 c:3"},
		{"clamped", Ranks(members, -100, 100, false), "a:1 b:2 c:3 d:4"},
		{"start past end", Ranks(members, 4, 10, false), ""},
		{"stop before start", Ranks(members, 2, 1, false), ""},
		{"score range", Select(members, func(m Member) bool { return m.Score >= 2 }, false, 0, -1), "b:2 c:3 d:4"},
		{"limit", Select(members, func(Member) bool { return true }, false, 1, 2), "b:2 c:3"},
		{"limit rev", Select(members, func(Member) bool { return true }, true, 1, 2), "c:3 b:2"},
		{"negative offset", Select(members, func(Member) bool { return true }, false, -1, 2), ""},
		{"zero count", Select(members, func(Member) bool { return true }, false, 0, 0), ""},
	}
	for _, tt := range tests {
		if got := names(tt.got); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	for _, tt := range []struct {
		member string
		rev    bool
		want   int
		found  bool
	}{{"a", false, 0, true}, {"a", true, 3, true}, {"c", false, 2, true}, {"x", false, 0, false}} {
		if got, found := Rank(members, []byte(tt.member), tt.rev); got != tt.want || found != tt.found {
			t.Errorf("Rank(%s, rev %v) = %d, %v; want %d, %v", tt.member, tt.rev, got, found, tt.want, tt.found)
		}
	}
}

func TestCombine(t *testing.T) {
	a := Fold(records("m=a:1", "m=b:2", "m=c:3"))
	b := Fold(records("m=b:10", "m=c:20", "m=d:inf"))
	c := Fold(records("m=d:-inf"))
	tests := []struct {
		name    string
		op      Op
		sets    [][]Member
		weights []float64
		agg     Aggregate
		want    string
	}{
		{"union sum", Union, [][]Member{a, b}, nil, Sum, "a:1 b:12 c:23 d:inf"},
		{"union weights max", Union, [][]Member{a, b}, []float64{10, 1}, Max, "a:10 b:20 c:30 d:inf"},
		{"union min", Union, [][]Member{a, b}, nil, Min, "a:1 b:2 c:3 d:inf"},
		{"inf plus -inf is 0", Union, [][]Member{b, c}, nil, Sum, "d:0 b:10 c:20"},
		{"inf times 0 is 0", Union, [][]Member{b}, []float64{0}, Sum, "b:0 c:0 d:0"},
		{"inter", Inter, [][]Member{a, b}, nil, Sum, "b:12 c:23"},
		{"inter with an empty set", Inter, [][]Member{a, nil}, nil, Sum, ""},
		{"diff", Diff, [][]Member{a, b}, nil, Sum, "a:1"},
		{"diff of one", Diff, [][]Member{b}, nil, Sum, "b:10 c:20 d:inf"},
	}
	for _, tt := range tests {
		if got := names(Combine(tt.op, tt.sets, tt.weights, tt.agg)); got != tt.want {
			t.Errorf("%s: Combine = %q, want %q", tt.name, got, tt.want)
		}
	}
}
