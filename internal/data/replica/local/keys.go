package local

import (
	"context"

	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/io/storage"
)

// ScanKeys walks the engine's live-key index.
func (l *Local) ScanKeys(ctx context.Context, req replica.KeysRequest) (replica.KeysPage, error) {
	ks, err := l.keyspaces.Get(req.Keyspace)
	if err != nil {
		return replica.KeysPage{}, err
	}
	scan := storage.LiveScan{Limit: req.Limit, VisitMax: req.VisitMax, CountOnly: req.CountOnly, Now: req.Now, TruncatedAt: ks.TruncatedAt}
	for _, sp := range req.Spans {
		scan.Spans = append(scan.Spans, storage.Span{From: sp.From, To: sp.To})
	}
	if len(req.Ranges) > 0 {
		scan.Filter = inRanges(ks.Partition(), req.Ranges)
	}
	page, err := staged(ctx, l, sched.Task{Class: sched.ScanPage}, func() (storage.LivePage, int, error) {
		page, err := l.engine.ScanLive(ks.Name, scan)
		return page, replica.RecordBytes(page.Records), err
	})
	if err != nil {
		return replica.KeysPage{}, err
	}
	return replica.KeysPage{Records: page.Records, Live: page.Live, Expiring: page.Expiring, Visited: page.Visited, Done: page.Done, Next: page.Next}, nil
}
