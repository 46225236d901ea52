package coord

import (
	"context"
	"fmt"

	"github.com/kuradb/kura/consistency"
	"github.com/kuradb/kura/hlc"
	"github.com/kuradb/kura/internal/core/element"
	"github.com/kuradb/kura/internal/core/lww"
	"github.com/kuradb/kura/internal/core/schema"
)

// RestoreOutcome says what Restore did with one record.
type RestoreOutcome int

const (
	// RestoredAsIs: the record was newer than the keyspace's truncation and was written
	// with its own timestamp, so a newer write of its key keeps winning.
	RestoredAsIs RestoreOutcome = iota
	// RestoredRestamped: the record was hidden by the keyspace's truncation (or drop),
	// no version of its key was written since, and it was written with a new timestamp.
	RestoredRestamped
	// RestoreKeptNewer: the record was hidden by the truncation and its key was written
	// (or deleted) since: the newer version stays.
	RestoreKeptNewer
)

// Restore writes rec, the live version of its key in a snapshot (a value, not a
// tombstone), back into keyspace at level cl, without undoing a later write:
//
//   - A record newer than the keyspace's truncation is written with its own timestamp:
//     last writer wins keeps any newer version, and replicas that miss it get a hint as
//     for any write.
//   - A record at or before the truncation (the keyspace was truncated or dropped after
//     the snapshot) would stay hidden with its own timestamp, since a truncation is
//     never undone. Its key is read at ALL, tombstones and truncated versions included:
//     when a version newer than the truncation exists (written or deleted since), it is
//     kept; otherwise the record is written stamped now. A read that cannot reach every
//     replica fails rather than guess.
//
// A client writing the key while it is restored races the restore as two clients' writes
// race: the later timestamp wins. Erasure-coded keyspaces are refused, and so is an
// element record of a Redis collection hidden by the truncation (restamped, it would
// outlive its collection's reset point). rec keeps its type (a collection's header).
func (c *Coordinator) Restore(ctx context.Context, keyspace string, rec lww.Record, cl consistency.Level) (RestoreOutcome, error) {
	if err := c.member(); err != nil {
		return 0, err
	}
	if err := c.checkKey(rec.Key); err != nil {
		return 0, err
	}
	if err := c.checkValue(rec.Value); err != nil {
		return 0, err
	}
	switch {
	case cl.IsSerial():
		return 0, invalid("%v is the level of lightweight transactions; a restore writes at ANY to ALL", cl)
	case rec.Tombstone:
		return 0, invalid("key %q: a restore writes values, not deletes", rec.Key)
	case rec.Timestamp == 0:
		return 0, invalid("key %q: a restored record carries the timestamp it had", rec.Key)
	}
	ks, layout, err := c.keyspace(keyspace)
	if err != nil {
		return 0, err
	}
	if !layout.whole() {
		return 0, invalid("keyspace %s is erasure-coded: restoring it from a snapshot is not supported", keyspace)
	}
	if rec.Timestamp > ks.TruncatedAt {
		_, err := c.write(ctx, keyspace, rec, cl)
		return RestoredAsIs, err
	}
	if element.IsKey(rec.Key) {
		// Stamped now, an element its collection's reset point had removed would be
		// newer than that point and come back.
		return 0, invalid("key %q is an element record of a Redis collection hidden by keyspace %s's truncation: restoring collections across a truncation is not supported", rec.Key, keyspace)
	}
	newest, found, err := c.newest(ctx, ks, rec.Key)
	if err != nil {
		return 0, fmt.Errorf("restore key %q of keyspace %s: read every replica for writes since the truncation: %w", rec.Key, keyspace, err)
	}
	if found && newest > ks.TruncatedAt {
		return RestoreKeptNewer, nil
	}
	rec.Timestamp = 0
	_, err = c.write(ctx, keyspace, rec, cl)
	return RestoredRestamped, err
}

// newest returns the timestamp of key's newest version on every replica, tombstones and
// truncated versions included; found is false when no replica holds one.
func (c *Coordinator) newest(ctx context.Context, ks schema.Keyspace, key []byte) (ts hlc.Timestamp, found bool, err error) {
	op := c.newReadOp(ks.Name, key)
	out, err := c.gatherRead(ctx, ks, consistency.All, op)
	if err == nil {
		for _, a := range op.answers {
			if a.found && (!found || a.record.Timestamp > ts) {
				ts, found = a.record.Timestamp, true
			}
		}
	}
	op.release(out)
	return ts, found, err
}
