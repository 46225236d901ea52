package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kuradb/kura/cmd/internal/cli"
)

// kura-bench writes, on stdout, a table a person reads in a terminal, or with --json one
// JSON object and nothing else, so that it pipes to jq; progress goes to stderr.
func TestBenchOutput(t *testing.T) {
	args := []string{"routing", "--nodes-per-dc", "8,8", "--lookups", "50"}
	for _, c := range []struct {
		name string
		json bool
	}{{"table", false}, {"json", true}} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			run := args
			if c.json {
				run = append(append([]string(nil), args...), "--json")
			}
			if err := runBench(run, &stdout, &stderr); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(stderr.String(), "routing  100%") {
				t.Errorf("stderr lacks the progress at its end:\n%s", stderr.String())
			}
			if c.json {
				dec := json.NewDecoder(&stdout)
				var report struct {
					Bench       string `json:"bench"`
					Environment struct {
						Args []string `json:"args"`
					} `json:"environment"`
				}
				if err := dec.Decode(&report); err != nil || report.Bench != "routing" || dec.More() {
					t.Errorf("stdout is not one JSON object of the bench (err %v):\n%s", err, stdout.String())
				}
				// The command line that reruns the bench, whether kura bench forwarded it or not.
				if want := append([]string{"kura-bench"}, run...); !slices.Equal(report.Environment.Args, want) {
					t.Errorf("environment args %q, want %q", report.Environment.Args, want)
				}
				return
			}
			for _, line := range strings.Split(stdout.String(), "\n") {
				if utf8.RuneCountInString(line) > 120 || strings.ContainsAny(line, "{}") {
					t.Errorf("a line a person cannot read in a terminal:\n%s", line)
				}
			}
			if !strings.Contains(stdout.String(), "mlchord") {
				t.Errorf("stdout lacks the table:\n%s", stdout.String())
			}
		})
	}
}

// --cpuprofile and --memprofile leave pprof files (gzipped protobuf) behind,
// whatever the bench printed.
func TestBenchProfiles(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.pprof"), filepath.Join(dir, "mem.pprof")
	var stdout, stderr bytes.Buffer
	args := []string{"routing", "--nodes-per-dc", "8,8", "--lookups", "50", "--cpuprofile", cpu, "--memprofile", mem}
	if err := runBench(args, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{cpu, mem} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("%s is not a gzipped pprof profile (%d bytes)", filepath.Base(path), len(b))
		}
	}
}

// A command line kura-bench cannot run exits 2 with the reason in one line; --help lists
// the benches and exits 0.
func TestCommandLine(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stderr string
	}{
		{nil, 2, "kura-bench: usage: name a bench\n"},
		{[]string{"--help"}, 0, "  routing "},
		{[]string{"nonesuch"}, 2, `kura-bench: usage: unknown bench "nonesuch" (kura-bench --help lists them)` + "\n"},
		{[]string{"routing", "--lookupz", "5"}, 2, "unknown flag --lookupz; did you mean --lookups? (kura-bench routing --help lists the flags)\n"},
		{[]string{"routing", "extra"}, 2, "kura-bench: usage: unexpected arguments [extra]\n"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		if code := run(tt.args, &stdout, &stderr); code != tt.code || !strings.Contains(stderr.String(), tt.stderr) || stdout.Len() > 0 {
			t.Errorf("kura-bench %q: exit %d, stdout %q, stderr %q; want exit %d, stderr with %q", tt.args, code, stdout.String(), stderr.String(), tt.code, tt.stderr)
		}
	}
}

// The benches that start `kura server` processes run the kura that ran `kura bench`, else
// the one beside kura-bench or on PATH; without any, the error says how to get one.
func TestKuraBinary(t *testing.T) {
	tests := []struct {
		name, kuraBinary, path string // KURA_BIN and PATH
		want, wantErr          string
	}{
		{name: "named by kura bench", kuraBinary: "/opt/kura/bin/kura", path: t.TempDir(), want: "/opt/kura/bin/kura"},
		{name: "none", path: t.TempDir(), wantErr: "go build -o kura ./cmd/kura"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(cli.KuraBinaryEnv, tt.kuraBinary)
			t.Setenv("PATH", tt.path)
			got, err := kuraBinary()
			if got != tt.want || (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("kuraBinary() = %q, %v; want %q, an error with %q", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
