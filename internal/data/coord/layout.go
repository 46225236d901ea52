package coord

import (
	"context"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
)

// layout is how a keyspace's values lie on its nodes: replicated, every replica of a key
// holding its record whole, or erasure-coded (LDR, ldr.go), each of a key's m chunks on
// the owner of its own chunk key. A request picks it once, with the keyspace (keyspace),
// and goes through it, so that the entry points do not each ask which one it is.
type layout interface {
	// write stores rec at level cl; rec is stamped now unless it carries a timestamp.
	write(ctx context.Context, ks schema.Keyspace, rec lww.Record, cl consistency.Level) (hlc.Timestamp, error)
	// get reads key at level cl, repairing in the background what it found stale.
	get(ctx context.Context, ks schema.Keyspace, key []byte, cl consistency.Level) (lww.Record, bool, error)
	// scan returns up to limit live records with start <= key < end at level cl.
	scan(ctx context.Context, ks schema.Keyspace, start, end []byte, limit int, cl consistency.Level) ([]lww.Record, error)
	// whole reports whether each replica of a key holds its record whole, as the paths
	// that batch keys per replica, restore, walk keys by position and run Paxos need.
	whole() bool
}

// keyspace returns the keyspace named and its layout.
func (c *Coordinator) keyspace(name string) (schema.Keyspace, layout, error) {
	ks, err := c.keyspaces.Get(name)
	if err != nil {
		return ks, nil, err
	}
	if ks.Erasure.Enabled() {
		return ks, erasureCoded{c}, nil
	}
	return ks, replicated{c}, nil
}

// replicated is the layout of a keyspace whose replicas each hold a key's record.
type replicated struct{ c *Coordinator }

func (l replicated) write(ctx context.Context, ks schema.Keyspace, rec lww.Record, cl consistency.Level) (hlc.Timestamp, error) {
	return l.c.replicatedWrite(ctx, ks, rec, cl)
}

func (l replicated) get(ctx context.Context, ks schema.Keyspace, key []byte, cl consistency.Level) (lww.Record, bool, error) {
	op := l.c.newReadOp(ks.Name, key)
	rec, found, out, err := l.c.get(ctx, ks, cl, op)
	op.release(out)
	return rec, found, err
}

func (l replicated) scan(ctx context.Context, ks schema.Keyspace, start, end []byte, limit int, cl consistency.Level) ([]lww.Record, error) {
	return l.c.replicatedScan(ctx, ks, start, end, limit, cl)
}

func (replicated) whole() bool { return true }

// erasureCoded is the layout of a keyspace whose values are split into chunks (LDR).
type erasureCoded struct{ c *Coordinator }

func (l erasureCoded) write(ctx context.Context, ks schema.Keyspace, rec lww.Record, cl consistency.Level) (hlc.Timestamp, error) {
	return l.c.ldrWrite(ctx, ks, rec, cl)
}

func (l erasureCoded) get(ctx context.Context, ks schema.Keyspace, key []byte, cl consistency.Level) (lww.Record, bool, error) {
	return l.c.ldrGet(ctx, ks, key, cl)
}

func (l erasureCoded) scan(ctx context.Context, ks schema.Keyspace, start, end []byte, limit int, cl consistency.Level) ([]lww.Record, error) {
	return l.c.ldrScan(ctx, ks, start, end, limit, cl)
}

func (erasureCoded) whole() bool { return false }
