// Package importgraph reads the import graph the go tool builds a package from, for the
// tests that keep a layer or a binary free of what it must not link, and names the chain
// of imports that broke such a rule.
package importgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
)

// Module is the import path every package of this repository starts with; chains are
// printed without it.
const Module = "github.com/kuradb/kura/"

// Graph is the imports of a package and of every package it depends on, by import path.
type Graph map[string][]string

// Load returns the graph of pkg as `go list -deps` reports it with the go tool goTool
// (test files left out: what is linked).
func Load(goTool, pkg string) (Graph, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(goTool, "list", "-deps", "-json=ImportPath,Imports", pkg)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -deps %s: %v\n%s", pkg, err, stderr.String())
	}
	graph := Graph{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decode go list -deps %s: %v", pkg, err)
		}
		graph[p.ImportPath] = p.Imports
	}
	if _, ok := graph[pkg]; !ok {
		return nil, fmt.Errorf("go list -deps %s did not list %s itself", pkg, pkg)
	}
	return graph, nil
}

// Chain returns the imports that lead from one package to another, both included and
// this module's prefix left out, nil when from does not depend on to: the chain an error
// names, so that whoever broke the rule sees which import did.
func (g Graph) Chain(from, to string) []string {
	parent := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			chain := []string{}
			for ; p != ""; p = parent[p] {
				chain = append(chain, strings.TrimPrefix(p, Module))
			}
			slices.Reverse(chain)
			return chain
		}
		for _, next := range g[p] {
			if _, seen := parent[next]; !seen {
				parent[next] = p
				queue = append(queue, next)
			}
		}
	}
	return nil
}
