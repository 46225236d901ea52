// Package bench holds the experiments behind `kura bench`: each reproduces a paper's
// figure with its baseline in the same run. Every bench follows one output convention:
// progress and logs on stderr; a table a person can read on stdout, or with --json exactly
// one JSON object {bench, scale, rows, ...}; with --plot FILE.png a figure.
package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"sync"
)

// Env is what a bench may write to while it runs.
type Env struct {
	// Progress receives progress lines (stderr); never the results.
	Progress io.Writer
	// Environment, when set, is the report's provenance: a bench that runs other systems
	// records their versions and settings in it (Environment.AddPeer).
	Environment *Environment
	// KuraBinary finds the kura binary whose `server` subcommand runs a bench's nodes as
	// processes of their own (peers), when the bench's --bin names none; nil finds none.
	KuraBinary func() (string, error)
}

// Progressf writes one line about an event of the run (a node started, a step's
// outcome); how far the run is goes through a Progress (StartProgress).
func (e Env) Progressf(format string, args ...any) {
	if e.Progress != nil {
		fmt.Fprintf(e.Progress, progressLine(e.Progress)+format+"\n", args...)
	}
}

// Runner runs a bench whose flags were parsed.
type Runner func(ctx context.Context, env Env) (*Report, error)

// Bench is one experiment.
type Bench struct {
	Name    string
	Summary string
	// Setup registers the bench's own flags on fs and returns the runner that reads them.
	Setup func(fs *flag.FlagSet) Runner
}

var (
	registryMu sync.Mutex
	registry   = map[string]Bench{}
)

// Register adds a bench; benches register themselves from init functions.
func Register(b Bench) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[b.Name]; dup {
		panic("bench: duplicate bench " + b.Name)
	}
	registry[b.Name] = b
}

// Lookup finds a bench by name.
func Lookup(name string) (Bench, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	b, ok := registry[name]
	return b, ok
}

// All lists the benches by name.
func All() []Bench {
	registryMu.Lock()
	defer registryMu.Unlock()
	out := make([]Bench, 0, len(registry))
	for _, b := range registry {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
