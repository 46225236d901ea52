package power

import "github.com/kuradb/kura/internal/core/ring"

// SetsOf returns the node ids of every range's replica set on p, in ring order: what a
// count of a set's members by id (how many of a group are in it) needs of the placement.
func SetsOf(p *ring.Placement) [][]string {
	placed := p.Sets()
	sets := make([][]string, len(placed))
	for i, members := range placed {
		sets[i] = make([]string, len(members))
		for j, m := range members {
			sets[i][j] = m.ID
		}
	}
	return sets
}
