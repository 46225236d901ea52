package coord

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
)

// A scan round's answers merge into the newest version of each key, in key order, up to
// the smallest key at which an answer was cut short by the limit.
func TestScanMergeKeepsNewestUpToTheCutoff(t *testing.T) {
	rec := func(key string, ts int) lww.Record {
		return lww.Record{Key: []byte(key), Value: []byte(key), Timestamp: hlc.Timestamp(ts)}
	}
	type answer struct {
		recs  []lww.Record
		limit int
	}
	tests := []struct {
		name     string
		answers  []answer
		keep     func([]byte) bool
		want     string // key@timestamp, in order
		complete bool
	}{
		{"one answer", []answer{{[]lww.Record{rec("a", 1), rec("b", 1)}, 10}}, nil, "a@1 b@1", true},
		{"two agreeing answers", []answer{{[]lww.Record{rec("a", 1), rec("c", 1)}, 10}, {[]lww.Record{rec("a", 1), rec("c", 1)}, 10}}, nil, "a@1 c@1", true},
		{"the newer version wins, whichever answer has it",
			[]answer{{[]lww.Record{rec("a", 1), rec("b", 5)}, 10}, {[]lww.Record{rec("a", 3), rec("b", 2)}, 10}}, nil, "a@3 b@5", true},
		{"keys only one answer has",
			[]answer{{[]lww.Record{rec("a", 1), rec("d", 1)}, 10}, {[]lww.Record{rec("b", 1), rec("c", 1)}, 10}, {[]lww.Record{rec("e", 1)}, 10}}, nil, "a@1 b@1 c@1 d@1 e@1", true},
		{"a cut-short answer bounds every answer",
			[]answer{{[]lww.Record{rec("a", 1), rec("c", 1)}, 2}, {[]lww.Record{rec("b", 1), rec("d", 1)}, 10}}, nil, "a@1 b@1 c@1", false},
		{"one cut-short answer", []answer{{[]lww.Record{rec("a", 1), rec("b", 1)}, 2}}, nil, "a@1 b@1", false},
		{"the smallest cut-off of two", []answer{{[]lww.Record{rec("a", 1), rec("d", 1)}, 2}, {[]lww.Record{rec("b", 1), rec("c", 1)}, 2}}, nil, "a@1 b@1 c@1", false},
		{"an answer out of order is sorted", []answer{{[]lww.Record{rec("c", 1), rec("a", 1), rec("b", 1)}, 10}}, nil, "a@1 b@1 c@1", true},
		{"a key twice in one answer", []answer{{[]lww.Record{rec("a", 1), rec("a", 4), rec("b", 1)}, 10}}, nil, "a@4 b@1", true},
		{"keys not asked for are left out, the cut-off still counts",
			[]answer{{[]lww.Record{rec("a", 1), rec("x", 1)}, 2}, {[]lww.Record{rec("b", 1), rec("y", 1)}, 10}},
			func(key []byte) bool { return string(key) < "x" }, "a@1 b@1", false},
		{"no answers", nil, nil, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &scanMerge{}
			for _, a := range tt.answers {
				m.add(append([]lww.Record(nil), a.recs...), a.limit, tt.keep, false)
			}
			got := m.result()
			var s string
			for i, r := range got.records {
				if i > 0 {
					s += " "
				}
				s += fmt.Sprintf("%s@%d", r.Key, r.Timestamp)
			}
			if s != tt.want || got.complete != tt.complete {
				t.Errorf("merged %q (complete %v), want %q (complete %v)", s, got.complete, tt.want, tt.complete)
			}
		})
	}
}

// A digest answer confirms the values read, or brings a newer tombstone, or tells the
// round that values it lacks are newer (valuesMissing): never a value it does not carry.
func TestScanMergeHoldsDigestsAgainstTheValues(t *testing.T) {
	rec := func(key, value string, ts int) lww.Record {
		return lww.Record{Key: []byte(key), Value: []byte(value), Timestamp: hlc.Timestamp(ts)}
	}
	tomb := func(key string, ts int) lww.Record {
		return lww.Record{Key: []byte(key), Timestamp: hlc.Timestamp(ts), Tombstone: true}
	}
	digests := func(rs ...lww.Record) []lww.Record { return asDigests(rs) }
	values := []lww.Record{rec("a", "1", 2), rec("b", "1", 2), rec("d", "1", 2)}
	tests := []struct {
		name        string
		values      []lww.Record
		limit       int // of the values' answer; the digests' is 10 unless digestLimit
		digests     []lww.Record
		digestLimit int
		want        string // key=value@timestamp, in order; "missing" for valuesMissing
	}{
		{"the same versions", values, 10, digests(values...), 0, "a=1@2 b=1@2 d=1@2"},
		{"older versions", values, 10, digests(rec("a", "0", 1), rec("b", "0", 1)), 0, "a=1@2 b=1@2 d=1@2"},
		{"a newer version", values, 10, digests(rec("a", "1", 2), rec("b", "2", 3)), 0, "missing"},
		{"a key the values lack", values, 10, digests(rec("c", "1", 1)), 0, "missing"},
		{"the same timestamp, another value", values, 10, digests(rec("b", "2", 2)), 0, "missing"},
		{"the same version, another expiry", values, 10, digests(lww.Record{Key: []byte("b"), Value: []byte("1"), Timestamp: 2, ExpiresAt: 9}), 0, "missing"},
		{"a newer tombstone", values, 10, digests(tomb("b", 3)), 0, "a=1@2 b=@3 d=1@2"},
		{"a tombstone of the same timestamp", values, 10, digests(tomb("b", 2)), 0, "a=1@2 b=@2 d=1@2"},
		{"an older tombstone", values, 10, digests(tomb("b", 1)), 0, "a=1@2 b=1@2 d=1@2"},
		{"tombstones of keys the values lack", values, 10, digests(tomb("0", 1), tomb("c", 1), tomb("e", 1)), 0, "0=@1 a=1@2 b=1@2 c=@1 d=1@2 e=@1"},
		{"a digest past the values' cut-off", values, 3, digests(rec("e", "1", 9)), 0, "a=1@2 b=1@2 d=1@2"},
		{"a cut-short digest bounds the values", values, 10, digests(rec("a", "1", 2)), 1, "a=1@2"},
		{"digests alone", nil, 10, digests(rec("a", "1", 1)), 0, "missing"},
		{"a replica that answers values to a digest request", values, 10, values, 0, "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &scanMerge{}
			m.add(append([]lww.Record(nil), tt.values...), tt.limit, nil, false)
			limit := 10
			if tt.digestLimit > 0 {
				limit = tt.digestLimit
			}
			m.add(append([]lww.Record(nil), tt.digests...), limit, nil, true)
			got := m.result()
			s := "missing"
			if !got.valuesMissing {
				s = ""
				for i, r := range got.records {
					if i > 0 {
						s += " "
					}
					s += fmt.Sprintf("%s=%s@%d", r.Key, r.Value, r.Timestamp)
				}
			}
			if s != tt.want {
				t.Errorf("merged %q, want %q", s, tt.want)
			}
		})
	}
}

// Whatever versions the replicas hold, a round with digests either merges into what the
// same round with values from every replica merges into, or reports valuesMissing; and it
// reports it only when a digest's replica holds a live version newer than (or not told
// apart from) the newest the values show.
func TestScanMergeWithDigestsAgreesWithValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	versions := func() []lww.Record {
		var recs []lww.Record
		for k := range 8 {
			if rng.IntN(3) == 0 {
				continue // this replica lacks the key
			}
			// One value per key and timestamp: the same timestamp with two values, which
			// digests cannot settle, is TestScanMergeHoldsDigestsAgainstTheValues's case.
			ts := 1 + rng.IntN(3)
			r := lww.Record{Key: []byte{'a' + byte(k)}, Timestamp: hlc.Timestamp(ts)}
			if rng.IntN(4) == 0 {
				r.Tombstone = true
			} else {
				r.Value = []byte{'a' + byte(k), '0' + byte(ts)}
			}
			recs = append(recs, r)
		}
		return recs
	}
	show := func(recs []lww.Record) string { return fmt.Sprint(recs) }
	missing := 0
	for round := range 2000 {
		replicas := [][]lww.Record{versions(), versions(), versions()}
		limit := 3 + rng.IntN(6)
		full, digested := &scanMerge{}, &scanMerge{}
		for i, recs := range replicas {
			full.add(slices.Clone(recs), limit, nil, false)
			if i > 0 {
				recs = asDigests(recs)
			}
			digested.add(slices.Clone(recs), limit, nil, i > 0)
		}
		want, got := full.result(), digested.result()
		if got.valuesMissing {
			missing++
			// Some key's newest version is live and not the first replica's.
			firstHasNewest := true
			for _, r := range want.records {
				if r.Tombstone {
					continue
				}
				i := slices.IndexFunc(replicas[0], func(v lww.Record) bool { return string(v.Key) == string(r.Key) })
				if i < 0 || !reflect.DeepEqual(replicas[0][i], r) {
					firstHasNewest = false
				}
			}
			if firstHasNewest {
				t.Fatalf("round %d: values missing, though the first replica %v holds every newest live version of %v", round, replicas[0], want.records)
			}
			continue
		}
		if show(got.records) != show(want.records) || got.complete != want.complete || string(got.cutoff) != string(want.cutoff) {
			t.Fatalf("round %d, replicas %v, limit %d:\nwith digests %v (complete %v)\nwith values  %v (complete %v)", round, replicas, limit, got.records, got.complete, want.records, want.complete)
		}
	}
	if missing == 0 || missing == 2000 {
		t.Fatalf("%d of 2000 rounds reported values missing: the cases are not mixed", missing)
	}
}

// asDigests returns records as a replica answers them to a Digest scan.
func asDigests(records []lww.Record) []lww.Record {
	out := make([]lww.Record, len(records))
	for i, r := range records {
		if !r.Tombstone {
			r.Value = binary.BigEndian.AppendUint64(nil, xxhash.Sum64(r.Value))
		}
		out[i] = r
	}
	return out
}
