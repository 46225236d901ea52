package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kuradb/kura/cmd/internal/cli"
	"github.com/kuradb/kura/internal/base/importgraph"
)

// TestBenchDependenciesStayOutOfTheServer checks, with the go tool's own import graph,
// that the kura binary links none of what only the benches and the tests need: the
// Cassandra driver, gonum and its plots, the browser the console's test drives, the
// benches' latency histogram; and, so that the check cannot pass by finding nothing, that
// kura-bench links all but the browser.
func TestBenchDependenciesStayOutOfTheServer(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go tool is not on PATH (%v): cannot list the import graph", err)
	}
	const gocql, gonum, chromedp = "github.com/apache/cassandra-gocql-driver/v2", "gonum.org/v1/", "github.com/chromedp/"
	const hdr = "github.com/HdrHistogram/hdrhistogram-go"
	tests := []struct {
		cmd      string
		links    bool // true: every prefix must be linked; false: none
		prefixes []string
	}{
		{"cmd/kura", false, []string{gocql, gonum, chromedp, hdr}},
		{"cmd/kura-bench", true, []string{gocql, gonum, hdr}},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			root := importgraph.Module + tt.cmd
			graph, err := importgraph.Load(goTool, root)
			if err != nil {
				t.Fatal(err)
			}
			packages := slices.Sorted(func(yield func(string) bool) {
				for p := range graph {
					if !yield(p) {
						return
					}
				}
			})
			for _, prefix := range tt.prefixes {
				i := slices.IndexFunc(packages, func(p string) bool { return strings.HasPrefix(p, prefix) })
				switch {
				case tt.links && i < 0:
					t.Errorf("%s links nothing of %s: the graph this test reads is not the one the build uses", tt.cmd, prefix)
				case !tt.links && i >= 0:
					t.Errorf("%s links %s: %s", tt.cmd, packages[i], strings.Join(graph.Chain(root, packages[i]), " → "))
				}
			}
		})
	}
}

// `kura bench ARGS` runs kura-bench ARGS, found on PATH here (the test binary has none
// beside it), with its output and exit status, and tells it which kura ran it; without a
// kura-bench it says how to get one and exits 2.
func TestBenchForwardsToKuraBench(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skipf("no sh to write a kura-bench with (%v)", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		script     string // kura-bench's body; "" for no kura-bench
		kuraBinary string // KURA_BIN set for kura
		code       int
		stdout     string
		stderr     []string
	}{
		{name: "no kura-bench", code: 2, stderr: []string{
			"kura bench: the benches are a separate binary, kura-bench, and there is no kura-bench beside " + self + " or on PATH",
			"\n  go build -o kura-bench ./cmd/kura-bench\n", "\n  go run ./cmd/kura-bench peers --quick --json\n"}},
		{name: "arguments, output and exit status", script: `echo "args: $*"; echo "kura: $KURA_BIN" >&2; exit 3`,
			code: 3, stdout: "args: peers --quick --json\n", stderr: []string{"kura: " + self + "\n"}},
		{name: "a kura named already stays", script: `echo "kura: $KURA_BIN" >&2`, kuraBinary: "/opt/kura/bin/kura",
			code: 0, stderr: []string{"kura: /opt/kura/bin/kura\n"}},
		{name: "killed by a signal", script: `kill -TERM $$`, code: 128 + 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.script != "" {
				script := "#!" + sh + "\n" + tt.script + "\n"
				if err := os.WriteFile(filepath.Join(dir, "kura-bench"), []byte(script), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("PATH", dir)
			t.Setenv(cli.KuraBinaryEnv, tt.kuraBinary)
			code, stdout, stderr := kura("bench", "peers", "--quick", "--json")
			if code != tt.code || stdout != tt.stdout {
				t.Errorf("exit %d, stdout %q; want exit %d, stdout %q (stderr %q)", code, stdout, tt.code, tt.stdout, stderr)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
		})
	}
}
