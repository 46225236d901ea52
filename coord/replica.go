package coord

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/ring"
	"github.com/kuradb/kura/storage"
	"github.com/kuradb/kura/transport"
)

// Handles reports whether kind is a coordinator message that Handle serves.
func Handles(kind transport.Kind) bool {
	return kind == kindMutate || kind == kindRead || kind == kindScan || kind == kindChunkRead
}

// Handle serves the replica side of another coordinator's request.
func (c *Coordinator) Handle(_ context.Context, from transport.Peer, kind transport.Kind, payload []byte) ([]byte, error) {
	switch kind {
	case kindMutate:
		var req kurav1.MutateRequest
		if err := proto.Unmarshal(payload, &req); err != nil {
			return nil, fmt.Errorf("decode mutate from %s: %w", from.ID, err)
		}
		records := make([]storage.Record, len(req.GetRecords()))
		for i, r := range req.GetRecords() {
			records[i] = fromProto(r)
			if err := c.clock.Observe(records[i].Timestamp); err != nil {
				return nil, fmt.Errorf("mutate from %s: %w", from.ID, err)
			}
		}
		if _, err := c.engine.ApplyBatch(req.GetKeyspace(), records); err != nil {
			return nil, err
		}
		return nil, nil
	case kindRead:
		var req kurav1.ReadRequest
		if err := proto.Unmarshal(payload, &req); err != nil {
			return nil, fmt.Errorf("decode read from %s: %w", from.ID, err)
		}
		rec, found, err := c.engine.Get(req.GetKeyspace(), req.GetKey())
		if err != nil {
			return nil, err
		}
		resp := &kurav1.ReadResponse{Found: found}
		if found {
			resp.Record = toProto(rec)
		}
		return proto.Marshal(resp)
	case kindChunkRead:
		var req kurav1.ReadRequest
		if err := proto.Unmarshal(payload, &req); err != nil {
			return nil, fmt.Errorf("decode chunk_read from %s: %w", from.ID, err)
		}
		rec, found, err := c.engine.Get(req.GetKeyspace(), req.GetKey())
		if err != nil {
			return nil, err
		}
		return encodeChunkAnswer(rec, found), nil
	case kindScan:
		var req kurav1.ReplicaScanRequest
		if err := proto.Unmarshal(payload, &req); err != nil {
			return nil, fmt.Errorf("decode scan from %s: %w", from.ID, err)
		}
		ks, err := c.catalog.Get(req.GetKeyspace())
		if err != nil {
			return nil, err
		}
		ranges := make([]ring.Range, len(req.GetRanges()))
		for i, rg := range req.GetRanges() {
			ranges[i] = ring.Range{Start: ring.Token(rg.GetStart()), End: ring.Token(rg.GetEnd())}
		}
		recs, err := c.engine.Scan(ks.Name, req.GetStart(), req.GetEnd(), int(req.GetLimit()), true, inRanges(ks.Partition(), ranges))
		if err != nil {
			return nil, err
		}
		resp := &kurav1.ReplicaScanResponse{Records: make([]*kurav1.Record, len(recs))}
		for i, r := range recs {
			resp.Records[i] = toProto(r)
		}
		return proto.Marshal(resp)
	}
	return nil, fmt.Errorf("coordinator: unexpected message kind %v", kind)
}
