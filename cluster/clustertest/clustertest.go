// Package clustertest gives other packages' tests a cluster view written as a table.
package clustertest

import "github.com/kuradb/kura/cluster"

// View is a fixed cluster view: its members, and which of them are up (the others are
// down).
type View struct {
	Members []cluster.Node
	Up      map[string]bool
}

// Nodes returns the members.
func (v View) Nodes() []cluster.Node { return v.Members }

// Node returns the member id.
func (v View) Node(id string) (cluster.Node, bool) {
	for _, n := range v.Members {
		if n.ID == id {
			return n, true
		}
	}
	return cluster.Node{}, false
}

// State is up for the members in Up, down for the others.
func (v View) State(id string) cluster.State {
	if v.Up[id] {
		return cluster.StateUp
	}
	return cluster.StateDown
}
