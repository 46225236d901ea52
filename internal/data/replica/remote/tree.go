package remote

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/kuradb/kura/api/kurav1"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/merkle"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/io/transport"
)

// TreeDigest sends a tree_digest request.
func (r *Remote) TreeDigest(ctx context.Context, req replica.TreeRequest) (replica.Tree, error) {
	raw, err := r.call(ctx, transport.KindTreeDigest, &kurav1.TreeDigestRequest{
		Keyspace: req.Keyspace,
		Range:    &kurav1.TokenRange{Start: uint64(req.Range.Start), End: uint64(req.Range.End)},
		Depth:    uint32(req.Depth),
	})
	if err != nil {
		return replica.Tree{}, err
	}
	var resp kurav1.TreeDigestResponse
	if err := proto.Unmarshal(raw, &resp); err != nil {
		return replica.Tree{}, fmt.Errorf("replica %s: decode tree: %w", r.peer.ID, err)
	}
	tree, err := merkle.FromLeaves(req.Range, req.Depth, int(resp.GetRecords()), resp.GetLeaves())
	if err != nil {
		return replica.Tree{}, fmt.Errorf("replica %s: %w", r.peer.ID, err)
	}
	return replica.Tree{Merkle: tree, Watermark: hlc.Timestamp(resp.GetWatermark())}, nil
}

// treeDigest serves a tree_digest request.
func (s *Server) treeDigest(ctx context.Context, from transport.Peer, payload []byte) ([]byte, error) {
	var req kurav1.TreeDigestRequest
	if err := decodeRequest(payload, &req, transport.KindTreeDigest, from); err != nil {
		return nil, err
	}
	tree, err := s.local.TreeDigest(ctx, replica.TreeRequest{
		Keyspace: req.GetKeyspace(),
		Range:    ring.Range{Start: ring.Token(req.GetRange().GetStart()), End: ring.Token(req.GetRange().GetEnd())},
		Depth:    int(req.GetDepth()),
	})
	if err != nil {
		return nil, err
	}
	return proto.Marshal(replica.TreeResponse(tree))
}
