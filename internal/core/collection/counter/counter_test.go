package counter

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
)

func shard(key, actor string, total int64, at hlc.Timestamp) lww.Record {
	return lww.Record{Key: ShardKey([]byte(key), actor), Value: EncodeTotal(total), Timestamp: at}
}

func offset(key, actor string, total int64, at hlc.Timestamp) lww.Record {
	return Offset([]byte(key), actor, total, at)
}

func TestKeysNameTheirActorAndKind(t *testing.T) {
	tests := []struct {
		name string
		key  []byte
		want string
	}{
		{"shard", ShardKey([]byte("c"), "n1/0000000000000001"), "\x00\x01\x01cc" + "sn1/0000000000000001"},
		{"offset", OffsetKey([]byte("c"), "n1/0000000000000001"), "\x00\x01\x01cc" + "dn1/0000000000000001"},
	}
	for _, tt := range tests {
		if string(tt.key) != tt.want {
			t.Errorf("%s key = %q, want %q", tt.name, tt.key, tt.want)
		}
		coll, kind, _, ok := element.Parse(tt.key)
		if !ok || string(coll) != "c" || kind != element.CounterShard {
			t.Errorf("%s key %q parses as %q %q %v, want counter c's shard", tt.name, tt.key, coll, kind, ok)
		}
	}
	if a, b := Actor("n1", 1), Actor("n1", 2); a == b || a != "n1/0000000000000001" {
		t.Errorf("Actor(n1, 1) = %q, Actor(n1, 2) = %q: want distinct, the first n1/0000000000000001", a, b)
	}
}

func TestTotalRoundTrips(t *testing.T) {
	for _, total := range []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 1 << 40} {
		got, ok := DecodeTotal(EncodeTotal(total))
		if !ok || got != total {
			t.Errorf("DecodeTotal(EncodeTotal(%d)) = %d, %v", total, got, ok)
		}
	}
	for _, bad := range [][]byte{nil, []byte("1234567"), []byte("123456789")} {
		if _, ok := DecodeTotal(bad); ok {
			t.Errorf("DecodeTotal(%q) accepted", bad)
		}
	}
}

func TestSum(t *testing.T) {
	tests := []struct {
		name   string
		recs   []lww.Record
		skip   string
		want   int64
		wantOK bool
	}{
		{"no shards", nil, "", 0, true},
		{"two actors add up", []lww.Record{shard("c", "a", 5, 10), shard("c", "b", -2, 11)}, "", 3, true},
		{"skip leaves an actor out", []lww.Record{shard("c", "a", 5, 10), shard("c", "b", 7, 11)}, "a", 7, true},
		{"an offset removes what a reset observed", []lww.Record{shard("c", "a", 9, 20), offset("c", "a", 5, 10)}, "", 4, true},
		{"an offset of the shard's own version removes it all", []lww.Record{shard("c", "a", 9, 20), offset("c", "a", 9, 20)}, "", 0, true},
		{"an offset of a newer version than read leaves zero", []lww.Record{shard("c", "a", 9, 20), offset("c", "a", 12, 30)}, "", 0, true},
		{"an offset without its shard counts nothing", []lww.Record{offset("c", "a", 12, 30)}, "", 0, true},
		{"negative totals", []lww.Record{shard("c", "a", -9, 20), offset("c", "a", -4, 10)}, "", -5, true},
		{"another key's shard is not this counter's", []lww.Record{shard("c", "a", 5, 10), shard("d", "b", 7, 11)}, "", 5, true},
		{"a malformed value is skipped", []lww.Record{shard("c", "a", 5, 10), {Key: ShardKey([]byte("c"), "b"), Value: []byte("7"), Timestamp: 11}}, "", 5, true},
		{"a tombstone is skipped", []lww.Record{shard("c", "a", 5, 10), {Key: ShardKey([]byte("c"), "b"), Tombstone: true, Timestamp: 11}}, "", 5, true},
		{"a hash field is not a shard", []lww.Record{shard("c", "a", 5, 10), {Key: element.Key([]byte("c"), element.HashField, []byte("f")), Value: EncodeTotal(3), Timestamp: 11}}, "", 5, true},
		{"the sum past int64", []lww.Record{shard("c", "a", math.MaxInt64, 10), shard("c", "b", 1, 11)}, "", 0, false},
		{"the sum below int64", []lww.Record{shard("c", "a", math.MinInt64, 10), shard("c", "b", -1, 11)}, "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Sum(Fold([]byte("c"), tt.recs), tt.skip)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("Sum = %d, %v; want %d, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestResetRemovesWhatItObserved: a reset writes an offset per shard it read, as of the
// version read; a shard written after the key died, or removed as of its version
// already, and the caller's own are left alone.
func TestResetRemovesWhatItObserved(t *testing.T) {
	tests := []struct {
		name    string
		recs    []lww.Record
		skip    string
		through hlc.Timestamp
		want    []lww.Record
	}{
		{"every shard, as read", []lww.Record{shard("c", "a", 5, 10), shard("c", "b", 7, 11)}, "", 0,
			[]lww.Record{offset("c", "a", 5, 10), offset("c", "b", 7, 11)}},
		{"the caller's own is left out", []lww.Record{shard("c", "a", 5, 10), shard("c", "b", 7, 11)}, "b", 0,
			[]lww.Record{offset("c", "a", 5, 10)}},
		{"a shard written after the death is the new life's", []lww.Record{shard("c", "a", 5, 10), shard("c", "b", 7, 30)}, "", 20,
			[]lww.Record{offset("c", "a", 5, 10)}},
		{"a shard removed as of its version already", []lww.Record{shard("c", "a", 5, 10), offset("c", "a", 5, 10)}, "", 0, nil},
		{"a shard grown since its offset", []lww.Record{shard("c", "a", 8, 12), offset("c", "a", 5, 10)}, "", 0,
			[]lww.Record{offset("c", "a", 8, 12)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Reset([]byte("c"), Fold([]byte("c"), tt.recs), tt.skip, tt.through)
			slices.SortFunc(got, func(a, b lww.Record) int { return bytes.Compare(a.Key, b.Key) })
			if len(got) != len(tt.want) {
				t.Fatalf("Reset = %v, want %v", got, tt.want)
			}
			for i := range got {
				if !bytes.Equal(got[i].Key, tt.want[i].Key) || !bytes.Equal(got[i].Value, tt.want[i].Value) || got[i].Timestamp != tt.want[i].Timestamp {
					t.Fatalf("Reset = %v, want %v", got, tt.want)
				}
			}
			after := Fold([]byte("c"), append(tt.recs, got...))
			for actor, s := range Fold([]byte("c"), tt.recs) {
				if actor != tt.skip && (tt.through == 0 || s.At <= tt.through) && after[actor].Live() != 0 {
					t.Errorf("after the reset, actor %s still counts %d", actor, after[actor].Live())
				}
			}
		})
	}
}

// TestLaterWritesSurviveAReset: the property the shard's cumulative total and the
// offset's timestamp give together. A reset that observed a shard's earlier version
// removes exactly that much; the increments written after it (acknowledged or not yet
// seen by the reset) count, whatever order the replicas learn the records in, and of
// two resets the one that observed the later version wins.
func TestLaterWritesSurviveAReset(t *testing.T) {
	key := []byte("c")
	versions := []lww.Record{shard("c", "a", 3, 10), shard("c", "a", 7, 20), shard("c", "a", 12, 30)}
	resets := []lww.Record{offset("c", "a", 3, 10), offset("c", "a", 7, 20)} // two resets, the second saw more
	// Every replica keeps the newest version of each key (last writer wins), whatever
	// order they arrive in.
	newest := func(recs []lww.Record) []lww.Record {
		byKey := map[string]lww.Record{}
		for _, r := range recs {
			if cur, ok := byKey[string(r.Key)]; !ok || lww.Newer(r, cur) {
				byKey[string(r.Key)] = r
			}
		}
		var out []lww.Record
		for _, r := range byKey {
			out = append(out, r)
		}
		return out
	}
	all := append(append([]lww.Record(nil), versions...), resets...)
	for _, order := range [][]int{{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {2, 4, 0, 3, 1}, {3, 0, 4, 2, 1}} {
		var arrived []lww.Record
		for _, i := range order {
			arrived = append(arrived, all[i])
		}
		got, ok := Sum(Fold(key, newest(arrived)), "")
		if !ok || got != 5 {
			t.Errorf("order %v: counter = %d, %v; want 5 (12 written, 7 removed by the reset that saw most)", order, got, ok)
		}
	}
}

func TestIncrement(t *testing.T) {
	key := []byte("c")
	tests := []struct {
		name        string
		writer      Writer
		read        Read
		steps       []int64
		wantValues  []int64
		wantErrs    []error
		wantWrite   bool
		wantTotal   int64
		wantOffsets []lww.Record
	}{
		{"a new counter", Writer{Actor: "a"}, Read{}, []int64{1, 2},
			[]int64{1, 3}, []error{nil, nil}, true, 3, nil},
		{"others as read, this shard as held", Writer{Actor: "a", Total: 5, At: 10},
			Read{Live: true, Elements: []lww.Record{shard("c", "a", 4, 8), shard("c", "b", 7, 9)}}, []int64{1},
			[]int64{13}, []error{nil}, true, 6, nil},
		{"an offset of this shard is taken off", Writer{Actor: "a", Total: 5, At: 10},
			Read{Live: true, Elements: []lww.Record{shard("c", "a", 5, 10), offset("c", "a", 3, 9)}}, []int64{-1},
			[]int64{1}, []error{nil}, true, 4, nil},
		{"a step that overflows is refused, the others applied", Writer{Actor: "a", Total: math.MaxInt64 - 1, At: 10},
			Read{Live: true}, []int64{1, 1, -5},
			[]int64{math.MaxInt64, 0, math.MaxInt64 - 5}, []error{nil, ErrOverflow, nil}, true, math.MaxInt64 - 5, nil},
		{"nothing to write on a live counter", Writer{Actor: "a", Total: 5, At: 10}, Read{Live: true}, []int64{0},
			[]int64{5}, []error{nil}, false, 5, nil},
		{"a dead key starts a new life: the earlier shards and this one's total removed", Writer{Actor: "a", Total: 5, At: 10},
			Read{DiedAt: 20, Elements: []lww.Record{shard("c", "a", 5, 10), shard("c", "b", 7, 15), shard("c", "x", 2, 25)}}, []int64{1},
			[]int64{3}, []error{nil}, true, 6,
			[]lww.Record{offset("c", "a", 5, 10), offset("c", "b", 7, 15)}},
		{"this writer's total written after the death is the new life's", Writer{Actor: "a", Total: 5, At: 30},
			Read{DiedAt: 20, Elements: []lww.Record{shard("c", "b", 7, 15)}}, []int64{1},
			[]int64{6}, []error{nil}, true, 6,
			[]lww.Record{offset("c", "b", 7, 15)}},
		{"zero makes a new counter too", Writer{Actor: "a"}, Read{}, []int64{0},
			[]int64{0}, []error{nil}, true, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.writer.Increment(key, tt.read, tt.steps)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(b.Values, tt.wantValues) || !slices.Equal(b.Errs, tt.wantErrs) || b.Write != tt.wantWrite || b.Total != tt.wantTotal {
				t.Fatalf("Increment = values %v, errs %v, write %v, total %d; want %v, %v, %v, %d", b.Values, b.Errs, b.Write, b.Total, tt.wantValues, tt.wantErrs, tt.wantWrite, tt.wantTotal)
			}
			slices.SortFunc(b.Offsets, func(a, b lww.Record) int { return bytes.Compare(a.Key, b.Key) })
			if len(b.Offsets) != len(tt.wantOffsets) {
				t.Fatalf("offsets %v, want %v", b.Offsets, tt.wantOffsets)
			}
			for i := range b.Offsets {
				if !bytes.Equal(b.Offsets[i].Key, tt.wantOffsets[i].Key) || !bytes.Equal(b.Offsets[i].Value, tt.wantOffsets[i].Value) || b.Offsets[i].Timestamp != tt.wantOffsets[i].Timestamp {
					t.Fatalf("offsets %v, want %v", b.Offsets, tt.wantOffsets)
				}
			}
		})
	}
	if _, err := (Writer{Actor: "z"}).Increment(key, Read{Live: true, Elements: []lww.Record{shard("c", "a", math.MaxInt64, 10), shard("c", "b", 1, 11)}}, []int64{1}); !errors.Is(err, ErrSum) {
		t.Fatalf("Increment of shards summing past int64 = %v, want ErrSum", err)
	}
}
