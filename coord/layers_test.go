package coord_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the import path every package of this repository starts with.
const module = "github.com/kuradb/kura/"

// storageAndWire are the packages the coordinator's side of a node must not link: the
// storage engine, Pebble under it, and the internode transport. The seams (replica,
// hints) keep them on the far side of an interface; the assemblies link them.
var storageAndWire = []string{module + "storage", "github.com/cockroachdb/pebble", module + "transport"}

// TestLayersKeepStorageAndTransportOut checks, with the go tool's own import graph,
// that the coordinator, the seams it sees replicas and hints through, the life cycle
// packages above it, the gRPC server and the Go client link none of storageAndWire, not
// even through an import of an import; and, so that the check cannot pass by finding
// nothing, that the node's assembly links all of them.
func TestLayersKeepStorageAndTransportOut(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the go tool is not on PATH (%v): cannot list the import graph", err)
	}
	tests := []struct {
		pkg   string
		links bool // true: every package of storageAndWire must be linked; false: none
	}{
		{"coord", false},
		{"replica", false},
		{"hints", false},
		{"schemasync", false},
		{"rebalance", false},
		{"powercycle", false},
		{"apiserver", false},
		{"client", false},
		{"node", true},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			graph := importGraph(t, goTool, module+tt.pkg)
			for _, dep := range storageAndWire {
				path := importChain(graph, module+tt.pkg, dep)
				switch {
				case tt.links && path == nil:
					t.Errorf("%s does not link %s: the graph this test reads is not the one the build uses", tt.pkg, dep)
				case !tt.links && path != nil:
					t.Errorf("%s links %s: %s", tt.pkg, dep, strings.Join(path, " → "))
				}
			}
		})
	}
}

// importGraph returns the imports of pkg and of every package it depends on, by import
// path, as `go list -deps -json` reports them (test files left out: what is linked).
func importGraph(t *testing.T, goTool, pkg string) map[string][]string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(goTool, "list", "-deps", "-json=ImportPath,Imports", pkg)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr.String())
	}
	graph := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list -deps %s: %v", pkg, err)
		}
		graph[p.ImportPath] = p.Imports
	}
	if _, ok := graph[pkg]; !ok {
		t.Fatalf("go list -deps %s did not list %s itself", pkg, pkg)
	}
	return graph
}

// importChain returns the imports that lead from one package to another, both
// included, nil when from does not depend on to: the chain an error names, so that
// whoever broke the rule sees which import did.
func importChain(graph map[string][]string, from, to string) []string {
	parent := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			chain := []string{}
			for ; p != ""; p = parent[p] {
				chain = append(chain, strings.TrimPrefix(p, module))
			}
			slices.Reverse(chain)
			return chain
		}
		for _, next := range graph[p] {
			if _, seen := parent[next]; !seen {
				parent[next] = p
				queue = append(queue, next)
			}
		}
	}
	return nil
}
