// Package metrics owns a node's Prometheus metrics: request counts and latencies per
// operation and consistency level, errors by kind, inter-node traffic per datacenter pair
// and message kind, hints, membership, storage and anti-entropy repairs. The client front
// ends (gRPC and RESP) report every request through Registry.Observe and the node every
// repair through Registry.ObserveRepair; the rest is read from the node at each scrape.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/internal/data/coord"
	"github.com/kuradb/kura/internal/io/transport"
)

// Config says where the scrape-time figures come from.
type Config struct {
	// Stats are the transport counters exported per (from_dc, to_dc, kind); nil exports
	// none. Nodes of an in-process cluster share one Stats, so each exports the cluster's.
	Stats *transport.Stats
	// Gauges reads the node's gauges at each scrape; nil exports none.
	Gauges func() Gauges
}

// Gauges are a node's figures read at scrape time.
type Gauges struct {
	HintsPending     int    // writes held for replicas that missed them
	MembersAlive     int    // known nodes believed reachable, this one included
	MembersDown      int    // known nodes believed down
	StorageDiskBytes uint64 // space the storage files take
	// StorageCompactionPacedSeconds is how long the storage engine's compactions were
	// made to wait by their pace since the node started.
	StorageCompactionPacedSeconds float64
	// RowCacheHits and RowCacheMisses count the storage engine's row cache reads that
	// found their record and those that read Pebble; RowCacheBytes is about the memory
	// its entries take.
	RowCacheHits, RowCacheMisses uint64
	RowCacheBytes                int64
	// ClockOffsetSeconds is the node's clock minus the cluster's; ClockOK whether its
	// clock guard lets it coordinate writes; ClockAheadMaxSeconds how far the largest
	// timestamp it stamped or stored is ahead of the cluster's clock.
	ClockOffsetSeconds   float64
	ClockOK              bool
	ClockAheadMaxSeconds float64
	// PowerState is the node's power state (active, draining, asleep, waking); PowerWatts
	// its modelled draw and EnergyJoules its modelled energy since it started (paper 003).
	PowerState   string
	PowerWatts   float64
	EnergyJoules float64
	// ReadClasses are the read stage's figures per class of read (paper 004), and
	// ReadWorkersBusy its workers at work.
	ReadClasses     []ReadClass
	ReadWorkersBusy int
	// ScanRereads is how many scan rounds the node's coordinator read again after a
	// digest mismatch since it started (coord.Coordinator.ScanRereads).
	ScanRereads uint64
}

// ReadClass is the read stage's figures for one class of read.
type ReadClass struct {
	Class       string  // local_get, remote_get, scan_page
	Queued      int     // waiting for a worker now
	Served      uint64  // given a worker since the node started
	WaitSeconds float64 // the served ones' total time in the queue
}

// Registry is one node's metrics. Each node has its own, so that several nodes can run in
// one process.
type Registry struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	errors   *prometheus.CounterVec
	repair   *repairMetrics
	// series caches each (api, op, level)'s request counter and histogram: Observe runs on
	// every request, and resolving label values costs more than the observation itself.
	series sync.Map // seriesKey -> *requestSeries
}

type seriesKey struct {
	api, op string
	level   consistency.Level
}

type requestSeries struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

// New returns a registry with the request metrics, the node collector over cfg, and the
// Go runtime and process collectors.
func New(cfg Config) *Registry {
	r := &Registry{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kura_requests_total",
			Help: "Client requests served, by front end (grpc, resp), operation and consistency level.",
		}, []string{"api", "op", "consistency"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kura_request_duration_seconds",
			Help:    "Latency of client requests as the node served them, failed ones included.",
			Buckets: prometheus.ExponentialBucketsRange(50e-6, 10, 18),
		}, []string{"api", "op", "consistency"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kura_request_errors_total",
			Help: "Failed client requests, by kind: invalid_argument, no_keyspace, unavailable, timeout, canceled, internal.",
		}, []string{"api", "op", "kind"}),
	}
	r.registry.MustRegister(r.requests, r.latency, r.errors,
		newNodeCollector(cfg),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	r.repair = newRepairMetrics(r.registry)
	return r
}

// Observe records one request: api is the front end ("grpc", "resp"), op the operation
// ("get", "put", "delete", "scan"), err its outcome. A failure is counted under its
// coord.Classify class, the one the front ends answer the client with; err must therefore
// wrap the coordinator's error (the gRPC API's status errors do).
func (r *Registry) Observe(api, op string, cl consistency.Level, elapsed time.Duration, err error) {
	key := seriesKey{api: api, op: op, level: cl}
	cached, ok := r.series.Load(key)
	if !ok {
		level := cl.String()
		cached, _ = r.series.LoadOrStore(key, &requestSeries{
			requests: r.requests.WithLabelValues(api, op, level),
			latency:  r.latency.WithLabelValues(api, op, level),
		})
	}
	s := cached.(*requestSeries)
	s.requests.Inc()
	s.latency.Observe(elapsed.Seconds())
	if err != nil {
		r.errors.WithLabelValues(api, op, coord.Classify(err).String()).Inc()
	}
}

// Handler serves the metrics in the Prometheus exposition format.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.registry, promhttp.HandlerOpts{})
}
