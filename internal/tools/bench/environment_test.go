package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestRedisConfig(t *testing.T) {
	for _, tc := range []struct {
		persistence []string
		want        string
	}{
		{[]string{"--save", "", "--appendonly", "no"}, `save "", appendonly no`},
		{[]string{"--dir", "/tmp/x", "--appendonly", "yes", "--appendfsync", "always"}, "appendonly yes, appendfsync always, save: redis-server's default rules"},
		{[]string{"--dir", "/tmp/x"}, "save: redis-server's default rules"},
	} {
		if got := redisConfig(tc.persistence); got != tc.want {
			t.Errorf("redisConfig(%q) = %q, want %q", tc.persistence, got, tc.want)
		}
	}
}

func TestTallyLatencyRows(t *testing.T) {
	rows := []latencyModelRow{
		{DelayMs: 0, LatencyMsMeasured: 0.1, WithinBound: true},   // calibration
		{DelayMs: 4, LatencyMsMeasured: 0.3, WithinBound: true},   // p = 0: judged by the floor
		{DelayMs: 4, LatencyMsMeasured: 8.4, WithinBound: true},   // tested
		{DelayMs: 8, LatencyMsMeasured: 16.6, WithinBound: false}, // tested, out of bound
	}
	want := latencyTally{within: 3, calibration: 1, underFloor: 1, tested: 2, testedWithin: 1}
	if got := tallyLatencyRows(rows); got != want {
		t.Errorf("tally = %+v, want %+v", got, want)
	}
}

func TestReportCarriesEnvironment(t *testing.T) {
	env := CaptureEnvironment([]string{"kura-bench", "x", "--json"})
	env.AddPeer(PeerBuild{Name: "redis", Version: "Redis server v=7.0.15", Config: "appendonly yes"})
	env.AddPeer(PeerBuild{Name: "redis", Version: "Redis server v=7.0.15", Config: "appendonly yes"})
	env.End()
	if len(env.Peers) != 1 {
		t.Errorf("peers = %v, want the one peer once", env.Peers)
	}
	r := &Report{Bench: "x", Scale: "tiny", Rows: []struct {
		N int `json:"n"`
	}{{1}}, Environment: env}
	var out bytes.Buffer
	if err := r.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Environment map[string]any `json:"environment"`
	}
	if err := json.Unmarshal(out.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"revision", "modified", "go", "os", "kernel", "cpu_model", "cpus", "memory_bytes", "filesystem", "started_at", "args", "load_avg_start", "load_avg_end", "peers"} {
		if _, ok := decoded.Environment[key]; !ok {
			t.Errorf("environment lacks %q: %s", key, out.String())
		}
	}
	out.Reset()
	if err := r.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if text := out.String(); !strings.Contains(text, "environment: kura ") || !strings.Contains(text, "peer: redis Redis server v=7.0.15; appendonly yes") {
		t.Errorf("table lacks the environment header:\n%s", text)
	}
}
