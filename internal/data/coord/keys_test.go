package coord

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/data/placement"
	"github.com/kuradb/kura/internal/data/replica"
)

func TestKeysPlanLaysRangesOutByPosition(t *testing.T) {
	tests := []struct {
		name   string
		ranges []ring.Range
		want   []segment
	}{
		{"the whole ring", []ring.Range{{Start: 7, End: 7}}, []segment{{0, math.MaxUint64, 0}}},
		{"a range wrapping past the top", []ring.Range{{Start: 100, End: 10}, {Start: 10, End: 100}},
			[]segment{{0, 10, 0}, {11, 100, 1}, {101, math.MaxUint64, 0}}},
		{"a range ending at the top", []ring.Range{{Start: 5, End: math.MaxUint64}, {Start: math.MaxUint64, End: 5}},
			[]segment{{0, 5, 1}, {6, math.MaxUint64, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rrs []placement.RangeReplicas
			for _, rg := range tt.ranges {
				rrs = append(rrs, placement.RangeReplicas{Range: rg})
			}
			plan := &keysPlan{ranges: rrs}
			plan.layOut()
			if !reflect.DeepEqual(plan.segments, tt.want) {
				t.Errorf("segments %v, want %v", plan.segments, tt.want)
			}
		})
	}
	plan := &keysPlan{ranges: []placement.RangeReplicas{{Range: ring.Range{Start: 100, End: 10}}, {Range: ring.Range{Start: 10, End: 100}}}}
	plan.layOut()
	var got []string
	for _, g := range plan.round(50, 2) {
		got = append(got, fmt.Sprintf("%d-%d/%d", g.from, g.to, g.rangeIndex))
	}
	if want := []string{"50-100/1", "101-18446744073709551615/0"}; !slices.Equal(got, want) {
		t.Errorf("a round from 50 over two segments asks %q, want %q", got, want)
	}
}

// page is a replica's answer holding keys (named by their positions' order in the test,
// not their real positions: mergeKeys reads positions from the keys).
func page(done bool, next uint64, keys ...string) replica.KeysPage {
	p := replica.KeysPage{Done: done, Next: next}
	for _, k := range keys {
		p.Records = append(p.Records, lww.Record{Key: []byte(k)})
	}
	return p
}

func TestMergeKeys(t *testing.T) {
	// Keys sorted by position, so that tests can name positions by them.
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	slices.SortFunc(keys, func(x, y string) int { return int(cmpPos(x, y)) })
	pos := func(i int) uint64 { return keyPosition([]byte(keys[i])) }
	seg := func(from, to uint64) segment { return segment{from: from, to: to} }
	tests := []struct {
		name     string
		groups   []*keysGroup
		found    []string
		disputed []string
		frontier uint64
		end      bool
	}{
		{"one replica, done at the top",
			[]*keysGroup{{segment: seg(0, math.MaxUint64), answers: []replica.KeysPage{page(true, 0, keys[0], keys[1])}}},
			[]string{keys[0], keys[1]}, nil, 0, true},
		{"done below the top: the next segment follows",
			[]*keysGroup{{segment: seg(0, pos(4)), answers: []replica.KeysPage{page(true, 0, keys[1])}}},
			[]string{keys[1]}, nil, pos(4) + 1, false},
		{"two replicas agree on one key and not on another",
			[]*keysGroup{{segment: seg(0, math.MaxUint64), answers: []replica.KeysPage{page(true, 0, keys[0], keys[2]), page(true, 0, keys[2])}}},
			[]string{keys[2]}, []string{keys[0]}, 0, true},
		{"the replica that stopped first sets the frontier",
			[]*keysGroup{{segment: seg(0, math.MaxUint64), answers: []replica.KeysPage{
				page(false, pos(3), keys[0], keys[2]),
				page(false, pos(5), keys[0], keys[2], keys[4])}}},
			[]string{keys[0], keys[2]}, nil, pos(3), false},
		{"a later segment's keys wait behind a segment cut short",
			[]*keysGroup{
				{segment: seg(0, pos(3)), answers: []replica.KeysPage{page(false, pos(2), keys[0], keys[1])}},
				{segment: seg(pos(3)+1, math.MaxUint64), answers: []replica.KeysPage{page(true, 0, keys[5])}}},
			[]string{keys[0], keys[1]}, nil, pos(2), false},
		{"keys of every segment done",
			[]*keysGroup{
				{segment: seg(0, pos(3)), answers: []replica.KeysPage{page(true, 0, keys[0])}},
				{segment: seg(pos(3)+1, pos(6)), answers: []replica.KeysPage{page(true, 0, keys[5]), page(true, 0)}}},
			[]string{keys[0]}, []string{keys[5]}, pos(6) + 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			found, disputed, frontier, end := mergeKeys(tt.groups)
			if names(found) != fmt.Sprint(tt.found) || names(disputed) != fmt.Sprint(tt.disputed) || frontier != tt.frontier || end != tt.end {
				t.Errorf("found %s disputed %s frontier %d end %v; want %v %v %d %v",
					names(found), names(disputed), frontier, end, tt.found, tt.disputed, tt.frontier, tt.end)
			}
		})
	}
}

func cmpPos(x, y string) int64 {
	a, b := keyPosition([]byte(x)), keyPosition([]byte(y))
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func names(pks []positionedKey) string {
	var out []string
	for _, pk := range pks {
		out = append(out, string(pk.key))
	}
	return fmt.Sprint(out)
}

func TestCutAfter(t *testing.T) {
	pk := func(position uint64, key string) positionedKey { return positionedKey{position, []byte(key)} }
	found := []positionedKey{pk(1, "a"), pk(2, "b"), pk(2, "c"), pk(3, "d")}
	tests := []struct {
		want int
		cut  string
		next uint64
		cuts bool
	}{
		{1, "[a]", 2, true},
		{2, "[a b c]", 3, true}, // b and c share a position: never split
		{3, "[a b c]", 3, true},
		{4, "[]", 0, false},
		{9, "[]", 0, false},
	}
	for _, tt := range tests {
		cut, next, ok := cutAfter(found, tt.want)
		if names(cut) != tt.cut || next != tt.next || ok != tt.cuts {
			t.Errorf("cutAfter(%d) = %s, %d, %v; want %s, %d, %v", tt.want, names(cut), next, ok, tt.cut, tt.next, tt.cuts)
		}
	}
}
