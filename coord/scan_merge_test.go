package coord

import (
	"fmt"
	"testing"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/lww"
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
				m.add(append([]lww.Record(nil), a.recs...), a.limit, tt.keep)
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
