package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestSimulateCommand runs kura simulate as the README does, on a few seeds, in a child
// process (its bubbles need a process of their own), and reads its one JSON object. It
// runs beside the tests that wait on clusters (t.Parallel), computing while they wait,
// rather than before them all.
func TestSimulateCommand(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "simulate", "--seeds", "1-3", "--json")
	cmd.Env = append(os.Environ(), "KURA_AS_MAIN=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kura simulate: %v\n%s\n%s", err, out, stderr.String())
	}
	var report struct {
		Seeds        string            `json:"seeds"`
		Runs         int               `json:"runs"`
		Acknowledged int               `json:"acknowledged_writes"`
		Increments   int               `json:"acknowledged_increments"`
		Violations   []json.RawMessage `json:"violations"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	if report.Seeds != "1-3" || report.Runs != 3 || report.Acknowledged == 0 || report.Increments == 0 || report.Violations == nil || len(report.Violations) != 0 {
		t.Errorf("report %+v, want 3 runs of seeds 1-3 with acknowledged writes and increments and an empty violations list", report)
	}
	if !strings.Contains(stderr.String(), "simulate: 3 seeds run") {
		t.Errorf("no progress on stderr:\n%s", stderr.String())
	}
}

func TestSimulateUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"simulate", "--seeds", "5-2"},
		{"simulate", "--seeds", "x"},
		{"simulate", "--parallel", "0"},
		{"simulate", "extra"},
	} {
		if code, _, errOut := kura(args...); code != 2 || !strings.Contains(errOut, "usage") {
			t.Errorf("kura %v: exit %d, %q; want exit 2 with a usage error", args, code, errOut)
		}
	}
}
