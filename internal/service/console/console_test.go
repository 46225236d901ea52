package console

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kuradb/kura/internal/service/metrics"
)

// snapshotAt is a snapshot at t0+offset whose dc1->dc2 traffic and QUORUM gets have the
// given cumulative counts, every get taking 2 ms.
func snapshotAt(t0 time.Time, offset time.Duration, bytes, gets uint64) Snapshot {
	return Snapshot{
		At:      t0.Add(offset),
		Self:    Self{ID: "n1", DC: "dc1"},
		Nodes:   []Node{{ID: "n1", DC: "dc1", State: "up", Self: true}},
		Traffic: []Traffic{{From: "dc1", To: "dc2", Bytes: bytes, Messages: bytes / 100}},
		Requests: []metrics.Requests{{Op: "get", Level: "QUORUM", Count: gets, SumSeconds: 0.002 * float64(gets),
			Buckets: []metrics.Bucket{{UpperBoundSeconds: 0.001}, {UpperBoundSeconds: 0.004, Count: gets}}}},
	}
}

func TestReportRatesOverTheWindow(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New(nil)
	tests := []struct {
		name        string
		snap        Snapshot
		rateWindow  float64
		bytesPerSec float64
		getsPerSec  float64
		p50         float64 // 0: none
	}{
		{"first report: nothing to compare with", snapshotAt(t0, 0, 1000, 10), 0, 0, 0, 0},
		{"a second later", snapshotAt(t0, time.Second, 3000, 30), 1, 2000, 20, 0.0025},
		// Polled again within the second: the window reaches back to the first snapshot.
		{"half a second later", snapshotAt(t0, 1500*time.Millisecond, 4000, 40), 1.5, 2000, 20, 0.0025},
		{"a slower second and a half", snapshotAt(t0, 3*time.Second, 4000, 40), 2, 500, 5, 0.0025},
		{"idle for a second", snapshotAt(t0, 4*time.Second, 4000, 40), 1, 0, 0, 0.0025},
		// Eleven idle seconds on, the latency window holds no request: no percentile.
		{"idle for eleven seconds", snapshotAt(t0, 15*time.Second, 4000, 40), 11, 0, 0, 0},
	}
	for _, tt := range tests {
		r := c.report(tt.snap)
		if r.RateWindowSeconds != tt.rateWindow {
			t.Errorf("%s: rate window %v s, want %v", tt.name, r.RateWindowSeconds, tt.rateWindow)
		}
		if got := r.WAN[0].BytesPerSecond; got != tt.bytesPerSec {
			t.Errorf("%s: %v B/s, want %v", tt.name, got, tt.bytesPerSec)
		}
		if got := r.Latency[0].RequestsPerSecond; got != tt.getsPerSec {
			t.Errorf("%s: %v gets/s, want %v", tt.name, got, tt.getsPerSec)
		}
		switch p50 := r.Latency[0].P50Seconds; {
		case tt.p50 == 0 && p50 != nil:
			t.Errorf("%s: p50 %v, want none", tt.name, *p50)
		case tt.p50 != 0 && (p50 == nil || *p50 != tt.p50):
			t.Errorf("%s: p50 %v, want %v", tt.name, p50, tt.p50)
		}
	}
	if n := len(c.history); n > int(latencyWindow/rateWindow)+2 {
		t.Errorf("history holds %d snapshots", n)
	}
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestRoutesServeThePageItsAssetsAndTheReport(t *testing.T) {
	t0 := time.Now()
	failing := false
	c := New(func() (Snapshot, error) {
		if failing {
			return Snapshot{}, errors.New("ring not loaded")
		}
		return snapshotAt(t0, 0, 1000, 10), nil
	})
	mux := http.NewServeMux()
	c.Register(mux)
	server := httptest.NewServer(mux)
	defer server.Close()

	tests := []struct {
		path, contentType, contains string
	}{
		{"/", "text/html", `<script src="/console/app.js"`},
		{"/console/app.js", "javascript", "/api/console"},
		{"/console/style.css", "text/css", "--down"},
		{"/api/console", "application/json", `"self":{"id":"n1"`},
	}
	for _, tt := range tests {
		resp, body := get(t, server.URL+tt.path)
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), tt.contentType) || !strings.Contains(body, tt.contains) {
			t.Errorf("GET %s: %s, %s, body without %q", tt.path, resp.Status, resp.Header.Get("Content-Type"), tt.contains)
		}
	}
	if resp, _ := get(t, server.URL+"/nosuch"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nosuch: %s, want 404", resp.Status)
	}

	_, body := get(t, server.URL+"/api/console")
	var report Report
	if err := json.Unmarshal([]byte(body), &report); err != nil {
		t.Fatal(err)
	}
	if len(report.Nodes) != 1 || report.Nodes[0].State != "up" || len(report.WAN) != 1 || report.Latency[0].Count != 10 {
		t.Errorf("report %+v", report)
	}

	failing = true
	if resp, body := get(t, server.URL+"/api/console"); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "ring not loaded") {
		t.Errorf("failing source: %s %q, want 503 with the error", resp.Status, body)
	}
}
