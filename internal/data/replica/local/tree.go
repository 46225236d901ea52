package local

import (
	"context"
	"fmt"

	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/merkle"
	"github.com/kuradb/kura/internal/core/ring"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/data/sched"
)

// treePage bounds the records a tree is built from at a time, as sched.PageBytes bounds
// their bytes, so that building the tree of a large range does not hold the range in
// memory, nor a read-stage worker for long.
const treePage = 1024

// TreeDigest builds the tree of the engine's records in the requested range, reading
// them page by page.
func (l *Local) TreeDigest(ctx context.Context, req replica.TreeRequest) (replica.Tree, error) {
	ks, err := l.keyspaces.Get(req.Keyspace)
	if err != nil {
		return replica.Tree{}, err
	}
	b, err := merkle.NewBuilder(req.Range, req.Depth)
	if err != nil {
		return replica.Tree{}, err
	}
	p := ks.Partition()
	inRange := inRanges(p, []ring.Range{req.Range})
	var start []byte
	for {
		var size int
		recs, err := staged(ctx, l, sched.Task{Class: sched.ScanPage}, func() ([]lww.Record, int, error) {
			recs, err := l.engine.ScanPage(ks.Name, start, nil, treePage, sched.PageBytes, true, inRange)
			size = replica.RecordBytes(recs)
			return recs, size, err
		})
		if err != nil {
			return replica.Tree{}, fmt.Errorf("tree of keyspace %s: %w", ks.Name, err)
		}
		for _, r := range recs {
			b.Add(p.Token(r.Key), r)
		}
		if len(recs) == 0 || len(recs) < treePage && size < sched.PageBytes {
			break
		}
		start = append(recs[len(recs)-1].Key, 0)
	}
	watermark, err := l.engine.TombstoneWatermark(ks.Name)
	if err != nil {
		return replica.Tree{}, err
	}
	return replica.Tree{Merkle: b.Tree(), Watermark: watermark}, nil
}
