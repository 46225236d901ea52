package coord_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/base/importgraph"
)

// module is the import path every package of this repository starts with.
const module = importgraph.Module

// storageAndWire are the packages the coordinator's side of a node must not link: the
// storage engine, Pebble under it, and the internode transport. The seams (replica,
// hints) keep them on the far side of an interface; the assemblies link them.
var storageAndWire = []string{module + "internal/io/storage", "github.com/cockroachdb/pebble/v2", module + "internal/io/transport"}

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
		{"internal/data/coord", false},
		{"internal/data/replica", false},
		{"internal/data/hints", false},
		{"internal/service/schemasync", false},
		{"internal/service/rebalance", false},
		{"internal/service/powercycle", false},
		{"internal/service/apiserver", false},
		{"client", false},
		{"internal/assembly/node", true},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			graph, err := importgraph.Load(goTool, module+tt.pkg)
			if err != nil {
				t.Fatal(err)
			}
			for _, dep := range storageAndWire {
				path := graph.Chain(module+tt.pkg, dep)
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
