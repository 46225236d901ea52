// Package replicatest builds replicas for other packages' tests, as net/http/httptest
// builds servers: a Local on an in-memory engine, and a Framed replica that refuses what
// the internode transport would refuse, so that a test of streaming or repair sees a
// page too large for one frame fail as it does between real nodes.
package replicatest

import (
	"context"
	"fmt"
	"testing"

	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
	"github.com/kuradb/kura/internal/data/replica"
	"github.com/kuradb/kura/internal/data/replica/local"
	"github.com/kuradb/kura/internal/data/sched"
	"github.com/kuradb/kura/internal/io/storage"
	"github.com/kuradb/kura/internal/io/transport"
)

// NewLocal returns a Local replica on a fresh in-memory engine that holds keyspace, a
// hash-partitioned keyspace of one replica, and the engine. Both close when t ends.
func NewLocal(t testing.TB, keyspace string) (*local.Local, *storage.Engine) {
	t.Helper()
	return NewLocalWith(t, keyspace, storage.Options{}, sched.Config{})
}

// NewLocalWith is NewLocal on an engine opened with opts (in memory whatever they say),
// its reads on a read stage of config stage.
func NewLocalWith(t testing.TB, keyspace string, opts storage.Options, stage sched.Config) (*local.Local, *storage.Engine) {
	t.Helper()
	opts.InMemory = true
	engine, err := storage.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { engine.Close() })
	catalog, err := schema.Open(engine)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := schema.Keyspace{Name: keyspace, Replication: "simple=1", Timestamp: 1}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.Apply(ks); err != nil {
		t.Fatal(err)
	}
	reads, err := sched.NewStage(stage)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reads.Close)
	return local.NewLocal(engine, catalog, nil, reads), engine
}

// Framed is a Replica whose scan answers and applied batches fail with
// transport.ErrFrameTooLarge when their records take more than FrameBytes on the wire:
// the transport's frame bound, made small enough for a test to reach.
type Framed struct {
	replica.Replica
	FrameBytes int
}

// Scan answers as the Replica does, or refuses an answer over the frame.
func (f Framed) Scan(ctx context.Context, req replica.ScanRequest) ([]lww.Record, error) {
	records, err := f.Replica.Scan(ctx, req)
	if err != nil {
		return nil, err
	}
	return records, f.fits("scan answer", records)
}

// Apply refuses a batch over the frame, or applies it as the Replica does.
func (f Framed) Apply(ctx context.Context, keyspace string, records []lww.Record) error {
	if err := f.fits("mutate request", records); err != nil {
		return err
	}
	return f.Replica.Apply(ctx, keyspace, records)
}

func (f Framed) fits(what string, records []lww.Record) error {
	if n := replica.RecordsWireBytes(records); n > f.FrameBytes {
		return fmt.Errorf("%w: %s of %d bytes, limit %d per frame", transport.ErrFrameTooLarge, what, n, f.FrameBytes)
	}
	return nil
}
