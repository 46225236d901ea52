// Package ringstore keeps a node's ring entries (cluster.Store) in its storage engine,
// in the keyspace system_ring beside system_schema, and the joins it promised as their
// arbiter (ringchange.Promises) in system_join_promises. It lives apart from package
// cluster so that the directory, and the packages that read it, do not depend on the
// engine.
package ringstore

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/cluster"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/io/storage"
)

// ringKeyspace is the storage keyspace of the persisted ring, beside system_schema.
const ringKeyspace = "system_ring"

// promisesKeyspace is the storage keyspace of the joins this node promised, one record
// under promisesKey. It is apart from ringKeyspace, whose every record is a node.
const promisesKeyspace = "system_join_promises"

// promisesKey is the key of the one record of promisesKeyspace.
var promisesKey = []byte("promised")

// Store is the cluster.Store in a node's storage engine: one record per node, keyed by
// id. It also keeps the joins the node promised (SavePromises).
type Store struct {
	engine *storage.Engine

	mu      sync.Mutex
	version hlc.Timestamp // orders a node's own saves, last writer wins
	// promisesVersion orders the saves of the promises' record likewise; 0 until read
	// from the engine.
	promisesVersion hlc.Timestamp
}

// New returns the ring store in engine.
func New(engine *storage.Engine) *Store { return &Store{engine: engine} }

// SaveNode persists n.
func (s *Store) SaveNode(n cluster.Node) error {
	value, err := cluster.EncodeNode(n)
	if err != nil {
		return err
	}
	return s.apply(lww.Record{Key: []byte(n.ID), Value: value})
}

// DeleteNode drops node id's entry.
func (s *Store) DeleteNode(id string) error {
	return s.apply(lww.Record{Key: []byte(id), Tombstone: true})
}

// apply writes r after every earlier save or delete.
func (s *Store) apply(r lww.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.version == 0 {
		if err := s.loadVersionLocked(); err != nil {
			return err
		}
	}
	s.version++
	r.Timestamp = s.version
	_, err := s.engine.Apply(ringKeyspace, r)
	return err
}

// Nodes returns every stored entry.
func (s *Store) Nodes() ([]cluster.Node, error) {
	records, err := s.engine.Scan(ringKeyspace, nil, nil, 0, false, nil)
	if err != nil {
		return nil, err
	}
	nodes := make([]cluster.Node, 0, len(records))
	for _, r := range records {
		n, err := cluster.DecodeNode(r.Key, r.Value)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// loadVersionLocked continues the save order after a restart; s.mu is held.
func (s *Store) loadVersionLocked() error {
	records, err := s.engine.Scan(ringKeyspace, nil, nil, 0, true, nil)
	if err != nil {
		return err
	}
	for _, r := range records {
		s.version = max(s.version, r.Timestamp)
	}
	return nil
}

// SavePromises replaces the saved joins this node promised as their arbiter with marks
// (node id to generation). The write is synced before it returns, so a promise saved
// before it is gossiped survives a crash.
func (s *Store) SavePromises(marks map[string]uint64) error {
	value, err := json.Marshal(marks)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.promisesVersion == 0 {
		r, _, err := s.engine.Get(promisesKeyspace, promisesKey)
		if err != nil {
			return err
		}
		s.promisesVersion = r.Timestamp
	}
	s.promisesVersion++
	_, err = s.engine.Apply(promisesKeyspace, lww.Record{Key: promisesKey, Value: value, Timestamp: s.promisesVersion})
	return err
}

// LoadPromises returns the joins saved last by SavePromises; none when nothing was.
func (s *Store) LoadPromises() (map[string]uint64, error) {
	r, found, err := s.engine.Get(promisesKeyspace, promisesKey)
	if err != nil || !found {
		return map[string]uint64{}, err
	}
	marks := map[string]uint64{}
	if err := json.Unmarshal(r.Value, &marks); err != nil {
		return nil, fmt.Errorf("the joins promised: %w", err)
	}
	return marks, nil
}
