package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestNemesisFindsNoViolationUnderKillPausePartition runs `kura nemesis` end to end:
// three `kura server` processes in two DCs, fifteen seconds of gRPC and Redis clients at
// QUORUM under the faults seed 34 draws (a kill, a partition, a pause), then heal,
// repair and the checks, which must find nothing. The saved history must check the
// same with `kura nemesis check`. No assertion depends on timing: a loaded machine only
// makes more operations indeterminate.
func TestNemesisFindsNoViolationUnderKillPausePartition(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("multi-process nemesis run: builds kura and runs three servers")
	}
	bin := buildKura(t)
	dir := t.TempDir()
	history := filepath.Join(dir, "history.jsonl")
	code, out, errOut := kura("nemesis", "--bin", bin, "--dir", dir, "--nodes", "3", "--dcs", "2", "--duration", "15s",
		"--faults", "kill,pause,partition", "--seed", "34", "--clients", "4", "--rate", "25", "--keys", "50",
		"--consistency", "QUORUM", "--history", history)
	t.Logf("kura nemesis:\n%s%s", out, errOut)
	if code != 0 {
		t.Fatalf("kura nemesis exited %d", code)
	}
	for _, want := range []string{"start #1 ", "heal #1 ", "verdict: no violation", "linearizable"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	code, again, errOut := kura("nemesis", "check", history)
	if code != 0 {
		t.Fatalf("kura nemesis check %s exited %d:\n%s%s", history, code, again, errOut)
	}
	if verdicts := out[strings.Index(out, "history: "):strings.Index(out, "verdict: ")]; !strings.Contains(again, verdicts) {
		t.Errorf("the saved history checks differently:\n%s\nwant the verdicts\n%s", again, verdicts)
	}
}
