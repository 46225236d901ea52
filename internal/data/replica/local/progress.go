package local

import (
	"context"

	"github.com/kuradb/kura/internal/data/sched"
)

// ScanProgress passes the update to the read stage.
func (l *Local) ScanProgress(_ context.Context, scan sched.ScanID, nodes int) error {
	l.stage.Progress(scan, nodes)
	return nil
}
