package local

import (
	"context"
	"errors"
	"fmt"

	"github.com/kuradb/kura/internal/core/lww"
)

// OffloadLog keeps the writes held for other nodes until they can take them: the node's
// hint store (*hints.Store), so that offloaded writes and hints are one log, replayed
// the same way.
type OffloadLog interface {
	Add(target, keyspace string, rec lww.Record) error
}

// errNoOffloadLog answers an offload sent to a node that keeps no log.
var errNoOffloadLog = errors.New("replica: this node keeps no offload log")

// Offload adds each record to the node's offload log for target. Each record is one
// entry of its own key, appended with no lock shared between writers: the paper saw
// latency spikes from one lock per offload log.
func (l *Local) Offload(_ context.Context, target, keyspace string, records []lww.Record) error {
	if l.offloads == nil {
		return errNoOffloadLog
	}
	if _, err := l.keyspaces.Get(keyspace); err != nil {
		return err
	}
	for _, rec := range records {
		if err := l.offloads.Add(target, keyspace, rec); err != nil {
			return fmt.Errorf("offload for %s: %w", target, err)
		}
	}
	return nil
}
