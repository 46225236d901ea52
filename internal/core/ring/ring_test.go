package ring

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"testing"
)

// mustRing builds a ring or fails the test.
func mustRing(t testing.TB, members ...Member) *Ring {
	t.Helper()
	r, err := New(members)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

// evenRing builds the papers' layout: member i is "n<i+1>" in dcs[i], owning the i-th of
// len(dcs) evenly spaced tokens.
func evenRing(t testing.TB, dcs ...string) *Ring {
	t.Helper()
	tokens := EvenTokens(len(dcs))
	members := make([]Member, len(dcs))
	for i, dc := range dcs {
		members[i] = Member{ID: fmt.Sprintf("n%d", i+1), DC: dc, Tokens: []Token{tokens[i]}}
	}
	return mustRing(t, members...)
}

// vnodeMembers returns n members "m00".. spread round-robin over dcs, each with vnodes
// tokens from TokensFor.
func vnodeMembers(n, vnodes int, dcs ...string) []Member {
	members := make([]Member, n)
	for i := range members {
		id := fmt.Sprintf("m%02d", i)
		members[i] = Member{ID: id, DC: dcs[i%len(dcs)], Tokens: TokensFor(id, vnodes)}
	}
	return members
}

// ids returns the ids of members, in order.
func ids(members []Member) []string {
	out := make([]string, len(members))
	for i, m := range members {
		out[i] = m.ID
	}
	return out
}

// smallRing has tokens n1:{100}, n2:{200, 400}, n3:{300}, so walks and ranges can be
// checked by hand.
func smallRing(t testing.TB) *Ring {
	return mustRing(t,
		Member{ID: "n3", DC: "b", Tokens: []Token{300}},
		Member{ID: "n1", DC: "a", Tokens: []Token{100}},
		Member{ID: "n2", DC: "a", Tokens: []Token{400, 200}},
	)
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name    string
		members []Member
		want    error
	}{
		{"no members", nil, ErrNoTokens},
		{"member without tokens", []Member{{ID: "a", Tokens: []Token{1}}, {ID: "b"}}, ErrNoTokens},
		{"empty id", []Member{{ID: "", Tokens: []Token{1}}}, ErrEmptyMemberID},
		{"duplicate id", []Member{{ID: "a", Tokens: []Token{1}}, {ID: "a", Tokens: []Token{2}}}, ErrDuplicateMember},
		{"token shared by two members", []Member{{ID: "a", Tokens: []Token{1, 5}}, {ID: "b", Tokens: []Token{5}}}, ErrDuplicateToken},
		{"token repeated by one member", []Member{{ID: "a", Tokens: []Token{7, 7}}}, ErrDuplicateToken},
		{"negative tier", []Member{{ID: "a", Tier: -1, Tokens: []Token{1}}}, ErrNegativeTier},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(tt.members)
			if !errors.Is(err, tt.want) {
				t.Fatalf("New error = %v, want %v", err, tt.want)
			}
			if r != nil {
				t.Fatalf("New returned a ring alongside error %v", err)
			}
		})
	}
}

func TestNewAccessors(t *testing.T) {
	input := []Member{
		{ID: "c", DC: "west", Tokens: []Token{30}},
		{ID: "a", DC: "east", Tokens: []Token{10}},
		{ID: "b", DC: "west", Tokens: []Token{20}},
	}
	r := mustRing(t, input...)
	input[1].Tokens[0] = 99 // must not reach the ring

	if got, want := ids(r.Members()), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("Members ids = %v, want %v", got, want)
	}
	if got, want := r.DCs(), []string{"east", "west"}; !slices.Equal(got, want) {
		t.Errorf("DCs = %v, want %v", got, want)
	}
	if r.Len() != 3 {
		t.Errorf("Len = %d, want 3", r.Len())
	}
	a, ok := r.Member("a")
	if !ok || a.DC != "east" || !slices.Equal(a.Tokens, []Token{10}) {
		t.Errorf("Member(a) = %+v, %v; want DC east, tokens [10]", a, ok)
	}
	if _, ok := r.Member("zzz"); ok {
		t.Error("Member(zzz) found a member that does not exist")
	}

	// Results are copies: changing them leaves the ring as it was.
	a.Tokens[0] = 77
	r.Members()[0].Tokens[0] = 77
	r.DCs()[0] = "changed"
	if again, _ := r.Member("a"); again.Tokens[0] != 10 || r.DCs()[0] != "east" {
		t.Errorf("ring changed through a returned value: %+v, %v", again, r.DCs())
	}
}

func TestWalk(t *testing.T) {
	r := smallRing(t)
	tests := []struct {
		name  string
		start Token
		want  []string
	}{
		{"zero", 0, []string{"n1", "n2", "n3"}},
		{"exactly on a token", 100, []string{"n1", "n2", "n3"}},
		{"just past a token", 101, []string{"n2", "n3", "n1"}},
		{"skips a member already seen", 250, []string{"n3", "n2", "n1"}},
		{"wraps past the last token", 350, []string{"n2", "n1", "n3"}},
		{"past every token", 401, []string{"n1", "n2", "n3"}},
		{"top of the ring", math.MaxUint64, []string{"n1", "n2", "n3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			r.Walk(tt.start, func(m Member) bool {
				got = append(got, m.ID)
				return true
			})
			if !slices.Equal(got, tt.want) {
				t.Errorf("Walk(%d) = %v, want %v", tt.start, got, tt.want)
			}
		})
	}
}

func TestWalkStopsWhenFnReturnsFalse(t *testing.T) {
	var got []string
	smallRing(t).Walk(150, func(m Member) bool {
		got = append(got, m.ID)
		return len(got) < 2
	})
	if want := []string{"n2", "n3"}; !slices.Equal(got, want) {
		t.Errorf("Walk visited %v, want %v", got, want)
	}
}

func TestRanges(t *testing.T) {
	tests := []struct {
		name string
		ring *Ring
		want []Range
	}{
		{"vnodes", smallRing(t), []Range{{400, 100}, {100, 200}, {200, 300}, {300, 400}}},
		{"single vnode covers the whole ring", mustRing(t, Member{ID: "solo", Tokens: []Token{42}}), []Range{{42, 42}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.ring.Ranges(); !slices.Equal(got, tt.want) {
				t.Errorf("Ranges = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRangesCoverRingOnce(t *testing.T) {
	tests := []struct {
		name string
		ring *Ring
	}{
		{"hand-made", smallRing(t)},
		{"even", evenRing(t, "a", "a", "a")},
		{"single vnode", mustRing(t, Member{ID: "solo", Tokens: []Token{0}})},
		{"vnodes", mustRing(t, vnodeMembers(10, 16, "a")...)},
		{"tokens at both ends", mustRing(t, Member{ID: "lo", Tokens: []Token{0}}, Member{ID: "hi", Tokens: []Token{math.MaxUint64}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkRangesCoverRingOnce(t, tt.ring)
		})
	}
}

// checkRangesCoverRingOnce asserts that the ring's ranges sum to exactly 2^64 and that
// every interesting token (range bounds and their neighbours) lies in exactly one range.
func checkRangesCoverRingOnce(t *testing.T, r *Ring) {
	t.Helper()
	ranges := r.Ranges()
	var sum, carry uint64
	for _, rg := range ranges {
		width := uint64(rg.End - rg.Start)
		if rg.Start == rg.End {
			carry++ // the whole ring: 2^64
			continue
		}
		var c uint64
		sum, c = bits.Add64(sum, width, 0)
		carry += c
	}
	if sum != 0 || carry != 1 {
		t.Errorf("range widths sum to %d*2^64 + %d, want exactly 2^64", carry, sum)
	}
	probes := []Token{0, math.MaxUint64}
	for _, rg := range ranges {
		probes = append(probes, rg.Start, rg.End, rg.End+1, rg.End-1)
	}
	for _, p := range probes {
		containing := 0
		for _, rg := range ranges {
			if rg.Contains(p) {
				containing++
			}
		}
		if containing != 1 {
			t.Errorf("token %d lies in %d ranges, want 1", p, containing)
		}
	}
}

func TestShare(t *testing.T) {
	tests := []struct {
		name string
		ring *Ring
		id   string
		want float64
	}{
		{"even, four nodes", evenRing(t, "a", "a", "a", "a"), "n2", 0.25},
		{"owner of the wrapping range", mustRing(t, Member{ID: "x", Tokens: []Token{0}}, Member{ID: "y", Tokens: []Token{1 << 62}}), "x", 0.75},
		{"owner of the inner range", mustRing(t, Member{ID: "x", Tokens: []Token{0}}, Member{ID: "y", Tokens: []Token{1 << 62}}), "y", 0.25},
		{"vnodes add up", smallRing(t), "n2", float64(100+200) / 0x1p64},
		{"single member owns all", mustRing(t, Member{ID: "solo", Tokens: []Token{5}}), "solo", 1},
		{"unknown member", smallRing(t), "nope", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.ring.Share(tt.id); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("Share(%q) = %v, want %v", tt.id, got, tt.want)
			}
		})
	}
}
