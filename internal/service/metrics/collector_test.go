package metrics

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/kuradb/kura/internal/io/transport"
)

var kindProbe = transport.RegisterKind(200, "metrics_test_probe")

// collect gathers one collector through a pedantic registry.
func collect(t *testing.T, c prometheus.Collector) map[string]map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	return gather(t, reg)
}

// gather returns g's series by name, each as its label values (ordered by label name)
// joined by "/" -> value (a histogram's value is its count).
func gather(t *testing.T, g prometheus.Gatherer) map[string]map[string]float64 {
	t.Helper()
	families, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, f := range families {
		out[f.GetName()] = map[string]float64{}
		for _, m := range f.GetMetric() {
			key := ""
			for i, l := range m.GetLabel() {
				if i > 0 {
					key += "/"
				}
				key += l.GetValue()
			}
			out[f.GetName()][key] = value(m)
		}
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return m.GetGauge().GetValue()
}

func TestCollectorExportsTransportFlows(t *testing.T) {
	stats := transport.NewStats()
	echo := transport.HandlerFunc(func(_ context.Context, _ transport.Peer, _ transport.Kind, payload []byte) ([]byte, error) {
		return payload, nil
	})
	a, err := transport.Listen(transport.Config{Self: transport.Peer{ID: "a", DC: "tokyo", Addr: "127.0.0.1:0"}, Handler: echo, Stats: stats})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := transport.Listen(transport.Config{Self: transport.Peer{ID: "b", DC: "virginia", Addr: "127.0.0.1:0"}, Handler: echo, Stats: stats})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	payload := make([]byte, 1000)
	for range 3 {
		if _, err := a.Call(context.Background(), b.Self(), kindProbe, payload); err != nil {
			t.Fatal(err)
		}
	}

	got := collect(t, newNodeCollector(Config{Stats: stats}))
	// Label values come in the order of the names: from_dc, kind, to_dc.
	out, back := "tokyo/metrics_test_probe/virginia", "virginia/metrics_test_probe/tokyo"
	if m := got["kura_transport_messages_total"]; m[out] != 3 || m[back] != 3 {
		t.Errorf("messages %v, want 3 each way", m)
	}
	if b := got["kura_transport_bytes_total"]; b[out] < 3*1000 || b[back] < 3*1000 {
		t.Errorf("bytes %v, want at least the 3000 bytes of payload each way", b)
	}
	if v, ok := got["kura_transport_send_queue_refused_total"][""]; !ok || v != 0 {
		t.Errorf("kura_transport_send_queue_refused_total = %v (present %v), want 0", v, ok)
	}
	if _, ok := got["kura_members"]; ok {
		t.Error("gauges exported without a Gauges function")
	}
}

func TestCollectorExportsGauges(t *testing.T) {
	gauges := func() Gauges {
		return Gauges{HintsPending: 7, MembersAlive: 4, MembersDown: 1, StorageDiskBytes: 1 << 20,
			StorageCompactionPacedSeconds: 1.5, ClockOffsetSeconds: -0.25, ClockOK: true, ClockAheadMaxSeconds: 30, ScanRereads: 3,
			RowCacheHits: 90, RowCacheMisses: 10, RowCacheBytes: 4096}
	}
	got := collect(t, newNodeCollector(Config{Gauges: gauges}))
	tests := []struct {
		name, labels string
		want         float64
	}{
		{"kura_hints_pending", "", 7},
		{"kura_members", "alive", 4},
		{"kura_members", "down", 1},
		{"kura_storage_disk_bytes", "", 1 << 20},
		{"kura_storage_compaction_paced_seconds_total", "", 1.5},
		{"kura_storage_row_cache_reads_total", "hit", 90},
		{"kura_storage_row_cache_reads_total", "miss", 10},
		{"kura_storage_row_cache_bytes", "", 4096},
		{"kura_scan_rereads_total", "", 3},
		{"kura_clock_offset_seconds", "", -0.25},
		{"kura_clock_ok", "", 1},
		{"kura_clock_ahead_max_seconds", "", 30},
	}
	for _, tt := range tests {
		if v, ok := got[tt.name][tt.labels]; !ok || v != tt.want {
			t.Errorf("%s{%s} = %v (present %v), want %v", tt.name, tt.labels, v, ok, tt.want)
		}
	}
	if _, ok := got["kura_transport_bytes_total"]; ok {
		t.Error("transport series without Stats")
	}
}
