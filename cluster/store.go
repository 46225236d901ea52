package cluster

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/storage"
)

// Store keeps the directory's ring entries across restarts.
type Store interface {
	// SaveNode persists one entry durably before it returns.
	SaveNode(Node) error
	// Nodes returns every stored entry.
	Nodes() ([]Node, error)
}

// ringKeyspace is the storage keyspace of the persisted ring, beside system_schema.
const ringKeyspace = "system_ring"

// EngineStore is the Store in a node's storage engine: one record per node, keyed by id.
type EngineStore struct {
	engine *storage.Engine

	mu      sync.Mutex
	version hlc.Timestamp // orders a node's own saves, last writer wins
}

// NewEngineStore returns the ring store in engine.
func NewEngineStore(engine *storage.Engine) *EngineStore { return &EngineStore{engine: engine} }

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
	// Tier is omitted at 0, so entries stored before tiers existed read as tier 0.
	Tier int `json:"tier,omitempty"`
}

func toStored(n Node) storedNode {
	return storedNode{ID: n.ID, DC: n.DC, Addr: n.Addr, ClientAddr: n.ClientAddr, Tokens: n.Tokens,
		Status: n.Status.String(), Replaces: n.Replaces, Generation: n.Generation, Tier: n.Tier}
}

func (sn storedNode) node() (Node, error) {
	status, err := ParseStatus(sn.Status)
	if err != nil {
		return Node{}, fmt.Errorf("ring entry %q: %w", sn.ID, err)
	}
	return Node{ID: sn.ID, DC: sn.DC, Addr: sn.Addr, ClientAddr: sn.ClientAddr, Tokens: sn.Tokens,
		Status: status, Replaces: sn.Replaces, Generation: sn.Generation, Tier: sn.Tier}, nil
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

// SaveNode persists n.
func (s *EngineStore) SaveNode(n Node) error {
	value, err := json.Marshal(toStored(n))
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.version == 0 {
		if err := s.loadVersionLocked(); err != nil {
			return err
		}
	}
	s.version++
	_, err = s.engine.Apply(ringKeyspace, lww.Record{Key: []byte(n.ID), Value: value, Timestamp: s.version})
	return err
}

// Nodes returns every stored entry.
func (s *EngineStore) Nodes() ([]Node, error) {
	records, err := s.engine.Scan(ringKeyspace, nil, nil, 0, false, nil)
	if err != nil {
		return nil, err
	}
	nodes := make([]Node, 0, len(records))
	for _, r := range records {
		var sn storedNode
		if err := json.Unmarshal(r.Value, &sn); err != nil {
			return nil, fmt.Errorf("ring entry %q: %w", r.Key, err)
		}
		n, err := sn.node()
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// loadVersionLocked continues the save order after a restart; s.mu is held.
func (s *EngineStore) loadVersionLocked() error {
	records, err := s.engine.Scan(ringKeyspace, nil, nil, 0, true, nil)
	if err != nil {
		return err
	}
	for _, r := range records {
		s.version = max(s.version, r.Timestamp)
	}
	return nil
}
