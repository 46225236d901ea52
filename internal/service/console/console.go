// Package console is kura's web console: a single page, embedded in the binary, that every
// node serves on its admin HTTP port. It shows the node's view of the cluster (the DCs and
// their nodes with their states, the ring, the WAN traffic per DC pair, request rates and
// latencies per consistency level, hints, keyspaces) and polls a JSON snapshot once a
// second to stay live. The page is plain HTML, CSS and JavaScript with no build step and
// nothing fetched from elsewhere, so it works on a machine with no Internet access.
//
// The node supplies a Snapshot of cumulative figures (package node, console.go); this
// package turns successive snapshots into rates over a sliding window and serves both.
package console

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"sync"
	"time"

	"github.com/kuradb/kura/internal/service/metrics"
)

//go:embed assets
var assets embed.FS

// Snapshot is one node's view of the cluster at one moment, with every counter cumulative
// since the node started.
type Snapshot struct {
	// At is when the snapshot was taken; rates are computed between the At of two.
	At time.Time `json:"at"`
	// Self is the node that answered.
	Self Self `json:"self"`
	// Nodes are every node this one knows, itself included, sorted by id.
	Nodes []Node `json:"nodes"`
	// Ring is the token ring as arcs, in token order; together they cover it once.
	Ring []Arc `json:"ring"`
	// Keyspaces are the keyspaces defined, sorted by name.
	Keyspaces []Keyspace `json:"keyspaces"`
	// HintsPending counts the writes this node holds for replicas that missed them.
	HintsPending int `json:"hints_pending"`
	// Traffic is the bytes and messages sent per DC pair, as the node's transport counts
	// them at the sender: this node's own sends, or a whole in-process cluster's when its
	// nodes share one counter (kura cluster, kura demo).
	Traffic []Traffic `json:"traffic"`
	// Requests are the node's request latency histograms per operation and level.
	Requests []metrics.Requests `json:"-"`
}

// Self describes the node that answered.
type Self struct {
	ID         string `json:"id"`
	DC         string `json:"dc"`
	Addr       string `json:"addr"`
	ClientAddr string `json:"client_addr,omitempty"`
	HTTPAddr   string `json:"http_addr,omitempty"`
	// Version is the build the node runs (package version).
	Version string `json:"version"`
	// Power is the node's power state: active, draining, asleep or waking.
	Power string `json:"power"`
	// ClockOffsetSeconds is the node's clock minus the cluster's.
	ClockOffsetSeconds float64 `json:"clock_offset_seconds"`
}

// Node is one node as the answering node sees it.
type Node struct {
	ID         string `json:"id"`
	DC         string `json:"dc"`
	Addr       string `json:"addr"`
	ClientAddr string `json:"client_addr,omitempty"`
	// State is what the node is doing: up, down, joining, leaving, asleep, rebuilding,
	// draining or waking (cluster.State).
	State string `json:"state"`
	// Status is its place on the ring as it announced it (cluster.Status): normal,
	// joining, leaving, left, removed, booting or rebuilding.
	Status string `json:"status"`
	// Tier is its power tier: 0 never sleeps.
	Tier int `json:"tier"`
	// Share is the fraction of the token space it owns as first replica.
	Share float64 `json:"share"`
	// Self marks the node that answered.
	Self bool `json:"self,omitempty"`
	// LoadBytes and LoadKeys are the disk space the node's storage takes and the live
	// records it stores, as it last gossiped them; nil until it has. The page shows "-".
	LoadBytes *int64 `json:"load_bytes"`
	LoadKeys  *int64 `json:"load_keys"`
	// UptimeSeconds is how long the node's process has run, from the start time it
	// gossiped; nil when that is not known or the node is down (then nobody knows whether
	// it still runs).
	UptimeSeconds *float64 `json:"uptime_seconds"`
}

// Arc is one vnode's range of the ring: the tokens after Start up to End, as fractions of
// the token space in [0, 1] (a token is 64 bits, more than JavaScript's numbers hold).
// The last arc of a ring wraps: its End is below its Start.
type Arc struct {
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	Node  string  `json:"node"`
}

// Keyspace is one keyspace's definition.
type Keyspace struct {
	Name        string `json:"name"`
	Replication string `json:"replication"`
	Partitioner string `json:"partitioner"`
	// Erasure is the code "M,K" of an erasure-coded keyspace; empty for a replicated one.
	Erasure string `json:"erasure,omitempty"`
}

// Traffic is the cumulative traffic from one DC to another (the same DC for the traffic
// inside it).
type Traffic struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Bytes    uint64 `json:"bytes"`
	Messages uint64 `json:"messages"`
}

// Report is what GET /api/console answers: the snapshot, with the rates of its counters.
type Report struct {
	Snapshot
	// RateWindowSeconds is the window of the traffic and request rates, and
	// LatencyWindowSeconds that of the latency percentiles; both are zero on the first
	// report, which has nothing to compare with.
	RateWindowSeconds    float64 `json:"rate_window_seconds"`
	LatencyWindowSeconds float64 `json:"latency_window_seconds"`
	// WAN is Traffic with its rates.
	WAN []TrafficRate `json:"wan"`
	// Latency has one row per operation and level the node has served.
	Latency []LatencyRate `json:"latency"`
}

// TrafficRate is one DC pair's traffic and its rate over the window.
type TrafficRate struct {
	Traffic
	BytesPerSecond    float64 `json:"bytes_per_second"`
	MessagesPerSecond float64 `json:"messages_per_second"`
}

// LatencyRate is the requests of one operation at one level: their rate over the rate
// window and their latency percentiles over the latency window, nil when no request
// completed in it.
type LatencyRate struct {
	Level             string   `json:"level"`
	Op                string   `json:"op"`
	Count             uint64   `json:"count"`
	RequestsPerSecond float64  `json:"requests_per_second"`
	P50Seconds        *float64 `json:"p50_seconds"`
	P95Seconds        *float64 `json:"p95_seconds"`
	P99Seconds        *float64 `json:"p99_seconds"`
	MeanSeconds       *float64 `json:"mean_seconds"`
}

// The windows of the rates. Rates change quickly and are read as "now": one second. A
// percentile needs more requests to mean anything: ten seconds.
const (
	rateWindow    = time.Second
	latencyWindow = 10 * time.Second
)

// Source takes a snapshot of the node.
type Source func() (Snapshot, error)

// Console serves the page, its assets and the JSON reports.
type Console struct {
	source Source
	static http.Handler

	// history holds past snapshots, at least rateWindow apart and reaching back just past
	// latencyWindow, to compute rates against. Every browser polling the node shares it,
	// so a second browser does not shorten the first one's windows.
	mu      sync.Mutex
	history []Snapshot
}

// New returns a console over source.
func New(source Source) *Console {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/
	}
	return &Console{source: source, static: http.FileServerFS(sub)}
}

// Register routes the console on mux: GET / (the page), GET /console/ (its assets) and
// GET /api/console (the JSON report).
func (c *Console) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", c.servePage)
	mux.Handle("GET /console/", http.StripPrefix("/console", c.static))
	mux.HandleFunc("GET /api/console", c.serveReport)
}

func (c *Console) servePage(w http.ResponseWriter, r *http.Request) {
	// The page names the node it came from in its data, not its markup, so it is one file.
	page, err := assets.ReadFile("assets/index.html")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(page)
}

func (c *Console) serveReport(w http.ResponseWriter, _ *http.Request) {
	snap, err := c.source()
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	report := c.report(snap)
	w.Header().Set("Content-Type", "application/json")
	// Polled every second: a cached answer would show a dead node alive.
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(report)
}

// report computes the rates of snap against the history and records snap in it.
func (c *Console) report(snap Snapshot) Report {
	c.mu.Lock()
	rateBase, rateOK := baseline(c.history, snap.At, rateWindow)
	latencyBase, latencyOK := baseline(c.history, snap.At, latencyWindow)
	if n := len(c.history); n == 0 || snap.At.Sub(c.history[n-1].At) >= rateWindow {
		c.history = append(c.history, snap)
	}
	// Keep the newest sample at least latencyWindow old, the baseline of the next report,
	// and drop those before it.
	for len(c.history) > 1 && snap.At.Sub(c.history[1].At) >= latencyWindow {
		c.history = c.history[1:]
	}
	c.mu.Unlock()

	report := Report{Snapshot: snap, WAN: make([]TrafficRate, 0, len(snap.Traffic)), Latency: make([]LatencyRate, 0, len(snap.Requests))}
	rateSeconds := 0.0
	if rateOK {
		rateSeconds = snap.At.Sub(rateBase.At).Seconds()
		report.RateWindowSeconds = rateSeconds
	}
	if latencyOK {
		report.LatencyWindowSeconds = snap.At.Sub(latencyBase.At).Seconds()
	}
	perSecond := func(now, then uint64) float64 {
		if rateSeconds <= 0 || now < then {
			return 0
		}
		return float64(now-then) / rateSeconds
	}
	for _, t := range snap.Traffic {
		before := findTraffic(rateBase.Traffic, t.From, t.To)
		report.WAN = append(report.WAN, TrafficRate{Traffic: t,
			BytesPerSecond: perSecond(t.Bytes, before.Bytes), MessagesPerSecond: perSecond(t.Messages, before.Messages)})
	}
	for _, r := range snap.Requests {
		row := LatencyRate{Level: r.Level, Op: r.Op, Count: r.Count,
			RequestsPerSecond: perSecond(r.Count, findRequests(rateBase.Requests, r.Op, r.Level).Count)}
		if latencyOK {
			window := r.Since(findRequests(latencyBase.Requests, r.Op, r.Level))
			row.P50Seconds, row.P95Seconds, row.P99Seconds = quantile(window, 0.5), quantile(window, 0.95), quantile(window, 0.99)
			if window.Count > 0 {
				mean := window.SumSeconds / float64(window.Count)
				row.MeanSeconds = &mean
			}
		}
		report.Latency = append(report.Latency, row)
	}
	return report
}

// baseline returns the snapshot to compute rates over window against: the newest one
// taken at least window before now, or else the oldest one, for a shorter window while
// the history is young. ok is false when there is none before now.
func baseline(history []Snapshot, now time.Time, window time.Duration) (Snapshot, bool) {
	for i := len(history) - 1; i >= 0; i-- {
		if now.Sub(history[i].At) >= window {
			return history[i], true
		}
	}
	if len(history) > 0 && history[0].At.Before(now) {
		return history[0], true
	}
	return Snapshot{}, false
}

func findTraffic(traffic []Traffic, from, to string) Traffic {
	for _, t := range traffic {
		if t.From == from && t.To == to {
			return t
		}
	}
	return Traffic{}
}

func findRequests(requests []metrics.Requests, op, level string) metrics.Requests {
	for _, r := range requests {
		if r.Op == op && r.Level == level {
			return r
		}
	}
	return metrics.Requests{}
}

// quantile is Requests.Quantile as JSON carries it: nil when the window has no request.
func quantile(r metrics.Requests, q float64) *float64 {
	v, ok := r.Quantile(q)
	if !ok {
		return nil
	}
	return &v
}
