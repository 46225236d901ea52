// Package clustertest gives other packages' tests a cluster view written as a table.
package clustertest

import "github.com/kuradb/kura/internal/core/cluster"

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

// Alive reports whether id is in Up.
func (v View) Alive(id string) bool { return v.Up[id] }

// State maps liveness and ring status as cluster.Directory does: a member in Up is
// joining, leaving or rebuilding by its status, down when booting or off the ring, and up
// otherwise; the others are down.
func (v View) State(id string) cluster.State {
	n, ok := v.Node(id)
	if !ok || !v.Up[id] {
		return cluster.StateDown
	}
	switch n.Status {
	case cluster.StatusJoining:
		return cluster.StateJoining
	case cluster.StatusLeaving:
		return cluster.StateLeaving
	case cluster.StatusRebuilding:
		return cluster.StateRebuilding
	case cluster.StatusBooting, cluster.StatusLeft, cluster.StatusRemoved:
		return cluster.StateDown
	}
	return cluster.StateUp
}
