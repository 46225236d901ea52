package topology

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// ErrUnknownExample is returned by Example for a name that is not shipped.
var ErrUnknownExample = errors.New("topology: unknown example")

// examples holds the ready topologies: the papers' deployments and the demo's layout.
//
//go:embed examples/*.yaml
var examples embed.FS

// Example returns the shipped topology with the given name (see ExampleNames).
func Example(name string) (*Topology, error) {
	data, err := examples.ReadFile(path.Join("examples", name+".yaml"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w %q (have %s)", ErrUnknownExample, name, strings.Join(ExampleNames(), ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("topology: example %q: %w", name, err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("example %q: %w", name, err)
	}
	return t, nil
}

// ExampleNames lists the shipped topologies, sorted.
func ExampleNames() []string {
	entries, err := examples.ReadDir("examples")
	if err != nil {
		// The directory is embedded at build time, so reading it cannot fail.
		panic(fmt.Sprintf("topology: embedded examples: %v", err))
	}
	var names []string
	for _, entry := range entries {
		names = append(names, strings.TrimSuffix(entry.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}
