package coord

import (
	"math"
	"testing"

	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/sched"
)

// A piece's share from a token: all of it from its first token, the last token alone
// at its end, none when it does not hold the token; a wrapping piece measures across
// the ring's end.
func TestFromToken(t *testing.T) {
	const top = ^ring.Token(0)
	for _, tc := range []struct {
		name string
		rg   ring.Range
		t    ring.Token
		want float64
	}{
		{"first token", ring.Range{Start: 99, End: 199}, 100, 1},
		{"middle", ring.Range{Start: 99, End: 199}, 150, 0.5},
		{"last token", ring.Range{Start: 99, End: 199}, 199, 0.01},
		{"before the piece", ring.Range{Start: 99, End: 199}, 50, 0},
		{"after the piece", ring.Range{Start: 99, End: 199}, 200, 0},
		{"wrapping, from its first token", ring.Range{Start: top - 50, End: 49}, top - 49, 1},
		{"wrapping, from zero", ring.Range{Start: top - 50, End: 49}, 0, 0.5},
		{"whole ring", ring.Range{Start: 7, End: 7}, 3, 0},
	} {
		if got := fromToken(tc.rg, tc.t); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: fromToken(%v, %d) = %v, want %v", tc.name, tc.rg, tc.t, got, tc.want)
		}
	}
}

// P asks the pieces the estimates say the limit needs, the first's share counted at
// the policy's discount (7/8 for P and A, whole for kura); a piece of unknown rows
// counts as enough.
func TestPiecesNeeded(t *testing.T) {
	for _, tc := range []struct {
		name      string
		est       []float64
		remaining int
		discount  float64
		want      int
	}{
		{"the first piece is enough", []float64{40, 50, 50}, 30, estimateDiscount, 1},
		{"the first piece counted at 7/8", []float64{40, 50, 50}, 36, estimateDiscount, 2},
		{"the first piece counted whole", []float64{40, 50, 50}, 36, 1, 1},
		{"the first piece empty", []float64{0, 50, 50}, 30, estimateDiscount, 2},
		{"three pieces", []float64{20, 50, 50, 50}, 117, estimateDiscount, 3},
		{"the others counted whole", []float64{20, 50, 50, 50}, 118, estimateDiscount, 4},
		{"every piece counted whole", []float64{20, 50, 50, 50}, 120, 1, 3},
		{"more than they all hold", []float64{20, 50, 50}, 1000, estimateDiscount, 3},
		{"unknown rows are enough", []float64{20, math.Inf(1), 50}, 1000, estimateDiscount, 2},
	} {
		if got := piecesNeeded(tc.est, tc.remaining, tc.discount); got != tc.want {
			t.Errorf("%s: piecesNeeded(%v, %d, %v) = %d, want %d", tc.name, tc.est, tc.remaining, tc.discount, got, tc.want)
		}
	}
}

// kura's policy counts on whole estimates; every other policy on estimateDiscount.
func TestDiscountFor(t *testing.T) {
	for _, v := range sched.Variants() {
		want := estimateDiscount
		if v.Name == "kura" {
			want = 1
		}
		if got := discountFor(v.Policy); got != want {
			t.Errorf("%s: discount %v, want %v", v.Name, got, want)
		}
	}
}

// Each piece of a parallel round is asked for the rows remaining less what the pieces
// before it are counted on for; a request for several pieces takes its first one's.
func TestPieceLimits(t *testing.T) {
	batch := []placement.RangeReplicas{
		{Range: ring.Range{Start: 0, End: 10}}, {Range: ring.Range{Start: 10, End: 20}}, {Range: ring.Range{Start: 20, End: 30}},
	}
	for _, tc := range []struct {
		name     string
		discount float64
		asked    []ring.Range
		want     int
	}{
		{"first", estimateDiscount, []ring.Range{batch[0].Range}, 100},
		{"second: 16 counted at 14", estimateDiscount, []ring.Range{batch[1].Range}, 86},
		{"third: 16 and 48 counted at 56", estimateDiscount, []ring.Range{batch[2].Range}, 44},
		{"second and third at once", estimateDiscount, []ring.Range{batch[2].Range, batch[1].Range}, 86},
		{"a range of no limit", estimateDiscount, []ring.Range{batch[2].Range, {Start: 30, End: 40}}, 100},
		{"third, estimates counted whole", 1, []ring.Range{batch[2].Range}, 36},
	} {
		limits := pieceLimits(batch, []float64{16, 48, 48}, 100, tc.discount)
		if got := limits.of(tc.asked, 100); got != tc.want {
			t.Errorf("%s: limit %d, want %d", tc.name, got, tc.want)
		}
	}
	if pieceLimits(batch[:1], []float64{16}, 100, estimateDiscount) != nil {
		t.Error("a round of one piece has per-range limits; want the round's limit")
	}
	if got := rangeLimits(nil).of([]ring.Range{batch[1].Range}, 100); got != 100 {
		t.Errorf("no limits: %d, want the round's 100", got)
	}
}
