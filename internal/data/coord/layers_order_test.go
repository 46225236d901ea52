package coord_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/base/importgraph"
)

// layers are the module's folders from the bottom up (docs/architecture.md,
// "Packages"): a package may import packages of its own layer and of the layers below
// it, never of one above. A prefix ending in "/" holds a folder; any other names one
// package: the public ones that stay outside internal/.
var layers = []struct {
	name     string
	prefixes []string
}{
	{"base", []string{"internal/base/"}},
	{"core", []string{"internal/core/", "hlc", "consistency", "api/kurav1"}},
	{"io", []string{"internal/io/"}},
	{"data", []string{"internal/data/"}},
	{"service", []string{"internal/service/", "client"}},
	{"assembly", []string{"internal/assembly/"}},
	{"tools", []string{"internal/tools/"}},
	{"cmd", []string{"cmd/"}},
}

// layerOf returns the index in layers of the package at path (the module's prefix left
// out), -1 when no layer holds it.
func layerOf(path string) int {
	for i, l := range layers {
		for _, p := range l.prefixes {
			if path == p || strings.HasPrefix(path, strings.TrimSuffix(p, "/")+"/") {
				return i
			}
		}
	}
	return -1
}

// TestLayersImportDownward checks, with the go tool's list of every package of the
// module and the imports it is built from (test files aside), that no package imports
// one of a higher layer and that every package is in a layer; and, so that the check
// cannot pass by finding nothing, that every layer holds a package.
func TestLayersImportDownward(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go tool is not on PATH (%v): cannot list the import graph", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(goTool, "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", importgraph.Module+"...")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	held := make([]int, len(layers))
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], importgraph.Module)
		from := layerOf(pkg)
		if from < 0 {
			t.Errorf("%s is in no layer: move it under the folder of its layer, or add it to layers", pkg)
			continue
		}
		held[from]++
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, importgraph.Module)
			if !ours {
				continue
			}
			if to := layerOf(dep); to > from {
				t.Errorf("%s (layer %s) imports %s (layer %s, above it)", pkg, layers[from].name, dep, layers[to].name)
			}
		}
	}
	for i, n := range held {
		if n == 0 {
			t.Errorf("layer %s holds no package: its prefixes %v name nothing", layers[i].name, layers[i].prefixes)
		}
	}
}
