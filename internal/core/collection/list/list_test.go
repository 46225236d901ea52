package list

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
)

func stamp(t, w uint64) Stamp { return Stamp{Time: hlc.Timestamp(t), Writer: w} }

func mustPush(t *testing.T, end End, edge []byte, n int, s Stamp) [][]byte {
	t.Helper()
	out, err := Push(end, edge, n, s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mustBetween(t *testing.T, lo, hi []byte, s Stamp) []byte {
	t.Helper()
	pos, err := Between(lo, hi, s)
	if err != nil {
		t.Fatalf("Between(%x, %x): %v", lo, hi, err)
	}
	if !Valid(pos) {
		t.Fatalf("Between(%x, %x) = %x, not a valid position", lo, hi, pos)
	}
	if (lo != nil && bytes.Compare(lo, pos) >= 0) || (hi != nil && bytes.Compare(pos, hi) >= 0) {
		t.Fatalf("Between(%x, %x) = %x, not strictly between", lo, hi, pos)
	}
	return pos
}

func TestFracBetween(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []byte
	}{
		{"zero and one", nil, nil},
		{"zero and a digit", nil, []byte{0x80}},
		{"zero and the least digit above zero", nil, []byte{0x02}},
		{"adjacent digits, b longer", []byte{0x10}, []byte{0x11, 0x05}},
		{"adjacent digits", []byte{0x10}, []byte{0x11}},
		{"a common prefix", []byte{0x40, 0x10}, []byte{0x40, 0x11}},
		{"a prefix of b", []byte{0x40}, []byte{0x40, 0x01, 0x02}},
		{"b below zero digits of a", nil, []byte{0x01, 0x01, 0x02}},
		{"top digit to one", []byte{0xff, 0xff}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fracBetween(tc.a, tc.b)
			if len(got) == 0 || got[len(got)-1] == digitZero || bytes.IndexByte(got, 0) >= 0 {
				t.Fatalf("fracBetween = %x, not a canonical fraction", got)
			}
			if bytes.Compare(got, tc.a) <= 0 || (tc.b != nil && bytes.Compare(got, tc.b) >= 0) {
				t.Fatalf("fracBetween(%x, %x) = %x, not strictly between", tc.a, tc.b, got)
			}
		})
	}
}

// TestPushOrder: LPUSH a b c leaves c first, RPUSH after the tail, each push beyond the
// edge it read.
func TestPushOrder(t *testing.T) {
	s := stamp(10, 1)
	first := mustPush(t, Tail, nil, 1, s)[0] // the list: x
	heads := mustPush(t, Head, first, 3, s)  // LPUSH a b c: c b a x
	tails := mustPush(t, Tail, first, 2, s)  // RPUSH d e: c b a x d e
	want := [][]byte{heads[2], heads[1], heads[0], first, tails[0], tails[1]}
	got := slices.Clone(want)
	slices.SortFunc(got, bytes.Compare)
	if !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatal("positions do not sort in push order")
	}
}

// TestConcurrentPushes: two writers that read the same edge and push at the same end
// make distinct positions beyond it, the later stamp nearer the end pushed to.
func TestConcurrentPushes(t *testing.T) {
	edge := mustPush(t, Tail, nil, 1, stamp(5, 9))[0]
	for _, tc := range []struct {
		name        string
		end         End
		early, late Stamp
		edge        []byte
	}{
		{"rpush, two writers", Tail, stamp(10, 1), stamp(11, 2), edge},
		{"lpush, two writers", Head, stamp(10, 1), stamp(11, 2), edge},
		{"rpush, one time, writers in order", Tail, stamp(10, 1), stamp(10, 2), edge},
		{"rpush on an empty list", Tail, stamp(10, 2), stamp(11, 1), nil},
		{"lpush on an empty list", Head, stamp(10, 2), stamp(11, 1), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := mustPush(t, tc.end, tc.edge, 1, tc.early)[0]
			b := mustPush(t, tc.end, tc.edge, 1, tc.late)[0]
			if bytes.Equal(a, b) {
				t.Fatal("two writers made one position")
			}
			if tc.edge != nil && ((tc.end == Tail && (bytes.Compare(a, tc.edge) <= 0 || bytes.Compare(b, tc.edge) <= 0)) ||
				(tc.end == Head && (bytes.Compare(a, tc.edge) >= 0 || bytes.Compare(b, tc.edge) >= 0))) {
				t.Fatal("a push is not beyond the edge it read")
			}
			lateFirst := bytes.Compare(b, a) < 0
			if nearer := (tc.end == Head) == lateFirst; !nearer {
				t.Fatal("the later push is not nearer the end it was pushed to")
			}
		})
	}
}

// TestBetween: LINSERT's position lies strictly between its neighbours, wherever they
// are: indexes apart, adjacent, one index with two fractions, two writers' positions
// that tie on index and fraction, and positions nested under such a tie.
func TestBetween(t *testing.T) {
	s := stamp(20, 3)
	zero := mustPush(t, Tail, nil, 1, stamp(1, 1))[0]
	far := mustPush(t, Tail, zero, 4, stamp(1, 1))[3]
	next := mustPush(t, Tail, zero, 1, stamp(1, 1))[0]
	tieA := mustPush(t, Tail, zero, 1, stamp(2, 1))[0] // two writers after zero at once
	tieB := mustPush(t, Tail, zero, 1, stamp(2, 2))[0]
	inTie := mustBetween(t, tieA, tieB, s)
	maxIndex := appendLevel(nil, math.MaxInt64, nil, dirTail, s)
	minIndex := appendLevel(nil, math.MinInt64, nil, dirHead, s)
	for _, tc := range []struct {
		name   string
		lo, hi []byte
	}{
		{"indexes apart", zero, far},
		{"adjacent indexes", zero, next},
		{"a tie between two writers", tieA, tieB},
		{"below a nested position", tieA, inTie},
		{"above a nested position", inTie, tieB},
		{"the head", nil, zero},
		{"the tail", far, nil},
		{"an empty list", nil, nil},
		{"the widest indexes", minIndex, maxIndex},
		{"after the last index", maxIndex, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustBetween(t, tc.lo, tc.hi, s)
		})
	}
	if _, err := Push(Head, minIndex, 1, s); err != ErrExhausted {
		t.Fatalf("push before the least index: %v, want ErrExhausted", err)
	}
	for _, bad := range [][2][]byte{{far, zero}, {zero, zero}, {[]byte("x"), nil}} {
		if _, err := Between(bad[0], bad[1], s); err == nil {
			t.Errorf("Between(%x, %x) accepted", bad[0], bad[1])
		}
	}
}

// TestWritersConverge: writers that push at both ends and insert between neighbours,
// each from the list as it read it, some reading states that miss the others' pushes,
// make positions that never collide; sorted, they give the list the writers meant, and
// so the same order on every replica, which sorts the same bytes.
func TestWritersConverge(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 46))
	var model [][]byte // the list in the order the writers meant
	seen := map[string]bool{}
	var lo, hi []byte // the neighbours the previous writer read
	prevAt := 0
	for op := range 3000 {
		// Three writers share each time; a writer never stamps two pushes alike.
		s := stamp(uint64(op/3), uint64(op%3))
		// A third of the writers read the list as the previous one did, missing its
		// item (a concurrent write), and place theirs between the same neighbours.
		concurrent := op > 0 && rng.IntN(3) == 0
		if !concurrent {
			at := rng.IntN(len(model) + 1)
			lo, hi = nil, nil
			if at > 0 {
				lo = model[at-1]
			}
			if at < len(model) {
				hi = model[at]
			}
			prevAt = at
		}
		pos := mustBetween(t, lo, hi, s)
		if seen[string(pos)] {
			t.Fatalf("op %d: position %x made twice", op, pos)
		}
		seen[string(pos)] = true
		at := prevAt
		if concurrent {
			// Among the items placed between the same neighbours, by position.
			for at < len(model) && (hi == nil || bytes.Compare(model[at], hi) < 0) && bytes.Compare(model[at], pos) < 0 {
				at++
			}
		}
		model = slices.Insert(model, at, pos)
	}
	sorted := slices.Clone(model)
	slices.SortFunc(sorted, bytes.Compare)
	if !slices.EqualFunc(sorted, model, bytes.Equal) {
		t.Fatal("sorted positions do not give the list the writers meant")
	}
	longest := 0
	for _, p := range model {
		longest = max(longest, len(p))
	}
	t.Logf("3000 items, longest position %d bytes", longest)
}

func TestItems(t *testing.T) {
	key := []byte("{q}:l")
	ps := mustPush(t, Tail, nil, 3, stamp(1, 1))
	rec := func(kind element.Kind, suffix []byte, v string) lww.Record {
		return lww.Record{Key: element.Key(key, kind, suffix), Value: []byte(v)}
	}
	items := Items([]lww.Record{
		rec(element.ListItem, ps[2], "c"),
		rec(element.HashField, []byte("f"), "field"),
		rec(element.ListItem, ps[0], "a"),
		rec(element.ListItem, []byte("not a position"), "x"),
		rec(element.ListItem, ps[1], "b"),
	})
	var values []string
	for _, it := range items {
		values = append(values, string(it.Value))
	}
	if !slices.Equal(values, []string{"a", "b", "c"}) {
		t.Fatalf("Items = %v, want [a b c]", values)
	}
}

func TestSpanAndIndex(t *testing.T) {
	for _, tc := range []struct {
		n           int
		start, stop int64
		from, to    int
	}{
		{5, 0, -1, 0, 5},
		{5, 1, 2, 1, 3},
		{5, -2, -1, 3, 5},
		{5, -100, 100, 0, 5},
		{5, 3, 1, 0, 0},
		{5, 5, 10, 0, 0},
		{0, 0, -1, 0, 0},
		{5, math.MinInt64, math.MaxInt64, 0, 5},
	} {
		if from, to := Span(tc.n, tc.start, tc.stop); from != tc.from || to != tc.to {
			t.Errorf("Span(%d, %d, %d) = [%d, %d), want [%d, %d)", tc.n, tc.start, tc.stop, from, to, tc.from, tc.to)
		}
	}
	for _, tc := range []struct {
		n  int
		i  int64
		at int
		ok bool
	}{
		{3, 0, 0, true}, {3, -1, 2, true}, {3, 3, 0, false}, {3, -4, 0, false}, {0, 0, 0, false},
		{3, math.MinInt64, 0, false},
	} {
		if at, ok := Index(tc.n, tc.i); at != tc.at || ok != tc.ok {
			t.Errorf("Index(%d, %d) = %d, %v; want %d, %v", tc.n, tc.i, at, ok, tc.at, tc.ok)
		}
	}
}
