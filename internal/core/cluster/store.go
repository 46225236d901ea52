package cluster

import (
	"encoding/json"
	"fmt"
)

// Store keeps the directory's ring entries across restarts.
type Store interface {
	// SaveNode persists one entry durably before it returns.
	SaveNode(Node) error
	// Nodes returns every stored entry.
	Nodes() ([]Node, error)
	// DeleteNode drops one entry durably before it returns.
	DeleteNode(id string) error
}

// storedNode is an entry's persisted form.
type storedNode struct {
	ID         string   `json:"id"`
	DC         string   `json:"dc"`
	Addr       string   `json:"addr"`
	ClientAddr string   `json:"client_addr,omitempty"`
	Tokens     []uint64 `json:"tokens,omitempty"`
	Status     string   `json:"status"`
	Replaces   string   `json:"replaces,omitempty"`
	Generation uint64   `json:"generation,omitempty"`
	Born       uint64   `json:"born,omitempty"`
	// Tier is omitted at 0, so entries stored before tiers existed read as tier 0.
	Tier int `json:"tier,omitempty"`
}

// EncodeNode writes one entry in the form a Store persists it (ringstore.Store): the
// form a ring pull sends too (EncodeRing), so that both read every field alike.
func EncodeNode(n Node) ([]byte, error) { return json.Marshal(toStored(n)) }

// DecodeNode reads what EncodeNode wrote; key names the entry in the error when the
// data cannot be read at all.
func DecodeNode(key, data []byte) (Node, error) {
	var sn storedNode
	if err := json.Unmarshal(data, &sn); err != nil {
		return Node{}, fmt.Errorf("ring entry %q: %w", key, err)
	}
	return sn.node()
}

func toStored(n Node) storedNode {
	return storedNode{ID: n.ID, DC: n.DC, Addr: n.Addr, ClientAddr: n.ClientAddr, Tokens: n.Tokens,
		Status: n.Status.String(), Replaces: n.Replaces, Generation: n.Generation, Born: n.Born, Tier: n.Tier}
}

func (sn storedNode) node() (Node, error) {
	status, err := ParseStatus(sn.Status)
	if err != nil {
		return Node{}, fmt.Errorf("ring entry %q: %w", sn.ID, err)
	}
	return Node{ID: sn.ID, DC: sn.DC, Addr: sn.Addr, ClientAddr: sn.ClientAddr, Tokens: sn.Tokens,
		Status: status, Replaces: sn.Replaces, Generation: sn.Generation, Born: sn.Born, Tier: sn.Tier}, nil
}

// RingEntry is a ring entry with its node's liveness, as one node tells another.
type RingEntry struct {
	Node
	Up bool
}

// EncodeRing writes a node's ring for a new node that learns it from a seed.
func EncodeRing(entries []RingEntry) ([]byte, error) {
	type wire struct {
		storedNode
		Up bool `json:"up"`
	}
	out := make([]wire, len(entries))
	for i, e := range entries {
		out[i] = wire{toStored(e.Node), e.Up}
	}
	return json.Marshal(out)
}

// DecodeRing reads what EncodeRing wrote.
func DecodeRing(data []byte) ([]RingEntry, error) {
	var in []struct {
		storedNode
		Up bool `json:"up"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("decode ring: %w", err)
	}
	out := make([]RingEntry, len(in))
	for i, w := range in {
		n, err := w.node()
		if err != nil {
			return nil, err
		}
		out[i] = RingEntry{n, w.Up}
	}
	return out, nil
}
