package coord

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/schema"
	"github.com/kuradb/kura/storage"
)

// hintsKeyspace holds this node's hints: writes owed to replicas that were down.
const hintsKeyspace = schema.SystemPrefix + "_hints"

// hintStore keeps hints in the node's engine under key
// target id, 0x00, 8-byte sequence (big-endian), so a target's hints are one ordered range.
// The value is the MutateRequest to replay.
type hintStore struct {
	engine *storage.Engine
	seq    atomic.Uint64
}

func hintPrefix(target string) []byte { return append([]byte(target), 0) }

func (h *hintStore) add(target, keyspace string, rec storage.Record) error {
	value, err := proto.Marshal(&kurav1.MutateRequest{Keyspace: keyspace, Records: []*kurav1.Record{toProto(rec)}})
	if err != nil {
		return err
	}
	// The sequence starts at the record's timestamp so that hints stay ordered across
	// restarts of this node.
	h.seq.CompareAndSwap(0, uint64(rec.Timestamp))
	key := binary.BigEndian.AppendUint64(hintPrefix(target), h.seq.Add(1))
	_, err = h.engine.Apply(hintsKeyspace, storage.Record{Key: key, Value: value, Timestamp: rec.Timestamp})
	return err
}

// pending counts stored hints, for every target.
func (h *hintStore) pending() (int, error) {
	recs, err := h.engine.Scan(hintsKeyspace, nil, nil, 0, false, nil)
	return len(recs), err
}

// HintsPending returns how many hints this node holds for other replicas.
func (c *Coordinator) HintsPending() (int, error) { return c.hints.pending() }

// hintBatch is how many hints one replay pass sends to one target.
const hintBatch = 256

// ReplayHints sends stored hints to every target that is alive again and removes those
// delivered. It returns how many were delivered; the node runtime calls it periodically.
func (c *Coordinator) ReplayHints(ctx context.Context) (int, error) {
	delivered := 0
	for _, n := range c.view.Nodes() {
		if n.ID == c.view.Self().ID || !c.view.Alive(n.ID) {
			continue
		}
		prefix := hintPrefix(n.ID)
		end := append([]byte(n.ID), 1)
		recs, err := c.engine.Scan(hintsKeyspace, prefix, end, hintBatch, false, nil)
		if err != nil {
			return delivered, fmt.Errorf("read hints for %s: %w", n.ID, err)
		}
		peer := toPeer(n)
		for _, hint := range recs {
			if ctx.Err() != nil {
				return delivered, ctx.Err()
			}
			callCtx, cancel := c.replicaContext()
			_, err := c.transport.Call(callCtx, peer, kindMutate, hint.Value)
			cancel()
			if err != nil {
				break // the target is unreachable again; try on a later pass
			}
			if err := c.engine.Remove(hintsKeyspace, hint.Key); err != nil {
				return delivered, fmt.Errorf("remove delivered hint: %w", err)
			}
			delivered++
		}
	}
	return delivered, nil
}
