package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestQueueLedgerCheck feeds the queue's check pushes and pops as a server might answer
// them: it passes only when every answered push is popped exactly once, and the drain
// waits for exactly the answered pushes not popped yet, whichever comes first of an
// item's pop and its push's answer.
func TestQueueLedgerCheck(t *testing.T) {
	tests := []struct {
		name      string
		pushed    map[string]bool
		pops      []string
		popsFirst bool // the pops reach the ledger before the pushes' answers
		want      AppCheck
		waiting   int
	}{
		{"each once", map[string]bool{"a": true, "b": true}, []string{"b", "a"}, false,
			AppCheck{Writes: 2, Found: 2, OK: true}, 0},
		{"each once, popped before the push was answered", map[string]bool{"a": true, "b": true}, []string{"b", "a"}, true,
			AppCheck{Writes: 2, Found: 2, OK: true}, 0},
		{"one lost", map[string]bool{"a": true, "b": true}, []string{"a"}, false,
			AppCheck{Writes: 2, Found: 1, Lost: 1}, 1},
		{"one popped twice", map[string]bool{"a": true, "b": true}, []string{"a", "b", "a"}, false,
			AppCheck{Writes: 2, Found: 3, Duplicated: 1}, 0},
		{"one popped twice before the push was answered, one lost", map[string]bool{"a": true, "b": true}, []string{"a", "a"}, true,
			AppCheck{Writes: 2, Found: 2, Lost: 1, Duplicated: 1}, 1},
		{"an item never pushed", map[string]bool{"a": true}, []string{"a", "z"}, false,
			AppCheck{Writes: 1, Found: 2, Duplicated: 1}, 0},
		{"a failed push popped once", map[string]bool{"a": true, "b": false}, []string{"a", "b"}, false,
			AppCheck{Writes: 1, Unconfirmed: 1, Found: 2, OK: true}, 0},
		{"a failed push never popped", map[string]bool{"a": true, "b": false}, []string{"a"}, false,
			AppCheck{Writes: 1, Unconfirmed: 1, Found: 1, OK: true}, 0},
		{"a failed push popped twice", map[string]bool{"b": false}, []string{"b", "b"}, false,
			AppCheck{Unconfirmed: 1, Found: 2, Duplicated: 1}, 0},
		{"nothing", map[string]bool{}, nil, false, AppCheck{OK: true}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := queueLedger{pushed: map[string]bool{}, pops: map[string]int{}}
			push := func() {
				for item, answered := range tt.pushed {
					l.push(item, answered)
				}
			}
			if !tt.popsFirst {
				push()
			}
			for _, item := range tt.pops {
				l.pop(item)
			}
			if tt.popsFirst {
				push()
			}
			if got := *l.check(); got != tt.want {
				t.Errorf("check = %+v, want %+v", got, tt.want)
			}
			if got := l.waiting(); got != tt.waiting {
				t.Errorf("waiting = %d, want %d", got, tt.waiting)
			}
		})
	}
}

// TestCounterCheck: the counters must grow by the INCRs answered, plus at most the
// failed ones.
func TestCounterCheck(t *testing.T) {
	tests := []struct {
		name                    string
		answered, failed, found int
		want                    AppCheck
	}{
		{"every increment", 10, 0, 10, AppCheck{Writes: 10, Found: 10, OK: true}},
		{"a failed one applied", 10, 2, 11, AppCheck{Writes: 10, Unconfirmed: 2, Found: 11, OK: true}},
		{"the failed ones not applied", 10, 2, 10, AppCheck{Writes: 10, Unconfirmed: 2, Found: 10, OK: true}},
		{"one lost", 10, 2, 9, AppCheck{Writes: 10, Unconfirmed: 2, Found: 9, Lost: 1}},
		{"one counted twice", 10, 0, 11, AppCheck{Writes: 10, Found: 11, Duplicated: 1}},
	}
	for _, tt := range tests {
		if got := *counterCheck(tt.answered, tt.failed, tt.found); got != tt.want {
			t.Errorf("%s: check = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestRedisAppsFlags(t *testing.T) {
	b, ok := Lookup("redis-apps")
	if !ok {
		t.Fatal("bench redis-apps is not registered")
	}
	for _, args := range [][]string{
		{"--patterns", "leaderboard,chat"}, {"--targets", "redis,memcached"}, {"--clients", "1"},
		{"--repeats", "0"}, {"--duration", "0s"}, {"--items", "5"},
	} {
		fs := flag.NewFlagSet("redis-apps", flag.ContinueOnError)
		run := b.Setup(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		if _, err := run(context.Background(), Env{}); err == nil || errors.Is(err, ErrNoRedisTools) {
			t.Errorf("%v: error %v, want a flag error", args, err)
		}
	}
}

// TestRedisAppsEndToEnd runs the queue and the counters briefly against every target,
// real redis-server and kura server processes, and checks the report's shape and that
// the checks found every item popped once and every increment counted once. It runs in
// parallel with the package's other end-to-end runs (TestRedisBenchEndToEnd says why).
func TestRedisAppsEndToEnd(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not installed (Debian: apt-get install redis-server); .ci/run installs it")
	}
	if testing.Short() {
		t.Skip("builds kura and starts four servers")
	}
	bin := filepath.Join(t.TempDir(), "kura")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/kuradb/kura/cmd/kura").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	b, _ := Lookup("redis-apps")
	fs := flag.NewFlagSet("redis-apps", flag.ContinueOnError)
	run := b.Setup(fs)
	// A generous timeout: on a busy machine a slow command is slow, not an error.
	if err := fs.Parse([]string{"--bin", bin, "--patterns", "queue,counters", "--duration", "500ms", "--repeats", "2",
		"--clients", "4", "--items", "20", "--op-timeout", "2m"}); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	env := Env{Progress: &progress, Environment: CaptureEnvironment([]string{"kura-bench", "redis-apps"})}
	report, err := run(context.Background(), env)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	report.Environment = env.Environment

	rows := report.Rows.([]RedisAppsRow)
	var got []string
	for _, r := range rows {
		got = append(got, r.Pattern+"/"+r.Target)
		if r.Ops == 0 || r.OpsPerS <= 0 || r.LatencyMsP99 < r.LatencyMsP50 || r.CPUUsPerOp < 0 || len(r.Rounds) != 2 {
			t.Errorf("implausible row %+v", r)
		}
		if r.Errors != 0 {
			t.Errorf("%s/%s: %d errors, the first %s", r.Pattern, r.Target, r.Errors, r.FirstError)
		}
		if r.OpsPerSMin > r.OpsPerS || r.OpsPerS > r.OpsPerSMax || r.CPUUsPerOpMin > r.CPUUsPerOp || r.CPUUsPerOp > r.CPUUsPerOpMax {
			t.Errorf("%s/%s: median outside its rounds: %+v", r.Pattern, r.Target, r)
		}
		if r.Persistence == "" {
			t.Errorf("%s/%s says nothing of its persistence", r.Pattern, r.Target)
		}
		if r.Target == appRedisAlways && (r.CPURatioAlways == nil || *r.CPURatioAlways != 1) && r.CPUUsPerOp > 0 {
			t.Errorf("redis-always's ratio to itself is %v", r.CPURatioAlways)
		}
	}
	want := "queue/redis queue/redis-always queue/kura-1 queue/kura-3 " +
		"counters/redis counters/redis-always counters/kura-1 counters/kura-3 counters/kura-1-pn counters/kura-3-pn"
	if strings.Join(got, " ") != want {
		t.Errorf("rows %v, want %s", got, want)
	}

	checks := report.Reduction.([]AppCheck)
	if len(checks) != 20 {
		t.Fatalf("%d checks, want 2 rounds of the queue on 4 targets and of the counters on 6: %+v", len(checks), checks)
	}
	for _, c := range checks {
		if !c.OK || c.Writes == 0 || c.Lost != 0 || c.Duplicated != 0 || c.Found < c.Writes {
			t.Errorf("check %+v: every answered write should be found once", c)
		}
	}
	if report.Summary["checks_passed"] != "20 of 20 runs" {
		t.Errorf("summary %v", report.Summary)
	}

	var table bytes.Buffer
	if err := report.WriteTable(&table); err != nil || !strings.Contains(table.String(), "kura-3-pn") || !strings.Contains(table.String(), "save off, aof always") {
		t.Fatalf("table: %v\n%s", err, table.String())
	}
	var out bytes.Buffer
	if err := report.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	var decoded struct {
		Environment struct {
			Peers []PeerBuild `json:"peers"`
		} `json:"environment"`
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(out.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	if len(decoded.Environment.Peers) != 3 || len(decoded.Rows) != len(rows) {
		t.Errorf("JSON: %d peers (want redis, redis-always, kura), %d rows:\n%s", len(decoded.Environment.Peers), len(decoded.Rows), out.String())
	}
}
