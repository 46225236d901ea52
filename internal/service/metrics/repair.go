package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kuradb/kura/internal/data/antientropy"
)

// repairMetrics count what anti-entropy repairs run on the node compared and moved.
type repairMetrics struct {
	runs      *prometheus.CounterVec
	ranges    prometheus.Counter
	differing prometheus.Counter
	records   *prometheus.CounterVec
	bytes     *prometheus.CounterVec
	chunks    prometheus.Counter
	failed    prometheus.Counter
}

func newRepairMetrics(reg prometheus.Registerer) *repairMetrics {
	m := &repairMetrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kura_repairs_total",
			Help: "Anti-entropy repairs run from this node, by trigger (manual, background) and outcome (ok, error).",
		}, []string{"trigger", "outcome"}),
		ranges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kura_repair_ranges_total",
			Help: "Token ranges whose replicas' Merkle trees a repair compared.",
		}),
		differing: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kura_repair_subranges_differing_total",
			Help: "Merkle leaves (sub-ranges) found to differ between replicas.",
		}),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kura_repair_records_total",
			Help: "Records a repair read (read), gave to replicas that lacked them or held older ones (sent), or held back because a collected tombstone may cover them (skipped).",
		}, []string{"action"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kura_repair_bytes_total",
			Help: "Payload bytes a repair exchanged with other nodes, by part: trees, records, listing (chunk keys of erasure-coded keyspaces).",
		}, []string{"part"}),
		chunks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kura_repair_chunks_rebuilt_total",
			Help: "Erasure-coded chunks a repair rebuilt on this node.",
		}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kura_repair_failures_total",
			Help: "Ranges, chunk listings or chunk keys a repair left unfinished because a node did not answer.",
		}),
	}
	reg.MustRegister(m.runs, m.ranges, m.differing, m.records, m.bytes, m.chunks, m.failed)
	return m
}

// ObserveRepair records one repair: trigger says who asked for it ("manual" for the
// Admin API, "background" for the node's loop), st what it did, err how it ended.
func (r *Registry) ObserveRepair(trigger string, st antientropy.Stats, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m := r.repair
	m.runs.WithLabelValues(trigger, outcome).Inc()
	m.ranges.Add(float64(st.Ranges))
	m.differing.Add(float64(st.DifferingSubranges))
	m.records.WithLabelValues("read").Add(float64(st.RecordsRead))
	m.records.WithLabelValues("sent").Add(float64(st.RecordsSent))
	m.records.WithLabelValues("skipped").Add(float64(st.Skipped))
	m.bytes.WithLabelValues("trees").Add(float64(st.TreeBytes))
	m.bytes.WithLabelValues("records").Add(float64(st.RecordBytes))
	m.bytes.WithLabelValues("listing").Add(float64(st.ListingBytes))
	m.chunks.Add(float64(st.ChunksRebuilt))
	m.failed.Add(float64(st.Failed))
}
