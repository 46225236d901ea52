package lww

import (
	"bytes"
	"testing"

	"github.com/kuradb/kura/hlc"
)

func TestNewer(t *testing.T) {
	value := func(ts hlc.Timestamp, v string) Record { return Record{Value: []byte(v), Timestamp: ts} }
	tombstone := func(ts hlc.Timestamp) Record { return Record{Timestamp: ts, Tombstone: true} }
	tests := []struct {
		name string
		a, b Record
		want bool
	}{
		{"higher timestamp wins", value(2, "a"), value(1, "z"), true},
		{"lower timestamp loses", value(1, "z"), value(2, "a"), false},
		{"higher-timestamp value beats tombstone", value(2, "a"), tombstone(1), true},
		{"higher-timestamp tombstone beats value", tombstone(2), value(1, "a"), true},
		{"equal timestamps: tombstone beats value", tombstone(5), value(5, "zzz"), true},
		{"equal timestamps: value loses to tombstone", value(5, "zzz"), tombstone(5), false},
		{"equal timestamps: larger value wins", value(5, "b"), value(5, "a"), true},
		{"equal timestamps: smaller value loses", value(5, "a"), value(5, "b"), false},
		{"equal timestamps: longer value with same prefix wins", value(5, "ab"), value(5, "a"), true},
		{"identical values do not replace", value(5, "a"), value(5, "a"), false},
		{"identical tombstones do not replace", tombstone(5), tombstone(5), false},
		{"empty value equals nil value", Record{Value: []byte{}, Timestamp: 5}, value(5, ""), false},
		{"equal value: later expiry wins", Record{Value: []byte("a"), Timestamp: 5, ExpiresAt: 9}, Record{Value: []byte("a"), Timestamp: 5, ExpiresAt: 8}, true},
		{"equal value: no expiry beats a deadline", value(5, "a"), Record{Value: []byte("a"), Timestamp: 5, ExpiresAt: 8}, true},
		{"equal value: a deadline loses to no expiry", Record{Value: []byte("a"), Timestamp: 5, ExpiresAt: 8}, value(5, "a"), false},
		{"a newer expiring value beats an older permanent one", Record{Value: []byte("a"), Timestamp: 6, ExpiresAt: 7}, value(5, "z"), true},
		{"equal value and expiry: larger type wins", Record{Value: []byte("a"), Timestamp: 5, Type: Hash}, value(5, "a"), true},
		{"equal value and expiry: string loses to a type", value(5, "a"), Record{Value: []byte("a"), Timestamp: 5, Type: Hash}, false},
		{"equal value and expiry: list beats hash", Record{Value: []byte("a"), Timestamp: 5, Type: List}, Record{Value: []byte("a"), Timestamp: 5, Type: Hash}, true},
		{"identical typed values do not replace", Record{Value: []byte("a"), Timestamp: 5, Type: Set}, Record{Value: []byte("a"), Timestamp: 5, Type: Set}, false},
		{"type comes last: larger value beats larger type", value(5, "b"), Record{Value: []byte("a"), Timestamp: 5, Type: List}, true},
		{"type comes last: later expiry beats larger type", Record{Value: []byte("a"), Timestamp: 5, ExpiresAt: 9}, Record{Value: []byte("a"), Timestamp: 5, ExpiresAt: 8, Type: List}, true},
		{"type comes last: higher timestamp beats larger type", value(6, "a"), Record{Value: []byte("a"), Timestamp: 5, Type: List}, true},
		{"type comes last: tombstone beats a typed value", tombstone(5), Record{Value: []byte("a"), Timestamp: 5, Type: Hash}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Newer(tt.a, tt.b); got != tt.want {
				t.Errorf("Newer(%+v, %+v) = %t, want %t", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

// TestNewerConvergesInAnyOrder folds every arrival order of a set of competing writes
// and checks all replicas end on the same record.
func TestNewerConvergesInAnyOrder(t *testing.T) {
	writes := []Record{
		{Value: []byte("b"), Timestamp: 7},
		{Value: []byte("a"), Timestamp: 7},
		{Timestamp: 7, Tombstone: true},
		{Value: []byte("z"), Timestamp: 6},
	}
	want := writes[2]
	var permute func(order []Record, rest []Record)
	permute = func(order []Record, rest []Record) {
		if len(rest) == 0 {
			winner := order[0]
			for _, r := range order[1:] {
				if Newer(r, winner) {
					winner = r
				}
			}
			if winner.Tombstone != want.Tombstone || winner.Timestamp != want.Timestamp || !bytes.Equal(winner.Value, want.Value) {
				t.Errorf("arrival order %v converged to %+v, want %+v", order, winner, want)
			}
			return
		}
		for i := range rest {
			others := append(append([]Record{}, rest[:i]...), rest[i+1:]...)
			permute(append(order, rest[i]), others)
		}
	}
	permute(nil, writes)
}

func TestTypeString(t *testing.T) {
	tests := []struct {
		typ  Type
		want string
	}{
		{String, "string"},
		{Hash, "hash"},
		{Set, "set"},
		{SortedSet, "zset"},
		{List, "list"},
		{Counter, "string"}, // a PN counter answers TYPE as Redis's integer string does
		{TypeMax + 1, "type(6)"},
	}
	for _, tt := range tests {
		if got := tt.typ.String(); got != tt.want {
			t.Errorf("Type(%d).String() = %q, want %q", tt.typ, got, tt.want)
		}
	}
}

func TestLive(t *testing.T) {
	tests := []struct {
		name string
		rec  Record
		now  hlc.Timestamp
		want bool
	}{
		{"a value without expiry", Record{Value: []byte("v"), Timestamp: 1}, 100, true},
		{"a tombstone", Record{Timestamp: 1, Tombstone: true}, 100, false},
		{"before its deadline", Record{Value: []byte("v"), Timestamp: 1, ExpiresAt: 50}, 49, true},
		{"at its deadline", Record{Value: []byte("v"), Timestamp: 1, ExpiresAt: 50}, 50, false},
		{"after its deadline", Record{Value: []byte("v"), Timestamp: 1, ExpiresAt: 50}, 51, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rec.Live(tt.now); got != tt.want {
				t.Errorf("%+v.Live(%d) = %t, want %t", tt.rec, tt.now, got, tt.want)
			}
		})
	}
}
