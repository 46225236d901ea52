// Package hints owns the writes a coordinator owes to replicas that were down (or asleep)
// when it wrote: stored durably in the node's engine, replayed to the target once it is
// back, removed when delivered. It reaches the engine through Engine, which
// *storage.Engine satisfies, so that the coordinator links no storage.
package hints

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/replica"
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

// Engine is what the store needs of the node's storage engine (*storage.Engine): put,
// count, read in key order and remove the records of one keyspace, its own.
type Engine interface {
	Apply(keyspace string, rec lww.Record) (applied bool, err error)
	Count(keyspace string) (int64, error)
	ScanPage(keyspace string, start, end []byte, limit, bytesMax int, withTombstones bool, filter func(key []byte) bool) ([]lww.Record, error)
	Remove(keyspace string, key []byte) error
}

// Store keeps hints in the node's engine under key
// target id, 0x00, 8-byte sequence (big-endian), so a target's hints are one ordered
// range. The value is the MutateRequest to replay.
type Store struct {
	engine Engine
	seq    atomic.Uint64
}

// NewStore returns the hint store of engine.
func NewStore(engine Engine) *Store { return &Store{engine: engine} }

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

// Pending counts stored hints, for every target, from their keys alone: the metrics and
// the console ask often, and the hints of a target down for long may be many and large.
func (s *Store) Pending() (int, error) {
	n, err := s.engine.Count(keyspace)
	return int(n), err
}

// For returns target's oldest hints: up to limit of them, and no more once their stored
// bytes reach bytesMax (the hint that reaches it included). more reports a page cut
// short by either bound: more hints may be stored.
func (s *Store) For(target string, limit, bytesMax int) (pending []Hint, more bool, err error) {
	end := append([]byte(target), 1)
	recs, err := s.engine.ScanPage(keyspace, prefix(target), end, limit, bytesMax, false, nil)
	if err != nil {
		return nil, false, fmt.Errorf("read hints for %s: %w", target, err)
	}
	stored := 0
	for _, r := range recs {
		stored += len(r.Key) + len(r.Value)
	}
	more = len(recs) > 0 && (len(recs) == limit || bytesMax > 0 && stored >= bytesMax)
	out := make([]Hint, 0, len(recs))
	for _, r := range recs {
		var req kurav1.MutateRequest
		if err := proto.Unmarshal(r.Value, &req); err != nil || len(req.GetRecords()) != 1 {
			return nil, false, fmt.Errorf("hint %x for %s is corrupt: %v", r.Key, target, err)
		}
		out = append(out, Hint{Target: target, Keyspace: req.GetKeyspace(), Record: replica.FromProto(req.GetRecords()[0]), key: r.Key})
	}
	return out, more, nil
}

// Delivered removes a hint its target has applied.
func (s *Store) Delivered(h Hint) error {
	if err := s.engine.Remove(keyspace, h.key); err != nil {
		return fmt.Errorf("remove delivered hint: %w", err)
	}
	return nil
}
