package model

import (
	"errors"
	"fmt"

	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/io/topology"
)

// Layout says where each node of a topology sits on the ring: it gets the node's position
// in topology order and the node, and returns the node's tokens.
type Layout func(index int, node topology.NodeInDC) []ring.Token

// ErrUnknownLayout is returned by ParseLayout for a name that is not a layout.
var ErrUnknownLayout = errors.New("model: unknown token layout")

// VnodeLayout is kura's default placement: vnodes tokens derived from each node's id, as
// a node started without hand-placed tokens takes them.
func VnodeLayout(vnodes int) Layout {
	return func(_ int, node topology.NodeInDC) []ring.Token {
		return ring.TokensFor(node.ID, vnodes)
	}
}

// EvenLayout gives the node at index i the i-th of nodes evenly spaced tokens, one token
// per node: paper 002's layout, so each node's primary range is 1/nodes of the ring.
func EvenLayout(nodes int) Layout {
	tokens := ring.EvenTokens(nodes)
	return func(index int, _ topology.NodeInDC) []ring.Token {
		if index < 0 || index >= len(tokens) {
			return nil
		}
		return []ring.Token{tokens[index]}
	}
}

// ParseLayout reads a layout name for topo: "vnodes" (kura's default, vnodes tokens per
// node) or "even" (one evenly spaced token per node, in topology order).
func ParseLayout(name string, topo *topology.Topology, vnodes int) (Layout, error) {
	switch name {
	case "vnodes":
		return VnodeLayout(vnodes), nil
	case "even":
		return EvenLayout(len(topo.Nodes())), nil
	}
	return nil, fmt.Errorf("%w %q (want vnodes or even)", ErrUnknownLayout, name)
}

// Ring builds the ring of topo's nodes placed by layout.
func Ring(topo *topology.Topology, layout Layout) (*ring.Ring, error) {
	nodes := topo.Nodes()
	members := make([]ring.Member, len(nodes))
	for i, node := range nodes {
		members[i] = ring.Member{ID: node.ID, DC: node.DC, Tokens: layout(i, node)}
	}
	r, err := ring.New(members)
	if err != nil {
		return nil, fmt.Errorf("model: ring of %s: %w", topo.Name, err)
	}
	return r, nil
}
