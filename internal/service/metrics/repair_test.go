package metrics

import (
	"errors"
	"testing"

	"github.com/kuradb/kura/internal/data/antientropy"
)

func TestObserveRepairAddsUpRepairs(t *testing.T) {
	r := New(Config{})
	st := antientropy.Stats{Ranges: 10, DifferingSubranges: 2, RecordsRead: 7, RecordsSent: 3, Skipped: 1,
		TreeBytes: 500, RecordBytes: 200, ChunksRebuilt: 4, Failed: 1}
	r.ObserveRepair("manual", st, nil)
	r.ObserveRepair("background", st, errors.New("no route"))
	got := gather(t, r.registry)
	tests := []struct {
		name, labels string
		want         float64
	}{
		{"kura_repairs_total", "ok/manual", 1},
		{"kura_repairs_total", "error/background", 1},
		{"kura_repair_ranges_total", "", 20},
		{"kura_repair_subranges_differing_total", "", 4},
		{"kura_repair_records_total", "sent", 6},
		{"kura_repair_records_total", "skipped", 2},
		{"kura_repair_bytes_total", "trees", 1000},
		{"kura_repair_bytes_total", "listing", 0},
		{"kura_repair_chunks_rebuilt_total", "", 8},
		{"kura_repair_failures_total", "", 2},
	}
	for _, tt := range tests {
		if v := got[tt.name][tt.labels]; v != tt.want {
			t.Errorf("%s{%s} = %v, want %v (%v)", tt.name, tt.labels, v, tt.want, got[tt.name])
		}
	}
}
