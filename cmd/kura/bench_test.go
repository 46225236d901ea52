package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// kura bench writes, on stdout, a table a person reads in a terminal, or with --json one
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
				var report map[string]any
				if err := dec.Decode(&report); err != nil || report["bench"] != "routing" || dec.More() {
					t.Errorf("stdout is not one JSON object of the bench (err %v):\n%s", err, stdout.String())
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
