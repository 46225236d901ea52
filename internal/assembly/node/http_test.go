package node

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
)

// httpGet fetches an admin endpoint of n and returns the body.
func httpGet(t *testing.T, n *Node, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + n.HTTPAddr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s: %s", path, resp.Status, body)
	}
	return string(body)
}

// scrape parses n's /metrics.
func scrape(t *testing.T, n *Node) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(httpGet(t, n, "/metrics")))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return families
}

// sumMetric adds the values of a family's series whose labels pass keep.
func sumMetric(families map[string]*dto.MetricFamily, name string, keep func(labels map[string]string) bool) float64 {
	total := 0.0
	family, ok := families[name]
	if !ok {
		return 0
	}
	for _, m := range family.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if !keep(labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		case m.Histogram != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return total
}

func interDC(labels map[string]string) bool { return labels["from_dc"] != labels["to_dc"] }

func TestMetricsCountInterDCBytes(t *testing.T) {
	nodes := startFrontEndCluster(t, "dc1=1,dc2=1", "dc1", "dc2")
	n1 := nodes[0]
	ctx := context.Background()
	// At ALL every write has crossed to dc2 when it is acknowledged.
	rdb := redis.NewClient(&redis.Options{
		Addr: n1.RESPAddr(),
		OnConnect: func(ctx context.Context, cn *redis.Conn) error {
			return cn.Do(ctx, "KURA.CONSISTENCY", "ALL").Err()
		},
	})
	defer rdb.Close()

	before := scrape(t, n1)
	bytesBefore := sumMetric(before, "kura_transport_bytes_total", interDC)
	const writes, valueBytes = 40, 1000
	value := strings.Repeat("x", valueBytes)
	for i := range writes {
		if err := rdb.Set(ctx, fmt.Sprintf("k%d", i), value, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.Get(ctx, "k0").Err(); err != nil {
		t.Fatal(err)
	}
	after := scrape(t, n1)
	mutateBytes := sumMetric(after, "kura_transport_bytes_total", func(l map[string]string) bool {
		return l["from_dc"] == "dc1" && l["to_dc"] == "dc2" && l["kind"] == "mutate"
	})
	if mutateBytes < writes*valueBytes {
		t.Errorf("dc1->dc2 mutate bytes %.0f, want at least the %d written", mutateBytes, writes*valueBytes)
	}
	if grown := sumMetric(after, "kura_transport_bytes_total", interDC) - bytesBefore; grown < writes*valueBytes {
		t.Errorf("inter-DC bytes grew by %.0f, want at least %d", grown, writes*valueBytes)
	}

	tests := []struct {
		metric string
		keep   func(map[string]string) bool
		want   float64
	}{
		{"kura_requests_total", func(l map[string]string) bool {
			return l["api"] == "resp" && l["op"] == "put" && l["consistency"] == "ALL"
		}, writes},
		{"kura_request_duration_seconds", func(l map[string]string) bool { return l["api"] == "resp" && l["op"] == "get" }, 1},
		{"kura_members", func(l map[string]string) bool { return l["state"] == "alive" }, 2},
		{"kura_members", func(l map[string]string) bool { return l["state"] == "down" }, 0},
		{"kura_hints_pending", func(map[string]string) bool { return true }, 0},
	}
	for _, tt := range tests {
		if got := sumMetric(after, tt.metric, tt.keep); got != tt.want {
			t.Errorf("%s = %v, want %v", tt.metric, got, tt.want)
		}
	}
	if _, ok := after["kura_storage_disk_bytes"]; !ok {
		t.Error("/metrics lacks kura_storage_disk_bytes")
	}
}

func TestHealthAndStatus(t *testing.T) {
	nodes := startFrontEndCluster(t, "simple=2", "dc1", "dc2")
	if body := httpGet(t, nodes[0], "/healthz"); body != "ok\n" {
		t.Errorf("/healthz = %q", body)
	}
	var st Status
	if err := json.Unmarshal([]byte(httpGet(t, nodes[0], "/status")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Node != "n1" || st.DC != "dc1" || st.RESPAddr != nodes[0].RESPAddr() {
		t.Errorf("status names %s in %s on %s", st.Node, st.DC, st.RESPAddr)
	}
	if len(st.Peers) != 1 || st.Peers[0].ID != "n2" || st.Peers[0].DC != "dc2" || !st.Peers[0].Alive {
		t.Fatalf("peers %+v, want n2 alive in dc2", st.Peers)
	}
	if share := st.RingShare + st.Peers[0].RingShare; st.RingShare <= 0 || share < 0.999 || share > 1.001 {
		t.Errorf("ring shares %v and %v do not split the ring", st.RingShare, st.Peers[0].RingShare)
	}
}

func TestPprofOnlyWhenEnabled(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		t.Run(fmt.Sprintf("enabled=%t", enabled), func(t *testing.T) {
			n := mustStartNodeWith(t, "a", Config{HTTPAddr: "127.0.0.1:0", EnablePprof: enabled})
			resp, err := http.Get("http://" + n.HTTPAddr() + "/debug/pprof/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			want := http.StatusNotFound
			if enabled {
				want = http.StatusOK
			}
			if resp.StatusCode != want {
				t.Fatalf("GET /debug/pprof/: %s, want %d", resp.Status, want)
			}
		})
	}
}

func TestRequireHTTPToken(t *testing.T) {
	served := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "served") })
	handler := requireHTTPToken("s3cret", served)
	tests := []struct {
		name, method, path string
		header             map[string]string
		basic              []string // user, password
		want               int
	}{
		{"metrics without the token", "GET", "/metrics", nil, nil, http.StatusUnauthorized},
		{"console without the token", "GET", "/", nil, nil, http.StatusUnauthorized},
		{"status with a wrong token", "GET", "/status", map[string]string{"Authorization": "Bearer guess"}, nil, http.StatusUnauthorized},
		{"the token in another scheme", "GET", "/status", map[string]string{"Authorization": "Token s3cret"}, nil, http.StatusUnauthorized},
		{"metrics with the bearer token", "GET", "/metrics", map[string]string{"Authorization": "Bearer s3cret"}, nil, http.StatusOK},
		{"console with the token as Basic password", "GET", "/api/console", nil, []string{"admin", "s3cret"}, http.StatusOK},
		{"Basic with a wrong password", "GET", "/", nil, []string{"admin", "guess"}, http.StatusUnauthorized},
		{"health check open", "GET", "/healthz", nil, nil, http.StatusOK},
		{"a peer's wake open", "POST", "/power/wake", nil, nil, http.StatusOK},
		{"wake by GET closed", "GET", "/power/wake", nil, nil, http.StatusUnauthorized},
		{"only the exact health path open", "GET", "/x/../healthz", nil, nil, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.path, nil)
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			if tt.basic != nil {
				r.SetBasicAuth(tt.basic[0], tt.basic[1])
			}
			w := httptest.NewRecorder()
			handler.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Fatalf("%s %s: %d %q, want %d", tt.method, tt.path, w.Code, w.Body.String(), tt.want)
			}
			if tt.want == http.StatusUnauthorized && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("a 401 without a Basic challenge: the console's browser would not ask for the token")
			}
		})
	}
}
