// Package hints owns the writes a coordinator owes to replicas that were down (or asleep)
// when it wrote: stored durably in the node's engine, replayed to the target once it is
// back, removed when delivered.
package hints

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/lww"
	"github.com/kuradb/kura/replica"
	"github.com/kuradb/kura/schema"
	"github.com/kuradb/kura/storage"
)

// keyspace holds this node's hints.
const keyspace = schema.SystemPrefix + "_hints"

// Hint is one write owed to a target replica.
type Hint struct {
	Target   string
	Keyspace string
	Record   lww.Record
	key      []byte // where the hint is stored
}

// Store keeps hints in the node's engine under key
// target id, 0x00, 8-byte sequence (big-endian), so a target's hints are one ordered
// range. The value is the MutateRequest to replay.
type Store struct {
	engine *storage.Engine
	seq    atomic.Uint64
}

// NewStore returns the hint store of engine.
func NewStore(engine *storage.Engine) *Store { return &Store{engine: engine} }

func prefix(target string) []byte { return append([]byte(target), 0) }

// Add stores a hint for target.
func (s *Store) Add(target, ks string, rec lww.Record) error {
	value, err := proto.Marshal(&kurav1.MutateRequest{Keyspace: ks, Records: []*kurav1.Record{replica.ToProto(rec)}})
	if err != nil {
		return err
	}
	// The sequence starts at the wall clock in nanoseconds, above every sequence stored
	// before a restart (those counted up from an earlier clock reading, or, before this
	// store kept writes offloaded to it, from a record's timestamp, which is smaller): a
	// new hint never takes a stored one's key, and hints stay ordered across restarts.
	s.seq.CompareAndSwap(0, uint64(time.Now().UnixNano()))
	key := binary.BigEndian.AppendUint64(prefix(target), s.seq.Add(1))
	_, err = s.engine.Apply(keyspace, lww.Record{Key: key, Value: value, Timestamp: rec.Timestamp})
	return err
}

// Pending counts stored hints, for every target.
func (s *Store) Pending() (int, error) {
	recs, err := s.engine.Scan(keyspace, nil, nil, 0, false, nil)
	return len(recs), err
}

// For returns up to limit of target's hints, oldest first.
func (s *Store) For(target string, limit int) ([]Hint, error) {
	end := append([]byte(target), 1)
	recs, err := s.engine.Scan(keyspace, prefix(target), end, limit, false, nil)
	if err != nil {
		return nil, fmt.Errorf("read hints for %s: %w", target, err)
	}
	out := make([]Hint, 0, len(recs))
	for _, r := range recs {
		var req kurav1.MutateRequest
		if err := proto.Unmarshal(r.Value, &req); err != nil || len(req.GetRecords()) != 1 {
			return nil, fmt.Errorf("hint %x for %s is corrupt: %v", r.Key, target, err)
		}
		out = append(out, Hint{Target: target, Keyspace: req.GetKeyspace(), Record: replica.FromProto(req.GetRecords()[0]), key: r.Key})
	}
	return out, nil
}

// Delivered removes a hint its target has applied.
func (s *Store) Delivered(h Hint) error {
	if err := s.engine.Remove(keyspace, h.key); err != nil {
		return fmt.Errorf("remove delivered hint: %w", err)
	}
	return nil
}
