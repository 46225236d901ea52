package bench

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseBenchmarkCSV(t *testing.T) {
	out := "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n" +
		"\"SET\",\"43715.85\",\"0.750\",\"0.096\",\"0.551\",\"2.247\",\"3.991\",\"77.567\"\n" +
		"\"GET\",\"50137.88\",\"0.679\",\"0.096\",\"0.519\",\"1.431\",\"3.719\",\"105.215\"\n"
	tests := []struct {
		name    string
		out     string
		op      string
		want    RedisRow
		wantErr string
	}{
		{"set", out, "SET", RedisRow{Op: "SET", OpsPerS: 43715.85, LatencyMsP50: 0.551, LatencyMsP99: 3.991}, ""},
		{"get", out, "GET", RedisRow{Op: "GET", OpsPerS: 50137.88, LatencyMsP50: 0.519, LatencyMsP99: 3.719}, ""},
		{"missing op", out, "INCR", RedisRow{}, "no row for INCR"},
		{"header only", "\"test\",\"rps\"\n", "SET", RedisRow{}, "no results"},
		{"missing column", "\"test\",\"rps\"\n\"SET\",\"1\"\n", "SET", RedisRow{}, "lacks column p50_latency_ms"},
		{"not a number", "\"test\",\"rps\",\"p50_latency_ms\",\"p99_latency_ms\"\n\"SET\",\"fast\",\"1\",\"2\"\n", "SET", RedisRow{}, "column rps"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseBenchmarkCSV([]byte(tt.out), tt.op)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("= %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestRedisReportChecksTheGoals(t *testing.T) {
	rows := func(getCPU, setCPU float64) []RedisRow {
		return []RedisRow{
			{Clients: 16, Target: targetRedisAlways, Op: "SET", Pipeline: 1, OpsPerS: 1000, ServerCPUSPerKop: 0.1},
			{Clients: 16, Target: targetKuraDurable, Op: "SET", Pipeline: 1, OpsPerS: 500, ServerCPUSPerKop: 0.1 * setCPU},
			{Clients: 16, Target: targetRedisAlways, Op: "GET", Pipeline: 1, OpsPerS: 1000, ServerCPUSPerKop: 0.1},
			{Clients: 16, Target: targetKuraDurable, Op: "GET", Pipeline: 1, OpsPerS: 800, ServerCPUSPerKop: 0.1 * getCPU},
		}
	}
	tests := []struct {
		name           string
		getCPU, setCPU float64
		met            string
		short          string
	}{
		{"all met", 1.2, 1.5, "2/2", "none"},
		{"get short", 1.3, 1.0, "1/2", "GET c16 p1: 1.30 > 1.2"},
		{"set short", 1.0, 1.6, "1/2", "SET c16 p1: 1.60 > 1.5"},
	}
	opts := redisOptions{clients: []int{16}, requests: 100, valueBytes: 256, keys: 10, pipelines: []int{1}}
	for _, tt := range tests {
		r := redisReport(rows(tt.getCPU, tt.setCPU), opts)
		if r.Summary["cpu_goals_met"] != tt.met || r.Summary["cpu_goals_short"] != tt.short {
			t.Errorf("%s: summary %v, want met %s, short %q", tt.name, r.Summary, tt.met, tt.short)
		}
		goals := r.Reduction.([]RedisGoal)
		if len(goals) != 2 || goals[0].Op != "GET" || *goals[0].OpsRatio != 0.8 || *goals[1].OpsRatio != 0.5 {
			t.Errorf("%s: reduction %+v", tt.name, goals)
		}
	}
}

func TestRedisFigure(t *testing.T) {
	rows := []RedisRow{
		{Clients: 16, Target: targetRedis, Op: "GET", Pipeline: 16, OpsPerS: 10},
		{Clients: 16, Target: targetKuraCluster, Op: "SET", Pipeline: 1, OpsPerS: 3},
	}
	fig := redisFigure(rows, redisOptions{clients: []int{16}, pipelines: []int{1, 16}})
	if strings.Join(fig.Categories, ",") != "SET P1,GET P1,SETNX P1,INCR P1,SET P16,GET P16,SETNX P16,INCR P16" {
		t.Fatalf("categories %v", fig.Categories)
	}
	if len(fig.Series) != 5 || fig.Series[0].Y[5] != 10 || fig.Series[4].Y[0] != 3 {
		t.Fatalf("series %+v", fig.Series)
	}
}

func TestRedisBenchFlags(t *testing.T) {
	b, ok := Lookup("redis")
	if !ok {
		t.Fatal("bench redis is not registered")
	}
	for _, args := range [][]string{{"--pipeline", "1,x"}, {"--pipeline", "0"}, {"--clients", "0"}, {"--clients", "16,x"}} {
		fs := flag.NewFlagSet("redis", flag.ContinueOnError)
		run := b.Setup(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if _, err := run(context.Background(), Env{}); err == nil || errors.Is(err, ErrNoRedisTools) {
			t.Errorf("%v: error %v, want a flag error", args, err)
		}
	}
}

// TestRedisBenchEndToEnd runs the bench against every target at 500 requests a row and
// checks the report's shape: a row per target, operation and pipeline depth, plausible
// figures, redis's ratio to itself 1, the table and the figure.
//
// It and the package's other end-to-end runs (real servers and clusters) call t.Parallel:
// they wait on their servers' starts, emulated links and fsyncs more than they compute
// (the package used 38 s of CPU in 113 s run one after another), and none asserts a
// speed of the machine: their checks are shapes, counts, and bounds set by the emulated
// links' delays.
func TestRedisBenchEndToEnd(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"redis-server", "redis-benchmark"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (Debian: apt-get install redis-tools redis-server); .ci/run installs it", tool)
		}
	}
	b, _ := Lookup("redis")
	fs := flag.NewFlagSet("redis", flag.ContinueOnError)
	run := b.Setup(fs)
	if err := fs.Parse([]string{"--clients", "4", "--requests", "500", "--keys", "100", "--pipeline", "1,4"}); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	report, err := run(context.Background(), Env{Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	rows := report.Rows.([]RedisRow)
	if len(rows) != 40 {
		t.Fatalf("%d rows, want 5 targets x 4 ops x 2 depths:\n%s", len(rows), progress.String())
	}
	for _, r := range rows {
		if r.OpsPerS <= 0 || r.LatencyMsP99 < r.LatencyMsP50 || r.RatioToRedis <= 0 || r.ServerCPUSPerKop < 0 {
			t.Errorf("implausible row %+v", r)
		}
		if r.Target == targetRedis && r.RatioToRedis != 1 {
			t.Errorf("redis row with ratio %v", r.RatioToRedis)
		}
	}
	if _, ok := report.Summary["cpu_goals_met"]; !ok {
		t.Errorf("summary %v lacks cpu_goals_met", report.Summary)
	}
	var table bytes.Buffer
	if err := report.WriteTable(&table); err != nil || !strings.Contains(table.String(), "kura-3-quorum") {
		t.Fatalf("table: %v\n%s", err, table.String())
	}
	if err := report.Plot(filepath.Join(t.TempDir(), "redis.png")); err != nil {
		t.Fatal(err)
	}
}
